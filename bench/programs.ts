import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CycleLensLaunchArgs } from '../common/launchArgs';
import { loadResultSetDocument, type ResultSetDocument } from '../core/analysis/resultSet';
import { runOracle, type OracleSummary } from '../test/oracle/oracle';
import { windowOf } from '../test/oracle/programWindow';
import { writeLaunchJson } from '../test/support/cliWorkspace';
import { fixturesDir, repoRoot, type FixtureTarget } from '../test/support/paths';
import { option, printTable } from './support';

/**
 * The ordinary programs of test/fixtures/programs/ (newlib on Cortex-M4, picolibc on RV32), run the
 * way a new user runs them: the README's launch configuration, no `programEnd`, nothing reserved.
 * Per program: a full profile (8 slots) and descents at 5 % and 1 %, each scored against the
 * instruction trace of the same window (main's entry to the end CycleLens finds).
 *   e mean / worst   |measured share - trace share| over the functions the profile measured, in
 *                    percentage points of the run (Cortex-M: SysTick ticks x40 vs instructions)
 *   measured         functions the profile measured / functions the trace runs inside the window
 *   calls exact      measured functions whose call count equals the trace's
 *   runs / naive     program runs (baseline included) against ceil(F / k)
 *   recall/precision of the functions at or above the threshold (descent)
 *   unsafe           pruned or unmeasurable functions whose bound lies below the trace's share (must be 0)
 *   npm run bench -- programs [--target rv32] [--program sha256] [--profile-only] [--descent-only]
 * At the end, per program, the runs of each analysis against the runs measuring everything takes.
 * With --jobs-wall: per program, the wall time of a full profile and of a descent at 5 % with
 * --jobs 1 and --jobs 2 (the CLI's own time, session start included), and whether the two give
 * equal values (they must, exactly, on RV32).
 */

const SERVERS: Record<FixtureTarget, NonNullable<CycleLensLaunchArgs['server']>> = {
  rv32: { type: 'qemu', machine: 'virt', icount: 0 },
  'cortex-m4': { type: 'qemu', machine: 'mps2-an386' },
};
const INSTRUCTIONS_PER_UNIT: Record<FixtureTarget, number> = { rv32: 1, 'cortex-m4': 40 };
const PROGRAMS = [
  'crc32',
  'sha256',
  'sorting',
  'matmul',
  'fft',
  'json',
  'softfloat',
  'report',
  'statemachine',
  'aes',
  'shell',
  // Firmware whose exit spins (`b .` / `j .`): QEMU never ends on its own.
  'spinexit',
];
/** Programs that never end QEMU: the trace is bounded (well past their end). */
const TRACE_BOUND: Record<string, number> = { spinexit: 2_000_000 };
/** Functions per run (`--slots N` narrows it, e.g. to give --jobs-wall more runs to share out). */
const SLOTS = Number(option(process.argv.slice(2), '--slots') ?? 8);

interface Run {
  doc: ResultSetDocument;
  runs: number;
  naive: number;
  wall: number;
}

/** Runs one CLI command in the workspace; its result document, or why it failed. */
async function cli(dir: string, args: string[]): Promise<Run | string> {
  const out = join(dir, `${args.join('_').replace(/[^a-z0-9]/gi, '')}.json`);
  const started = process.hrtime.bigint();
  const r = spawnSync(
    process.execPath,
    [
      join(repoRoot, 'dist', 'cli.js'),
      ...args,
      '--config',
      '.vscode/launch.json',
      '--name',
      'bench',
      '--slots',
      String(SLOTS),
      '--out',
      out,
    ],
    { cwd: dir, encoding: 'utf8', timeout: 1_200_000 },
  );
  const wall = Number(process.hrtime.bigint() - started) / 1e9;
  if (r.status !== 0) return `exit ${r.status}: ${(r.stderr || r.stdout).trim().split('\n').slice(-2).join(' ')}`;
  const m = /(\d+) runs \(measuring everything: (\d+)\)/.exec(r.stdout);
  return { doc: await loadResultSetDocument(out), runs: Number(m?.[1] ?? NaN), naive: Number(m?.[2] ?? NaN), wall };
}

function shareOf(oracle: OracleSummary, name: string, total: number): number {
  return (oracle.functions.find((f) => f.name === name || f.aliases.includes(name))?.inclusive ?? 0) / total;
}

