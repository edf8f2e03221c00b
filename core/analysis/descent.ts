import type { CallGraphResponse } from '../../common/dapCustom';
import {
  DescentError,
  Ledger,
  checkSlots,
  indexOptions,
  spanningOutcome,
  spanningSet,
  type AnalysisResult,
  type BatchMeasurer,
  type CommonOptions,
} from './analysisRun';
import { CallGraphIndex } from './callGraphIndex';
import { CountBounds } from './countBounds';
import { callCountEstimates, computeBounds } from './descentBounds';
import { GroupPlanner } from './groupPlanner';
import { MeasurerPool, type BatchJob } from './measurerPool';
import type { MonotoneMetric } from './metrics';
import type { AnalysisRecord, FunctionOutcome, ResultSet } from './resultSet';

export { DescentError, isAbort } from './analysisRun';
export type { AnalysisResult, BatchMeasurer, DescentProgress, MeasurerPlan } from './analysisRun';
export { callCountEstimates } from './descentBounds';
export { runFullProfile, runRoundRobin } from './fullProfile';
export { MeasurerPool, WorkerNotNeeded } from './measurerPool';
export type { PoolOptions } from './measurerPool';
export type { FullProfileOptions, RoundRobinOptions } from './fullProfile';

/**
 * Call-graph descent (docs/design.md, "Call-graph descent"), the exact full profile and the cyclic
 * round robin. Pure and deterministic: the program runs behind `BatchMeasurer`, one run per batch.
 * The rooms: what the three scenarios share (the measurer, the ledger) is in analysisRun.ts, the
 * bounds and call-count estimates in descentBounds.ts, the packing of groups in groupPlanner.ts, the
 * full profile and the round robin in fullProfile.ts; this file holds descent itself.
 *
 * The bound. For a monotone metric M and a function f, every instant f is on the stack one of its
 * callers p is on the stack directly below f's lowest frame, so M(f) <= sum over p of M(p). A
 * function's bound U(f) is that sum over its callers, each caller counted with its measured value
 * or, when not measured (pruned, refused, not yet run), with its own bound; a root's bound is the
 * whole run. Bounds are therefore valid upper bounds at every moment, not only once all callers are
 * measured, and a function is pruned as soon as U(f) < threshold: since a measurement never
 * exceeds the bound it replaces, a pruned function never turns hot, and every function whose
 * value reaches the threshold is measured (recall 100 %, given a complete call graph and exact
 * measurements). A measured value above its bound is reported: the graph misses a caller.
 *
 * Refinements, each one still an upper bound:
 * - recursion: self edges add nothing; for mutual recursion (a strongly connected component S)
 *   the lowest frame of S on the stack was called from outside S, so every member is bounded by the
 *   callers of S from outside;
 * - sibling residual: a callee s that only p calls ("private") runs inside p, and while f runs
 *   directly under p no private sibling of f is on the stack, unless frames of p nest (p recursive
 *   through others, or reachable from two roots, such as main and an interrupt handler). For other
 *   p: the part of M(p) that can hold f is M(p) minus its measured private siblings;
 * - groups: a group measurement G (the union of its members' activations, one slot) bounds each
 *   member by M(G), and callers known only through one group count once, with M(G).
 *
 * Groups (when the measurer can; with call counts they pack the functions that look cold, without
 * them they test blindly): see GroupPlanner. A dry run
 * (`BatchMeasurer.plan`) first keeps functions no run can measure out of the slots.
 *
 * Order. Each step takes the functions whose bound is at or above the threshold and whose callers
 * are all decided (measured, refused or pruned), so the frontier moves down from the roots level
 * by level, while slots remain; with `lookahead` (default) the slots left over go to the next
 * undecided functions, which costs no extra run and often saves one. Within that, `order: 'weight'`
 * (default) takes first the functions that can reach the most code, so that a heavy sibling is
 * measured before the light ones its value then bounds (fewer runs with one slot); `call-site` is
 * plain breadth-first order, callees in the order of the calls. Functions the measurer refuses are
 * kept as unmeasurable, and their callees are bounded by the refused function's own bound.
 */

