import type { CallGraphResponse } from '../../common/dapCustom';
import { CallGraphIndex } from './callGraphIndex';
import {
  DescentError,
  Ledger,
  checkSlots,
  indexOptions,
  measureBatch,
  spanningOutcome,
  spanningSet,
  type AnalysisResult,
  type BatchMeasurer,
  type CommonOptions,
} from './analysisRun';
import { MeasurerPool } from './measurerPool';
import type { MetricDefinition } from './metrics';
import type { FunctionOutcome } from './resultSet';

// The scenarios that prune nothing: the exact full profile (every function once) and the cyclic
// round robin (every function once per round, for programs that never end).

/** Every function of the graph: reachable ones in breadth-first order, then the rest by address. */
function allFunctionsInOrder(graph: CallGraphResponse, index: CallGraphIndex): string[] {
  const rest = graph.functions
    .filter((f) => !index.reachable.has(f.name))
    .sort((a, b) => a.address - b.address)
    .map((f) => f.name);
  return [...index.bfsOrder, ...rest];
}

function chunk<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export interface FullProfileOptions extends CommonOptions {
  /** The value recorded per function (any metric; nothing is pruned). */
  metric: MetricDefinition;
}

/**
 * The exact full profile: every function measured, in batches of `slots`, ceil(F / k) runs. The
 * batches are independent: a pool runs several at once, and they reach the ledger in plan order.
 */
export async function runFullProfile(
  graph: CallGraphResponse,
  measurer: BatchMeasurer | MeasurerPool,
  options: FullProfileOptions,
): Promise<AnalysisResult> {
  const pool = MeasurerPool.of(measurer);
  const slots = checkSlots(pool);
  const index = new CallGraphIndex(graph, indexOptions(options));
  const spanning = spanningSet(graph, options.spanning);
  const order = allFunctionsInOrder(graph, index).filter((f) => !spanning.has(f));
  const ledger = new Ledger(options.engine, options.metric, new Set(order), spanning, false);
  const batches: string[][] = [];
  const plan = chunk(order, slots);
  let done = 0;
  const parallel = pool.capacity > 1;
  const cancelled = !(await pool.run(
    plan.map((batch) => ({ batch })),
    options.signal,
    (job, rs, worker) => {
      const batch = plan[job]!;
      ledger.add(rs, batch);
      batches.push(batch);
      done += batch.length;
      options.onProgress?.({
        run: batches.length,
        batch,
        open: order.length - done,
        ...(parallel ? { worker: worker + 1 } : {}),
      });
    },
  ));
  const outcomes = graph.functions.map((fn): FunctionOutcome => {
    const name = fn.name;
    const depth = index.depth.get(name);
    const at = depth !== undefined ? { depth } : {};
    if (spanning.has(name)) return spanningOutcome(name, ledger, depth);
    const m = ledger.measured.get(name);
    if (m) return { name, status: 'measured', value: m.value, resultSet: m.resultSet, ...at };
    const reason = ledger.refused.get(name);
    if (reason !== undefined) return { name, status: 'unmeasurable', reason, ...at };
    return { name, status: 'pending', ...at };
  });
  return unprunedResult('full-profile', options.metric, index, batches, ledger, outcomes, cancelled);
}

export interface RoundRobinOptions extends CommonOptions {
  metric: MetricDefinition;
  /** Full rounds over all batches; default: until the signal aborts. */
  rounds?: number;
  /** Restrict to these functions (default: every function of the graph). */
  functions?: readonly string[];
}

/**
 * The cyclic scenario: a program that never ends is measured in windows between passes of a safe
 * stop address (the measurer reconfigures there and dwells), batches taken round robin. Each window
 * is its own result set, so a function's value is the mean of its per-window values, each formed
 * inside its window.
 */
export async function runRoundRobin(
  graph: CallGraphResponse,
  measurer: BatchMeasurer,
  options: RoundRobinOptions,
): Promise<AnalysisResult> {
  const slots = checkSlots(measurer);
  if (options.rounds === undefined && !options.signal)
    throw new DescentError('a round robin without a number of rounds needs an AbortSignal to end it');
  const index = new CallGraphIndex(graph, indexOptions(options));
  const spanning = spanningSet(graph, options.spanning);
  const order = (options.functions ? [...options.functions] : allFunctionsInOrder(graph, index)).filter(
    (f) => !spanning.has(f),
  );
  const known = new Set(graph.functions.map((f) => f.name));
  for (const f of order)
    if (!known.has(f)) throw new DescentError(`'${f}' is not a function of the program's call graph`);
  const ledger = new Ledger(options.engine, options.metric, new Set(order), spanning, false);
  const values = new Map<string, number[]>();
  const last = new Map<string, number>();
  const batches: string[][] = [];
  const plan = chunk(order, slots);
  let cancelled = false;
  outer: for (let round = 0; options.rounds === undefined || round < options.rounds; round++) {
    for (const batch of plan) {
      if (!(await measureBatch(measurer, batch, ledger, options.signal))) {
        cancelled = true;
        break outer;
      }
      batches.push(batch);
      const at = ledger.resultSets.length - 1;
      for (const f of batch) {
        const m = ledger.measured.get(f);
        if (m?.resultSet !== at) continue;
        const list = values.get(f) ?? [];
        list.push(m.value);
        values.set(f, list);
        last.set(f, at);
      }
      options.onProgress?.({ run: batches.length, batch, open: 0 });
    }
  }
  const inOrder = new Set(order);
  const outcomes = graph.functions.map((fn): FunctionOutcome => {
    const name = fn.name;
    const depth = index.depth.get(name);
    const at = depth !== undefined ? { depth } : {};
    if (spanning.has(name)) return spanningOutcome(name, ledger, depth);
    if (!inOrder.has(name)) return { name, status: 'unreached', ...at };
    const list = values.get(name);
    if (list && list.length > 0) {
      return {
        name,
        status: 'measured',
        value: list.reduce((s, v) => s + v, 0) / list.length,
        windows: list.length,
        resultSet: last.get(name)!,
        ...at,
      };
    }
    const reason = ledger.refused.get(name);
    if (reason !== undefined) return { name, status: 'unmeasurable', reason, ...at };
    return { name, status: 'pending', ...at };
  });
  return unprunedResult('round-robin', options.metric, index, batches, ledger, outcomes, cancelled);
}

/** The analysis result of a scenario that prunes nothing: one run per batch. */
function unprunedResult(
  scenario: 'full-profile' | 'round-robin',
  metric: MetricDefinition,
  index: CallGraphIndex,
  batches: string[][],
  ledger: Ledger,
  outcomes: FunctionOutcome[],
  cancelled: boolean,
): AnalysisResult {
  return {
    scenario,
    metric: metric.id,
    roots: [...index.roots],
    runs: batches.length,
    batches,
    resultSets: ledger.resultSets,
    outcomes,
    cancelled,
    warnings: ledger.warnings,
  };
}
