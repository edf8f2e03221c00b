import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import type { CallGraphResponse } from '../../common/dapCustom';
import { runDescent, runFullProfile, type AnalysisResult, type BatchMeasurer } from '../../core/analysis/descent';
import { callGraphDot } from '../../core/analysis/dot';
import { MetricsEngine } from '../../core/analysis/metrics';
import { profileRows, type ProfileRow } from '../../core/analysis/profileRows';
import { textReport } from '../../core/analysis/report';
import type { ResultSet } from '../../core/analysis/resultSet';
import { hasTool } from '../oracle/binutils';

// The text report and the DOT graph of a descent on a small synthetic program; the DOT text is
// checked by Graphviz itself.

const graph: CallGraphResponse = {
  functions: ['main', 'process', 'crc', 'crc_step', 'sort', 'swap', 'log', 'log "quoted"\\name', 'isr'].map(
    (name, i) => ({
      name,
      address: 0x100 + 0x40 * i,
      size: 0x40,
      path: `/src/${name}.c`,
      line: 10 + i,
    }),
  ),
  edges: [
    { caller: 'main', callee: 'process', kind: 'call', sites: [0x104] },
    { caller: 'main', callee: 'log', kind: 'call', sites: [0x108] },
    { caller: 'process', callee: 'crc', kind: 'call', sites: [0x144] },
    { caller: 'process', callee: 'sort', kind: 'call', sites: [0x148] },
    { caller: 'crc', callee: 'crc_step', kind: 'call', sites: [0x184] },
    { caller: 'sort', callee: 'swap', kind: 'tail', sites: [0x204] },
    { caller: 'sort', callee: 'sort', kind: 'call', sites: [0x208] },
    { caller: 'log', callee: 'log "quoted"\\name', kind: 'call', sites: [0x244] },
    { caller: 'isr', callee: 'swap', kind: 'call', sites: [0x304] },
  ],
  indirectCallers: [],
};

// Instructions and cycles per function; isr preempts, swap is shared by sort and isr.
const counts: Record<string, { instructions: number; cycles: number; calls: number }> = {
  main: { instructions: 10_000, cycles: 14_000, calls: 1 },
  process: { instructions: 9_800, cycles: 13_600, calls: 20 },
  crc: { instructions: 6_000, cycles: 9_000, calls: 60 },
  crc_step: { instructions: 5_500, cycles: 8_000, calls: 11_000 },
  sort: { instructions: 3_700, cycles: 4_500, calls: 400 },
  swap: { instructions: 1_000, cycles: 1_200, calls: 7_000 },
  log: { instructions: 60, cycles: 90, calls: 2 },
  'log "quoted"\\name': { instructions: 30, cycles: 45, calls: 9 },
  isr: { instructions: 120, cycles: 200, calls: 0 },
};

const measurer = (slots: number, refuse: string[] = []): BatchMeasurer => ({
  slots,
  measure: async (batch): Promise<ResultSet> => ({
    id: `rs-${batch.join('-')}`,
    createdAt: '2024-05-01T00:00:00Z',
    program: { executable: '/fw/demo.elf' },
    run: {
      kind: 'synthetic',
      event: 'instructions',
      totals: { instructions: 10_000, cycles: 14_000 },
      method: 'synthetic, exact',
    },
    measurements: batch
      .filter((f) => !refuse.includes(f))
      .map((name) => ({
        name,
        inclusive: { instructions: counts[name]!.instructions, cycles: counts[name]!.cycles },
        calls: counts[name]!.calls,
      })),
    refused: batch
      .filter((f) => refuse.includes(f))
      .map((name) => ({ name, reason: 'the entry holds an IT block; measure its call sites instead' })),
  }),
});

const engine = new MetricsEngine();

async function descent(refuse: string[] = []): Promise<{ result: AnalysisResult; rows: ProfileRow[] }> {
  const result = await runDescent(graph, measurer(3, refuse), {
    engine,
    metric: engine.monotone('share'),
    threshold: 0.05,
  });
  return { result, rows: profileRows(result, graph, engine) };
}

function row(rows: readonly ProfileRow[], name: string): ProfileRow {
  const r = rows.find((x) => x.name === name);
  assert.ok(r, name);
  return r;
}

