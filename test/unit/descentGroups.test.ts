import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CallGraphResponse } from '../../common/dapCustom';
import { CallGraphIndex } from '../../core/analysis/callGraphIndex';
import { runDescent, type BatchMeasurer } from '../../core/analysis/descent';
import type { ResultSet } from '../../core/analysis/resultSet';
import {
  FakeMeasurer,
  descend,
  engine,
  graphOf,
  outcome,
  share,
  randomProgram,
  type Spec,
} from '../support/syntheticDescent';

// Descent with measurements that may be low (missed entries) and with group measurements, on
// synthetic call graphs (test/support/syntheticDescent.ts; the rest of descent: descent.test.ts).

describe('descent with values that may be low', () => {
  it('does not let a measurement that missed entries bound its callees', async () => {
    const g = graphOf({ main: ['cs', 'other'], cs: ['leaf'] });
    const low: BatchMeasurer = {
      slots: 1,
      measure: async (batch) => ({
        id: batch.join(),
        createdAt: '',
        program: { executable: 'x' },
        run: { kind: 'synthetic', event: 'instructions', totals: { instructions: 1000 }, method: 'synthetic' },
        measurements: batch.map((name) => ({
          name,
          inclusive: { instructions: { main: 1000, cs: 5, other: 100, leaf: 800 }[name]! },
          calls: 1,
          ...(name === 'cs'
            ? { incomplete: 'measured at its call sites; a tail call from other could not be rewritten' }
            : {}),
        })),
        refused: [],
      }),
    };
    const r = await runDescent(g, low, { engine, metric: share, threshold: 0.05, lookahead: false });
    assert.equal(outcome(r, 'cs').status, 'measured');
    assert.match(outcome(r, 'cs').reason!, /may be low: measured at its call sites/);
    assert.equal(outcome(r, 'leaf').status, 'measured', "leaf is bounded by cs's own bound, not by its low value");
    assert.ok(outcome(r, 'leaf').bound! >= 0.8, 'its bound comes from main, through cs');
    assert.deepEqual(r.warnings, []);
  });
});

