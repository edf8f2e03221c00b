import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { staticCallGraph } from '../adapter/probe/callGraph';
import { ElfImage } from '../adapter/elf';
import { CALL_GRAPH_SCHEMA, loadResultSetDocument, type CallGraphDocument } from '../core/analysis/resultSet';
import { runOracle, type OracleSummary } from '../test/oracle/oracle';
import { writeLaunchJson } from '../test/support/cliWorkspace';
import { repoRoot, type FixtureTarget } from '../test/support/paths';
import { dynamicGraphFromOracle } from '../test/oracle/dynamicGraph';
import { fixturePrograms, option, printTable } from './support';

/**
 * Call-graph descent through the real product: `cyclelens descent` (the built CLI, adapter, GDB,
 * QEMU, injected measurements) on the single-pass fixtures, scored against the oracle's exact
 * trace. Where bench/descent.ts isolates the algorithm with a perfect measurer, this measures what
 * a user gets: program runs (the baseline runs that form the total included) against the naive
 * ceil(F/k), recall of the functions the oracle puts at or above the threshold (measured, or shown
 * as unmeasurable with a bound at or above it — never pruned), precision of what the descent reports
 * at or above it, and the wall time of the whole command.
 * With --grouped, descent gets a dynamic call graph (`--call-graph`) and measures the functions
 * that look cold in groups; the graph is the oracle's count of the same run's calls, which is what
 * `cyclelens call-graph --dynamic` records (test/integration/dynamicCallGraph.test.ts), and its
 * recording counts as one more run.
 *   npm run bench -- descentAdapter [--program firmware] [--target rv32] [--slots 4] [--grouped]
 */

/** QEMU machine per target, in the order the targets run. */
const MACHINES: Record<FixtureTarget, string> = { rv32: 'virt', 'cortex-m4': 'mps2-an386' };
const PROGRAMS = ['singlepass', 'firmware'];
const SLOTS = [1, 2, 4, 8];
const THRESHOLDS = [0.01, 0.05];
/** Outside the window main -> program_end, and QEMU's reset code. */
const OUTSIDE = new Set(['_start', 'rv_reset', 'Reset_Handler', 'program_end', 'board_exit', 'main']);

interface Row {
  program: string;
  k: number;
  threshold: string;
  functions: number;
  hot: number;
  naive: number;
  runs: number;
  ratio: string;
  measured: number;
  groups: number;
  pruned: number;
  recall: string;
  precision: string;
  wall: string;
}

async function scoreOne(
  dir: string,
  label: string,
  oracle: OracleSummary,
  k: number,
  threshold: number,
  callGraph: string | undefined,
): Promise<Row> {
  const out = join(dir, `d-${k}-${threshold}.json`);
  const started = process.hrtime.bigint();
  const extra = callGraph ? ['--call-graph', callGraph] : [];
  const r = spawnSync(
    process.execPath,
    [
      join(repoRoot, 'dist', 'cli.js'),
      'descent',
      '--config',
      '.vscode/launch.json',
      '--name',
      'bench',
      '--threshold',
      `${threshold * 100}%`,
      '--slots',
      String(k),
      '--out',
      out,
      ...extra,
    ],
    {
      cwd: dir,
      encoding: 'utf8',
      timeout: 900_000,
    },
  );
  const wall = Number(process.hrtime.bigint() - started) / 1e9;
  if (r.status !== 0) throw new Error(`${label} k=${k}: cyclelens descent failed (${r.status}): ${r.stderr}`);
  // The recording of the dynamic call graph is a run of the program too.
  const runs = Number(/(\d+) runs \(measuring everything: (\d+)\)/.exec(r.stdout)?.[1] ?? NaN) + (callGraph ? 1 : 0);
  const doc = await loadResultSetDocument(out);
  const outcomes = doc.analysis!.outcomes;
  const main = oracle.functions.find((f) => f.name === 'main')!.inclusive;
  const inGraph = new Set(outcomes.map((o) => o.name));
  const scored = (name: string): boolean => inGraph.has(name) && !OUTSIDE.has(name);
  const truth = new Set(
    oracle.functions.filter((f) => scored(f.name) && f.inclusive / main >= threshold).map((f) => f.name),
  );
  const byName = new Map(outcomes.map((o) => [o.name, o]));
  const found = [...truth].filter((n) => {
    const o = byName.get(n);
    return (
      o !== undefined &&
      ((o.status === 'measured' && !o.spansWindow) || (o.status === 'unmeasurable' && (o.bound ?? 0) >= threshold))
    );
  });
  const reported = outcomes
    .filter((o) => scored(o.name) && o.status === 'measured' && (o.value ?? 0) >= threshold)
    .map((o) => o.name);
  const correct = reported.filter((n) => truth.has(n));
  const missed = [...truth].filter((n) => !found.includes(n));
  if (missed.length) console.error(`${label} k=${k} ${threshold * 100}%: MISSED ${missed.join(', ')}`);
  const functions = outcomes.length;
  const naive = Math.ceil(functions / k);
  return {
    program: label,
    k,
    threshold: `${threshold * 100}%`,
    functions,
    hot: truth.size,
    naive,
    runs,
    ratio: (runs / naive).toFixed(2),
    measured: doc.resultSets.flatMap((s) => s.measurements).length,
    groups: doc.resultSets.flatMap((s) => s.groups ?? []).length,
    pruned: outcomes.filter((o) => o.status === 'pruned').length,
    recall: `${Math.round((100 * found.length) / Math.max(1, truth.size))}%`,
    precision: `${Math.round((100 * correct.length) / Math.max(1, reported.length))}%`,
    wall: `${wall.toFixed(1)} s`,
  };
}

