import type { CallGraphResponse, ExecutionCountsResponse } from '../../common/dapCustom';
import { CALLS, inclusiveKey, rawFromEvents, totalKey, type MetricsEngine, type MonotoneMetric } from './metrics';
import type { ResultSet } from './resultSet';

export type ExecutionCounts = Extract<ExecutionCountsResponse, { counted: true }>;

/**
 * Upper bounds of every function's inclusive value from one counting run (docs/design.md,
 * "Bounds from instruction counts"): the adapter's `cyclelens/executionCounts`, a free run of the
 * same image on QEMU that counted every instruction from reset to the program's exit.
 *
 * The argument. Under -icount the counting run executes what each measured run executes between
 * its start and its end, and more (the startup before, the exit after), so for every function g
 * the instructions counted in g's address range, C(g), are at least those the window executes there.
 * While f is on the stack, the instructions that run are f's own, those of the functions f may
 * reach by calls, tail calls and running on past its end (its closure: RV32 millicode
 * `__riscv_restore_10` runs on into `__riscv_restore_4`), code outside every function (veneers), and code
 * entered asynchronously (handlers, with what they call). Hence
 *   inclusive(f) <= sum of C(g) over f's closure + outside + A,
 * where A bounds the handlers' part. Where the closure holds a function the disassembly could not
 * follow, the callees are unknown and the bound is the run's whole count. A function whose code
 * never ran has no activation: its value is 0.
 *
 * Indirect calls. The counting run counts every call instruction, so the calls along each direct
 * edge are known; a function entered (its first instruction run) more or fewer times than its
 * direct calls and, for the program's entry, the reset account for was entered some other way: by
 * an indirect call, an interrupt, a loop back to its entry, or a conditional call that was not
 * taken (an instruction the plugin counts whether or not its condition held). Only these may be an
 * indirect call's target, in the counting run and so in every measured run, which executes no
 * more. An indirect caller's closure takes all of them in.
 *
 * The handlers. A measured run halts at its start, and QEMU's virtual clock may jump while it is
 * halted, so a periodic interrupt may fall once more in a measured window than in the counting
 * run. A is therefore twice what the handlers counted: one more invocation of each, at most as
 * long as all its counted ones together. Handlers that never ran in the counting run are taken not
 * to run in a measured one.
 *
 * Units. The adapter states how many instructions make a unit of each event it measures. A
 * quantised unit (SysTick ticks) is read whole at both ends of every activation, so f's value may
 * exceed its instructions' worth by one unit per activation (the executions of its first
 * instruction bound those), and the run's total may fall short of its own by one unit.
 */
export class CountBounds {
  private readonly executed = new Map<string, { instructions: number; inRange: number; entries: number }>();
  private readonly bound = new Map<string, number>();
  /** What asynchronous code may add to any activation (A above), in instructions. */
  readonly asynchronous: number;
  /**
   * The functions an indirect call may have reached: those whose first instruction ran other than
   * the direct calls to it, and the program's entry, account for (see "Indirect calls").
   */
  readonly targets: readonly string[];

  constructor(
    graph: CallGraphResponse,
    readonly counts: ExecutionCounts,
  ) {
    for (const f of counts.functions)
      this.executed.set(f.name, {
        instructions: f.instructions,
        inRange: f.inRange ?? f.instructions,
        entries: f.entries,
      });
    const callees = new Map<string, Set<string>>();
    // Code that runs on into the next function's carries on the activation, as a tail call would.
    for (const e of [...graph.edges, ...counts.fallThrough]) {
      if (e.caller === e.callee) continue;
      let set = callees.get(e.caller);
      if (!set) callees.set(e.caller, (set = new Set()));
      set.add(e.callee);
    }
    // An indirect call reaches only functions entered more often than their direct calls say.
    const direct = new Map<string, number>();
    for (const c of counts.calls) direct.set(c.callee, (direct.get(c.callee) ?? 0) + c.count);
    this.targets = counts.functions
      .filter((f) => f.entries !== (direct.get(f.name) ?? 0) + (f.name === counts.entry ? 1 : 0))
      .map((f) => f.name);
    for (const caller of graph.indirectCallers) {
      let set = callees.get(caller);
      if (!set) callees.set(caller, (set = new Set()));
      for (const t of this.targets) if (t !== caller) set.add(t);
    }
    const unknownCallees = new Set(counts.incomplete);
    const whole = counts.total;
    /** Instructions counted over the closure of `from`; where its callees are unknown, the whole run's count. */
    const closureCount = (from: readonly string[]): number => {
      const seen = new Set<string>(from);
      const queue = [...from];
      let sum = 0;
      for (let i = 0; i < queue.length; i++) {
        const g = queue[i]!;
        if (unknownCallees.has(g) && this.ran(g)) return whole;
        sum += this.executed.get(g)?.inRange ?? 0;
        for (const c of callees.get(g) ?? []) {
          if (seen.has(c)) continue;
          seen.add(c);
          queue.push(c);
        }
      }
      return sum;
    };
    const handlers = counts.handlers.filter((h) => this.ran(h));
    this.asynchronous = handlers.length > 0 ? Math.min(whole, 2 * closureCount(handlers)) : 0;
    for (const f of graph.functions) {
      const name = f.name;
      this.bound.set(
        name,
        this.ran(name) ? Math.min(whole, closureCount([name]) + counts.outside + this.asynchronous) : 0,
      );
    }
  }