describe('profile rows', () => {
  it('forms exclusive only when it is exact', async () => {
    const result = await runFullProfile(graph, measurer(4), { engine, metric: engine.definition('share')! });
    const rows = profileRows(result, graph, engine);
    assert.equal(row(rows, 'crc_step').exclusive, 5_500, 'a leaf: exclusive = inclusive');
    assert.equal(row(rows, 'crc').exclusive, 500, 'crc_step is called by crc alone');
    assert.equal(row(rows, 'sort').exclusive, undefined, 'swap is shared with isr: its time under sort is unknown');
    assert.equal(row(rows, 'main').exclusive, 10_000 - 9_800 - 60);
    assert.equal(row(rows, 'crc').share, 0.6);
    assert.equal(row(rows, 'crc').metrics.get('cpi'), 1.5);
    assert.equal(row(rows, 'crc').metrics.get('perCall.instructions'), 100);
  });
});

describe('text report', () => {
  it('has one row per function with every computable metric, pruned rows with their bound', async () => {
    const { result, rows } = await descent();
    const text = textReport(
      {
        scenario: 'descent',
        metric: result.metric,
        threshold: 0.05,
        runs: result.runs,
        naiveRuns: 3,
        slots: 3,
        roots: result.roots,
        cancelled: false,
        warnings: result.warnings,
        program: '/fw/demo.elf',
        method: 'synthetic, exact',
      },
      rows,
      engine,
    );
    const lines = text.split('\n');
    assert.match(lines[0]!, /^Call-graph descent of demo\.elf \(synthetic, exact\)$/);
    assert.match(text, /threshold 5\.00%/);
    const heading = lines.find((l) => l.startsWith('function'))!;
    for (const col of ['status', 'inclusive', 'exclusive', 'calls', 'share', 'CPI', 'IPC', 'instr/call', 'cyc/call'])
      assert.ok(heading.includes(col), `column ${col}`);
    for (const f of graph.functions)
      assert.ok(
        lines.some((l) => l.startsWith(f.name)),
        `row for ${f.name}`,
      );
    const logRow = lines.find((l) => l.startsWith('log "quoted"'))!;
    assert.match(logRow, /pruned <= 2\.00%/, 'bounded by its caller log, itself bounded by main minus process');
    const crc = lines.find((l) => l.startsWith('crc '))!;
    assert.match(crc, /measured\s+6,000\s+500\s+60\s+60\.0%/);
    assert.match(text, /measured/);
    assert.match(text, /\d+ measured, \d+ pruned/);
  });

  it('lists refused functions with the reason', async () => {
    const { result, rows } = await descent(['crc']);
    const text = textReport(
      {
        scenario: 'descent',
        metric: result.metric,
        threshold: 0.05,
        runs: result.runs,
        roots: result.roots,
        cancelled: true,
        warnings: ['something odd'],
      },
      rows,
      engine,
    );
    assert.match(text, /CANCELLED/);
    assert.match(text, /warning: something odd/);
    assert.match(text, /Not measurable[^\n]*\n {2}crc: the entry holds an IT block/);
    assert.equal(row(rows, 'crc_step').status, 'measured', 'bounded through the refused crc');
  });
});

describe('DOT call graph', () => {
  it('labels, colours and dashes nodes', async () => {
    const { rows } = await descent();
    const dot = callGraphDot(graph, rows, { title: 'demo "descent"' });
    assert.match(dot, /^digraph cyclelens \{/);
    assert.match(dot, /label="crc\\n6,000 instructions\\n60\.0%"/);
    assert.match(dot, /label="log \\"quoted\\"\\\\name\\npruned <= 2\.00%", [^\n]*style="rounded,dashed"/);
    assert.match(dot, /-> f\d+ \[style=dashed, label="tail"/);
    const fills = [...dot.matchAll(/fillcolor="(#[0-9a-f]{6})"/g)].map((m) => m[1]);
    assert.ok(new Set(fills).size > 3, 'shares map to different colours');
  });

  it(
    'is accepted by Graphviz dot, which draws every function',
    { skip: hasTool('dot') ? false : 'graphviz dot not installed' },
    async () => {
      const { rows } = await descent(['crc']);
      const dot = callGraphDot(graph, rows, { title: 'demo' });
      const r = spawnSync('dot', ['-Tsvg'], { input: dot, encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /<svg/);
      for (const name of ['main', 'process', 'crc', 'crc_step', 'sort', 'swap', 'isr'])
        assert.ok(r.stdout.includes(`>${name}</text>`), `${name} drawn`);
      assert.ok(r.stdout.includes('log &quot;quoted&quot;\\name'), 'a quoted name survives');
    },
  );
});
