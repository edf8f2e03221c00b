import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CallGraphIndex } from '../../core/analysis/callGraphIndex';
import {
  DescentError,
  rootsForStart,
  runDescent,
  runFullProfile,
  runRoundRobin,
  type BatchMeasurer,
} from '../../core/analysis/descent';
import type { MonotoneMetric } from '../../core/analysis/metrics';
import {
  FakeMeasurer,
  descend,
  engine,
  graphOf,
  outcome,
  share,
  statuses,
  randomProgram,
  type Spec,
} from '../support/syntheticDescent';

// Descent on synthetic call graphs (test/support/syntheticDescent.ts): the measurer knows each
// function's exact inclusive count and the run's total, so every pruning decision below can be
// checked by hand (values that may be low and group measurements: descentGroups.test.ts).

describe('descent bounds and pruning', () => {
  // main 1000 = a 600 + b 300 + c 5 + own; a: a1 500, a2 50; b: b1 290; c: c1 4.
  const spec: Spec = { main: ['a', 'b', 'c'], a: ['a1', 'a2'], b: ['b1'], c: ['c1'] };
  const values = { main: 1000, a: 600, b: 300, c: 5, a1: 500, a2: 50, b1: 290, c1: 4 };

  it('measures breadth-first one level at a time and prunes below the threshold', async () => {
    const m = new FakeMeasurer(1, values, 1000);
    const r = await descend(graphOf(spec), m, 0.01, { lookahead: false, siblingResidual: false, order: 'call-site' });
    assert.deepEqual(m.batches, [['main'], ['a'], ['b'], ['c'], ['a1'], ['a2'], ['b1']]);
    assert.equal(outcome(r, 'c1').status, 'pruned');
    assert.equal(outcome(r, 'c1').bound, 0.005, "c1's bound is its only caller's share");
    assert.equal(outcome(r, 'a1').value, 0.5);
    assert.equal(outcome(r, 'main').bound, 1, "a root's bound is the whole run");
    assert.equal(r.runs, 7);
  });

  it('prunes a whole subtree from one small caller, and keeps every pruned function with its bound', async () => {
    const m = new FakeMeasurer(1, values, 1000);
    const r = await descend(graphOf(spec), m, 0.1, { lookahead: false, siblingResidual: false });
    assert.deepEqual(statuses(r), {
      main: 'measured',
      a: 'measured',
      b: 'measured',
      c: 'measured',
      a1: 'measured',
      a2: 'measured',
      b1: 'measured',
      c1: 'pruned',
    });
    const r2 = await descend(graphOf(spec), new FakeMeasurer(1, values, 1000), 0.4, {
      lookahead: false,
      siblingResidual: false,
    });
    assert.equal(outcome(r2, 'b1').status, 'pruned');
    assert.equal(outcome(r2, 'b1').bound, 0.3);
    assert.equal(outcome(r2, 'a2').status, 'measured', 'a2 is bounded by a (60%), so it is measured');
  });

  it('subtracts measured private siblings from the caller (sibling residual)', async () => {
    // After main's heavy callee a (600) is measured, b and c can hold at most 400 together.
    const m = new FakeMeasurer(1, { main: 1000, a: 995, b: 3, c: 1, b1: 2, a1: 1 }, 1000);
    const r = await descend(graphOf({ main: ['a', 'b', 'c'], b: ['b1'], a: ['a1'] }), m, 0.01, { lookahead: false });
    assert.deepEqual(m.batches, [['main'], ['a'], ['a1']]);
    assert.equal(outcome(r, 'b').status, 'pruned');
    assert.equal(outcome(r, 'c').status, 'pruned');
    assert.ok(Math.abs(outcome(r, 'b').bound! - 0.005) < 1e-12, 'b <= main - a');
    assert.equal(outcome(r, 'a1').status, 'measured', 'a1 is bounded by a, not by its siblings');
  });

  it('fills spare slots with the next functions in breadth-first order (lookahead)', async () => {
    const strict = new FakeMeasurer(4, values, 1000);
    // One level a run would take three runs where measuring everything takes two: the run budget
    // (descentBudget.test.ts) fills the first one.
    await descend(graphOf(spec), strict, 0.01, { lookahead: false });
    assert.deepEqual(strict.batches, [
      ['main', 'a', 'b', 'c'],
      ['a1', 'a2', 'b1'],
    ]);
    const ahead = new FakeMeasurer(4, values, 1000);
    const r = await descend(graphOf(spec), ahead, 0.01);
    assert.deepEqual(ahead.batches, [
      ['main', 'a', 'b', 'c'],
      ['a1', 'a2', 'b1'],
    ]);
    assert.equal(outcome(r, 'c1').status, 'pruned');
  });

  it('measures the sibling that can reach the most code first, so its value bounds the others', async () => {
    // light is called first, but heavy reaches more code: measured first, it leaves light 1%.
    const g = graphOf({ main: ['light', 'heavy'], heavy: ['h1', 'h2', 'h3'] });
    const values = { main: 1000, light: 5, heavy: 985, h1: 500, h2: 300, h3: 150 };
    const bySite = new FakeMeasurer(1, values, 1000);
    await descend(g, bySite, 0.02, { order: 'call-site' });
    assert.deepEqual(bySite.batches.slice(0, 3), [['main'], ['light'], ['heavy']]);
    const byWeight = new FakeMeasurer(1, values, 1000);
    const r = await descend(g, byWeight, 0.02);
    assert.deepEqual(byWeight.batches.slice(0, 2), [['main'], ['heavy']]);
    assert.equal(outcome(r, 'light').status, 'pruned');
    assert.equal(byWeight.batches.length, bySite.batches.length - 1);
  });

  it('is deterministic', async () => {
    const a = await descend(graphOf(spec), new FakeMeasurer(2, values, 1000), 0.01);
    const b = await descend(graphOf(spec), new FakeMeasurer(2, values, 1000), 0.01);
    assert.deepEqual(a.batches, b.batches);
    assert.deepEqual(a.outcomes, b.outcomes);
  });
});

