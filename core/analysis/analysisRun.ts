import type { CallGraphResponse } from '../../common/dapCustom';
import type { GraphIndexOptions } from './callGraphIndex';
import type { ExecutionCounts } from './countBounds';
import type { MetricDefinition, MetricsEngine } from './metrics';
import {
  groupRawValues,
  rawValues,
  wholeRunValues,
  type FunctionOutcome,
  type ResultSet,
  type Scenario,
} from './resultSet';

/**
 * What every analysis scenario (descent, the full profile, the round robin) shares: the measurer it
 * drives, the result it returns, and the ledger of values and refusals collected run by run.
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
  /**
   * How often the program's code runs, from one run that counts every instruction (QEMU only),
   * for bounds that prune before anything is measured (CountBounds). Undefined where none can be
   * made; the measurer says why in its log.
   */
  executionCounts?(signal?: AbortSignal): Promise<ExecutionCounts | undefined>;
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
  /** Descent: the counting run whose instruction counts bounded the functions, when there was one. */
  counted?: { method: string; ran: number; functions: number };
}

export interface DescentProgress {
  run: number;
  batch: readonly string[];
  groups?: readonly (readonly string[])[];
  /** Functions still to decide after this step. */
  open: number;
  /** Which worker ran the batch (1, 2, …), when several run at once (MeasurerPool). */
  worker?: number;
}

export interface CommonOptions {
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

export class DescentError extends Error {
  override name = 'DescentError';
}

export function isAbort(err: unknown): boolean {
  return err instanceof Error && (err.name === 'AbortError' || (err as { code?: string }).code === 'ABORT_ERR');
}

export interface Measured {
  value: number;
  /** Where the counter quantises (SysTick ticks): the highest and lowest value the truth may have. */
  upper?: number;
  lower?: number;
  resultSet: number;
  /** Why the value may be too low (entries the payload missed); then it cannot bound callees. */
  incomplete?: string;
}

/** A group measurement's value: the union of its members' activations (an upper bound of each). */
export interface MeasuredGroup {
  members: readonly string[];
  value: number;
  /** Where the counter quantises: the highest value the truth may have (bounds use it). */
  upper?: number;
  resultSet: number;
}

/** Measurements, refusals and the whole-run value accumulated over runs. */
export class Ledger {
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
    return m?.incomplete !== undefined ? undefined : (m?.upper ?? this.value(name));
  }

