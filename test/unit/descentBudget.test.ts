import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MeasurerPlan } from '../../core/analysis/descent';
import { FakeMeasurer, descend, graphOf, outcome, randomProgram } from '../support/syntheticDescent';

// A descent never takes more runs than measuring everything (ceil(F / k), the counting run
// included), and never spends a run on a function every run refuses.

/** A measurer whose dry run refuses some functions before any run (the function every run ends at). */
class PlanningMeasurer extends FakeMeasurer {
  constructor(
    slots: number,
    values: Record<string, number>,
    total: number,
    private readonly always: Record<string, string>,
  ) {
    super(slots, values, total, always);
  }

  async plan(functions: readonly string[]): Promise<MeasurerPlan> {
    return {
      groupable: new Set(functions),
      unmeasurable: new Map(functions.filter((f) => f in this.always).map((f) => [f, this.always[f]!])),
    };
  }
}

describe('descent run budget', () => {
  it('takes at most ceil(F/k) runs on a deep chain, where one level per run would take F', async () => {
    // main -> a -> b -> ... -> h, every one hot: breadth-first without lookahead decides one a run.
    const names = ['main', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
    const spec = Object.fromEntries(names.map((n, i) => [n, i + 1 < names.length ? [names[i + 1]!] : []]));
    const values = Object.fromEntries(names.map((n, i) => [n, 1000 - 100 * i]));
    const m = new FakeMeasurer(4, values, 1000);
    const r = await descend(graphOf(spec), m, 0.01, { lookahead: false, spanning: ['main'] });
    assert.ok(r.runs <= Math.ceil(names.length / 4), `${r.runs} runs, naive ${Math.ceil(names.length / 4)}`);
    for (const n of names.slice(1)) assert.equal(outcome(r, n).status, 'measured', n);
  });

  it('stays within naive on random programs, with and without counts, every option, recall kept', async () => {
    for (let seed = 1; seed <= 40; seed++) {
      const p = randomProgram(seed);
      for (const threshold of [0.01, 0.05]) {
        for (const slots of [2, 4, 8]) {
          for (const lookahead of [true, false]) {
            for (const withCounts of [false, true]) {
              const m = new FakeMeasurer(slots, p.values, p.total);
              if (withCounts) m.counts = p.executed;
              const r = await descend(withCounts ? p.counted : p.graph, m, threshold, { lookahead });
              const naive = Math.ceil(p.graph.functions.length / slots);
              const runs = r.runs + (withCounts ? 1 : 0);
              const what =
                `seed ${seed}, threshold ${threshold}, k=${slots}, ` + `lookahead ${lookahead}, counts ${withCounts}`;
              // The counting run is a run: where it prunes nothing (every function ran) it is the one
              // run over naive, and the runs after it are full batches.
              const ran = p.executed.functions.filter((f) => f.instructions > 0).length;
              const limit = withCounts ? Math.max(naive, 1 + Math.ceil(ran / slots)) : naive;
              assert.ok(runs <= limit, `${what}: ${runs} runs > ${limit} (naive ${naive})`);
              for (const f of Object.keys(p.values))
                if (p.values[f]! / p.total >= threshold)
                  assert.equal(outcome(r, f).status, 'measured', `${what}: ${f}`);
            }
          }
        }
      }
    }
  });

  it('spends no run on a function every run refuses (the end of the program)', async () => {
    const spec = { main: ['work', 'exit'], work: ['leaf'], leaf: [], exit: [] };
    const values = { main: 1000, work: 900, leaf: 500, exit: 0 };
    const why = 'every run ends at its entry (the end of the program), so none of it runs inside the window';
    const m = new PlanningMeasurer(1, values, 1000, { exit: why });
    const r = await descend(graphOf(spec), m, 0.01, { spanning: ['main'] });
    assert.ok(!m.batches.flat().includes('exit'), `exit was measured in ${JSON.stringify(m.batches)}`);
    assert.equal(outcome(r, 'exit').status, 'unmeasurable');
    assert.equal(outcome(r, 'exit').reason, why);
    assert.equal(r.runs, 2);
  });
});