export interface DescentOptions extends CommonOptions {
  metric: MonotoneMetric;
  /** Prune below this value of the metric (0.01 = 1 % for a share). */
  threshold: number;
  /** Result sets of earlier runs of the same program: their functions are not measured again. */
  previous?: readonly ResultSet[];
  /** Fill leftover slots with not-yet-decided functions (default true). */
  lookahead?: boolean;
  /** Subtract measured private siblings from a caller's share of a callee's bound (default true). */
  siblingResidual?: boolean;
  /**
   * Order within one breadth-first level: `weight` (default) takes first the functions that can
   * reach the most code, so a heavy sibling is measured before light ones it then bounds;
   * `call-site` keeps the order of the calls in the caller's code.
   */
  order?: 'weight' | 'call-site';
  /**
   * Measure functions that look cold together, one slot per group, and prune a whole group when
   * its union stays below the threshold (default: whenever the measurer can measure groups). Which
   * functions look cold comes from the call counts of a dynamic call graph (`count` on the edges);
   * without counts the groups are tested blindly: any open function may join one, and a group that
   * comes out hot is split until its hot members stand alone.
   */
  groups?: boolean;
  /** A group is filled until the estimates of its members add up to this fraction of the threshold (default 0.7). */
  packing?: number;
}

export async function runDescent(
  graph: CallGraphResponse,
  measurer: BatchMeasurer | MeasurerPool,
  options: DescentOptions,
): Promise<AnalysisResult> {
  const pool = MeasurerPool.of(measurer);
  if (!options.metric.monotone)
    throw new DescentError(`metric '${options.metric.id}' is not monotone and cannot drive pruning`);
  if (!(options.threshold >= 0))
    throw new DescentError(`the threshold must be a number >= 0 (got ${options.threshold})`);
  const slots = checkSlots(pool);
  // One counting run, where the measurer can make one (QEMU): functions whose code never ran are
  // pruned at once, the others bounded by what their closure executed, and indirect calls reach
  // only the functions the counts say were entered that way (CountBounds).
  const counted = await pool.executionCounts(options.signal);
  const counts = counted ? new CountBounds(graph, counted) : undefined;
  const roots = new Set(options.roots ?? []);
  const index = new CallGraphIndex(counts ? counts.withFallThrough(graph) : graph, {
    ...indexOptions(options),
    ...(counts && !options.indirectTargets ? { indirectTargets: counts.targets.filter((t) => !roots.has(t)) } : {}),
  });
  const ledger = new Ledger(options.engine, options.metric, index.reachable, spanningSet(graph, options.spanning));
  for (const rs of options.previous ?? []) ledger.add(rs, undefined);
  const firstRun = ledger.resultSets.length;
  const lookahead = options.lookahead ?? true;
  const residual = options.siblingResidual ?? true;
  const threshold = options.threshold;
  const batches: string[][] = [];
  const groupBatches: string[][][] = [];
  let cancelled = false;
  const queueOrder =
    (options.order ?? 'weight') === 'weight'
      ? [...index.bfsOrder].sort((a, b) => index.reachableBytes(b) - index.reachableBytes(a))
      : index.bfsOrder;
  let countsInMetric: { rs: ResultSet; bounds: ReadonlyMap<string, number> } | undefined;
  const givenBounds = (): ReadonlyMap<string, number> | undefined => {
    if (!counts) return undefined;
    const rs = ledger.resultSets.find((r) => r.run.totals[r.run.event] !== undefined);
    if (!rs) return counts.zeros();
    if (countsInMetric?.rs !== rs)
      countsInMetric = { rs, bounds: counts.inMetric(options.engine, options.metric, rs) ?? counts.zeros() };
    return countsInMetric.bounds;
  };
  // The counting run's call counts are exact for direct calls: they order the work where it ran.
  // More open work than one run measures: the other sessions start now, while the first run goes.
  if (counts && pool.capacity > 1 && index.bfsOrder.filter((f) => !ledger.isKnown(f) && counts.ran(f)).length > slots)
    pool.warm();
  const estimates = counts
    ? callCountEstimates(counts.withCallCounts(graph), index, ledger.spanning, counts.own())
    : callCountEstimates(graph, index, ledger.spanning);
  const wantGroups = (options.groups ?? true) && pool.groups === true;
  if (options.groups === true && pool.groups !== true)
    ledger.warnings.push('the measurer cannot measure groups: every function was measured alone');
  const plan = await pool.plan(
    index.bfsOrder.filter((f) => !ledger.isKnown(f)),
    options.signal,
  );
  for (const [f, reason] of plan?.unmeasurable ?? []) if (!ledger.isKnown(f)) ledger.refused.set(f, reason);
  // Without call counts groups test blindly, splitting the ones that come out hot; they pay where
  // few functions are hot. A step with blind groups may decide nothing, so one is taken only while
  // that run and measuring all that is open one by one after it stay within the runs measuring
  // everything takes: descent never takes more. With one slot there are none (a hot group costs a
  // whole run).
  const naive = Math.ceil(graph.functions.length / slots);
  const packer =
    wantGroups && (estimates || slots > 1)
      ? new GroupPlanner(index, estimates ?? new Map(), slots, threshold, options.packing ?? 0.7, plan?.groupable)
      : undefined;

  for (;;) {
    const U = computeBounds(index, ledger, residual, givenBounds());
    const open = (f: string): boolean => !ledger.isKnown(f) && !ledger.refused.has(f) && !(U.get(f)! < threshold);
    const decided = (f: string): boolean => !open(f);
    const ready = (f: string): boolean => {
      if (index.isRoot(f)) return true;
      const callers = index.inCycle(f) ? externalCallers(index, f) : index.callers(f);
      return callers.every(decided);
    };
    const candidates = queueOrder.filter(open);
    if (candidates.length === 0) break;
    // Up to one batch per worker, disjoint: the planner is asked again without what is planned.
    // Blind groups (no call counts) are planned only while every batch of the step deciding nothing,
    // and all that is open then measured one by one, still stays within the naive count.
    const step: Required<BatchJob>[] = [];
    const planned = new Set<string>();
    while (step.length < pool.capacity) {
      const left = candidates.filter((f) => !planned.has(f));
      if (left.length === 0) break;
      let batch: string[];
      let groups: string[][] = [];
      if (
        packer &&
        (estimates !== undefined || batches.length + step.length + 1 + Math.ceil(candidates.length / slots) <= naive)
      ) {
        ({ batch, groups } = packer.plan(left, U, ready, ledger));
      } else {
        const first = left.filter(ready);
        batch = [...first, ...(lookahead ? left.filter((f) => !ready(f)) : [])].slice(0, slots);
      }
      // Never more runs than measuring everything: a job that would leave more open functions than
      // the runs left can measure one per slot measures the next open functions, a full batch of
      // singles, instead; a full batch keeps that budget, so once taken it holds to the end. Groups
      // packed by call counts count as deciding their members (they are estimated cold; one that
      // comes out hot is split within the budget that is left), blind ones as deciding nothing.
      // The budget counts measured runs. The counting run (one run without the debugger, reported
      // among the runs) is left out of it: counted in, it forced full batches one step earlier and
      // made descents with counts take more measured runs than the same descent without them.
      const used = batches.length + step.length;
      const grouped = estimates !== undefined ? groups.reduce((n, g) => n + g.length, 0) : 0;
      const after = left.length - batch.length - grouped;
      if (batch.length + groups.length > 0 && used + 1 + Math.ceil(after / slots) > naive) {
        batch = left.slice(0, slots);
        groups = [];
      }
      if (batch.length + groups.length === 0) break;
      step.push({ batch, groups });
      for (const f of [...batch, ...groups.flat()]) planned.add(f);
    }
    if (step.length === 0)
      throw new DescentError(
        'no function is ready to measure although some are undecided (internal error: the call ' +
          'graph order is inconsistent)',
      );
    const finished = await pool.run(step, options.signal, (job, rs, worker) => {
      const { batch, groups } = step[job]!;
      ledger.add(rs, batch, groups);
      batches.push([...batch]);
      groupBatches.push(groups.map((g) => [...g]));
      packer?.learn(ledger, ledger.resultSets.length - 1);
      for (const f of batch) {
        const m = ledger.measured.get(f);
        const b = U.get(f)!;
        const fromCounts = givenBounds()?.get(f);
        if (m && fromCounts !== undefined && m.value > fromCounts * (1 + 1e-9) + 1e-12) {
          ledger.warnings.push(
            `'${f}' measured ${m.value} above the bound its instruction counts give (${fromCounts}): ` +
              `the counting run executed less than this one (does the program's path depend on time?); ` +
              `pruning by counts may have missed functions`,
          );
        } else if (m && m.value > b * (1 + 1e-9) + 1e-12) {
          ledger.warnings.push(
            `'${f}' measured ${m.value} above its bound ${b}: the static call graph misses one of its ` +
              `callers (an indirect call, or code the disassembly could not follow); pruning near it may ` +
              `have missed functions`,
          );
        }
      }
      options.onProgress?.({
        run: batches.length,
        batch,
        ...(groups.length ? { groups } : {}),
        open: index.bfsOrder.filter(open).length,
        ...(pool.capacity > 1 ? { worker: worker + 1 } : {}),
      });
    });
    if (!finished) {
      cancelled = true;
      break;
    }
  }

  const U = computeBounds(index, ledger, residual, givenBounds());
  const outcomes = graph.functions.map((fn): FunctionOutcome => {
    const name = fn.name;
    const depth = index.depth.get(name);
    if (depth === undefined) return { name, status: 'unreached' };
    const bound = U.get(name)!;
    if (ledger.spanning.has(name)) return spanningOutcome(name, ledger, depth);
    const m = ledger.measured.get(name);
    if (m)
      return {
        name,
        status: 'measured',
        value: m.value,
        bound,
        resultSet: m.resultSet,
        depth,
        ...(m.incomplete !== undefined ? { reason: `the value may be low: ${m.incomplete}` } : {}),
      };
    const reason = ledger.refused.get(name);
    if (reason !== undefined) return { name, status: 'unmeasurable', bound, reason, depth };
    if (counts && !counts.ran(name) && bound === 0)
      return { name, status: 'pruned', bound, depth, reason: 'its code never ran in the counting run' };
    return { name, status: bound < threshold ? 'pruned' : 'pending', bound, depth };
  });
  return {
    scenario: 'descent',
    metric: options.metric.id,
    threshold,
    roots: [...index.roots],
    runs: ledger.resultSets.length - firstRun,
    batches,
    ...(groupBatches.some((g) => g.length > 0) ? { groupBatches } : {}),
    resultSets: ledger.resultSets,
    outcomes,
    cancelled,
    warnings: ledger.warnings,
    ...(counted && counts
      ? { counted: { method: counted.method, ran: counts.ranCount, functions: graph.functions.length } }
      : {}),
  };
}