  /** Whether any of the function's code ran in the counting run. */
  ran(name: string): boolean {
    return (this.executed.get(name)?.inRange ?? 0) > 0;
  }

  /** The functions of the graph whose code ran. */
  get ranCount(): number {
    return [...this.executed.values()].filter((e) => e.inRange > 0).length;
  }

  /**
   * The upper bound of the function's inclusive count, in instructions (the whole run's count for a name
   * it does not know).
   */
  instructions(name: string): number {
    return this.bound.get(name) ?? this.counts.total;
  }

  /**
   * Every function's bound in the metric's units, for the run whose totals `rs` holds; undefined
   * when the adapter gave no ratio for the event `rs` counts (then only the functions that never
   * ran are bounded, by 0: see `zeros`).
   */
  inMetric(engine: MetricsEngine, metric: MonotoneMetric, rs: ResultSet): Map<string, number> | undefined {
    const event = rs.run.event;
    const unit = this.counts.units[event];
    const total = rs.run.totals[event];
    if (!unit || total === undefined) return undefined;
    // The total falls short of the run's own by one unit at most where the unit is read whole.
    const totalLow = unit.quantised ? Math.max(0, total - 1) : total;
    const out = new Map<string, number>();
    for (const [name, instructions] of this.bound) {
      if (instructions === 0) {
        out.set(name, 0);
        continue;
      }
      const entries = this.executed.get(name)?.entries ?? 0;
      const units = instructions / unit.instructionsPerUnit + (unit.quantised ? entries + 1 : 0);
      const raw = {
        ...rawFromEvents({ [event]: units }, 'inclusive'),
        ...rawFromEvents({ [event]: totalLow }, 'total'),
        [inclusiveKey('event')]: units,
        [totalKey('event')]: totalLow,
        [CALLS]: entries,
      };
      const v = engine.value(metric.id, raw);
      if (v !== undefined) out.set(name, v);
    }
    return out;
  }

  /** The functions whose code never ran: 0 in every unit. */
  zeros(): Map<string, number> {
    return new Map([...this.bound].filter(([, b]) => b === 0));
  }

  /** The instructions each function executed itself, for the planner's estimates (callCountEstimates). */
  own(): Map<string, number> {
    return new Map([...this.executed].map(([f, e]) => [f, e.instructions]));
  }

  /**
   * The call graph as descent bounds it: running on into the next function counts as a tail call
   * there (without a site: no instruction calls), so that function's callers include the one
   * before it.
   */
  withFallThrough(graph: CallGraphResponse): CallGraphResponse {
    const known = new Set(graph.edges.map((e) => `${e.caller}\u0000${e.callee}`));
    const extra = this.counts.fallThrough.filter((f) => !known.has(`${f.caller}\u0000${f.callee}`));
    return extra.length === 0
      ? graph
      : { ...graph, edges: [...graph.edges, ...extra.map((f) => ({ ...f, kind: 'tail' as const, sites: [] }))] };
  }

  /** The call graph with the counting run's call counts on its direct edges (0 on those that never ran). */
  withCallCounts(graph: CallGraphResponse): CallGraphResponse {
    const key = (e: { caller: string; callee: string; kind: string }): string =>
      `${e.caller}\u0000${e.callee}\u0000${e.kind}`;
    const counted = new Map(this.counts.calls.map((c) => [key(c), c.count]));
    return { ...graph, edges: graph.edges.map((e) => ({ ...e, count: counted.get(key(e)) ?? 0 })) };
  }
}
