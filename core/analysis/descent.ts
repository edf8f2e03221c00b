import type { CallGraphEdge, CallGraphResponse } from '../../common/dapCustom';
import { CallGraphIndex, type GraphIndexOptions } from './callGraphIndex';
import type { MetricDefinition, MetricsEngine, MonotoneMetric } from './metrics';
import { groupRawValues, rawValues, wholeRunValues, type AnalysisRecord, type FunctionOutcome, type ResultSet, type Scenario } from './resultSet';

/**
 * Call-graph descent (docs/design.md, "Call-graph descent"), the exact full profile and the cyclic
 * round robin. Pure and deterministic: the program runs behind `BatchMeasurer`, one run per batch.
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
 * Groups (when the measurer can, and the graph has call counts): see GroupPlanner. A dry run
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

export interface BatchMeasurer {
  /** How many functions (or groups) one run measures. */
  readonly slots: number;
  /**
   * True when one slot can measure a group: the union of several functions' activations (one
   * record shared by several entry patches). Descent then prunes cold functions by the group.
   */
  readonly groups?: boolean;
  /**
   * A dry run over these functions: the ones a group may hold (others are measured alone), and the
   * ones no run can measure, with the reason (descent keeps them as unmeasurable without spending a
   * slot). Everything is groupable and measurable when absent.
   */
  plan?(functions: readonly string[], signal?: AbortSignal): Promise<MeasurerPlan>;
  /**
   * Measures the batch in one run of the program and returns that run's result set. Every batch
   * function must come back measured or refused with a reason, every group in `groups` measured
   * (ResultSet.groups) or refused with its members named. `batch.length + groups.length` never
   * exceeds `slots`. Throws an AbortError when aborted.
   */
  measure(batch: readonly string[], signal?: AbortSignal, groups?: readonly (readonly string[])[]): Promise<ResultSet>;
}

export interface MeasurerPlan {
  groupable: ReadonlySet<string>;
  unmeasurable: ReadonlyMap<string, string>;
}

export interface AnalysisResult {
  scenario: Scenario;
  metric: string;
  threshold?: number;
  roots: string[];
  /** Program runs the analysis took (result sets loaded from earlier not counted). */
  runs: number;
  batches: string[][];
  /** The groups each run measured (descent with group measurements; empty lists otherwise). */
  groupBatches?: string[][][];
  /** Result sets in order: earlier ones passed in first, then one per run. */
  resultSets: ResultSet[];
  outcomes: FunctionOutcome[];
  cancelled: boolean;
  /** Things the user should know: bounds exceeded, functions the measurer returned nothing for. */
  warnings: string[];
}

export interface DescentProgress {
  run: number;
  batch: readonly string[];
  groups?: readonly (readonly string[])[];
  /** Functions still to decide after this step. */
  open: number;
}

interface CommonOptions {
  engine: MetricsEngine;
  roots?: readonly string[];
  /**
   * Functions on the stack for the whole window, such as `main` when every run starts stopped in
   * main and ends before main returns: an injected measurement would never see them complete, and
   * their value is the whole run's by definition. They take no slot.
   */
  spanning?: readonly string[];
  indirectTargets?: readonly string[];
  signal?: AbortSignal;
  onProgress?(p: DescentProgress): void;
}

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
   * without counts every open function looks hot and is measured alone.
   */
  groups?: boolean;
  /** A group is filled until the estimates of its members add up to this fraction of the threshold (default 0.7). */
  packing?: number;
}

export class DescentError extends Error {
  override name = 'DescentError';
}

export function isAbort(err: unknown): boolean {
  return err instanceof Error && (err.name === 'AbortError' || (err as { code?: string }).code === 'ABORT_ERR');
}

interface Measured {
  value: number;
  resultSet: number;
  /** Why the value may be too low (entries the payload missed); then it cannot bound callees. */
  incomplete?: string;
}

/** A group measurement's value: the union of its members' activations (an upper bound of each). */
interface MeasuredGroup {
  members: readonly string[];
  value: number;
  resultSet: number;
}

