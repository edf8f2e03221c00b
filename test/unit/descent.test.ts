import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CallGraphResponse } from '../../common/dapCustom';
import { CallGraphIndex } from '../../core/analysis/callGraphIndex';
import {
  DescentError,
  rootsForStart,
  runDescent,
  runFullProfile,
  runRoundRobin,
  type AnalysisResult,
  type BatchMeasurer,
  type DescentOptions,
} from '../../core/analysis/descent';
import { MetricsEngine, type MonotoneMetric } from '../../core/analysis/metrics';
import type { FunctionOutcome, ResultSet } from '../../core/analysis/resultSet';

// Descent on synthetic call graphs: the measurer knows each function's exact inclusive count and the
// run's total, so every pruning decision below can be checked by hand.

type Spec = Record<string, string[]>;

/** `{ main: ['a', 'b'], a: ['c'] }`: edges in call-site order; functions listed as keys or callees. */
function graphOf(spec: Spec, indirectCallers: string[] = []): CallGraphResponse {
  const names: string[] = [];
  const add = (n: string): void => {
    if (!names.includes(n)) names.push(n);
  };
  for (const [caller, callees] of Object.entries(spec)) {
    add(caller);
    callees.forEach(add);
  }
  let site = 0x1000;
  return {
    functions: names.map((name, i) => ({ name, address: 0x100 * (i + 1), size: 16 })),
    edges: Object.entries(spec).flatMap(([caller, callees]) => callees.map((callee) => ({ caller, callee, kind: 'call' as const, sites: [site++] }))),
    indirectCallers,
  };
}

class FakeMeasurer implements BatchMeasurer {
  readonly batches: string[][] = [];
  onMeasure?: (batch: readonly string[]) => void;

  constructor(
    readonly slots: number,
    private readonly values: Record<string, number>,
    private readonly total: number,
    private readonly refuse: Record<string, string> = {},
  ) {}

  async measure(batch: readonly string[], signal?: AbortSignal): Promise<ResultSet> {
    if (signal?.aborted) throw Object.assign(new Error('aborted'), { name: 'AbortError' });
    this.batches.push([...batch]);
    this.onMeasure?.(batch);
    return {
      id: `rs${this.batches.length}`,
      createdAt: '2024-01-01T00:00:00Z',
      program: { executable: 'synthetic.elf' },
      run: { kind: 'synthetic', event: 'instructions', totals: { instructions: this.total }, method: 'synthetic, exact' },
      measurements: batch
        .filter((f) => !(f in this.refuse))
        .map((name) => {
          const v = this.values[name];
          assert.ok(v !== undefined, `no value for ${name}`);
          return { name, inclusive: { instructions: v }, calls: 1 };
        }),
      refused: batch.filter((f) => f in this.refuse).map((name) => ({ name, reason: this.refuse[name]! })),
    };
  }
}

const engine = new MetricsEngine();
const share = engine.monotone('share');

function descend(graph: CallGraphResponse, m: FakeMeasurer, threshold: number, extra: Partial<DescentOptions> = {}): Promise<AnalysisResult> {
  return runDescent(graph, m, { engine, metric: share, threshold, ...extra });
}

function outcome(r: AnalysisResult, name: string): FunctionOutcome {
  const o = r.outcomes.find((x) => x.name === name);
  assert.ok(o, `no outcome for ${name}`);
  return o;
}

function statuses(r: AnalysisResult): Record<string, string> {
  return Object.fromEntries(r.outcomes.map((o) => [o.name, o.status]));
}

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
    const r2 = await descend(graphOf(spec), new FakeMeasurer(1, values, 1000), 0.4, { lookahead: false, siblingResidual: false });
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
    await descend(graphOf(spec), strict, 0.01, { lookahead: false });
    assert.deepEqual(strict.batches, [['main'], ['a', 'b', 'c'], ['a1', 'a2', 'b1']]);
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
        measurements: batch.filter((b) => b === 'main').map((name) => ({ name, inclusive: { instructions: 10 }, calls: 1 })),
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
    await assert.rejects(runDescent(graphOf({ main: [] }), new FakeMeasurer(1, {}, 1), { engine, metric: fake, threshold: 0.01 }), DescentError);
    await assert.rejects(descend(graphOf({ main: [] }), new FakeMeasurer(0, {}, 1), 0.01), /slots/);
    await assert.rejects(descend(graphOf({ main: [] }), new FakeMeasurer(1, {}, 1), 0.01, { roots: ['nope'] }), /not a function/);
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

