import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { QemuServerArgs } from '../../common/launchArgs';
import { loadResultSetDocument } from '../../core/analysis/resultSet';
import { profileFromResultSets } from '../../core/profile/fromResultSet';
import { runOracle, type OracleSummary } from '../oracle/oracle';
import { windowOf } from '../oracle/programWindow';
import { takenFunctions } from '../oracle/takenAddresses';
import { cliWorkspace } from '../support/cliWorkspace';
import { fixturesDir, type FixtureTarget } from '../support/paths';

/**
 * Ordinary programs (test/fixtures/programs/: newlib on Cortex-M4, picolibc on RV32, main ending by
 * return or exit) profiled with the README's launch configuration, nothing else: no `programEnd`,
 * no reserved memory, no hidden option. A descent at 5 % must end with a total, find every function
 * the instruction trace puts at 5 % or more, and measure shares and call counts as the trace has them.
 *
 * The run's window is main's entry up to the end CycleLens finds (main's call of exit, or main's
 * return); the oracle window is the same span of the trace. Cortex-M payloads read SysTick, which
 * QEMU ticks once per 40 instructions: shares there carry one tick per call boundary.
 */
const TARGETS: Array<{ target: FixtureTarget; server: QemuServerArgs; unit: number; shareTolerance: number }> = [
  { target: 'rv32', server: { type: 'qemu', machine: 'virt', icount: 0 }, unit: 1, shareTolerance: 0.002 },
  { target: 'cortex-m4', server: { type: 'qemu', machine: 'mps2-an386' }, unit: 40, shareTolerance: 0.01 },
];
/**
 * sorting's and json's main return (recursion, qsort's callbacks, strtol); sha256's calls exit;
 * shell (nine modules, a command table called through pointers, printf) is the one with over 50
 * functions, where the descent must take at most a third of the naive count of runs.
 * (softfloat is in bench/programs.ts: libgcc's Arm double division enters itself with a `bleq` to
 * its own middle, which the trace's call stack cannot follow, so its counts are no reference.)
 */
const PROGRAMS = ['sorting', 'sha256', 'json', 'shell'];
const THRESHOLD = 0.05;

function programElf(target: FixtureTarget, program: string): string {
  return join(fixturesDir, 'build', target, 'programs', `${program}.elf`);
}