/** Measurements, refusals and the whole-run value accumulated over runs. */
class Ledger {
  readonly resultSets: ResultSet[] = [];
  readonly measured = new Map<string, Measured>();
  readonly refused = new Map<string, string>();
  readonly groups: MeasuredGroup[] = [];
  /** Functions a group measurement was refused for: they are measured alone from then on. */
  readonly groupRefused = new Map<string, string>();
  readonly warnings: string[] = [];
  whole: number | undefined;

  constructor(
    private readonly engine: MetricsEngine,
    private readonly metric: MetricDefinition,
    private readonly known: ReadonlySet<string>,
    readonly spanning: ReadonlySet<string> = new Set(),
    /** Descent bounds roots by the whole run: without it no pruning decision can be made. */
    private readonly needsWhole = true,
  ) {}

  /** A measured value, or the whole run's for a spanning function (once a run gave it). */
  value(name: string): number | undefined {
    if (this.spanning.has(name)) return this.whole;
    return this.measured.get(name)?.value;
  }

  /** A value that bounds the callees from above: not one that may have missed entries. */
  upperValue(name: string): number | undefined {
    const m = this.measured.get(name);
    return m?.incomplete !== undefined ? undefined : this.value(name);
  }

  /** Measured, or spanning: its value is known (or will be after the first run). */
  isKnown(name: string): boolean {
    return this.spanning.has(name) || this.measured.has(name);
  }

  /** Records a result set; `asked` are the functions it had to answer for, `askedGroups` the groups. */
  add(rs: ResultSet, asked: readonly string[] | undefined, askedGroups: readonly (readonly string[])[] = []): void {
    const index = this.resultSets.length;
    this.resultSets.push(rs);
    const whole = this.engine.value(this.metric.id, wholeRunValues(rs));
    if (whole === undefined && this.needsWhole) {
      throw new DescentError(`run ${index + 1} (${rs.run.method}) has no total of '${rs.run.event}' for the metric '${this.metric.id}' (${this.metric.label}); the analysis needs the run's total to form shares`);
    }
    if (whole !== undefined) this.whole = Math.max(this.whole ?? 0, whole);
    this.addGroups(rs, index, askedGroups);
    // An earlier result set answers for what it measured and what it refused.
    const names = asked ?? [...rs.measurements, ...rs.refused.filter((r) => !r.members)].map((m) => m.name).filter((n) => this.known.has(n));
    for (const name of names) {
      const refusal = rs.refused.find((r) => r.name === name);
      const raw = rawValues(rs, name);
      if (raw) {
        const value = this.engine.value(this.metric.id, raw);
        if (value !== undefined) {
          const incomplete = rs.measurements.find((m) => m.name === name)?.incomplete;
          this.measured.set(name, { value, resultSet: index, ...(incomplete !== undefined ? { incomplete } : {}) });
          this.refused.delete(name);
          continue;
        }
        this.refuse(name, `it was measured, but '${this.metric.id}' cannot be formed from what was counted (${Object.keys(raw).join(', ')})`);
      } else if (refusal) {
        this.refuse(name, refusal.reason);
      } else if (asked) {
        this.refuse(name, 'the measurer returned neither a result nor a reason for it');
        this.warnings.push(`run ${index + 1}: no result and no reason for '${name}'; it is kept as unmeasurable`);
      }
    }
  }

