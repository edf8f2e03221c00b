import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ElfImage } from '../../adapter/elf';
import { staticCallGraph } from '../../adapter/probe/callGraph';
import {
  CALL_GRAPH_SCHEMA,
  loadCallGraphDocument,
  loadResultSetDocument,
  type CallGraphDocument,
  type ResultSetDocument,
} from '../../core/analysis/resultSet';
import { dynamicGraphFromOracle } from '../oracle/dynamicGraph';
import { runOracle, type OracleSummary } from '../oracle/oracle';
import { cliWorkspace, type CliWorkspace } from '../support/cliWorkspace';
import { fixtureElf, type FixtureTarget } from '../support/paths';

/**
 * Both QEMU targets, through the `cyclelens` command line (launch configuration, built adapter,
 * GDB, QEMU, injected measurements), checked against the oracle's exact trace of the same program:
 * the full profile's shares and call counts, and a descent at 1 % that must not lose a function the
 * oracle puts at or above 1 %.
 *
 * The run's window is main's entry up to its call of program_end. On Cortex-M the payloads read
 * SysTick, which QEMU ticks once per 40 instructions, so shares there carry that quantisation; on
 * RV32 they read minstret and differ from the trace only where the timer interrupt (fixed period in
 * instructions) lands in other functions of the slightly longer patched program.
 */
const TARGETS: Array<{ target: FixtureTarget; machine: string; shareTolerance: number }> = [
  { target: 'rv32', machine: 'virt', shareTolerance: 0.01 },
  { target: 'cortex-m4', machine: 'mps2-an386', shareTolerance: 0.01 },
];
/**
 * Outside main's window: the reset code before it, program_end with what follows, and the oracle's
 * `[outside program]` (QEMU's reset ROM).
 */
const OUTSIDE = new Set(['_start', 'rv_reset', 'Reset_Handler', 'program_end', 'board_exit']);

/** A workspace whose launch.json runs `elf` on QEMU, and the CLI run in it under an owner tag. */
function profilingWorkspace(target: FixtureTarget, machine: string, elf: string): CliWorkspace {
  return cliWorkspace(`cyclelens-profiling-${target}-`, [
    {
      name: target,
      executable: elf,
      server: { type: 'qemu', machine },
      stopAtEntry: 'main',
      programEnd: 'program_end',
    },
  ]);
}