function externalCallers(index: CallGraphIndex, f: string): string[] {
  const id = index.component(f);
  const out = new Set<string>();
  for (const m of index.components[id]!) for (const p of index.callers(m)) if (index.component(p) !== id) out.add(p);
  return [...out];
}

/** What gets saved with the result sets, to re-render or continue the analysis. */
export function analysisRecord(result: AnalysisResult, graph?: CallGraphResponse): AnalysisRecord {
  return {
    scenario: result.scenario,
    metric: result.metric,
    ...(result.threshold !== undefined ? { threshold: result.threshold } : {}),
    roots: result.roots,
    runs: result.runs,
    cancelled: result.cancelled,
    outcomes: result.outcomes,
    ...(graph ? { callGraph: graph } : {}),
    ...(result.counted ? { counted: result.counted } : {}),
  };
}

/**
 * Default roots when the run starts at `start` (the profiler stops at main): `start` itself and
 * every function nobody calls that cannot reach `start` (interrupt handlers, other entry points).
 * Startup code that calls `start` ran before the window opened, so its measurement would be empty
 * and would wrongly bound `start` by zero.
 */
export function rootsForStart(graph: CallGraphResponse, start: string): string[] {
  const index = new CallGraphIndex(graph);
  if (!graph.functions.some((f) => f.name === start))
    throw new DescentError(`the program has no function '${start}' to start from`);
  const reachesStart = new Set<string>([start]);
  // Walk callers upward from start.
  const queue = [start];
  const callersOf = new Map<string, string[]>();
  for (const e of graph.edges) {
    if (e.caller === e.callee) continue;
    const list = callersOf.get(e.callee) ?? [];
    list.push(e.caller);
    callersOf.set(e.callee, list);
  }
  for (let i = 0; i < queue.length; i++) {
    for (const p of callersOf.get(queue[i]!) ?? []) {
      if (reachesStart.has(p)) continue;
      reachesStart.add(p);
      queue.push(p);
    }
  }
  return [start, ...index.roots.filter((r) => !reachesStart.has(r))];
}