/** A random call DAG with per-call costs; inclusive = calls x (own + sum of callees' per call). */
/** The program's call counts are on `counted`'s edges, and each function's size follows its own cost. */
function randomProgram(seed: number): { graph: CallGraphResponse; counted: CallGraphResponse; values: Record<string, number>; total: number; roots: string[] } {
  let s = seed;
  const rnd = (): number => {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    return s / 0x7fffffff;
  };
  const n = 8 + Math.floor(rnd() * 30);
  const names = Array.from({ length: n }, (_, i) => `f${i}`);
  const spec: Spec = {};
  const perCallEdges = new Map<string, Array<[string, number]>>();
  for (let i = 0; i < n; i++) {
    const callees: string[] = [];
    const list: Array<[string, number]> = [];
    for (let j = i + 1; j < n; j++) {
      if (rnd() < 2.5 / (n - i)) {
        callees.push(names[j]!);
        list.push([names[j]!, 1 + Math.floor(rnd() * 5)]);
      }
    }
    if (rnd() < 0.1) callees.push(names[i]!); // self recursion: no effect on counts here
    spec[names[i]!] = callees;
    perCallEdges.set(names[i]!, list);
  }
  const own = names.map(() => 1 + Math.floor(rnd() ** 3 * 200));
  const perCall = new Map<string, number>();
  for (let i = n - 1; i >= 0; i--) perCall.set(names[i]!, own[i]! + perCallEdges.get(names[i]!)!.reduce((acc, [c, k]) => acc + k * perCall.get(c)!, 0));
  const graph = graphOf(spec);
  const index = new CallGraphIndex(graph);
  const calls = new Map<string, number>(names.map((x) => [x, index.roots.includes(x) ? 1 : 0]));
  for (let i = 0; i < n; i++) for (const [c, k] of perCallEdges.get(names[i]!)!) calls.set(c, calls.get(c)! + calls.get(names[i]!)! * k);
  const values = Object.fromEntries(names.map((x) => [x, calls.get(x)! * perCall.get(x)!]));
  const total = index.roots.reduce((acc, r) => acc + values[r]!, 0);
  const along = new Map(names.flatMap((caller) => perCallEdges.get(caller)!.map(([c, times]) => [`${caller}>${c}`, times * calls.get(caller)!] as const)));
  const counted: CallGraphResponse = {
    ...graph,
    functions: graph.functions.map((f, i) => ({ ...f, size: 2 * own[i]! })),
    edges: graph.edges.map((e) => ({ ...e, count: along.get(`${e.caller}>${e.callee}`) ?? 0 })),
  };
  return { graph, counted, values, total, roots: [...index.roots] };
}

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
            const r = await descend(p.graph, new FakeMeasurer(slots, p.values, p.total), threshold, { lookahead, siblingResidual, order });
            const hot = Object.keys(p.values).filter((f) => p.values[f]! / p.total >= threshold);
            for (const f of hot)
              assert.equal(
                outcome(r, f).status,
                'measured',
                `seed ${seed}, threshold ${threshold}, k=${slots}, lookahead ${lookahead}, residual ${siblingResidual}, order ${order}: ${f} missed`,
              );
            for (const o of r.outcomes)
              if (o.status === 'pruned') assert.ok(p.values[o.name]! / p.total <= o.bound! + 1e-12, `bound of ${o.name} below its value`);
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
    const perCall = await runFullProfile(graphOf(spec), new FakeMeasurer(5, values, 100), { engine, metric: engine.definition('perCall.instructions')! });
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
          measurements: batch.map((name) => ({ name, inclusive: { cycles: (values[name as keyof typeof values] * total) / 100 }, calls: 1 })),
          refused: [],
        };
      },
    };
    const r = await runRoundRobin(graphOf(spec), windows, { engine, metric: engine.definition('share')!, rounds: 2, spanning: ['main'] });
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
    const r = await runRoundRobin(graphOf(spec), m, { engine, metric: engine.definition('share')!, signal: controller.signal });
    assert.equal(r.runs, 5);
    assert.equal(r.cancelled, true);
    await assert.rejects(runRoundRobin(graphOf(spec), m, { engine, metric: engine.definition('share')! }), /AbortSignal/);
  });
});

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
          ...(name === 'cs' ? { incomplete: 'measured at its call sites; a tail call from other could not be rewritten' } : {}),
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

    override async measure(batch: readonly string[], signal?: AbortSignal, groups: readonly (readonly string[])[] = []): Promise<ResultSet> {
      assert.ok(batch.length + groups.length <= this.slots, `${batch.length} + ${groups.length} measurements in ${this.slots} slots`);
      const index = new CallGraphIndex(this.graph);
      for (const g of groups) {
        assert.ok(g.length >= 2, 'a group has at least two members');
        for (const a of g) for (const b of g) if (a !== b) assert.ok(!index.related(a, b), `${a} and ${b} call one another, yet share a group`);
      }
      this.groupBatches.push(groups.map((g) => [...g]));
      const rs = await super.measure(batch, signal);
      // A refused group names its first member as the one that blocked it.
      if (this.refuseGroups)
        return {
          ...rs,
          refused: [...rs.refused, ...groups.map((g) => ({ name: g.join(' + '), reason: 'synthetic refusal', members: [...g], blockedBy: g[0]! }))],
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
      groups: groups.map(([a, b, v]) => ({ name: `${a} + ${b}`, members: [a, b], inclusive: { instructions: v }, calls: 2 })),
      refused: [],
    };
  }

  /** Adds call counts to every edge, as a dynamic call graph has them. */
  function counted(graph: CallGraphResponse, count: (caller: string, callee: string) => number): CallGraphResponse {
    return { ...graph, edges: graph.edges.map((e) => ({ ...e, count: count(e.caller, e.callee) })) };
  }

  // main 1000: hot 700 (h1 600), cold callees c1..c6 of main 10..40 each, s called by c1 and c2.
  const spec: Spec = { main: ['hot', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6'], hot: ['h1'], c1: ['s'], c2: ['s'] };
  const values: Record<string, number> = { main: 1000, hot: 700, h1: 600, c1: 40, c2: 30, c3: 20, c4: 20, c5: 10, c6: 10, s: 25 };
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

  it('bounds each member by the whole value of its group, even once another member is measured alone', async () => {
    const g = counted(graphOf({ main: ['a', 'b', 'big'] }), () => 1);
    const earlier = earlierRun({ main: 1000, a: 120 }, [['a', 'b', 150]]);
    // 15 % - 12 % would be 3 %, but a difference of two measurements carries both their errors.
    const r = await descend(g, new GroupMeasurer(1, g, { main: 1000, a: 120, b: 30, big: 500 }, 1000), 0.1, { previous: [earlier] });
    assert.equal(outcome(r, 'b').status, 'measured');
    const r2 = await descend(g, new GroupMeasurer(1, g, { main: 1000, a: 120, b: 30, big: 500 }, 1000), 0.2, { previous: [earlier] });
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
    const regrouped = asked.some((g, i) => g.slice(1).some((x) => asked.slice(i + 1).some((later) => later.includes(x))));
    assert.ok(regrouped, 'a member that did not block its group was never tried in another one');
    for (const o of r.outcomes) assert.notEqual(o.status, 'pending', `${o.name} left undecided`);
    for (const f of ['hot', 'h1']) assert.equal(outcome(r, f).status, 'measured');
  });

  it('measures one function per slot when the graph has no call counts', async () => {
    const graph = graphOf(spec);
    const m = new GroupMeasurer(2, graph, values, 1000);
    const r = await descend(graph, m, 0.15, { groups: true });
    assert.deepEqual(m.groupBatches.flat(), []);
    assert.ok(
      r.warnings.some((w) => /call counts/.test(w)),
      r.warnings.join('; '),
    );
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
          for (const f of hot) assert.equal(outcome(r, f).status, 'measured', `seed ${seed}, threshold ${threshold}, k=${slots}: ${f} missed`);
          for (const o of r.outcomes)
            if (o.status === 'pruned') assert.ok(p.values[o.name]! / p.total <= o.bound! + 1e-12, `seed ${seed}: bound of ${o.name} below its value`);
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
});