describe('descent on harder graphs', () => {
  it('bounds a shared callee by the sum over all its callers, and waits for all of them', async () => {
    // s is called by p (2%) and by q, which mid (0.9%) bounds: s <= 2% + 0.9%.
    const g = graphOf({ main: ['p', 'mid'], mid: ['q'], p: ['s'], q: ['s'] });
    const m = new FakeMeasurer(1, { main: 1000, p: 20, mid: 9, q: 8, s: 15 }, 1000);
    const r = await descend(g, m, 0.01, { lookahead: false, siblingResidual: false });
    assert.equal(outcome(r, 'q').status, 'pruned');
    assert.equal(outcome(r, 's').status, 'measured');
    assert.ok(Math.abs(outcome(r, 's').bound! - 0.029) < 1e-12);
    // s is taken only once both callers are decided (p measured, q pruned after mid).
    const at = (f: string): number => m.batches.findIndex((b) => b.includes(f));
    assert.ok(at('s') > at('p') && at('s') > at('mid'));
    // Both callers small: s is pruned with the summed bound.
    const m2 = new FakeMeasurer(1, { main: 1000, p: 4, mid: 5, q: 3, s: 3 }, 1000);
    const r2 = await descend(g, m2, 0.01, { siblingResidual: false });
    assert.equal(outcome(r2, 's').status, 'pruned');
    assert.ok(Math.abs(outcome(r2, 's').bound! - 0.009) < 1e-12);
  });

  it('ignores self recursion and bounds mutual recursion by the callers from outside the cycle', async () => {
    const g = graphOf({ main: ['qs', 'x'], qs: ['qs', 'part'], x: ['y'], y: ['x', 'leaf'] });
    const index = new CallGraphIndex(g);
    assert.equal(index.inCycle('qs'), false, 'a self edge is not a cycle');
    assert.equal(index.inCycle('x'), true);
    assert.deepEqual(index.callers('qs'), ['main']);
    const m = new FakeMeasurer(2, { main: 1000, qs: 900, part: 700, x: 95, y: 80, leaf: 5 }, 1000);
    const r = await descend(g, m, 0.01, { siblingResidual: false });
    assert.equal(outcome(r, 'part').bound, 0.9);
    // y's only caller is x (in its cycle), and the cycle's outside caller is main: y <= min(main, x).
    assert.equal(outcome(r, 'y').status, 'measured');
    assert.ok(outcome(r, 'y').bound! <= 0.095 + 1e-12);
    assert.equal(outcome(r, 'leaf').status, 'measured', 'leaf <= y = 8%');
    assert.equal(outcome(r, 'leaf').bound, 0.08);
  });

  it('descends from several roots: an interrupt handler is a root with the whole run as bound', async () => {
    const g = graphOf({ main: ['work', 'p'], isr: ['tick', 'p'], p: ['s1', 's2'] });
    const index = new CallGraphIndex(g);
    assert.deepEqual(index.roots, ['main', 'isr']);
    assert.equal(index.rootsReaching('p'), 2);
    const m = new FakeMeasurer(1, { main: 1000, isr: 50, work: 850, tick: 10, p: 120, s1: 110, s2: 4 }, 1000);
    const r = await descend(g, m, 0.02, { lookahead: false });
    assert.equal(outcome(r, 'isr').bound, 1);
    assert.equal(outcome(r, 'tick').status, 'measured');
    // p is reachable from main and from isr, so its frames may nest (isr -> p over main -> p -> s1):
    // s2 is bounded by all of p, not by p minus s1.
    assert.equal(outcome(r, 's2').status, 'measured');
    assert.equal(outcome(r, 's2').bound, 0.12);
    // main's and isr's residuals do apply (each is reachable from itself only): p <= (main - work) + (isr - tick).
    assert.ok(Math.abs(outcome(r, 'p').bound! - (0.15 + 0.04)) < 1e-12);
  });

  it('keeps a refused function as unmeasurable and bounds its callees by its own bound', async () => {
    const g = graphOf({ main: ['tiny', 'other'], tiny: ['leaf'] });
    const m = new FakeMeasurer(1, { main: 1000, other: 100, leaf: 850 }, 1000, { tiny: 'too short to patch: 2 bytes' });
    const r = await descend(g, m, 0.05, { lookahead: false });
    const tiny = outcome(r, 'tiny');
    assert.equal(tiny.status, 'unmeasurable');
    assert.match(tiny.reason!, /too short/);
    assert.equal(outcome(r, 'leaf').status, 'measured', 'leaf is bounded by main, through tiny');
    assert.equal(outcome(r, 'leaf').value, 0.85);
  });

  it('never drops a function the measurer says nothing about', async () => {
    const g = graphOf({ main: ['a'] });
    const silent: BatchMeasurer = {
      slots: 2,
      measure: async (batch) => ({
        id: 'x',
        createdAt: '',
        program: { executable: 'x' },
        run: { kind: 'synthetic', event: 'instructions', totals: { instructions: 10 }, method: 'silent' },
        measurements: batch
          .filter((b) => b === 'main')
          .map((name) => ({ name, inclusive: { instructions: 10 }, calls: 1 })),
        refused: [],
      }),
    };
    const r = await runDescent(g, silent, { engine, metric: share, threshold: 0.01 });
    assert.equal(outcome(r, 'a').status, 'unmeasurable');
    assert.equal(r.warnings.length, 1);
  });

  it('stops after the current run when cancelled, keeping what it has', async () => {
    const controller = new AbortController();
    const g = graphOf({ main: ['a', 'b'], a: ['c'], b: ['d'] });
    const m = new FakeMeasurer(1, { main: 100, a: 50, b: 40, c: 30, d: 20 }, 100);
    m.onMeasure = (batch) => {
      if (batch.includes('a')) controller.abort();
    };
    const r = await descend(g, m, 0.01, { signal: controller.signal, lookahead: false });
    assert.equal(r.cancelled, true);
    assert.equal(r.runs, 2);
    assert.equal(outcome(r, 'a').status, 'measured');
    assert.equal(outcome(r, 'b').status, 'pending');
  });

  it('treats every function as a possible target of an indirect call unless told otherwise', async () => {
    const g = graphOf({ main: ['dispatch', 'small'], dispatch: [], small: ['handler'] }, ['dispatch']);
    const values = { main: 1000, dispatch: 900, small: 2, handler: 850 };
    const sound = await descend(g, new FakeMeasurer(1, values, 1000), 0.01);
    assert.equal(outcome(sound, 'handler').status, 'measured', 'handler may be reached through dispatch');
    const narrowed = await descend(g, new FakeMeasurer(1, values, 1000), 0.01, { indirectTargets: [] });
    assert.equal(outcome(narrowed, 'handler').status, 'pruned');
  });

  it('gives spanning functions the whole run without measuring them', async () => {
    const g = graphOf({ reset: ['main'], main: ['a'], isr: [] });
    assert.deepEqual(rootsForStart(g, 'main'), ['main', 'isr']);
    const m = new FakeMeasurer(4, { a: 700, isr: 3 }, 1000);
    const r = await descend(g, m, 0.01, { roots: rootsForStart(g, 'main'), spanning: ['main'] });
    assert.ok(m.batches.every((b) => !b.includes('main')));
    assert.equal(outcome(r, 'main').value, 1);
    assert.equal(outcome(r, 'main').spansWindow, true);
    assert.equal(outcome(r, 'reset').status, 'unreached');
  });

  it('rejects a metric that is not monotone, and bad options', async () => {
    assert.throws(() => engine.monotone('perCall.instructions'), /not monotone/);
    const fake = { ...engine.definition('perCall.instructions')! } as unknown as MonotoneMetric;
    await assert.rejects(
      runDescent(graphOf({ main: [] }), new FakeMeasurer(1, {}, 1), { engine, metric: fake, threshold: 0.01 }),
      DescentError,
    );
    await assert.rejects(descend(graphOf({ main: [] }), new FakeMeasurer(0, {}, 1), 0.01), /slots/);
    await assert.rejects(
      descend(graphOf({ main: [] }), new FakeMeasurer(1, {}, 1), 0.01, { roots: ['nope'] }),
      /not a function/,
    );
  });

  it('continues from earlier result sets without measuring their functions again', async () => {
    const g = graphOf({ main: ['a', 'b'], a: ['c'] });
    const values = { main: 100, a: 60, b: 30, c: 50 };
    const first = new FakeMeasurer(2, values, 100);
    const controller = new AbortController();
    first.onMeasure = () => controller.abort();
    const partial = await descend(g, first, 0.01, { signal: controller.signal });
    assert.equal(partial.cancelled, true);
    const rest = new FakeMeasurer(2, values, 100);
    const done = await descend(g, rest, 0.01, { previous: partial.resultSets });
    assert.ok(rest.batches.flat().every((f) => !first.batches.flat().includes(f)));
    assert.equal(done.outcomes.filter((o) => o.status === 'measured').length, 4);
  });
});