  private addGroups(rs: ResultSet, index: number, asked: readonly (readonly string[])[]): void {
    const answered = new Set<string>();
    for (const g of rs.groups ?? []) {
      answered.add(groupKey(g.members));
      if (!g.members.every((m) => this.known.has(m))) continue;
      const value = this.engine.value(this.metric.id, groupRawValues(rs, g));
      // A value that may be low bounds nothing.
      if (value === undefined || g.incomplete !== undefined) {
        for (const m of g.members) this.groupRefused.set(m, g.incomplete ?? `'${this.metric.id}' cannot be formed for the group ${g.name}`);
        continue;
      }
      this.groups.push({ members: [...g.members], value, resultSet: index });
    }
    for (const r of rs.refused) {
      if (!r.members) continue;
      answered.add(groupKey(r.members));
      // One member blocked the group: only it is measured alone from now on. A group refused as a
      // whole (too large for the reserved memory) is split on the next step.
      if (r.blockedBy !== undefined && r.members.includes(r.blockedBy)) this.groupRefused.set(r.blockedBy, r.reason);
    }
    for (const members of asked) {
      if (answered.has(groupKey(members))) continue;
      for (const m of members) this.groupRefused.set(m, 'the measurer returned neither a result nor a reason for its group');
      this.warnings.push(`run ${index + 1}: no result and no reason for the group ${members.join(' + ')}; its members are measured alone`);
    }
  }

  private refuse(name: string, reason: string): void {
    if (!this.measured.has(name)) this.refused.set(name, reason);
  }
}

/** Upper bounds of every reachable function from the current ledger. */
function computeBounds(index: CallGraphIndex, ledger: Ledger, residual: boolean): Map<string, number> {
  const whole = ledger.whole ?? Number.POSITIVE_INFINITY;
  const U = new Map<string, number>();
  // A caller counts with a value that bounds from above; a sibling is subtracted with any measured
  // value (one that may be low subtracts too little, which keeps the bound).
  const known = (p: string): number => ledger.upperValue(p) ?? U.get(p) ?? whole;
  const privateOf = (p: string): string[] => index.callees(p).filter((s) => !index.isRoot(s) && index.reachable.has(s) && onlyCaller(index, s) === p);
  const eligible = (p: string): boolean => residual && !index.inCycle(p) && index.rootsReaching(p) === 1;
  const contribution = (p: string, excluded: (s: string) => boolean): number => {
    let v = known(p);
    if (!eligible(p) || !Number.isFinite(v)) return v;
    for (const s of privateOf(p)) {
      const m = ledger.value(s);
      if (m !== undefined && !excluded(s)) v -= m;
    }
    return Math.max(0, v);
  };
  // Callers known only through one group count once, with the group's value: every instant one of
  // them is directly below f, the group is on the stack.
  const sumOverCallers = (callers: readonly string[], part: (p: string) => number): number => {
    let sum = 0;
    const used = new Set<string>();
    for (const g of ledger.groups) {
      const together = callers.filter((p) => !used.has(p) && ledger.upperValue(p) === undefined && g.members.includes(p));
      if (together.length < 2) continue;
      const apart = together.reduce((acc, p) => acc + part(p), 0);
      if (g.value >= apart) continue;
      sum += g.value;
      for (const p of together) used.add(p);
    }
    for (const p of callers) if (!used.has(p)) sum += part(p);
    return sum;
  };
  // A group bounds each member by its whole value. (Taking off members measured alone would be
  // exact only with exact counters: the difference of two measurements doubles their error, and a
  // counter that quantises, such as SysTick on QEMU, then prunes functions just above the threshold.)
  const groupBound = (f: string): number => {
    let best = Number.POSITIVE_INFINITY;
    for (const g of ledger.groups) if (g.members.includes(f)) best = Math.min(best, g.value);
    return best;
  };
  for (const id of index.componentOrder) {
    const members = index.components[id]!;
    if (members.length === 1) {
      const f = members[0]!;
      if (ledger.spanning.has(f)) {
        U.set(f, whole);
        continue;
      }
      const fromCallers = index.isRoot(f) ? whole : sumOverCallers(index.callers(f), (p) => contribution(p, (s) => s === f));
      U.set(f, Math.min(whole, fromCallers, groupBound(f)));
      continue;
    }
    const inS = new Set(members);
    const external = new Set<string>();
    for (const m of members) for (const p of index.callers(m)) if (!inS.has(p)) external.add(p);
    const outside = members.some((m) => index.isRoot(m)) ? whole : sumOverCallers([...external], (p) => contribution(p, (s) => inS.has(s)));
    const bound = Math.min(whole, outside);
    for (const f of members) {
      if (ledger.spanning.has(f)) {
        U.set(f, whole);
        continue;
      }
      if (index.isRoot(f)) {
        U.set(f, Math.min(whole, groupBound(f)));
        continue;
      }
      let direct = 0;
      for (const p of index.callers(f)) direct += inS.has(p) ? (ledger.upperValue(p) ?? bound) : contribution(p, (s) => s === f);
      U.set(f, Math.min(bound, direct, groupBound(f)));
    }
  }
  return U;
}