describe('descent with group measurements', () => {
  /**
   * Measures groups as well: in these single-threaded programs, functions that do not call one
   * another are never on the stack together, so a group's union is exactly the sum of its members.
   */
  class GroupMeasurer extends FakeMeasurer {
    readonly groups = true;
    readonly groupBatches: string[][][] = [];

    constructor(
      slots: number,
      private readonly graph: CallGraphResponse,
      private readonly exact: Record<string, number>,
      total: number,
      private readonly refuseGroups = false,
    ) {
      super(slots, exact, total);
    }

    override async measure(
      batch: readonly string[],
      signal?: AbortSignal,
      groups: readonly (readonly string[])[] = [],
    ): Promise<ResultSet> {
      assert.ok(
        batch.length + groups.length <= this.slots,
        `${batch.length} + ${groups.length} measurements in ${this.slots} slots`,
      );
      const index = new CallGraphIndex(this.graph);
      for (const g of groups) {
        assert.ok(g.length >= 2, 'a group has at least two members');
        for (const a of g)
          for (const b of g)
            if (a !== b) assert.ok(!index.related(a, b), `${a} and ${b} call one another, yet share a group`);
      }
      this.groupBatches.push(groups.map((g) => [...g]));
      const rs = await super.measure(batch, signal);
      // A refused group names its first member as the one that blocked it.
      if (this.refuseGroups)
        return {
          ...rs,
          refused: [
            ...rs.refused,
            ...groups.map((g) => ({
              name: g.join(' + '),
              reason: 'synthetic refusal',
              members: [...g],
              blockedBy: g[0]!,
            })),
          ],
        };
      return {
        ...rs,
        groups: groups.map((g) => ({
          name: g.join(' + '),
          members: [...g],
          inclusive: { instructions: g.reduce((acc, m) => acc + this.exact[m]!, 0) },
          calls: g.length,
        })),
      };
    }
  }

  /** A run of 1000 instructions measured earlier: functions alone, and groups `[a, b, value]`. */
  function earlierRun(alone: Record<string, number>, groups: Array<[string, string, number]>): ResultSet {
    return {
      id: 'earlier',
      createdAt: '2024-01-01T00:00:00Z',
      program: { executable: 'synthetic.elf' },
      run: { kind: 'synthetic', event: 'instructions', totals: { instructions: 1000 }, method: 'synthetic, exact' },
      measurements: Object.entries(alone).map(([name, v]) => ({ name, inclusive: { instructions: v }, calls: 1 })),
      groups: groups.map(([a, b, v]) => ({
        name: `${a} + ${b}`,
        members: [a, b],
        inclusive: { instructions: v },
        calls: 2,
      })),
      refused: [],
    };
  }

  /** Adds call counts to every edge, as a dynamic call graph has them. */
  function counted(graph: CallGraphResponse, count: (caller: string, callee: string) => number): CallGraphResponse {
    return { ...graph, edges: graph.edges.map((e) => ({ ...e, count: count(e.caller, e.callee) })) };
  }

  // main 1000: hot 700 (h1 600), cold callees c1..c6 of main 10..40 each, s called by c1 and c2.
  const spec: Spec = { main: ['hot', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6'], hot: ['h1'], c1: ['s'], c2: ['s'] };
  const values: Record<string, number> = {
    main: 1000,
    hot: 700,
    h1: 600,
    c1: 40,
    c2: 30,
    c3: 20,
    c4: 20,
    c5: 10,
    c6: 10,
    s: 25,
  };
  // Sizes are all 16 bytes: the counts alone make hot, h1 heavy and the c's light.
  const calls: Record<string, number> = { hot: 50, h1: 400, c1: 3, c2: 2, c3: 1, c4: 1, c5: 1, c6: 1, s: 2 };

  it('prunes light siblings together by one group measurement, each with the group as bound', async () => {
    const graph = counted(graphOf(spec), (_p, c) => calls[c]!);
    const m = new GroupMeasurer(2, graph, values, 1000);
    const r = await descend(graph, m, 0.15);
    assert.equal(outcome(r, 'hot').status, 'measured');
    assert.equal(outcome(r, 'h1').status, 'measured');
    const grouped = m.groupBatches.flat();
    assert.ok(grouped.length > 0, 'no group was measured');
    for (const c of ['c1', 'c2', 'c3', 'c4', 'c5', 'c6', 's']) {
      const o = outcome(r, c);
      assert.equal(o.status, 'pruned', `${c}: ${JSON.stringify(o)}`);
      assert.ok(values[c]! / 1000 <= o.bound! + 1e-12 && o.bound! < 0.15, `${c}: bound ${o.bound}`);
    }
    assert.deepEqual(r.groupBatches, m.groupBatches);
    assert.deepEqual(r.warnings, []);
  });

  it('counts callers that were only measured together once, by their group', async () => {
    // main -> x, y (both call s), z; the group {x, y} is 8 %: s is bounded by 8 %, not 16 %.
    const g = counted(graphOf({ main: ['x', 'y', 'z'], x: ['s'], y: ['s'] }), () => 1);
    const vals = { main: 1000, x: 50, y: 30, z: 900, s: 20 };
    const m = new GroupMeasurer(1, g, vals, 1000);
    const previous = earlierRun({ main: 1000, z: 900 }, [['x', 'y', 80]]);
    const r = await descend(g, m, 0.1, { previous: [previous] });
    assert.equal(r.runs, 0, 'nothing is left to measure');
    assert.equal(outcome(r, 's').status, 'pruned');
    assert.ok(Math.abs(outcome(r, 's').bound! - 0.08) < 1e-12, `bound ${outcome(r, 's').bound}`);
    assert.ok(Math.abs(outcome(r, 'x').bound! - 0.08) < 1e-12);
  });

  it(
    'on SysTick ticks, bounds by the top of the quantisation interval: one tick per call and ' + 'one for the total',
    async () => {
      // The group {a, b} read 40 ticks over 2 calls: the truth may be up to 43 of 1000.
      const g = counted(graphOf({ main: ['a', 'b', 'big'] }), () => 1);
      const earlier: ResultSet = {
        ...earlierRun({ main: 1000, big: 900 }, [['a', 'b', 40]]),
        run: { kind: 'synthetic', event: 'ticks', totals: { ticks: 1000 }, method: 'synthetic, SysTick' },
      };
      for (const rs of [earlier]) {
        for (const m of rs.measurements) m.inclusive = { ticks: m.inclusive['instructions']! };
        for (const x of rs.groups ?? []) x.inclusive = { ticks: x.inclusive['instructions']! };
      }
      const vals = { main: 1000, a: 30, b: 12, big: 900 };
      const r = await descend(g, new GroupMeasurer(1, g, vals, 1000), 0.042, { previous: [earlier] });
      assert.ok(Math.abs(outcome(r, 'b').bound! - 0.043) < 1e-12, `bound ${outcome(r, 'b').bound}`);
      assert.equal(outcome(r, 'b').status, 'measured', 'not pruned: the truth may be above the threshold');
      const r2 = await descend(g, new GroupMeasurer(1, g, vals, 1000), 0.044, { previous: [earlier] });
      assert.equal(outcome(r2, 'b').status, 'pruned');
    },
  );

  it('bounds each member by the whole value of its group, even once another member is measured alone', async () => {
    const g = counted(graphOf({ main: ['a', 'b', 'big'] }), () => 1);
    const earlier = earlierRun({ main: 1000, a: 120 }, [['a', 'b', 150]]);
    // 15 % - 12 % would be 3 %, but a difference of two measurements carries both their errors.
    const r = await descend(g, new GroupMeasurer(1, g, { main: 1000, a: 120, b: 30, big: 500 }, 1000), 0.1, {
      previous: [earlier],
    });
    assert.equal(outcome(r, 'b').status, 'measured');
    const r2 = await descend(g, new GroupMeasurer(1, g, { main: 1000, a: 120, b: 30, big: 500 }, 1000), 0.2, {
      previous: [earlier],
    });
    assert.equal(outcome(r2, 'b').status, 'pruned');
    assert.ok(Math.abs(outcome(r2, 'b').bound! - 0.15) < 1e-12, `bound ${outcome(r2, 'b').bound}`);
  });

  it('measures the member that blocked a group alone, and regroups the others', async () => {
    const graph = counted(graphOf(spec), (_p, c) => calls[c]!);
    const m = new GroupMeasurer(2, graph, values, 1000, true);
    const r = await descend(graph, m, 0.15);
    const asked = m.groupBatches.flat();
    assert.ok(asked.length > 0);
    const blockers = new Set(asked.map((g) => g[0]!));
    for (const f of blockers) {
      const laterGroups = m.groupBatches.slice(m.groupBatches.findIndex((b) => b.some((g) => g[0] === f)) + 1).flat();
      assert.ok(!laterGroups.some((g) => g.includes(f)), `${f} blocked a group, yet was grouped again`);
    }
    const regrouped = asked.some((g, i) =>
      g.slice(1).some((x) => asked.slice(i + 1).some((later) => later.includes(x))),
    );
    assert.ok(regrouped, 'a member that did not block its group was never tried in another one');
    for (const o of r.outcomes) assert.notEqual(o.status, 'pending', `${o.name} left undecided`);
    for (const f of ['hot', 'h1']) assert.equal(outcome(r, f).status, 'measured');
  });

  /** Start-up code that ran before the window (main's entry) opened: in the program, not measured. */
  const startup = (n: number): Spec => ({ _start: ['main', ...Array.from({ length: n }, (_, i) => `init${i}`)] });
  const fromMain = { roots: ['main'], spanning: ['main'] };

  it('without call counts, tests groups blindly and prunes the cold functions by them, without a warning', async () => {
    const graph = graphOf({ ...startup(4), ...spec });
    const m = new GroupMeasurer(2, graph, { ...values, _start: 1000 }, 1000);
    const r = await descend(graph, m, 0.15, { groups: true, ...fromMain });
    assert.ok(m.groupBatches.flat().length > 0, 'no group was measured');
    for (const f of ['hot', 'h1']) assert.equal(outcome(r, f).status, 'measured');
    for (const c of ['c1', 'c2', 'c3', 'c4', 'c5', 'c6', 's']) {
      const o = outcome(r, c);
      assert.ok(o.status === 'pruned' || o.status === 'measured', `${c}: ${o.status}`);
      if (o.status === 'pruned')
        assert.ok(values[c]! / 1000 <= o.bound! + 1e-12 && o.bound! < 0.15, `${c}: bound ${o.bound}`);
    }
    assert.deepEqual(r.warnings, []);
  });

  it('without call counts, splits a hot group of many cold functions instead of measuring each alone', async () => {
    // main calls 24 leaves; one is hot. Alone, 24 leaves take 6 runs of 4 slots.
    const leaves = Array.from({ length: 24 }, (_, i) => `l${i}`);
    const graph = graphOf({ ...startup(6), main: leaves });
    const vals: Record<string, number> = { _start: 1000, main: 1000, ...Object.fromEntries(leaves.map((l) => [l, 2])) };
    vals['l7'] = 900;
    const m = new GroupMeasurer(4, graph, vals, 1000);
    const r = await descend(graph, m, 0.05, fromMain);
    assert.equal(outcome(r, 'l7').status, 'measured');
    const pruned = leaves.filter((l) => outcome(r, l).status === 'pruned');
    assert.ok(pruned.length >= 16, `${pruned.length} leaves pruned`);
    assert.ok(r.runs <= 4, `${r.runs} runs`);
    assert.ok(m.groupBatches.flat().length > 0);
  });

  it('keeps recall at 100 % on random programs and takes fewer runs than one function per slot', async () => {
    let grouped = 0;
    let alone = 0;
    let groupsMeasured = 0;
    for (let seed = 1; seed <= 60; seed++) {
      const r0 = randomProgram(seed);
      const p = { ...r0, graph: r0.counted };
      for (const threshold of [0.01, 0.05, 0.2]) {
        for (const slots of [1, 3]) {
          const m = new GroupMeasurer(slots, p.graph, p.values, p.total);
          const r = await descend(p.graph, m, threshold);
          const hot = Object.keys(p.values).filter((f) => p.values[f]! / p.total >= threshold);
          for (const f of hot)
            assert.equal(
              outcome(r, f).status,
              'measured',
              `seed ${seed}, threshold ${threshold}, k=${slots}: ${f} missed`,
            );
          for (const o of r.outcomes)
            if (o.status === 'pruned')
              assert.ok(
                p.values[o.name]! / p.total <= o.bound! + 1e-12,
                `seed ${seed}: bound of ${o.name} below its value`,
              );
          assert.deepEqual(r.warnings, []);
          groupsMeasured += m.groupBatches.flat().length;
          grouped += r.runs;
          alone += (await descend(p.graph, new FakeMeasurer(slots, p.values, p.total), threshold)).runs;
        }
      }
    }
    assert.ok(groupsMeasured > 0, 'no group was ever measured');
    assert.ok(grouped < alone, `with groups ${grouped} runs, one function per slot ${alone}`);
  });

  it(
    'without call counts keeps recall at 100 % on random programs and never takes more runs ' +
      'than measuring everything',
    async () => {
      for (let seed = 1; seed <= 60; seed++) {
        const p = randomProgram(seed);
        for (const threshold of [0.01, 0.05, 0.2]) {
          for (const slots of [1, 3, 8]) {
            const m = new GroupMeasurer(slots, p.graph, p.values, p.total);
            const r = await descend(p.graph, m, threshold);
            const hot = Object.keys(p.values).filter((f) => p.values[f]! / p.total >= threshold);
            for (const f of hot)
              assert.equal(
                outcome(r, f).status,
                'measured',
                `seed ${seed}, threshold ${threshold}, k=${slots}: ${f} missed`,
              );
            for (const o of r.outcomes)
              if (o.status === 'pruned')
                assert.ok(
                  p.values[o.name]! / p.total <= o.bound! + 1e-12,
                  `seed ${seed}: bound of ${o.name} below its value`,
                );
            assert.deepEqual(r.warnings, []);
            const naive = Math.ceil(p.graph.functions.length / slots);
            assert.ok(
              r.runs <= naive,
              `seed ${seed}, threshold ${threshold}, k=${slots}: ${r.runs} runs, measuring everything ${naive}`,
            );
          }
        }
      }
    },
  );
});