describe('descent recall on random call graphs', () => {
  it('finds every function at or above the threshold (recall 100%) with every option', async () => {
    for (let seed = 1; seed <= 60; seed++) {
      const p = randomProgram(seed);
      for (const threshold of [0.01, 0.05, 0.2]) {
        for (const slots of [1, 3]) {
          for (const [lookahead, siblingResidual, order] of [
            [true, true, 'weight'],
            [true, true, 'call-site'],
            [false, false, 'call-site'],
            [false, true, 'weight'],
            [true, false, 'weight'],
          ] as const) {
            const r = await descend(p.graph, new FakeMeasurer(slots, p.values, p.total), threshold, {
              lookahead,
              siblingResidual,
              order,
            });
            const hot = Object.keys(p.values).filter((f) => p.values[f]! / p.total >= threshold);
            for (const f of hot)
              assert.equal(
                outcome(r, f).status,
                'measured',
                `seed ${seed}, threshold ${threshold}, k=${slots}, lookahead ${lookahead}, ` +
                  `residual ${siblingResidual}, order ${order}: ${f} missed`,
              );
            for (const o of r.outcomes)
              if (o.status === 'pruned')
                assert.ok(p.values[o.name]! / p.total <= o.bound! + 1e-12, `bound of ${o.name} below its value`);
            assert.deepEqual(r.warnings, []);
          }
        }
      }
    }
  });
});

