import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CallGraphResponse } from '../common/dapCustom';
import {
  resultSetDocument,
  saveResultSetDocument,
  type FunctionOutcome,
  type ResultSet,
} from '../core/analysis/resultSet';
import { EXPORT_FORMATS } from '../core/export/formats';
import { loadAnyProfile } from '../core/profile/json';
import { emptyProfile, type Profile } from '../core/profile/model';
import { median, printTable } from './support';

/**
 * Export benchmark (issue "exports"): each format written from a synthetic 20,000-function profile
 * (time, bytes), and the load of a 100-run result set into the profile model (parse, validate,
 * build). The profile is a 4-ary call tree plus a shared callee for every tenth function (split by
 * call counts), with consistent inclusive values, addresses, and two source lines per function.
 *   npm run bench -- export [--functions 20000]
 */

/** A deterministic generator, so every run measures the same profile. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

export function syntheticProfile(count: number): Profile {
  const rnd = random(13);
  const p = emptyProfile({
    generator: 'bench',
    program: { executable: '/fw/synthetic.elf' },
    unit: { kind: 'cycles' },
    provenance: { kind: 'exact', counter: 'mcycle' },
    createdAt: '2026-01-01T00:00:00.000Z',
  });
  const self = Array.from({ length: count }, () => 10 + Math.floor(rnd() * 1000));
  const callersOf: { caller: number; calls: number }[][] = Array.from({ length: count }, () => []);
  for (let i = 1; i < count; i++) {
    callersOf[i]!.push({ caller: Math.floor((i - 1) / 4), calls: 1 + Math.floor(rnd() * 20) });
    if (i % 10 === 0 && i > 20)
      callersOf[i]!.push({ caller: Math.floor(rnd() * (i - 1)), calls: 1 + Math.floor(rnd() * 20) });
  }
  const inclusive = [...self];
  // Callees have larger ids than their callers: one backwards pass forms consistent inclusive values.
  for (let i = count - 1; i > 0; i--) {
    const list = callersOf[i]!;
    const sum = list.reduce((s, c) => s + c.calls, 0);
    for (const c of list) inclusive[c.caller]! += (inclusive[i]! * c.calls) / sum;
  }
  for (let i = 0; i < count; i++) {
    const calls = callersOf[i]!.reduce((s, c) => s + c.calls, 0) || 1;
    p.functions.push({
      id: i,
      name: `fn_${i}`,
      status: 'measured',
      address: 0x8000_0000 + 64 * i,
      size: 64,
      location: { path: `/fw/src/file${i % 200}.c`, line: 10 + (i % 500) * 12 },
      inclusive: { value: Math.round(inclusive[i]!) },
      calls,
    });
    for (const c of callersOf[i]!) p.edges.push({ caller: c.caller, callee: i, kind: 'call', calls: c.calls });
    const a = Math.floor(self[i]! / 2);
    p.lines.push(
      { path: `/fw/src/file${i % 200}.c`, line: 11 + (i % 500) * 12, function: i, self: { value: a } },
      { path: `/fw/src/file${i % 200}.c`, line: 12 + (i % 500) * 12, function: i, self: { value: self[i]! - a } },
    );
  }
  p.total = { value: Math.round(inclusive[0]!) };
  return p;
}

/** A descent-shaped document: 100 result sets of 8 functions each over an 800-function call graph. */
function hundredRuns(): ReturnType<typeof resultSetDocument> {
  const functions = Array.from({ length: 800 }, (_, i) => ({
    name: `fn_${i}`,
    address: 0x8000_0000 + 64 * i,
    size: 64,
    path: `/fw/src/file${i % 40}.c`,
    line: 10 + i,
  }));
  const edges = functions.slice(1).map((f, k) => ({
    caller: `fn_${Math.floor(k / 4)}`,
    callee: f.name,
    kind: 'call' as const,
    sites: [0x8000_0000 + 64 * Math.floor(k / 4) + 4],
    count: 3,
  }));
  const graph: CallGraphResponse = { functions, edges, indirectCallers: [] };
  const sets: ResultSet[] = [];
  const outcomes: FunctionOutcome[] = [{ name: 'fn_0', status: 'measured', spansWindow: true, bound: 1 }];
  for (let r = 0; r < 100; r++) {
    const measurements = Array.from({ length: 8 }, (_, k) => {
      const i = 1 + r * 8 + k;
      return {
        name: `fn_${i}`,
        inclusive: { cycles: Math.round(1_000_000 / (1 + i)) },
        calls: 3,
        min: 10,
        max: 900,
        mean: 300,
      };
    }).filter((m) => Number(m.name.slice(3)) < 800);
    sets.push({
      id: `rs-${r}`,
      createdAt: '2026-01-01T00:00:00.000Z',
      program: { executable: '/fw/synthetic.elf', family: 'riscv' },
      run: {
        kind: 'single-pass',
        event: 'cycles',
        totals: { cycles: 2_000_000 },
        method: 'software injection, mcycle',
      },
      measurements,
      refused: [],
    });
    for (const m of measurements)
      outcomes.push({
        name: m.name,
        status: 'measured',
        value: (m.inclusive.cycles ?? 0) / 2_000_000,
        bound: 1,
        resultSet: r,
      });
  }
  return resultSetDocument(sets, {
    scenario: 'full-profile',
    metric: 'share',
    roots: ['fn_0'],
    runs: 101,
    cancelled: false,
    outcomes,
    callGraph: graph,
  });
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const at = argv.indexOf('--functions');
  const count = at >= 0 ? Number(argv[at + 1]) : 20_000;
  const profile = syntheticProfile(count);
  console.log(`synthetic profile: ${count} functions, ${profile.edges.length} edges, ${profile.lines.length} lines`);
  const rows: string[][] = [];
  for (const format of EXPORT_FORMATS) {
    const times: number[] = [];
    const cpu: number[] = [];
    let bytes = 0;
    for (let i = 0; i < 3; i++) {
      const start = process.hrtime.bigint();
      const used = process.cpuUsage();
      const data = format.write(profile);
      times.push(Number(process.hrtime.bigint() - start) / 1e6);
      const spent = process.cpuUsage(used);
      cpu.push((spent.user + spent.system) / 1000);
      bytes = typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength;
    }
    rows.push([
      format.id,
      `${median(times).toFixed(0)} ms`,
      `${median(cpu).toFixed(0)} ms`,
      `${(bytes / 1024).toFixed(0)} KiB`,
    ]);
  }
  // CPU time as well as elapsed: on a shared machine the elapsed time follows the other processes.
  printTable(['format', `export of ${count} functions (median of 3)`, 'CPU time', 'size'], rows);

  const dir = mkdtempSync(join(tmpdir(), 'cyclelens-bench-export-'));
  try {
    const file = join(dir, 'hundred-runs.json');
    await saveResultSetDocument(file, hundredRuns());
    const times: number[] = [];
    let functions = 0;
    for (let i = 0; i < 5; i++) {
      const start = process.hrtime.bigint();
      const p = await loadAnyProfile(file);
      times.push(Number(process.hrtime.bigint() - start) / 1e6);
      functions = p.functions.length;
    }
    printTable(
      ['input', 'load into the profile model (median of 5)', 'functions'],
      [['100-run result set (800 functions, 8 per run)', `${median(times).toFixed(0)} ms`, String(functions)]],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) void main();