/** The same members in any order give the same key. */
function groupKey(members: readonly string[]): string {
  return [...members].sort().join('\u0000');
}

function onlyCaller(index: CallGraphIndex, s: string): string | undefined {
  const callers = index.callers(s);
  return callers.length === 1 ? callers[0] : undefined;
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) {
    const err = new Error('the analysis was cancelled');
    err.name = 'AbortError';
    throw err;
  }
}

/** Measures one batch; false when cancelled (the ledger is unchanged then). */
async function measureBatch(measurer: BatchMeasurer, batch: string[], ledger: Ledger, signal: AbortSignal | undefined, groups: readonly (readonly string[])[] = []): Promise<boolean> {
  try {
    throwIfAborted(signal);
    const rs = groups.length > 0 ? await measurer.measure(batch, signal, groups) : await measurer.measure(batch, signal);
    ledger.add(rs, batch, groups);
    return true;
  } catch (err) {
    if (isAbort(err) || signal?.aborted) return false;
    throw err;
  }
}

export async function runDescent(graph: CallGraphResponse, measurer: BatchMeasurer, options: DescentOptions): Promise<AnalysisResult> {
  if (!options.metric.monotone) throw new DescentError(`metric '${options.metric.id}' is not monotone and cannot drive pruning`);
  if (!(options.threshold >= 0)) throw new DescentError(`the threshold must be a number >= 0 (got ${options.threshold})`);
  const slots = checkSlots(measurer);
  const index = new CallGraphIndex(graph, indexOptions(options));
  const ledger = new Ledger(options.engine, options.metric, index.reachable, spanningSet(graph, options.spanning));
  for (const rs of options.previous ?? []) ledger.add(rs, undefined);
  const firstRun = ledger.resultSets.length;
  const lookahead = options.lookahead ?? true;
  const residual = options.siblingResidual ?? true;
  const threshold = options.threshold;
  const batches: string[][] = [];
  const groupBatches: string[][][] = [];
  let cancelled = false;
  const queueOrder = (options.order ?? 'weight') === 'weight'
    ? [...index.bfsOrder].sort((a, b) => index.reachableBytes(b) - index.reachableBytes(a))
    : index.bfsOrder;
  const estimates = callCountEstimates(graph, index, ledger.spanning);
  const wantGroups = (options.groups ?? true) && measurer.groups === true;
  if (options.groups === true && measurer.groups !== true) ledger.warnings.push('the measurer cannot measure groups: every function was measured alone');
  // Without call counts (no dynamic call graph) groups are not formed: said only when groups were
  // asked for explicitly, not on every descent that merely allows them.
  if (wantGroups && !estimates) {
    if (options.groups === true) ledger.warnings.push('group measurements need call counts to tell which functions look cold (a dynamic call graph): every function was measured alone');
  }
  const plan = await measurer.plan?.(index.bfsOrder.filter((f) => !ledger.isKnown(f)), options.signal);
  for (const [f, reason] of plan?.unmeasurable ?? []) if (!ledger.isKnown(f)) ledger.refused.set(f, reason);
  const packer = wantGroups && estimates ? new GroupPlanner(index, estimates, slots, threshold, options.packing ?? 0.7, plan?.groupable) : undefined;

  for (;;) {
    const U = computeBounds(index, ledger, residual);
    const open = (f: string): boolean => !ledger.isKnown(f) && !ledger.refused.has(f) && !(U.get(f)! < threshold);
    const decided = (f: string): boolean => !open(f);
    const ready = (f: string): boolean => {
      if (index.isRoot(f)) return true;
      const callers = index.inCycle(f) ? externalCallers(index, f) : index.callers(f);
      return callers.every(decided);
    };
    const candidates = queueOrder.filter(open);
    if (candidates.length === 0) break;
    let batch: string[];
    let groups: string[][] = [];
    if (packer) {
      ({ batch, groups } = packer.plan(candidates, U, ready, ledger));
    } else {
      const first = candidates.filter(ready);
      batch = [...first, ...(lookahead ? candidates.filter((f) => !ready(f)) : [])].slice(0, slots);
    }
    if (batch.length + groups.length === 0) throw new DescentError('no function is ready to measure although some are undecided (internal error: the call graph order is inconsistent)');
    const before = new Map(batch.map((f) => [f, U.get(f)!]));
    if (!(await measureBatch(measurer, batch, ledger, options.signal, groups))) {
      cancelled = true;
      break;
    }
    batches.push(batch);
    groupBatches.push(groups);
    packer?.learn(ledger, ledger.resultSets.length - 1);
    for (const f of batch) {
      const m = ledger.measured.get(f);
      const b = before.get(f)!;
      if (m && m.value > b * (1 + 1e-9) + 1e-12) {
        ledger.warnings.push(`'${f}' measured ${m.value} above its bound ${b}: the static call graph misses one of its callers (an indirect call, or code the disassembly could not follow); pruning near it may have missed functions`);
      }
    }
    options.onProgress?.({ run: batches.length, batch, ...(groups.length ? { groups } : {}), open: index.bfsOrder.filter(open).length });
  }

  const U = computeBounds(index, ledger, residual);
  const outcomes = graph.functions.map((fn): FunctionOutcome => {
    const name = fn.name;
    const depth = index.depth.get(name);
    if (depth === undefined) return { name, status: 'unreached' };
    const bound = U.get(name)!;
    if (ledger.spanning.has(name)) return spanningOutcome(name, ledger, depth);
    const m = ledger.measured.get(name);
    if (m) return { name, status: 'measured', value: m.value, bound, resultSet: m.resultSet, depth, ...(m.incomplete !== undefined ? { reason: `the value may be low: ${m.incomplete}` } : {}) };
    const reason = ledger.refused.get(name);
    if (reason !== undefined) return { name, status: 'unmeasurable', bound, reason, depth };
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
  };
}

/**
 * Prior estimates of each function's share of the run from a dynamic call graph's counts: its own
 * code once per call (the size stands in for the path taken), plus its callees' estimates in
 * proportion to the calls it made to them, relative to the heaviest root. Only the order of
 * measurement and the packing of groups use them, never a bound: a poor estimate costs runs, it
 * cannot lose a function. Undefined when the graph has no counts.
 */
export function callCountEstimates(graph: CallGraphResponse & { interrupts?: readonly CallGraphEdge[] }, index: CallGraphIndex, spanning: ReadonlySet<string> = new Set()): Map<string, number> | undefined {
  const counted = graph.edges.filter((e) => e.count !== undefined);
  const handlerEntries = graph.interrupts ?? [];
  if (counted.length === 0) return undefined;
  const calls = new Map<string, number>();
  const along = new Map<string, number>();
  for (const e of [...counted, ...handlerEntries]) calls.set(e.callee, (calls.get(e.callee) ?? 0) + (e.count ?? 0));
  for (const e of counted) if (e.caller !== e.callee) along.set(`${e.caller}\u0000${e.callee}`, (along.get(`${e.caller}\u0000${e.callee}`) ?? 0) + (e.count ?? 0));
  const size = new Map(graph.functions.map((f) => [f.name, f.size]));
  const raw = new Map<string, number>();
  // Callees first: the condensation's reverse topological order.
  for (const id of [...index.componentOrder].reverse()) {
    for (const f of index.components[id]!) {
      const entered = calls.get(f) ?? 0;
      let v = Math.max(entered, index.isRoot(f) || spanning.has(f) ? 1 : 0) * (size.get(f) ?? 0);
      for (const c of index.callees(f)) {
        if (index.component(c) === id) continue;
        const n = along.get(`${f}\u0000${c}`) ?? 0;
        const total = calls.get(c) ?? 0;
        if (n > 0 && total > 0) v += (raw.get(c) ?? 0) * (n / total);
      }
      raw.set(f, v);
    }
  }
  const scale = Math.max(0, ...[...index.roots, ...spanning].map((r) => raw.get(r) ?? 0));
  if (!(scale > 0)) return undefined;
  return new Map([...raw].map(([f, v]) => [f, v / scale]));
}

/** Groups one function may join: after that it is measured alone, so descent always ends. */
const MAX_GROUPINGS = 4;

/**
 * Plans descent steps with group measurements. Functions that look hot (estimate at or above the
 * threshold, a member of a pair that came out hot, or the member that blocked a group) take a slot
 * each; the ones that look cold are packed into groups whose estimates add up to `packing` x
 * threshold, of members that do not call one another (a caller's own value already bounds its
 * callees). A group that comes out at or above the threshold rescales its members' estimates to
 * its value and is split on the next step. Slots left over split the largest groups further.
 */
class GroupPlanner {
  private readonly scale = new Map<string, number>();
  private readonly floor = new Map<string, number>();
  /** Members of a pair that came out hot: one of the two is hot, so both are measured alone. */
  private readonly hotPair = new Set<string>();
  private learned = 0;
  /** Every group measured so far: one is never measured twice. */
  private readonly measured = new Set<string>();
  /** How many functions one run can patch (singles and group members), once the target said. */
  private capacity = Number.POSITIVE_INFINITY;
  /** Groups each function was in. */
  private readonly groupings = new Map<string, number>();

  constructor(
    private readonly index: CallGraphIndex,
    private readonly prior: ReadonlyMap<string, number>,
    private readonly slots: number,
    private readonly threshold: number,
    private readonly packing: number,
    /** Functions a group may hold (an entry patch can measure them); all when undefined. */
    private readonly groupable?: ReadonlySet<string>,
  ) {}

  private guess(f: string, U: ReadonlyMap<string, number>): number {
    const prior = (this.prior.get(f) ?? 0) * (this.scale.get(f) ?? 1);
    return Math.min(U.get(f)!, Math.max(this.floor.get(f) ?? 0, prior));
  }

  plan(candidates: readonly string[], U: ReadonlyMap<string, number>, ready: (f: string) => boolean, ledger: Ledger): { batch: string[]; groups: string[][] } {
    const guess = new Map(candidates.map((f) => [f, this.guess(f, U)]));
    const order = [...candidates].sort((a, b) => Number(ready(b)) - Number(ready(a)) || guess.get(b)! - guess.get(a)!);
    // With room for fewer than two patches per slot, groups would hold a member or two each: every
    // function is measured alone.
    const roomy = this.capacity >= 2 * this.slots;
    const alone = (f: string): boolean => !roomy || ledger.groupRefused.has(f) || (this.groupable !== undefined && !this.groupable.has(f)) || (this.groupings.get(f) ?? 0) >= MAX_GROUPINGS || guess.get(f)! >= this.threshold || this.hotPair.has(f);
    const singles = order.filter(alone);
    const capacity = this.packing * this.threshold;
    const packs: { members: string[]; sum: number }[] = [];
    for (const f of order) {
      if (alone(f)) continue;
      const g = guess.get(f)!;
      const fit = packs.find((p) => p.sum + g <= capacity && p.members.every((m) => !this.index.related(m, f)));
      if (fit) {
        fit.members.push(f);
        fit.sum += g;
      } else {
        packs.push({ members: [f], sum: g });
      }
    }
    // A group measured before that left its members open is split, never measured again.
    for (let i = 0; i < packs.length; i++) {
      const p = packs[i]!;
      if (p.members.length < 2 || !this.measured.has(groupKey(p.members))) continue;
      const half = Math.ceil(p.members.length / 2);
      const sum = (ms: string[]): number => ms.reduce((acc, m) => acc + guess.get(m)!, 0);
      const a = p.members.slice(0, half);
      const b = p.members.slice(half);
      packs.splice(i, 1, { members: a, sum: sum(a) }, { members: b, sum: sum(b) });
      i--;
    }
    const groupSlots = Math.min(packs.length, packs.length > 0 ? Math.max(this.slots > 1 ? 1 : 0, this.slots - singles.length) : 0);
    const batch = singles.slice(0, this.slots - groupSlots);
    const chosen = packs.slice(0, this.slots - batch.length);
    // Idle slots split the groups with the largest estimates: fewer members, less to redo.
    for (;;) {
      if (batch.length + chosen.length >= this.slots) break;
      let widest = -1;
      for (let i = 0; i < chosen.length; i++) if (chosen[i]!.members.length > 1 && (widest < 0 || chosen[i]!.sum > chosen[widest]!.sum)) widest = i;
      if (widest < 0) break;
      const members = [...chosen[widest]!.members].sort((a, b) => guess.get(b)! - guess.get(a)!);
      const halves = [{ members: [] as string[], sum: 0 }, { members: [] as string[], sum: 0 }];
      for (const m of members) {
        const h = halves[0]!.sum <= halves[1]!.sum ? halves[0]! : halves[1]!;
        h.members.push(m);
        h.sum += guess.get(m)!;
      }
      chosen.splice(widest, 1, ...halves);
    }
    // Within the room the target has for patches: the last groups give up members to later runs.
    let room = this.capacity - batch.length;
    for (const p of chosen) {
      p.members = p.members.slice(0, Math.max(0, room));
      room -= p.members.length;
    }
    for (let i = chosen.length - 1; i >= 0; i--) if (chosen[i]!.members.length === 0) chosen.splice(i, 1);
    for (const p of chosen) if (p.members.length === 1) batch.push(p.members[0]!);
    const groups = chosen.filter((p) => p.members.length > 1).map((p) => p.members);
    for (const g of groups) {
      this.measured.add(groupKey(g));
      for (const m of g) this.groupings.set(m, (this.groupings.get(m) ?? 0) + 1);
    }
    return { batch, groups };
  }

  /** Learns from the groups measured since the last call: hot ones rescale their members. */
  learn(ledger: Ledger, resultSet: number): void {
    for (const g of ledger.groups.slice(this.learned)) {
      if (g.resultSet !== resultSet || g.value < this.threshold) continue;
      const sum = g.members.reduce((acc, m) => acc + (this.prior.get(m) ?? 0) * (this.scale.get(m) ?? 1), 0);
      for (const m of g.members) {
        if (sum > 0) this.scale.set(m, ((this.scale.get(m) ?? 1) * g.value) / sum);
        this.floor.set(m, Math.max(this.floor.get(m) ?? 0, g.value / g.members.length));
        if (g.members.length === 2) this.hotPair.add(m);
      }
    }
    this.learned = ledger.groups.length;
    // A group refused as a whole, with no member to blame, found the end of the target's room for
    // patches (the reserved memory): later runs patch what this one got in and half of what it did
    // not, and learn again if that is still too much.
    const rs = ledger.resultSets[resultSet];
    const whole = rs?.refused.filter((r) => r.members && r.blockedBy === undefined) ?? [];
    if (rs && whole.length > 0) {
      const fitted = rs.measurements.length + (rs.groups ?? []).reduce((n, g) => n + g.members.length, 0);
      const missed = whole.reduce((n, r) => n + r.members!.length, 0);
      this.capacity = Math.min(this.capacity, Math.max(this.slots, fitted + Math.floor(missed / 2)));
    }
  }
}

function spanningSet(graph: CallGraphResponse, spanning: readonly string[] | undefined): Set<string> {
  const names = new Set(graph.functions.map((f) => f.name));
  for (const s of spanning ?? []) if (!names.has(s)) throw new DescentError(`'${s}' is not a function of the program's call graph`);
  return new Set(spanning ?? []);
}

function spanningOutcome(name: string, ledger: Ledger, depth: number | undefined): FunctionOutcome {
  const whole = ledger.whole;
  return whole !== undefined
    ? { name, status: 'measured', value: whole, bound: whole, spansWindow: true, ...(depth !== undefined ? { depth } : {}) }
    : { name, status: 'pending', spansWindow: true, ...(depth !== undefined ? { depth } : {}) };
}

function externalCallers(index: CallGraphIndex, f: string): string[] {
  const id = index.component(f);
  const out = new Set<string>();
  for (const m of index.components[id]!) for (const p of index.callers(m)) if (index.component(p) !== id) out.add(p);
  return [...out];
}

function checkSlots(measurer: BatchMeasurer): number {
  const k = measurer.slots;
  if (!Number.isInteger(k) || k < 1) throw new DescentError(`the measurer offers ${k} slots; it needs at least 1`);
  return k;
}

function indexOptions(o: CommonOptions): GraphIndexOptions {
  return { ...(o.roots ? { roots: o.roots } : {}), ...(o.indirectTargets ? { indirectTargets: o.indirectTargets } : {}) };
}

/** Every function of the graph: reachable ones in breadth-first order, then the rest by address. */
function allFunctionsInOrder(graph: CallGraphResponse, index: CallGraphIndex): string[] {
  const rest = graph.functions.filter((f) => !index.reachable.has(f.name)).sort((a, b) => a.address - b.address).map((f) => f.name);
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

/** The exact full profile: every function measured, in batches of `slots`, ceil(F / k) runs. */
export async function runFullProfile(graph: CallGraphResponse, measurer: BatchMeasurer, options: FullProfileOptions): Promise<AnalysisResult> {
  const slots = checkSlots(measurer);
  const index = new CallGraphIndex(graph, indexOptions(options));
  const spanning = spanningSet(graph, options.spanning);
  const order = allFunctionsInOrder(graph, index).filter((f) => !spanning.has(f));
  const ledger = new Ledger(options.engine, options.metric, new Set(order), spanning, false);
  const batches: string[][] = [];
  let cancelled = false;
  for (const batch of chunk(order, slots)) {
    if (!(await measureBatch(measurer, batch, ledger, options.signal))) {
      cancelled = true;
      break;
    }
    batches.push(batch);
    options.onProgress?.({ run: batches.length, batch, open: order.length - batches.flat().length });
  }
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
  return { scenario: 'full-profile', metric: options.metric.id, roots: [...index.roots], runs: batches.length, batches, resultSets: ledger.resultSets, outcomes, cancelled, warnings: ledger.warnings };
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
export async function runRoundRobin(graph: CallGraphResponse, measurer: BatchMeasurer, options: RoundRobinOptions): Promise<AnalysisResult> {
  const slots = checkSlots(measurer);
  if (options.rounds === undefined && !options.signal) throw new DescentError('a round robin without a number of rounds needs an AbortSignal to end it');
  const index = new CallGraphIndex(graph, indexOptions(options));
  const spanning = spanningSet(graph, options.spanning);
  const order = (options.functions ? [...options.functions] : allFunctionsInOrder(graph, index)).filter((f) => !spanning.has(f));
  const known = new Set(graph.functions.map((f) => f.name));
  for (const f of order) if (!known.has(f)) throw new DescentError(`'${f}' is not a function of the program's call graph`);
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
      return { name, status: 'measured', value: list.reduce((s, v) => s + v, 0) / list.length, windows: list.length, resultSet: last.get(name)!, ...at };
    }
    const reason = ledger.refused.get(name);
    if (reason !== undefined) return { name, status: 'unmeasurable', reason, ...at };
    return { name, status: 'pending', ...at };
  });
  return { scenario: 'round-robin', metric: options.metric.id, roots: [...index.roots], runs: batches.length, batches, resultSets: ledger.resultSets, outcomes, cancelled, warnings: ledger.warnings };
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
  if (!graph.functions.some((f) => f.name === start)) throw new DescentError(`the program has no function '${start}' to start from`);
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