describe('exact full profile and cyclic round robin', () => {
  const spec: Spec = { main: ['a', 'b'], a: ['c'], isr: [] };
  const values = { main: 100, a: 60, b: 30, c: 50, isr: 2 };

  it('measures every function once in ceil(F/k) runs', async () => {
    const m = new FakeMeasurer(2, values, 100);
    const r = await runFullProfile(graphOf(spec), m, { engine, metric: engine.definition('share')! });
    assert.equal(r.runs, 3);
    assert.deepEqual(m.batches, [['main', 'isr'], ['a', 'b'], ['c']]);
    assert.ok(r.outcomes.every((o) => o.status === 'measured'));
    // Any metric may be recorded when nothing is pruned, even one the whole run has no value of.
    const perCall = await runFullProfile(graphOf(spec), new FakeMeasurer(5, values, 100), {
      engine,
      metric: engine.definition('perCall.instructions')!,
    });
    assert.equal(outcome(perCall, 'a').value, 60);
  });

  it('measures round robin for a number of rounds and averages the per-window shares', async () => {
    let window = 0;
    const windows: BatchMeasurer = {
      slots: 3,
      measure: async (batch) => {
        window++;
        const total = window % 2 ? 100 : 200; // windows differ in length; shares do not
        return {
          id: `w${window}`,
          createdAt: '',
          program: { executable: 'cyclic.elf' },
          run: { kind: 'cyclic', event: 'cycles', totals: { cycles: total }, method: 'synthetic windows' },
          measurements: batch.map((name) => ({
            name,
            inclusive: { cycles: (values[name as keyof typeof values] * total) / 100 },
            calls: 1,
          })),
          refused: [],
        };
      },
    };
    const r = await runRoundRobin(graphOf(spec), windows, {
      engine,
      metric: engine.definition('share')!,
      rounds: 2,
      spanning: ['main'],
    });
    assert.equal(r.runs, 4);
    assert.deepEqual(r.batches, [['isr', 'a', 'b'], ['c'], ['isr', 'a', 'b'], ['c']]);
    assert.equal(outcome(r, 'a').windows, 2);
    assert.ok(Math.abs(outcome(r, 'a').value! - 0.6) < 1e-12);
    assert.equal(outcome(r, 'main').spansWindow, true);
  });

  it('runs round robin until the signal ends it', async () => {
    const controller = new AbortController();
    const m = new FakeMeasurer(2, values, 100);
    m.onMeasure = () => {
      if (m.batches.length === 5) controller.abort();
    };
    const r = await runRoundRobin(graphOf(spec), m, {
      engine,
      metric: engine.definition('share')!,
      signal: controller.signal,
    });
    assert.equal(r.runs, 5);
    assert.equal(r.cancelled, true);
    await assert.rejects(
      runRoundRobin(graphOf(spec), m, { engine, metric: engine.definition('share')! }),
      /AbortSignal/,
    );
  });
});