function profileRow(
  label: string,
  oracle: OracleSummary,
  window: ReturnType<typeof windowOf>,
  unit: number,
  run: Run,
): string[] {
  const rs = run.doc.resultSets;
  const event = rs[0]!.run.event;
  const total = rs[0]!.run.totals[event];
  if (total === undefined) return [label, 'no total', '', '', '', '', '', `${run.wall.toFixed(0)} s`];
  const pct = (x: number): string => `${(100 * x).toFixed(3)}`;
  const errors: number[] = [];
  let exact = 0;
  let compared = 0;
  const measured = new Set<string>();
  for (const m of rs.flatMap((s) => s.measurements)) {
    measured.add(m.name);
    if (!window.inside.has(m.name)) continue;
    const o = oracle.functions.find((f) => f.name === m.name || f.aliases.includes(m.name));
    if (!o) continue;
    compared++;
    if (m.calls === o.calls) exact++;
    errors.push(Math.abs(m.inclusive[event]! / total - o.inclusive / window.total));
    if (m.calls !== o.calls)
      console.error(
        `${label}: ${m.name}: ${m.calls} calls, ${pct(m.inclusive[event]! / total)} %; the trace: ${o.calls} ` +
          `calls, ${pct(o.inclusive / window.total)} %`,
      );
  }
  const executed = [...window.inside].filter((n) => (oracle.functions.find((f) => f.name === n)?.calls ?? 0) > 0);
  const reached = executed.filter((n) => measured.has(n)).length;
  const missed = executed.filter((n) => !measured.has(n));
  if (missed.length) console.error(`${label}: not measured: ${missed.join(', ')}`);
  return [
    label,
    `${((Math.abs(total * unit - window.total) / window.total) * 100).toFixed(3)}%`,
    errors.length ? pct(errors.reduce((a, b) => a + b, 0) / errors.length) : '-',
    errors.length ? pct(Math.max(...errors)) : '-',
    `${reached}/${executed.length} (${Math.round((100 * reached) / Math.max(1, executed.length))}%)`,
    `${exact}/${compared}`,
    `${run.runs}/${run.naive}`,
    `${run.wall.toFixed(0)} s`,
  ];
}

function descentRow(
  label: string,
  threshold: number,
  oracle: OracleSummary,
  window: ReturnType<typeof windowOf>,
  run: Run,
): string[] {
  const outcomes = run.doc.analysis!.outcomes;
  const byName = new Map(outcomes.map((o) => [o.name, o]));
  const truth = [...window.inside].filter((n) => byName.has(n) && shareOf(oracle, n, window.total) >= threshold);
  const found = truth.filter((n) => {
    const o = byName.get(n)!;
    return (o.status === 'measured' && !o.spansWindow) || (o.status === 'unmeasurable' && (o.bound ?? 0) >= threshold);
  });
  const reported = outcomes
    .filter((o) => window.inside.has(o.name) && o.status === 'measured' && (o.value ?? 0) >= threshold)
    .map((o) => o.name);
  const correct = reported.filter((n) => truth.includes(n));
  // A bound below the truth would let descent prune a function that is above the threshold.
  const unsafe = outcomes.filter(
    (o) =>
      window.inside.has(o.name) &&
      (o.status === 'pruned' || o.status === 'unmeasurable') &&
      o.bound !== undefined &&
      o.bound < shareOf(oracle, o.name, window.total) - 1e-9,
  );
  for (const u of unsafe)
    console.error(
      `${label} ${threshold * 100}%: UNSAFE bound ${u.name}: ${u.bound} < ` +
        `trace ${shareOf(oracle, u.name, window.total)}`,
    );
  return [
    label,
    `${threshold * 100}%`,
    `${run.runs}/${run.naive}`,
    truth.length ? `${Math.round((100 * found.length) / truth.length)}% of ${truth.length}` : 'none hot',
    reported.length ? `${Math.round((100 * correct.length) / reported.length)}%` : '-',
    String(unsafe.length),
    `${run.wall.toFixed(0)} s`,
  ];
}

/** Every measured function's value and calls, for comparing two analyses of one program. */
function valuesOf(doc: ResultSetDocument): Map<string, string> {
  return new Map(
    doc.resultSets.flatMap((rs) =>
      rs.measurements.map((m) => [m.name, `${m.inclusive[rs.run.event]}/${m.calls}`] as const),
    ),
  );
}