async function main(argv: string[]): Promise<void> {
  const only = (flag: string): string | undefined => option(argv, flag);
  const rows: Row[] = [];
  for (const { target, program, elf } of fixturePrograms(argv, Object.keys(MACHINES) as FixtureTarget[], PROGRAMS)) {
    const machine = MACHINES[target];
    const dir = mkdtempSync(join(tmpdir(), 'cyclelens-bench-descent-'));
    try {
      writeLaunchJson(dir, [
        {
          name: 'bench',
          executable: elf,
          server: { type: 'qemu', machine },
          stopAtEntry: 'main',
          programEnd: 'program_end',
        },
      ]);
      const oracle = await runOracle({ elf });
      let callGraph: string | undefined;
      if (argv.includes('--grouped')) {
        const { interrupts, ...graph } = dynamicGraphFromOracle(
          staticCallGraph(ElfImage.loadSync(elf)),
          oracle,
          'main',
        );
        const doc: CallGraphDocument = {
          schema: CALL_GRAPH_SCHEMA,
          program: elf,
          kind: 'dynamic',
          graph: { functions: graph.functions, edges: graph.edges, indirectCallers: graph.indirectCallers },
          interrupts,
          ended: 'programEnd',
        };
        callGraph = join(dir, 'callgraph.json');
        writeFileSync(callGraph, JSON.stringify(doc));
      }
      for (const threshold of THRESHOLDS) {
        for (const k of SLOTS) {
          if (only('--slots') && Number(only('--slots')) !== k) continue;
          const row = await scoreOne(
            dir,
            `${target}/${program}${callGraph ? ' grouped' : ''}`,
            oracle,
            k,
            threshold,
            callGraph,
          );
          console.error(
            `${row.program} k=${row.k} ${row.threshold}: ${row.runs} runs (naive ${row.naive}), ` +
              `recall ${row.recall}, ${row.wall}`,
          );
          rows.push(row);
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const columns: Array<[keyof Row, string]> = [
    ['program', 'program'],
    ['k', 'k'],
    ['threshold', 'threshold'],
    ['functions', 'F'],
    ['hot', 'hot'],
    ['naive', 'naive'],
    ['runs', 'runs'],
    ['ratio', 'runs/naive'],
    ['measured', 'measured'],
    ['groups', 'groups'],
    ['pruned', 'pruned'],
    ['recall', 'recall'],
    ['precision', 'precision'],
    ['wall', 'wall'],
  ];
  printTable(
    columns.map(([, title]) => title),
    rows.map((r) => columns.map(([key]) => String(r[key]))),
  );
}

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exit(1);
});