for (const { target, server, unit, shareTolerance } of TARGETS) {
  for (const program of PROGRAMS) {
    describe(`${program} on ${target} with the README's launch configuration`, () => {
      const elf = programElf(target, program);
      const { dir, cli, close } = cliWorkspace(
        `cyclelens-programs-${target}-`,
        [{ name: program, executable: elf, server, stopAtEntry: 'main' }],
        {
          timeoutMs: 240_000,
        },
      );
      let oracle: OracleSummary;

      before(async () => {
        oracle = await runOracle({ elf });
      });

      after(close);

      it(
        `descent at ${THRESHOLD * 100} %: a total, every hot function found, shares and calls as ` +
          `the trace has them`,
        async () => {
          const out = join(dir, 'descent.json');
          const r = cli(
            'descent',
            '--config',
            '.vscode/launch.json',
            '--name',
            program,
            '--threshold',
            `${THRESHOLD * 100}%`,
            '--out',
            out,
          );
          assert.equal(r.status, 0, r.stderr);
          const runs = /(\d+) runs \(measuring everything: (\d+)\)/.exec(r.stdout);
          assert.ok(
            runs && Number(runs[1]) <= Number(runs[2]),
            `the descent takes no more runs than measuring everything: ${runs?.[0]}`,
          );
          const doc = await loadResultSetDocument(out);
          if (doc.analysis!.callGraph!.functions.length >= 50)
            assert.ok(
              3 * Number(runs[1]) <= Number(runs[2]),
              `with 50 functions or more, at most a third of the naive runs: ${runs[0]}`,
            );
          assert.doesNotMatch(
            r.stdout + r.stderr,
            /warning: group measurements need call counts/,
            'no warning about call counts',
          );
          assert.doesNotMatch(
            r.stdout + r.stderr,
            /reconfigured SysTick|programEnd/,
            'no false alarm, no call for a hidden setting',
          );
          // QEMU: one run counted the instructions (no result set of its own), bounding what never ran by 0.
          assert.ok(doc.analysis!.counted, 'the descent was bounded by instruction counts');
          assert.match(r.stdout, /bounded by instruction counts/);
          assert.equal(
            doc.analysis!.runs,
            doc.resultSets.length + 1,
            'analysis.runs counts every run: the result sets, and the counting run',
          );
          assert.equal(doc.analysis!.runs, Number(runs![1]), 'the JSON and the report agree on the runs');
          const run = doc.resultSets[0]!.run;
          const total = run.totals[run.event];
          assert.ok(total !== undefined && total > 0, `the run has a total: ${JSON.stringify(run)}`);
          // main calling exit closes the window at that call; main returning, at its return.
          const callsExit = oracle.edges.some((e) => e.caller === 'main' && e.callee === 'exit');
          const window = windowOf(oracle, callsExit ? 'exit' : undefined);
          assert.ok(
            Math.abs(total * unit - window.total) <= Math.max(0.001 * window.total, 2 * unit),
            `total ${total} x ${unit} vs the trace's window ${window.total}`,
          );

          const outcomes = new Map(doc.analysis!.outcomes.map((o) => [o.name, o]));
          const oracleShare = (name: string): number =>
            (oracle.functions.find((f) => f.name === name || f.aliases.includes(name))?.inclusive ?? 0) / window.total;
          const hot = [...window.inside].filter((n) => oracleShare(n) >= THRESHOLD);
          assert.ok(hot.length >= 1, 'the trace has hot functions');
          for (const name of hot) {
            const o = outcomes.get(name);
            assert.ok(
              o?.status === 'measured' || (o?.status === 'unmeasurable' && o.bound! >= THRESHOLD),
              `${name} is at ${(100 * oracleShare(name)).toFixed(2)} % in the trace but the descent says ${o?.status}`,
            );
          }
          // Functions the start-up code also calls (memset clearing .bss) have trace counts from before
          // the window: compared only inside it, as the bounds below are.
          for (const p of [...outcomes.values()].filter((o) => o.status === 'pruned' && window.inside.has(o.name))) {
            assert.ok(
              oracleShare(p.name) < THRESHOLD,
              `${p.name} was pruned but the trace puts it at ${oracleShare(p.name)}`,
            );
          }
          // A bound is safe only if the truth lies under it: a pruned or unmeasurable function's upper
          // bound on its share, and a measured value's quantisation interval (SysTick: ±1 tick per call).
          for (const o of outcomes.values()) {
            if (
              !window.inside.has(o.name) ||
              (o.status !== 'pruned' && o.status !== 'unmeasurable') ||
              o.bound === undefined
            )
              continue;
            assert.ok(
              o.bound >= oracleShare(o.name) - 1e-9,
              `${o.name}: bound ${o.bound} below the trace's share ${oracleShare(o.name)}`,
            );
          }
          let bounded = 0;
          for (const f of profileFromResultSets(doc).functions) {
            const bound = f.inclusive?.bound;
            if (f.status !== 'measured' || !bound || !window.inside.has(f.name)) continue;
            const truth =
              (oracle.functions.find((x) => x.name === f.name || x.aliases.includes(f.name))?.inclusive ?? 0) / unit;
            assert.ok(
              bound.low <= truth && truth <= bound.high,
              `${f.name}: the trace's ${truth} ticks lie outside [${bound.low}, ${bound.high}]`,
            );
            bounded++;
          }
          if (unit > 1) assert.ok(bounded >= 1, 'SysTick values carry their quantisation bound');
          let compared = 0;
          for (const m of doc.resultSets.flatMap((s) => s.measurements)) {
            if (!window.inside.has(m.name)) continue;
            const o = oracle.functions.find((f) => f.name === m.name || f.aliases.includes(m.name))!;
            assert.equal(m.calls, o.calls, `${m.name}: calls`);
            const share = m.inclusive[run.event]! / total;
            assert.ok(
              Math.abs(share - oracleShare(m.name)) <= shareTolerance,
              `${m.name}: share ${share} vs the trace's ${oracleShare(m.name)}`,
            );
            compared++;
          }
          assert.ok(compared >= 1, 'measured functions compared with the trace');
          // A function measured at its call sites (strcpy on RV32, too short for an entry patch) is
          // said to be reachable by indirect calls only where objdump shows its address taken (or
          // an upper half loading its entry whole: a constant that happens to equal it).
          const taken = takenFunctions(target, elf);
          const names = new Map([...taken.functions].flatMap(([a, ns]) => ns.map((n) => [n, a] as const)));
          const noted = [
            ...doc.resultSets
              .flatMap((s) => s.measurements)
              .flatMap((m) => (/may also reach/.test(m.incomplete ?? '') ? [m.name] : [])),
            ...[...(r.stdout + r.stderr).matchAll(/may also reach ([\w$.]+);/g)].map((m) => m[1]!),
          ];
          for (const name of noted) {
            const at = names.get(name);
            assert.ok(
              at !== undefined && (taken.taken.has(at) || taken.upperConstants.has(at)),
              `indirect calls are said to reach ${name}, but nothing in the program takes its address`,
            );
          }
        },
      );
    });
  }
}