/** The same analysis at --jobs 1 and --jobs 2: wall times, runs, and whether the values agree. */
async function jobsRows(dir: string, label: string, rows: string[][]): Promise<void> {
  for (const [what, args] of [
    ['profile', ['profile']],
    ['descent 5%', ['descent', '--threshold', '5%']],
  ] as const) {
    const one = await cli(dir, [...args, '--jobs', '1']);
    const two = await cli(dir, [...args, '--jobs', '2']);
    if (typeof one === 'string' || typeof two === 'string') {
      rows.push([label, what, typeof one === 'string' ? one : '', typeof two === 'string' ? two : '', '', '']);
      continue;
    }
    const a = valuesOf(one.doc);
    const b = valuesOf(two.doc);
    const common = [...a.keys()].filter((n) => b.has(n));
    const differ = common.filter((n) => a.get(n) !== b.get(n));
    for (const n of differ) console.error(`${label} ${what}: ${n}: ${a.get(n)} with 1 job, ${b.get(n)} with 2`);
    rows.push([
      label,
      what,
      `${one.wall.toFixed(1)} s`,
      `${two.wall.toFixed(1)} s`,
      `${(one.wall / two.wall).toFixed(2)}x`,
      `${one.runs} / ${two.runs}`,
      differ.length === 0 ? `yes (${common.length})` : `NO: ${differ.length} of ${common.length}`,
    ]);
    console.error(rows.at(-1)!.join('  '));
  }
}

async function main(argv: string[]): Promise<void> {
  const jobs: string[][] = [];
  const profiles: string[][] = [];
  const descents: string[][] = [];
  const runsAgainstNaive: string[][] = [];
  for (const target of Object.keys(SERVERS) as FixtureTarget[]) {
    if (option(argv, '--target') && option(argv, '--target') !== target) continue;
    for (const program of PROGRAMS) {
      if (option(argv, '--program') && option(argv, '--program') !== program) continue;
      const elf = join(fixturesDir, 'build', target, 'programs', `${program}.elf`);
      if (!existsSync(elf)) {
        console.error(`skipped ${target}/${program}: not built (make -C test/fixtures programs)`);
        continue;
      }
      const label = `${target}/${program}`;
      const dir = mkdtempSync(join(tmpdir(), 'cyclelens-bench-programs-'));
      try {
        writeLaunchJson(dir, [{ name: 'bench', executable: elf, server: SERVERS[target], stopAtEntry: 'main' }]);
        if (argv.includes('--jobs-wall')) {
          await jobsRows(dir, label, jobs);
          continue;
        }
        const bound = TRACE_BOUND[program];
        const oracle = await runOracle({ elf, ...(bound ? { maxInstructions: bound } : {}) });
        const callsExit = oracle.edges.some((e) => e.caller === 'main' && e.callee === 'exit');
        const window = windowOf(oracle, callsExit ? 'exit' : undefined);
        const profile = argv.includes('--descent-only') ? undefined : await cli(dir, ['profile']);
        if (profile !== undefined)
          profiles.push(
            typeof profile === 'string'
              ? [label, profile, '', '', '', '', '', '']
              : profileRow(label, oracle, window, INSTRUCTIONS_PER_UNIT[target], profile),
          );
        if (profile !== undefined) console.error(profiles.at(-1)!.join('  '));
        const tally: string[] = [label];
        if (profile !== undefined)
          tally.push(typeof profile === 'string' ? 'failed' : `${profile.runs}/${profile.naive}`);
        // --profile-only: the reach of a full profile alone (functions measured), without descents.
        for (const threshold of argv.includes('--profile-only') ? [] : [0.05, 0.01]) {
          const d = await cli(dir, ['descent', '--threshold', `${threshold * 100}%`]);
          descents.push(
            typeof d === 'string'
              ? [label, `${threshold * 100}%`, d, '', '', '', '']
              : descentRow(label, threshold, oracle, window, d),
          );
          console.error(descents.at(-1)!.join('  '));
          tally.push(
            typeof d === 'string'
              ? 'failed'
              : `${d.runs}/${d.naive}${d.runs > d.naive ? ' OVER' : ''} (${Math.round((100 * d.runs) / d.naive)}%)`,
          );
        }
        runsAgainstNaive.push(tally);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }
  if (argv.includes('--jobs-wall')) {
    console.log(`Wall time at --jobs 1 and 2 (${SLOTS} slots):`);
    printTable(['program', 'analysis', '1 job', '2 jobs', 'speed-up', 'runs 1/2', 'values equal (common)'], jobs);
    return;
  }
  console.log('Full profile (8 slots):');
  printTable(
    [
      'program',
      'total vs trace',
      'e mean (pp)',
      'e worst (pp)',
      'functions measured',
      'calls exact',
      'runs/naive',
      'wall',
    ],
    profiles,
  );
  console.log('\nDescent (8 slots):');
  printTable(['program', 'threshold', 'runs/naive', 'recall', 'precision', 'unsafe bounds', 'wall'], descents);
  const columns = [
    ...(argv.includes('--descent-only') ? [] : ['profile']),
    ...(argv.includes('--profile-only') ? [] : ['descent 5%', 'descent 1%']),
  ];
  console.log('\nRuns against measuring everything (runs/naive):');
  printTable(['program', ...columns], runsAgainstNaive);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exit(1);
});