for (const { target, machine, shareTolerance } of TARGETS) {
  describe(`profiling ${target} on QEMU against the oracle`, () => {
    const elf = fixtureElf(target, 'singlepass');
    const { dir, cli, close } = profilingWorkspace(target, machine, elf);
    let oracle: OracleSummary;
    /** Oracle share of main's inclusive count, by function. */
    const share = new Map<string, number>();
    let handlers: Set<string>;

    before(async () => {
      oracle = await runOracle({ elf });
      const main = oracle.functions.find((f) => f.name === 'main')!.inclusive;
      for (const f of oracle.functions) share.set(f.name, f.inclusive / main);
      // Interrupt handlers and what they call (only from them).
      handlers = new Set(oracle.functions.filter((f) => f.interrupts > 0).map((f) => f.name));
      for (const e of oracle.edges) if (handlers.has(e.caller)) handlers.add(e.callee);
    });

    after(close);

    function total(doc: ResultSetDocument): number {
      const run = doc.resultSets[0]!.run;
      return run.totals[run.event]!;
    }

    it('full profile: every call counted, every share within the counter resolution of the trace', async () => {
      const out = join(dir, 'profile.json');
      const r = cli('profile', '--config', '.vscode/launch.json', '--name', target, '--slots', '8', '--out', out);
      assert.equal(r.status, 0, r.stderr);
      const doc = await loadResultSetDocument(out);
      // The total comes from a window injected beside the first batch: QEMU's counters jump while the
      // target is halted with a timer armed, so the counters read at the two halts do not make one,
      // and the window's payload compensation takes the batch's payloads out exactly.
      assert.match(
        doc.resultSets[0]!.run.method,
        /total from the region main -> 0x[0-9a-f]+ injected with the first batch/,
      );
      assert.equal(
        doc.analysis!.runs,
        doc.resultSets.length,
        'a full profile takes one run per batch, the total included',
      );
      const unit = target === 'cortex-m4' ? 40 : 1; // instructions per counter unit
      const mainInstructions = oracle.functions.find((f) => f.name === 'main')!.inclusive;
      assert.ok(
        Math.abs(total(doc) * unit - mainInstructions) <= 0.001 * mainInstructions,
        `total ${total(doc)} x ${unit} vs main ${mainInstructions}`,
      );
      let compared = 0;
      for (const m of doc.resultSets.flatMap((s) => s.measurements)) {
        const o = oracle.functions.find((f) => f.name === m.name);
        if (!o || OUTSIDE.has(m.name)) continue;
        if (handlers.has(m.name)) {
          // Interrupt work: a patched run is longer, so the timer (a fixed period in instructions)
          // fires as often or a little more; every entry is tracked (Cortex-M: through EXC_RETURN).
          const ticks = oracle.functions.find((f) => f.name === m.name)!;
          const entries = ticks.calls + ticks.interrupts + ticks.traps;
          if (entries > 0) {
            assert.equal(m.incomplete, undefined, `${m.name}: ${m.incomplete}`);
            assert.ok(
              m.calls >= entries && m.calls <= entries + 2,
              `${m.name}: ${m.calls} entries, the trace has ${entries}`,
            );
          }
          continue;
        }
        assert.equal(m.calls, o.calls, `${m.name}: calls`);
        const measured = m.inclusive[doc.resultSets[0]!.run.event]! / total(doc);
        assert.ok(
          Math.abs(measured - share.get(m.name)!) <= shareTolerance,
          `${m.name}: share ${measured} vs oracle ${share.get(m.name)}`,
        );
        compared++;
      }
      assert.ok(compared >= 30, `only ${compared} functions compared`);
    });

    it(
      'descent at 1 %: every function the oracle puts at ≥ 1 % is measured or reported ' +
        'unmeasurable, never pruned; fewer measured than exist',
      async () => {
        const out = join(dir, 'descent.json');
        const r = cli(
          'descent',
          '--config',
          '.vscode/launch.json',
          '--name',
          target,
          '--threshold',
          '1%',
          '--out',
          out,
        );
        assert.equal(r.status, 0, r.stderr);
        const doc = await loadResultSetDocument(out);
        const outcomes = new Map(doc.analysis!.outcomes.map((o) => [o.name, o]));
        const hot = [...share]
          .filter(
            ([name, s]) =>
              s >= 0.01 && name !== 'main' && !name.startsWith('[') && !OUTSIDE.has(name) && !handlers.has(name),
          )
          .map(([name]) => name);
        assert.ok(hot.length >= 20, `${hot.length} functions at ≥ 1 %`);
        for (const name of hot) {
          const o = outcomes.get(name);
          assert.ok(
            o && (o.status === 'measured' || o.status === 'unmeasurable'),
            `${name} is at ${(100 * share.get(name)!).toFixed(2)} % in the oracle but the descent says ${o?.status}`,
          );
          if (o.status === 'measured')
            assert.ok(
              Math.abs(o.value! - share.get(name)!) <= shareTolerance,
              `${name}: ${o.value} vs ${share.get(name)}`,
            );
          // Unmeasurable: still shown, with the bound its callers give, which must not hide it.
          else assert.ok(o.bound! >= 0.01, `${name} is unmeasurable with a bound of ${o.bound}`);
        }
        const pruned = [...outcomes.values()].filter((o) => o.status === 'pruned');
        assert.ok(pruned.length > 0, 'something was pruned');
        for (const p of pruned)
          assert.ok(
            (share.get(p.name) ?? 0) < 0.01,
            `${p.name} was pruned but the oracle puts it at ${share.get(p.name)}`,
          );
        const measured = doc.resultSets.flatMap((s) => s.measurements).length;
        assert.ok(measured < oracle.functions.length, `measured ${measured} of ${oracle.functions.length}`);
      },
    );
  });

  describe(`descent with group measurements on ${target} (firmware, QEMU) against the oracle`, () => {
    const elf = fixtureElf(target, 'firmware');
    const { dir, cli, close } = profilingWorkspace(target, machine, elf);
    const share = new Map<string, number>();
    let handlers: Set<string>;

    before(async () => {
      const oracle = await runOracle({ elf });
      const main = oracle.functions.find((f) => f.name === 'main')!.inclusive;
      for (const f of oracle.functions) for (const n of [f.name, ...f.aliases]) share.set(n, f.inclusive / main);
      handlers = new Set(oracle.functions.filter((f) => f.interrupts > 0).map((f) => f.name));
      for (const e of oracle.edges) if (handlers.has(e.caller)) handlers.add(e.callee);
      // The calls of this run, as `cyclelens call-graph --dynamic` records them (recording 45,000
      // calls by breakpoint takes minutes; test/integration/dynamicCallGraph.test.ts checks that the
      // recording equals these counts).
      const { interrupts, ...graph } = dynamicGraphFromOracle(staticCallGraph(ElfImage.loadSync(elf)), oracle, 'main');
      const doc: CallGraphDocument = {
        schema: CALL_GRAPH_SCHEMA,
        program: elf,
        kind: 'dynamic',
        graph: { functions: graph.functions, edges: graph.edges, indirectCallers: graph.indirectCallers },
        interrupts,
        ended: 'programEnd',
      };
      writeFileSync(join(dir, 'calls.json'), JSON.stringify(doc));
    });

    after(close);

    const runsOf = (report: string): number => Number(/(\d+) runs \(measuring everything/.exec(report)?.[1] ?? NaN);

    it('saves the static call graph for the workspace', async () => {
      const r = cli(
        'call-graph',
        '--config',
        '.vscode/launch.json',
        '--name',
        target,
        '--out',
        join(dir, 'static.json'),
      );
      assert.equal(r.status, 0, r.stderr);
      const doc = await loadCallGraphDocument(join(dir, 'static.json'));
      assert.equal(doc.kind, 'static');
      assert.equal(doc.graph.functions.length, 320);
      // A static graph has no counts: descent refuses it with the command that records one.
      const d = cli(
        'descent',
        '--config',
        '.vscode/launch.json',
        '--name',
        target,
        '--threshold',
        '5%',
        '--call-graph',
        join(dir, 'static.json'),
      );
      assert.equal(d.status, 1);
      assert.match(
        d.stderr,
        /static call graph: it has no call counts\. Record a dynamic one with `cyclelens call-graph --dynamic/,
      );
    });

    it(
      "descent at 5 %: groups prune cold functions together, every group reads its members' sum, " +
        'nothing hot is lost, fewer runs than one function per slot',
      async () => {
        const out = join(dir, 'grouped.json');
        const r = cli(
          'descent',
          '--config',
          '.vscode/launch.json',
          '--name',
          target,
          '--threshold',
          '5%',
          '--slots',
          '4',
          '--call-graph',
          'calls.json',
          '--out',
          out,
        );
        assert.equal(r.status, 0, r.stderr);
        const doc = await loadResultSetDocument(out);
        const groups = doc.resultSets.flatMap((rs) =>
          (rs.groups ?? []).map((g) => ({ g, total: rs.run.totals[rs.run.event]!, event: rs.run.event })),
        );
        assert.ok(groups.length >= 5, `${groups.length} group measurements`);
        for (const { g, total, event } of groups) {
          // Members never call one another; the union is their sum unless an interrupt handler's
          // code preempts one member while another is on the stack (then less).
          const sum = g.members.reduce((acc, m) => acc + (share.get(m) ?? 0), 0);
          const value = g.inclusive[event]! / total;
          assert.ok(value <= sum + 0.01 && value >= sum - 0.01, `${g.name}: ${value} vs the oracle's sum ${sum}`);
        }
        const outcomes = new Map(doc.analysis!.outcomes.map((o) => [o.name, o]));
        const hot = [...share]
          .filter(
            ([name, s]) =>
              s >= 0.05 && outcomes.has(name) && name !== 'main' && !OUTSIDE.has(name) && !handlers.has(name),
          )
          .map(([name]) => name);
        assert.ok(hot.length >= 12, `${hot.length} functions at ≥ 5 %`);
        for (const name of hot) {
          const o = outcomes.get(name)!;
          assert.ok(
            o.status === 'measured' || (o.status === 'unmeasurable' && o.bound! >= 0.05),
            `${name} is at ${(100 * share.get(name)!).toFixed(2)} % in the oracle but the descent says ${o.status} ` +
              `(bound ${o.bound})`,
          );
        }
        const pruned = [...outcomes.values()].filter((o) => o.status === 'pruned');
        assert.ok(pruned.length > 150, `${pruned.length} pruned`);
        for (const p of pruned)
          assert.ok(
            (share.get(p.name) ?? 0) < 0.05,
            `${p.name} was pruned but the oracle puts it at ${share.get(p.name)}`,
          );
        const plain = cli(
          'descent',
          '--config',
          '.vscode/launch.json',
          '--name',
          target,
          '--threshold',
          '5%',
          '--slots',
          '4',
          '--call-graph',
          'calls.json',
          '--no-groups',
        );
        assert.equal(plain.status, 0, plain.stderr);
        assert.ok(
          runsOf(r.stdout) < runsOf(plain.stdout),
          `${runsOf(r.stdout)} runs with groups, ${runsOf(plain.stdout)} without`,
        );
      },
    );
  });
}
