import assert from 'node:assert/strict';
import type { CallGraphResponse } from '../../common/dapCustom';
import { CallGraphIndex } from '../../core/analysis/callGraphIndex';
import type { ExecutionCounts } from '../../core/analysis/countBounds';
import { runDescent, type AnalysisResult, type BatchMeasurer, type DescentOptions } from '../../core/analysis/descent';
import { MetricsEngine } from '../../core/analysis/metrics';
import type { FunctionOutcome, ResultSet } from '../../core/analysis/resultSet';

// Synthetic call graphs and a measurer that knows each function's exact inclusive count and the
// run's total, so every pruning decision of a descent can be checked by hand
// (test/unit/descent*.test.ts).

export type Spec = Record<string, string[]>;

/** `{ main: ['a', 'b'], a: ['c'] }`: edges in call-site order; functions listed as keys or callees. */
export function graphOf(spec: Spec, indirectCallers: string[] = []): CallGraphResponse {
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
    edges: Object.entries(spec).flatMap(([caller, callees]) =>
      callees.map((callee) => ({ caller, callee, kind: 'call' as const, sites: [site++] })),
    ),
    indirectCallers,
  };
}

export class FakeMeasurer implements BatchMeasurer {
  readonly batches: string[][] = [];
  onMeasure?: (batch: readonly string[]) => void;
  /** What `executionCounts` answers: a counting run's counts, or none (the default). */
  counts: ExecutionCounts | undefined;

  async executionCounts(): Promise<ExecutionCounts | undefined> {
    return this.counts;
  }

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
      run: {
        kind: 'synthetic',
        event: 'instructions',
        totals: { instructions: this.total },
        method: 'synthetic, exact',
      },
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

export const engine = new MetricsEngine();
export const share = engine.monotone('share');

export function descend(
  graph: CallGraphResponse,
  m: FakeMeasurer,
  threshold: number,
  extra: Partial<DescentOptions> = {},
): Promise<AnalysisResult> {
  return runDescent(graph, m, { engine, metric: share, threshold, ...extra });
}

export function outcome(r: AnalysisResult, name: string): FunctionOutcome {
  const o = r.outcomes.find((x) => x.name === name);
  assert.ok(o, `no outcome for ${name}`);
  return o;
}

export function statuses(r: AnalysisResult): Record<string, string> {
  return Object.fromEntries(r.outcomes.map((o) => [o.name, o.status]));
}

/** A random call DAG with per-call costs; inclusive = calls x (own + sum of callees' per call). */
/** The program's call counts are on `counted`'s edges, and each function's size follows its own cost. */
export function randomProgram(seed: number): {
  graph: CallGraphResponse;
  counted: CallGraphResponse;
  values: Record<string, number>;
  total: number;
  roots: string[];
  /** What a counting run of the program gives (the adapter's `cyclelens/executionCounts`). */
  executed: ExecutionCounts;
} {
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
  for (let i = n - 1; i >= 0; i--)
    perCall.set(
      names[i]!,
      own[i]! + perCallEdges.get(names[i]!)!.reduce((acc, [c, k]) => acc + k * perCall.get(c)!, 0),
    );
  const graph = graphOf(spec);
  const index = new CallGraphIndex(graph);
  const calls = new Map<string, number>(names.map((x) => [x, index.roots.includes(x) ? 1 : 0]));
  for (let i = 0; i < n; i++)
    for (const [c, k] of perCallEdges.get(names[i]!)!) calls.set(c, calls.get(c)! + calls.get(names[i]!)! * k);
  const values = Object.fromEntries(names.map((x) => [x, calls.get(x)! * perCall.get(x)!]));
  const total = index.roots.reduce((acc, r) => acc + values[r]!, 0);
  const along = new Map(
    names.flatMap((caller) =>
      perCallEdges.get(caller)!.map(([c, times]) => [`${caller}>${c}`, times * calls.get(caller)!] as const),
    ),
  );
  const counted: CallGraphResponse = {
    ...graph,
    functions: graph.functions.map((f, i) => ({ ...f, size: 2 * own[i]! })),
    edges: graph.edges.map((e) => ({ ...e, count: along.get(`${e.caller}>${e.callee}`) ?? 0 })),
  };
  const executed = executionCounts({
    functions: names
      .map((name, i) => ({ name, instructions: calls.get(name)! * own[i]!, entries: calls.get(name)! }))
      .filter((f) => f.instructions > 0),
    calls: graph.edges
      .filter((e) => e.caller !== e.callee)
      .map((e) => ({
        caller: e.caller,
        callee: e.callee,
        kind: e.kind,
        count: along.get(`${e.caller}>${e.callee}`) ?? 0,
      }))
      .filter((c) => c.count > 0),
    total,
    method: 'synthetic, exact',
  });
  return { graph, counted, values, total, roots: [...index.roots], executed };
}

/** A counting run's answer with what a program without handlers, lost code or units but instructions has. */
export function executionCounts(
  parts: Pick<ExecutionCounts, 'functions' | 'calls' | 'total' | 'method'> & Partial<ExecutionCounts>,
): ExecutionCounts {
  return {
    counted: true,
    outside: 0,
    handlers: [],
    incomplete: [],
    fallThrough: [],
    units: { instructions: { instructionsPerUnit: 1, quantised: false } },
    elapsedMs: 0,
    ...parts,
  };
}
