import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CountBounds, type ExecutionCounts } from '../../core/analysis/countBounds';
import type { ResultSet } from '../../core/analysis/resultSet';
import {
  FakeMeasurer,
  descend,
  engine,
  executionCounts,
  graphOf,
  outcome,
  randomProgram,
  share,
} from '../support/syntheticDescent';

// Bounds from a counting run (core/analysis/countBounds.ts): worked by hand on a small program, then
// checked against exact values on random ones, alone and driving descent.

/** Counts of a counting run: `self` per function, `entries` where they differ from 1, calls along edges. */
function countsOf(
  self: Record<string, number>,
  calls: Array<[string, string, number]>,
  extra: Partial<ExecutionCounts> & { entries?: Record<string, number> } = {},
): ExecutionCounts {
  const { entries = {}, ...rest } = extra;
  const total = Object.values(self).reduce((a, b) => a + b, 0) + (rest.outside ?? 0);
  return executionCounts({
    functions: Object.entries(self).map(([name, instructions]) => ({
      name,
      instructions,
      entries: entries[name] ?? 1,
    })),
    calls: calls.map(([caller, callee, count]) => ({ caller, callee, kind: 'call' as const, count })),
    total,
    method: 'by hand',
    ...rest,
  });
}

function runWithTotal(event: string, total: number): ResultSet {
  return {
    id: 'rs',
    createdAt: '2026-01-01T00:00:00Z',
    program: { executable: 'p.elf' },
    run: { kind: 'single-pass', event, totals: { [event]: total }, method: 'by hand' },
    measurements: [],
    refused: [],
  };
}

describe('bounds from instruction counts', () => {
  // main calls a and b, both call leaf; cb is only ever reached through a pointer from disp; z never runs.
  const graph = graphOf({ main: ['a', 'b', 'disp'], a: ['leaf'], b: ['leaf'], disp: ['helper'], z: [] }, ['disp']);
  graph.functions.push({ name: 'cb', address: 0x5000, size: 8 });
  const self = { main: 10, a: 20, b: 30, leaf: 100, disp: 5, helper: 7, cb: 40 };
  const calls: Array<[string, string, number]> = [
    ['main', 'a', 1],
    ['main', 'b', 1],
    ['main', 'disp', 1],
    ['a', 'leaf', 2],
    ['b', 'leaf', 3],
    ['disp', 'helper', 1],
  ];
  const entries = { leaf: 5, cb: 4, main: 1 };

  it('sums what the closure ran, and bounds by 0 what never ran', () => {
    const c = new CountBounds(graph, countsOf(self, calls, { entries, entry: 'main', outside: 3 }));
    assert.equal(c.instructions('leaf'), 100 + 3, 'a leaf: its own count, and code outside every function');
    assert.equal(c.instructions('a'), 20 + 100 + 3, 'a caller: its own and its callees');
    assert.equal(c.instructions('z'), 0, 'never ran');
    assert.equal(c.ran('z'), false);
    assert.equal(c.ranCount, 7);
    assert.deepEqual([...c.zeros().keys()], ['z']);
  });

  it("takes in an indirect caller's targets: only the functions entered more often than their direct calls say", () => {
    const c = new CountBounds(graph, countsOf(self, calls, { entries, entry: 'main' }));
    // cb: 4 entries, no direct call; leaf: 5 entries, 2 + 3 direct calls; main: the program's entry.
    assert.deepEqual(c.targets, ['cb']);
    assert.equal(c.instructions('disp'), 5 + 7 + 40);
    const withoutEntry = new CountBounds(graph, countsOf(self, calls, { entries }));
    assert.deepEqual(
      [...withoutEntry.targets].sort(),
      ['cb', 'main'],
      'entered once without a call, main could be a target too',
    );
    const looping = new CountBounds(graph, countsOf(self, calls, { entries: { ...entries, leaf: 6 }, entry: 'main' }));
    assert.ok(
      looping.targets.includes('leaf'),
      'one entry more than its calls (a loop back to its entry): a possible target',
    );
  });

  it('gives the whole run where the disassembly lost a function, and adds twice the handlers', () => {
    const lost = new CountBounds(graph, countsOf(self, calls, { entries, entry: 'main', incomplete: ['b'] }));
    assert.equal(lost.instructions('b'), lost.counts.total);
    assert.equal(lost.instructions('main'), lost.counts.total);
    assert.equal(lost.instructions('a'), 120, "a's closure does not hold b");
    const interrupted = new CountBounds(
      graph,
      countsOf(self, calls, { entries, entry: 'main', handlers: ['cb', 'never'] }),
    );
    assert.equal(
      interrupted.asynchronous,
      80,
      'one more invocation of each handler that ran, at most as long as all of them',
    );
    assert.equal(interrupted.instructions('leaf'), 100 + 80);
  });

  it('runs on into the next function, and over symbols nested in its range', () => {
    const g = graphOf({ main: ['r12', 'r10'] });
    const c = new CountBounds(
      g,
      countsOf({ main: 5, r12: 2, r10: 8, r4: 6 }, [['main', 'r12', 1]], {
        entries: { r10: 2, r4: 2 },
        fallThrough: [
          { caller: 'r12', callee: 'r10' },
          { caller: 'r10', callee: 'r4' },
        ],
      }),
    );
    assert.equal(c.instructions('r12'), 2 + 8 + 6);
    const nested = new CountBounds(g, {
      ...countsOf({ main: 5, r12: 2, r10: 8 }, []),
      functions: [{ name: 'r12', instructions: 2, inRange: 10, entries: 1 }],
    });
    assert.equal(nested.instructions('r12'), 10, 'what ran anywhere in its range');
  });

  it('converts to shares, widening a quantised unit by a unit per entry and the total by one', () => {
    const c = new CountBounds(
      graph,
      countsOf(self, calls, { entries, entry: 'main', units: { ticks: { instructionsPerUnit: 40, quantised: true } } }),
    );
    const shares = c.inMetric(engine, share, runWithTotal('ticks', 101))!;
    assert.equal(shares.get('leaf'), (100 / 40 + 5 + 1) / 100);
    assert.equal(shares.get('z'), 0);
    assert.equal(
      c.inMetric(engine, share, runWithTotal('cycles', 1000)),
      undefined,
      'no ratio for cycles: no bound but the zeros',
    );
    const exact = new CountBounds(graph, countsOf(self, calls, { entries, entry: 'main' }));
    assert.equal(exact.inMetric(engine, share, runWithTotal('instructions', 200))!.get('a'), 120 / 200);
  });

  it('never lies below the truth, on random programs', () => {
    for (let seed = 1; seed <= 60; seed++) {
      const p = randomProgram(seed);
      const c = new CountBounds(p.graph, p.executed);
      for (const f of p.graph.functions)
        assert.ok(
          c.instructions(f.name) >= p.values[f.name]!,
          `seed ${seed}: ${f.name} ${c.instructions(f.name)} < ${p.values[f.name]}`,
        );
    }
  });
});