  /** A value the truth is not below (what a sibling residual may take off). */
  lowerValue(name: string): number | undefined {
    return this.measured.get(name)?.lower ?? this.value(name);
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
      throw new DescentError(
        `run ${index + 1} (${rs.run.method}) has no total of '${rs.run.event}' for the metric '${this.metric.id}' ` +
          `(${this.metric.label}); the analysis needs the run's total to form shares`,
      );
    }
    if (whole !== undefined) this.whole = Math.max(this.whole ?? 0, whole);
    this.addGroups(rs, index, askedGroups);
    // An earlier result set answers for what it measured and what it refused.
    const names =
      asked ??
      [...rs.measurements, ...rs.refused.filter((r) => !r.members)].map((m) => m.name).filter((n) => this.known.has(n));
    for (const name of names) {
      const refusal = rs.refused.find((r) => r.name === name);
      const raw = rawValues(rs, name);
      if (raw) {
        const value = this.engine.value(this.metric.id, raw);
        if (value !== undefined) {
          const m = rs.measurements.find((x) => x.name === name);
          const incomplete = m?.incomplete;
          const spread = this.spread(rs, raw, m?.calls ?? 0);
          this.measured.set(name, {
            value,
            ...spread,
            resultSet: index,
            ...(incomplete !== undefined ? { incomplete } : {}),
          });
          this.refused.delete(name);
          continue;
        }
        this.refuse(
          name,
          `it was measured, but '${this.metric.id}' cannot be formed from what was counted ` +
            `(${Object.keys(raw).join(', ')})`,
        );
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
        for (const m of g.members)
          this.groupRefused.set(m, g.incomplete ?? `'${this.metric.id}' cannot be formed for the group ${g.name}`);
        continue;
      }
      const upper = this.spread(rs, groupRawValues(rs, g), g.calls).upper;
      this.groups.push({ members: [...g.members], value, ...(upper !== undefined ? { upper } : {}), resultSet: index });
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
      for (const m of members)
        this.groupRefused.set(m, 'the measurer returned neither a result nor a reason for its group');
      this.warnings.push(
        `run ${index + 1}: no result and no reason for the group ${members.join(' + ')}; its ` +
          `members are measured alone`,
      );
    }
  }

  /**
   * A SysTick measurement is off by less than a tick at each call boundary (N calls: N ticks either
   * way), and the run's total by one: the metric's value with the inclusive count moved by that
   * much, so that no bound formed from it lies below the truth. Nothing on exact counters.
   */
  private spread(rs: ResultSet, raw: Record<string, number>, calls: number): { upper?: number; lower?: number } {
    if (rs.run.event !== 'ticks') return {};
    const moved = (sign: number): Record<string, number> =>
      Object.fromEntries(
        Object.entries(raw).map(([k, v]) => [
          k,
          k.startsWith('inclusive:') ? Math.max(0, v + sign * (Math.max(1, calls) + 1)) : v,
        ]),
      );
    const upper = this.engine.value(this.metric.id, moved(1));
    const lower = this.engine.value(this.metric.id, moved(-1));
    return { ...(upper !== undefined ? { upper } : {}), ...(lower !== undefined ? { lower } : {}) };
  }

  private refuse(name: string, reason: string): void {
    if (!this.measured.has(name)) this.refused.set(name, reason);
  }
}

/** The same members in any order give the same key. */
export function groupKey(members: readonly string[]): string {
  return [...members].sort().join('\u0000');
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) {
    const err = new Error('the analysis was cancelled');
    err.name = 'AbortError';
    throw err;
  }
}

/** Measures one batch; false when cancelled (the ledger is unchanged then). */
export async function measureBatch(
  measurer: BatchMeasurer,
  batch: string[],
  ledger: Ledger,
  signal: AbortSignal | undefined,
  groups: readonly (readonly string[])[] = [],
): Promise<boolean> {
  try {
    throwIfAborted(signal);
    const rs =
      groups.length > 0 ? await measurer.measure(batch, signal, groups) : await measurer.measure(batch, signal);
    ledger.add(rs, batch, groups);
    return true;
  } catch (err) {
    if (isAbort(err) || signal?.aborted) return false;
    throw err;
  }
}

export function spanningSet(graph: CallGraphResponse, spanning: readonly string[] | undefined): Set<string> {
  const names = new Set(graph.functions.map((f) => f.name));
  for (const s of spanning ?? [])
    if (!names.has(s)) throw new DescentError(`'${s}' is not a function of the program's call graph`);
  return new Set(spanning ?? []);
}

export function spanningOutcome(name: string, ledger: Ledger, depth: number | undefined): FunctionOutcome {
  const whole = ledger.whole;
  return whole !== undefined
    ? {
        name,
        status: 'measured',
        value: whole,
        bound: whole,
        spansWindow: true,
        ...(depth !== undefined ? { depth } : {}),
      }
    : { name, status: 'pending', spansWindow: true, ...(depth !== undefined ? { depth } : {}) };
}

export function checkSlots(measurer: { readonly slots: number }): number {
  const k = measurer.slots;
  if (!Number.isInteger(k) || k < 1) throw new DescentError(`the measurer offers ${k} slots; it needs at least 1`);
  return k;
}

export function indexOptions(o: CommonOptions): GraphIndexOptions {
  return {
    ...(o.roots ? { roots: o.roots } : {}),
    ...(o.indirectTargets ? { indirectTargets: o.indirectTargets } : {}),
  };
}