describe('descent with instruction counts', () => {
  it(
    'prunes what never ran without measuring it, and finds every function at the threshold in ' + 'fewer runs',
    async () => {
      let fewer = 0;
      for (let seed = 1; seed <= 40; seed++) {
        const p = randomProgram(seed);
        for (const threshold of [0.05, 0.01]) {
          const plain = new FakeMeasurer(4, p.values, p.total);
          const without = await descend(p.counted, plain, threshold, { roots: p.roots });
          const counting = new FakeMeasurer(4, p.values, p.total);
          counting.counts = p.executed;
          const r = await descend(p.counted, counting, threshold, { roots: p.roots });
          assert.ok(r.counted, 'the result says the counts bounded it');
          for (const f of p.graph.functions) {
            const o = outcome(r, f.name);
            const truth = p.values[f.name]! / p.total;
            if (truth >= threshold)
              assert.equal(o.status, 'measured', `seed ${seed}: ${f.name} at ${truth} is ${o.status}`);
            if (o.bound !== undefined)
              assert.ok(o.bound >= truth - 1e-12, `seed ${seed}: ${f.name} bound ${o.bound} < ${truth}`);
            if (p.values[f.name] === 0 && o.status !== 'unreached') {
              assert.ok(
                !counting.batches.flat().includes(f.name),
                `seed ${seed}: ${f.name} never ran but was measured`,
              );
              assert.equal(o.reason, 'its code never ran in the counting run');
            }
          }
          assert.ok(
            r.runs <= without.runs,
            `seed ${seed} at ${threshold}: ${r.runs} runs with counts, ${without.runs} without`,
          );
          if (r.runs < without.runs) fewer++;
        }
      }
      assert.ok(fewer >= 10, `counts saved runs in ${fewer} of 80 descents`);
    },
  );
});
