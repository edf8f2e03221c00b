import type { CounterValue } from '../../common/counters';
import type {
  CallGraphResponse,
  CodeLocation,
  CustomRequestName,
  CustomResponse,
  InjectArguments,
  InjectedResult,
  InjectResponse,
  RunArguments,
  RunResponse,
} from '../../common/dapCustom';
import { CustomRequests } from '../../common/dapCustom';
import { customRequest, type CustomArgumentList, type CustomRequestPeer } from '../../common/dapCustomClient';
import type { ExecutionCounts } from '../analysis/countBounds';
import { passCountsOf, passFigures, programTotal } from '../analysis/passes';
import type { BatchMeasurer, MeasurerPlan } from '../analysis/descent';
import {
  newResultSetId,
  type FunctionMeasurement,
  type GroupMeasurement,
  type RefusedFunction,
  type ResultSet,
} from '../analysis/resultSet';

/**
 * A BatchMeasurer that drives a CycleLens debug session over its custom DAP requests. It needs
 * nothing but `customRequest`, so the extension (vscode.DebugSession) and the CLI (its own DAP
 * client) both use it. Per batch, single-pass programs:
 *   run {restart, until: start} -> inject batch -> run {until: end} -> injectedResults -> removeInjections
 * (plus one run without injections first, for the total, and a second measuring the whole window
 * by injection where the counters read at halts cannot be trusted); cyclic programs reconfigure at the safe
 * stop instead of restarting and dwell for `dwell` passes. Each batch is one result set. Functions
 * the adapter refuses come back as refused with its reason, never dropped.
 */

const Req = CustomRequests;
/** Why the function every single-pass run ends at is never measured. */
const ENDS_THE_RUN = 'every run ends at its entry (the end of the program), so none of it runs inside the window';

/** What the profiler needs of a session: `customRequest` (vscode.DebugSession and the CLI's DAP client have it). */
export type DapRequester = CustomRequestPeer;

export type ProfilingMode =
  | {
      kind: 'single-pass';
      /** Where each run starts measuring (default `main`). */
      start?: string;
      /** Where it ends (default: the adapter's end of a single-pass program). */
      end?: CodeLocation;
    }
  | {
      kind: 'cyclic';
      /** A point the program passes once per iteration where patching is safe (`idle_point`). */
      safeStop: CodeLocation;
      /** Passes through the safe stop per window. */
      dwell: number;
    };

export interface DapProfilerOptions {
  slots: number;
  mode: ProfilingMode;
  executable: string;
  family?: string;
  payload?: 'software' | 'hardware';
  /** Measure functions whose entry cannot be patched at their call sites (default true). */
  callSitesIfTooShort?: boolean;
  timeoutMs?: number;
  /** Debug Console / terminal lines. */
  log?(line: string): void;
  /**
   * Called with each run's result set as soon as it is read out, before the next run starts: a front
   * end saves it then, so a debugger or emulator dying later loses no finished run.
   */
  onResultSet?(rs: ResultSet): void | Promise<void>;
  /**
   * Another session of the same program and launch (parallel runs): this one takes the run's total
   * from it, once its first run formed it, rather than forming its own. Its batches then run with
   * exactly the patches a sequential analysis gives them (no window injected beside them), so
   * every value equals the sequential one, and it costs no run of its own.
   */
  totalFrom?: DapProfiler;
}

type Baseline = { totals: Record<string, number>; method: string };

interface Reading {
  value: number;
  width: number | undefined;
  reliable: boolean;
  reason?: string;
}

/** What a batch's measuring window gives besides the injected results. */
interface Window {
  totals: Record<string, number>;
  from: string;
  to: string;
  /** The totals include the batch's payloads (cyclic windows): take out what the adapter reports. */
  subtractPayload: boolean;
  /** How the totals were formed, for the result set. */
  method: string;
}

export class ProfilingError extends Error {
  override name = 'ProfilingError';
}

/**
 * The counter an injected payload reads, as the counter event it counts. SysTick counts ticks of
 * its clock: a tick is a cycle only on a core whose SysTick runs on the processor clock at the
 * core's rate, which CycleLens cannot know (on QEMU a tick is 40 instructions), so they stay ticks.
 */
export function eventOfCounter(counter: string): string {
  if (/systick/i.test(counter)) return 'ticks';
  return /instret|instruction|iall/i.test(counter) ? 'instructions' : 'cycles';
}

/** How a unit reads in a report: "ticks (x40 instructions)" where the target facts give the ratio. */
export function describeUnit(event: string, instructionsPerUnit: number | undefined): string {
  return instructionsPerUnit !== undefined ? `${event} (x${instructionsPerUnit} instructions)` : event;
}

export class DapProfiler implements BatchMeasurer {
  readonly slots: number;
  /** Baseline runs taken (single-pass: one, before the first batch). */
  baselineRuns = 0;
  /** Counting runs taken (executionCounts): one at most. */
  countingRuns = 0;
  private atSafeStop = false;
  private widths: Map<string, number> | undefined;
  private graph: CallGraphResponse | undefined;
  private baseline: Baseline | undefined;
  /** The function at whose entry every single-pass run ends, once known. */
  private endsAt: string | undefined;
  private baselineFormed!: (b: Baseline) => void;
  private readonly baselineKnown = new Promise<Baseline>((resolve) => (this.baselineFormed = resolve));

  constructor(
    private readonly dap: DapRequester,
    private readonly options: DapProfilerOptions,
  ) {
    if (!Number.isInteger(options.slots) || options.slots < 1)
      throw new ProfilingError(`slots must be a whole number >= 1 (got ${options.slots})`);
    if (options.mode.kind === 'cyclic' && !(Number.isInteger(options.mode.dwell) && options.mode.dwell >= 1)) {
      throw new ProfilingError(`the dwell must be a whole number of passes >= 1 (got ${options.mode.dwell})`);
    }
    this.slots = options.slots;
  }

  async callGraph(): Promise<CallGraphResponse> {
    return await this.request(Req.callGraph);
  }

  /** The adapter measures groups: several functions on one shared record, the union of their activations. */
  readonly groups = true;

  /**
   * A dry run: functions whose entry can be patched may join groups; those neither their entry nor
   * their call sites can measure are unmeasurable before any run.
   */
  async plan(functions: readonly string[]): Promise<MeasurerPlan> {
    const r = await this.request(Req.planInjection, { functions: [...functions] });
    const callSites = this.options.callSitesIfTooShort ?? true;
    const unmeasurable = new Map(
      r.functions
        .filter((f) => !f.entry && !(callSites && f.callSites))
        .map((f) => [f.name, f.reason ?? 'its entry cannot be patched']),
    );
    // The function every run ends at is refused by every run (withInjected): no run is spent on it.
    const ending = await this.endFunction();
    if (ending !== undefined && functions.includes(ending)) unmeasurable.set(ending, ENDS_THE_RUN);
    return { groupable: new Set(r.functions.filter((f) => f.entry && !f.solo).map((f) => f.name)), unmeasurable };
  }

  /**
   * The function at whose entry every single-pass run ends: the mode's end, or the adapter's
   * (`programEnd`, or the end found in the code), asked with a run to the start when not yet known.
   */
  private async endFunction(): Promise<string | undefined> {
    const mode = this.options.mode;
    if (mode.kind !== 'single-pass') return undefined;
    if (mode.end) return 'function' in mode.end ? mode.end.function : undefined;
    if (this.endsAt === undefined) {
      const from = mode.start ?? 'main';
      const start = await this.runTo({ restart: true, until: { function: from } }, `the start of the run (${from})`);
      if (start.programEnd && 'function' in start.programEnd) this.endsAt = start.programEnd.function;
    }
    return this.endsAt;
  }

  /**
   * How often the program's code runs, from one free run that counts every instruction
   * (`cyclelens/executionCounts`; QEMU only). Single-pass programs only: a cyclic program's window
   * is not a run from reset. Undefined, with the reason in the log, where none could be made.
   */
  async executionCounts(signal?: AbortSignal): Promise<ExecutionCounts | undefined> {
    if (this.options.mode.kind !== 'single-pass') return undefined;
    checkAbort(signal);
    let r: CustomResponse<typeof Req.executionCounts>;
    try {
      // It stops where the measured runs stop (the mode's end, else the adapter's), never only at QEMU's exit.
      const mode = this.options.mode;
      r = await this.request(Req.executionCounts, mode.end ? { until: mode.end } : {});
    } catch (err) {
      checkAbort(signal);
      this.options.log?.(`no instruction counts: ${message(err)}; descent bounds functions by their callers alone`);
      return undefined;
    }
    checkAbort(signal);
    if (!r.counted) {
      // A counting run that gave no counts is not counted as a run: nothing of it is used.
      this.options.log?.(`no instruction counts: ${r.reason}; descent bounds functions by their callers alone`);
      return undefined;
    }
    this.countingRuns++;
    this.options.log?.(
      `instruction counts: ${r.total} instructions, ${r.functions.length} functions ran ` +
        `(${(r.elapsedMs / 1000).toFixed(1)} s; ${r.method})`,
    );
    return r;
  }

  /** The run's total (single-pass), once the first run formed it; an AbortError when `signal` aborts first. */
  async runTotal(signal?: AbortSignal): Promise<Baseline> {
    checkAbort(signal);
    if (this.baseline) return this.baseline;
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(Object.assign(new Error('the profiling run was cancelled'), { name: 'AbortError' }));
      signal?.addEventListener('abort', onAbort);
    });
    try {
      return await Promise.race([this.baselineKnown, aborted]);
    } finally {
      signal?.removeEventListener('abort', onAbort!);
    }
  }

  async measure(
    batch: readonly string[],
    signal?: AbortSignal,
    groups: readonly (readonly string[])[] = [],
  ): Promise<ResultSet> {
    const rs =
      this.options.mode.kind === 'single-pass'
        ? await this.measureSinglePass(batch, groups, this.options.mode, signal)
        : await this.measureCyclic(batch, groups, this.options.mode, signal);
    await this.options.onResultSet?.(rs);
    return rs;
  }

  /**
   * A single-pass program repeats exactly (QEMU -icount, sleep=off), so the run's total comes from
   * one run without the batch: the payloads' own instructions would otherwise inflate it by their
   * full cost per call, which the adapter does not report (only the part inside the window).
   */
  private async measureSinglePass(
    batch: readonly string[],
    groups: readonly (readonly string[])[],
    mode: Extract<ProfilingMode, { kind: 'single-pass' }>,
    signal: AbortSignal | undefined,
  ): Promise<ResultSet> {
    const from = mode.start ?? 'main';
    const end = mode.end ? describe(mode.end) : 'end';
    await this.prepareCounters();
    if (!this.baseline && this.options.totalFrom) this.baseline = await this.options.totalFrom.runTotal(signal);
    if (!this.baseline) {
      checkAbort(signal);
      const first = await this.firstBatchWithWindow(batch, groups, from, mode.end, end);
      if (first) return first;
      // Stopped at the start already: the baseline run goes on from there.
      this.baseline = await this.baselineTotals(from, mode.end, signal, true);
      this.baselineFormed(this.baseline);
      this.options.log?.(
        `baseline ${from} -> ${end}: ${
          Object.entries(this.baseline.totals)
            .map(([e, v]) => `${v} ${e}`)
            .join(', ') || 'no total'
        } (${this.baseline.method})`,
      );
    }
    checkAbort(signal);
    const start = await this.runTo({ restart: true, until: { function: from } }, `the start of the run (${from})`);
    const until = mode.end ?? start.programEnd;
    if (until && 'function' in until) this.endsAt = until.function;
    const baseline = this.baseline;
    return this.withInjected(batch, groups, async () => {
      await this.runTo(
        { ...(mode.end ? { until: mode.end } : {}) },
        mode.end ? describe(mode.end) : 'the end of the program',
      );
      return { totals: { ...baseline.totals }, from, to: end, subtractPayload: false, method: baseline.method };
    });
  }

  /**
   * The first batch and the run's total in one run: the window (main's entry to the end) is
   * injected beside the batch, and its payload compensation takes the batch's payloads out of it
   * exactly (every payload adds its instruction count to a counter the window reads). Undefined
   * when no window can be injected: then the total comes from runs of its own (baselineTotals).
   */
  private async firstBatchWithWindow(
    batch: readonly string[],
    groups: readonly (readonly string[])[],
    from: string,
    endAt: CodeLocation | undefined,
    end: string,
  ): Promise<ResultSet | undefined> {
    const start = await this.runTo({ restart: true, until: { function: from } }, `the start of the run (${from})`);
    const until = endAt ?? start.programEnd;
    if (until && 'function' in until) this.endsAt = until.function;
    if (!until) return undefined;
    if (!endAt && start.endFoundBy) this.options.log?.(`the program ends ${start.endFoundBy}`);
    const window = await this.injectWindow(from, until);
    if (!window) return undefined;
    try {
      return await this.withInjected(batch, groups, async () => {
        await this.runTo({ until }, describe(until));
        const r = (await this.request(Req.injectedResults)).results.find((x) => x.id === window.id);
        const value = r ? windowValue(r, window.region) : undefined;
        if (!r || value === undefined)
          throw new ProfilingError(
            `${window.what} was not measured exactly once ` +
              `(${r ? `${r.passes} passes, ${r.calls} calls` : 'no result'}): the run has no total`,
          );
        this.baseline = {
          totals: { [eventOfCounter(r.counter)]: value },
          method: `total from ${window.what} injected with the first batch (${r.counter})`,
        };
        this.baselineFormed(this.baseline);
        this.options.log?.(`total ${from} -> ${end}: ${value} ${eventOfCounter(r.counter)} (${this.baseline.method})`);
        return {
          totals: { ...this.baseline.totals },
          from,
          to: end,
          subtractPayload: false,
          method: this.baseline.method,
        };
      });
    } finally {
      await this.request(Req.removeInjections, { ids: [window.id] }).catch((err: unknown) =>
        this.options.log?.(`could not remove the window measurement: ${message(err)}`),
      );
    }
  }

  /**
   * Injects the run's window, best shape first: the region closed at main's call of the end, or at
   * the entry of the function it calls (main's last `bl exit` has no room for a patch), or main
   * itself from entry to return (see windowEnds). Undefined when none can be.
   */
  private async injectWindow(
    from: string,
    until: CodeLocation,
  ): Promise<{ id: number; what: string; region: boolean } | undefined> {
    const ends = await this.windowEnds(from, until);
    // When `from` calls the end itself (main calling an exit that never returns), it never returns
    // inside the run: measured from its entry to its return it would never complete a pass.
    const returns = !('function' in until) || ends.length === 0;
    const attempts: Array<{ target: InjectArguments['targets'][number]; what: string }> = [
      ...ends.map((close) => ({
        target: { start: { function: from }, end: close },
        what: `the region ${from} -> ${describe(close)}`,
      })),
      ...(returns ? [{ target: { function: from }, what: `${from} from its entry to its return` }] : []),
    ];
    for (const attempt of attempts) {
      const injected = await this.request(Req.inject, {
        targets: [attempt.target],
        payload: 'software',
        callSitesIfTooShort: false,
      });
      const info = injected.injected[0];
      if (info) return { id: info.id, what: attempt.what, region: 'start' in attempt.target };
      this.options.log?.(`${attempt.what} cannot be injected (${injected.refused[0]?.reason ?? 'no reason given'})`);
    }
    return undefined;
  }

  /**
   * The run's totals. First from the counters read where the run starts and ends; a reading the
   * adapter marks unreliable (QEMU lets its virtual clock jump while the target is halted, so a
   * SysTick or a timer-driven minstret moves between stops by more than the program ran) does not
   * make a total. For events left without one, a second run measures the whole window with the
   * target's own instructions: a region injected from the start to the end, which never halts.
   */
  private async baselineTotals(
    from: string,
    endAt: CodeLocation | undefined,
    signal: AbortSignal | undefined,
    atStart = false,
  ): Promise<{ totals: Record<string, number>; method: string }> {
    if (!atStart) await this.runTo({ restart: true, until: { function: from } }, `the start of the run (${from})`);
    const before = await this.readAll();
    const reply = await this.runTo(
      { ...(endAt ? { until: endAt } : {}) },
      endAt ? describe(endAt) : 'the end of the program',
    );
    const after = await this.readAll();
    this.baselineRuns++;
    const doubtful = [...after.keys()].filter((e) => !after.get(e)!.reliable || before.get(e)?.reliable === false);
    const totals = this.window(before, after);
    for (const e of doubtful) delete totals[e];
    if (doubtful.length === 0) return { totals, method: 'total from a run without injections' };
    const unreliable = doubtful
      .map((e) => `${e}: ${after.get(e)!.reason ?? before.get(e)?.reason ?? 'marked unreliable'}`)
      .join('; ');
    this.options.log?.(
      `the counters read at ${from} and at the end cannot make a total (${unreliable}); measuring ` +
        `the whole window by injection instead`,
    );
    const until = endAt ?? reply.until;
    if (until && 'function' in until) this.endsAt = until.function;
    if (!until)
      throw new ProfilingError(
        'the adapter did not say where the program ends, so the run has no total: set `programEnd` ' +
          'in the launch configuration (for example "programEnd": "exit")',
      );
    if (reply.endFoundBy) this.options.log?.(`the program ends ${reply.endFoundBy}`);
    checkAbort(signal);
    await this.runTo({ restart: true, until: { function: from } }, `the start of the run (${from})`);
    const window = await this.injectWindow(from, until);
    if (window) {
      try {
        await this.runTo({ until }, describe(until));
        const r = (await this.request(Req.injectedResults)).results.find((x) => x.id === window.id);
        this.baselineRuns++;
        const value = r ? windowValue(r, window.region) : undefined;
        if (!r || value === undefined) {
          throw new ProfilingError(
            `${window.what} was not measured exactly once ` +
              `(${r ? `${r.passes} passes, ${r.calls} calls` : 'no result'}): the run has no total. ` +
              (`Start the run at a function that runs once, or set \`programEnd\` to a function ${from} ` +
                `calls once (for example "programEnd": "exit").`),
          );
        }
        return {
          totals: { ...totals, [eventOfCounter(r.counter)]: value },
          method: `total from ${window.what} injected in a run of its own (${r.counter})`,
        };
      } finally {
        await this.request(Req.removeInjections, { ids: [window.id] }).catch((err: unknown) =>
          this.options.log?.(`could not remove the window measurement: ${message(err)}`),
        );
      }
    }
    const counted = await this.totalFromCounts(from, until, doubtful, signal);
    if (counted) return { totals: { ...totals, ...counted.totals }, method: counted.method };
    this.options.log?.(`the run has no ${doubtful.join('/')} total`);
    if (Object.keys(totals).length === 0)
      throw new ProfilingError(
        `the run from ${from} to ${describe(until)} has no total: no window from ${from} to the end ` +
          `could be injected, and the counters read at both ends are unreliable (${unreliable}). ` +
          ('Set `programEnd` in the launch configuration to a function that is called once at the end ' +
            'of the work and whose entry or call can be patched (for example "programEnd": "exit" or ' +
            '"programEnd": "board_exit").'),
      );
    return { totals, method: 'total from a run without injections (unreliable counters left out)' };
  }

  /**
   * The fallback where no window can be injected and the counters read at halts cannot be trusted:
   * the total from instruction counts read at the run's start and at its end, in two counting runs
   * of their own (QEMU's plugin stops each at its address: reset to `from`, reset to the end). Their
   * difference is the window exactly; an event of a fixed rate (SysTick on QEMU) is formed from it
   * at that rate. Undefined where no counting run can be made (not QEMU, no -icount).
   */
  private async totalFromCounts(
    from: string,
    until: CodeLocation,
    events: readonly string[],
    signal: AbortSignal | undefined,
  ): Promise<{ totals: Record<string, number>; method: string } | undefined> {
    const reading = async (at: CodeLocation): Promise<CustomResponse<typeof Req.executionCounts> | undefined> => {
      checkAbort(signal);
      try {
        const r = await this.request(Req.executionCounts, { until: at });
        if (!r.counted) this.options.log?.(`no instruction counts to ${describe(at)}: ${r.reason}`);
        return r.counted ? r : undefined;
      } catch (err) {
        this.options.log?.(`no instruction counts to ${describe(at)}: ${message(err)}`);
        return undefined;
      }
    };
    const start = await reading({ function: from });
    if (!start) return undefined;
    this.baselineRuns++;
    const end = await reading(until);
    if (!end?.counted || !start.counted) return undefined;
    this.baselineRuns++;
    const instructions = end.total - start.total;
    const totals: Record<string, number> = {};
    for (const e of events) {
      const unit = end.units[e];
      if (unit) totals[e] = instructions / unit.instructionsPerUnit;
    }
    if (Object.keys(totals).length === 0) return undefined;
    const rate = Object.entries(totals)
      .map(([e]) => `${e}: ${end.units[e]!.instructionsPerUnit} instructions each`)
      .join(', ');
    const method =
      `total from the instructions counted from reset to ${from} (${start.total}) and to ${describe(until)} ` +
      `(${end.total}) in two counting runs of their own (QEMU plugin, exact; ${rate})`;
    this.options.log?.(`total ${from} -> ${describe(until)}: ${instructions} instructions (${method})`);
    return { totals, method };
  }

  /**
   * Where a region spanning the run may close. A region starts and ends in one function, or ends at
   * the entry of a function its own calls once: when the run ends at the entry of a function that
   * `from` calls (main calling exit), it closes at that call (the window lacks only the call
   * instruction) or, where that call has no room for a patch, at the callee's entry. When `from`
   * does not call the end (main returns, and exit is called by the startup code), none: the window
   * is `from` itself, from its entry to its return.
   */
  private async windowEnds(from: string, until: CodeLocation): Promise<CodeLocation[]> {
    this.graph ??= await this.callGraph();
    const fn = this.graph.functions.find((f) => f.name === from);
    if (!('function' in until)) {
      const at = 'address' in until ? Number(until.address) : undefined;
      const inside = fn !== undefined && at !== undefined && at >= fn.address && at < fn.address + fn.size;
      return inside ? [until] : [];
    }
    const sites = this.graph.edges
      .filter((e) => e.caller === from && e.callee === until.function && e.kind === 'call')
      .flatMap((e) => e.sites);
    if (sites.length === 0) return [];
    if (sites.length !== 1) {
      throw new ProfilingError(
        `the run's total needs one call from ${from} to ${until.function}, where the window closes; ` +
          `${from} has ${sites.length}. ` +
          ('Set the end of the run (programEnd) to a function the start function calls once, for ' +
            'example "programEnd": "exit".'),
      );
    }
    return [{ address: `0x${sites[0]!.toString(16)}` }, { function: until.function }];
  }

  /**
   * A cyclic program is reconfigured at its safe stop and measured for `dwell` passes; the window's
   * own counter difference is its total (windows differ), less the payload counts the adapter reports.
   */
  private async measureCyclic(
    batch: readonly string[],
    groups: readonly (readonly string[])[],
    mode: Extract<ProfilingMode, { kind: 'cyclic' }>,
    signal: AbortSignal | undefined,
  ): Promise<ResultSet> {
    const at = describe(mode.safeStop);
    await this.prepareCounters();
    checkAbort(signal);
    if (!this.atSafeStop) {
      await this.runTo({ until: mode.safeStop }, `the safe stop ${at}`);
      this.atSafeStop = true;
    }
    return this.withInjected(batch, groups, async () => {
      const before = await this.readAll();
      for (let pass = 0; pass < mode.dwell; pass++) {
        checkAbort(signal);
        await this.runTo({ until: mode.safeStop }, `the safe stop ${at}`);
      }
      return {
        totals: this.window(before, await this.readAll()),
        from: at,
        to: `${at} x${mode.dwell}`,
        subtractPayload: true,
        method: "total from the window's own counters, less the payload",
      };
    });
  }

  /** Injects the batch and the groups, runs the window, collects the results, and always removes the injections. */
  private async withInjected(
    batch: readonly string[],
    groups: readonly (readonly string[])[],
    window: () => Promise<Window>,
  ): Promise<ResultSet> {
    // The function at whose entry every run stops never finishes inside the window (and its entry
    // patch would sit on the window's own end): it is refused, not measured.
    const ending = this.options.mode.kind === 'single-pass' ? this.endsAt : undefined;
    const why = ENDS_THE_RUN;
    const refusedHere: RefusedFunction[] = [
      ...batch.filter((f) => f === ending).map((name) => ({ name, reason: why })),
      ...groups
        .filter((g) => ending !== undefined && g.includes(ending))
        .map((g) => ({ name: g.join(' + '), reason: why, members: [...g], blockedBy: ending! })),
    ];
    const measuredBatch = batch.filter((f) => f !== ending);
    const measuredGroups = groups.filter((g) => ending === undefined || !g.includes(ending));
    const injected = await this.request(Req.inject, {
      targets: [
        ...measuredBatch.map((name) => ({ function: name })),
        ...measuredGroups.map((g) => ({ group: [...g] })),
      ],
      payload: this.options.payload ?? 'software',
      callSitesIfTooShort: this.options.callSitesIfTooShort ?? true,
    });
    const ids = injected.injected.map((i) => i.id);
    try {
      const w = await window();
      const results = ids.length > 0 ? (await this.request(Req.injectedResults)).results : [];
      return this.resultSet(batch, injected, results, w, refusedHere);
    } finally {
      if (ids.length > 0) {
        await this.request(Req.removeInjections, { ids }).catch((err: unknown) =>
          this.options.log?.(`could not remove the injections ${ids.join(', ')}: ${message(err)}`),
        );
      }
    }
  }

  private resultSet(
    batch: readonly string[],
    injected: InjectResponse,
    results: readonly InjectedResult[],
    w: Window,
    refusedHere: readonly RefusedFunction[] = [],
  ): ResultSet {
    const measurements: FunctionMeasurement[] = [];
    const groups: GroupMeasurement[] = [];
    const refused: RefusedFunction[] = [...refusedHere];
    refused.push(
      ...injected.refused.map((r) => {
        if ('group' in r.target)
          return {
            name: r.target.name ?? r.target.group.join(' + '),
            reason: r.reason,
            members: [...r.target.group],
            ...(r.member !== undefined ? { blockedBy: r.member } : {}),
          };
        return { name: 'function' in r.target ? r.target.function : describe(r.target.start), reason: r.reason };
      }),
    );
    const byId = new Map(results.map((r) => [r.id, r]));
    const counter = injected.injected[0]?.counter;
    const event = counter !== undefined ? eventOfCounter(counter) : (Object.keys(w.totals)[0] ?? 'cycles');
    for (const info of injected.injected) {
      const r = byId.get(info.id);
      if (!r) {
        refused.push({
          name: info.name,
          reason: 'the adapter injected it but returned no result for it',
          ...(info.members ? { members: info.members } : {}),
        });
        continue;
      }
      if (info.kind === 'group' && info.members) {
        const g: GroupMeasurement = {
          name: info.name,
          members: info.members,
          inclusive: { [eventOfCounter(r.counter)]: r.compensatedTotal },
          calls: r.calls,
        };
        if (r.untracked > 0) g.incomplete = `${r.untracked} entries could not be tracked`;
        groups.push(g);
        continue;
      }
      // Total, min, max and mean from the same compensated passes (core/analysis/passes.ts).
      const f = passFigures(passCountsOf(r));
      const m: FunctionMeasurement = {
        name: info.name,
        inclusive: { [eventOfCounter(r.counter)]: f ? f.total : Math.max(0, r.compensatedTotal) },
        calls: r.calls,
        passes: r.passes,
        untracked: r.untracked,
        rawTotal: r.total,
      };
      if (f) {
        m.min = f.min;
        m.max = f.max;
        m.mean = f.mean;
      }
      const gaps = [
        ...(r.untracked > 0 ? [`${r.untracked} entries could not be tracked`] : []),
        // Measured at call sites: calls through sites it could not rewrite are not counted.
        ...(info.kind === 'call-sites'
          ? info.warnings
              .filter((w) => w.code === 'callSitesMissed' || w.code === 'indirectCallsMissed')
              .map((w) => w.message)
          : []),
      ];
      if (gaps.length > 0) {
        m.incomplete = gaps.join('; ');
        this.options.log?.(`${info.name}: ${m.incomplete}; its value may be low`);
      }
      measurements.push(m);
    }
    const answered = new Set([...measurements.map((m) => m.name), ...refused.map((r) => r.name)]);
    for (const name of batch)
      if (!answered.has(name)) refused.push({ name, reason: 'the adapter neither injected nor refused it' });
    const totals = { ...w.totals };
    // The run's own total, the same denominator the editor's shares use (passes.programTotal).
    const measured = injected.injected.flatMap((i) => byId.get(i.id) ?? []);
    if (w.subtractPayload && totals[event] !== undefined) totals[event] = programTotal(totals[event], measured)!;
    return {
      id: newResultSetId(),
      createdAt: new Date().toISOString(),
      program: { executable: this.options.executable, ...(this.options.family ? { family: this.options.family } : {}) },
      run: {
        kind: this.options.mode.kind,
        event,
        totals,
        ...(counter !== undefined ? { counter } : {}),
        method:
          `${this.options.payload ?? 'software'} injection, ${counter ?? 'no counter'}` +
          (injected.injected[0]?.instructionsPerUnit !== undefined
            ? `, in ${describeUnit(event, injected.injected[0].instructionsPerUnit)}`
            : '') +
          `; ${w.method}`,
        from: w.from,
        to: w.to,
      },
      measurements,
      ...(groups.length > 0 ? { groups } : {}),
      refused,
    };
  }

  private async runTo(args: RunArguments, what: string): Promise<RunResponse> {
    const r = await this.request(Req.run, {
      ...args,
      ...(this.options.timeoutMs ? { timeoutMs: this.options.timeoutMs } : {}),
    });
    if (!r.reached) {
      // A single-pass run that never gets to its end: firmware that never ends (a super-loop).
      const never = this.options.mode.kind === 'single-pass' && /did not get there within/.test(r.detail ?? '');
      throw new ProfilingError(
        `the program did not reach ${what}${r.detail ? `: ${r.detail}` : ''}` +
          (never
            ? ' If the firmware never ends (a super-loop), measure a window of passes instead: a number ' +
              'of passes over a function or line of its main loop (command line: --cyclic LOCATION ' +
              '--dwell N, for example --cyclic read_sensor --dwell 100 for 100 iterations; in the editor: ' +
              'the descent prompt\'s "a window of passes").'
            : ''),
      );
    }
    return r;
  }

  /** Once: counter widths, and the fixed cycle/instruction counters switched on if nothing counts yet. */
  private async prepareCounters(): Promise<void> {
    if (this.widths) return;
    const caps = await this.request(Req.counters);
    const widths = new Map<string, number>();
    for (const u of caps.units) for (const s of u.slots) widths.set(`${u.unit}:${s.index}`, s.width);
    const counting = caps.units.some((u) => u.present && u.slots.some((s) => s.event !== undefined));
    const fixed = [
      ...new Set(
        caps.units
          .filter((u) => u.present)
          .flatMap((u) => u.slots.map((s) => s.fixedEvent).filter((e): e is string => e !== undefined)),
      ),
    ];
    if (!counting && fixed.length > 0) await this.request(Req.configure, { events: fixed });
    this.widths = widths;
  }

  /** Every counted event's value, reliable readings first. */
  private async readAll(): Promise<Map<string, Reading>> {
    const values = (await this.request(Req.read)).values;
    const out = new Map<string, Reading>();
    const ordered: CounterValue[] = [...values.filter((v) => v.reliable), ...values.filter((v) => !v.reliable)];
    for (const v of ordered) {
      // SysTick's counter-unit event is its clock; what the payloads read of it are ticks.
      const event = v.unit === 'SysTick' && v.event !== undefined ? 'ticks' : v.event;
      if (event === undefined || out.has(event)) continue;
      out.set(event, {
        value: Number(v.value),
        width: this.widths?.get(`${v.unit}:${v.slot}`),
        reliable: v.reliable,
        ...(v.note ? { reason: v.note } : {}),
      });
    }
    return out;
  }

  /**
   * after - before per event, modulo the counter's width when it wrapped (once: a 24-bit SysTick wraps
   * every 16.7 M cycles).
   */
  private window(before: Map<string, Reading>, after: Map<string, Reading>): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [event, a] of after) {
      const b = before.get(event);
      if (!b) continue;
      if (a.value >= b.value) out[event] = a.value - b.value;
      else if (a.width !== undefined && a.width < 53) out[event] = a.value + 2 ** a.width - b.value;
      else
        this.options.log?.(
          `the '${event}' counter went backwards (${b.value} -> ${a.value}); the window has no ${event} total`,
        );
    }
    if (Object.keys(out).length === 0)
      this.options.log?.('no counter was read across the window: the run has no total, so no share can be formed');
    return out;
  }

  private async request<K extends CustomRequestName>(
    name: K,
    ...args: CustomArgumentList<K>
  ): Promise<CustomResponse<K>> {
    try {
      return await customRequest(this.dap, name, ...args);
    } catch (err) {
      throw new ProfilingError(`${name} failed: ${message(err)}`);
    }
  }
}

/**
 * The window's value from its measurement: a region closes once, a function returns once.
 */
function windowValue(r: InjectedResult, region: boolean): number | undefined {
  if (region) return r.passes === 1 ? r.compensatedTotal : undefined;
  return r.calls === 1 && r.untracked === 0 && r.passes === 1 ? r.compensatedTotal : undefined;
}

function describe(loc: CodeLocation): string {
  if ('function' in loc) return loc.function;
  if ('address' in loc) return loc.address;
  return `${loc.path}:${loc.line}`;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function checkAbort(signal: AbortSignal | undefined): void {
  if (signal?.aborted) {
    const err = new Error('the profiling run was cancelled');
    err.name = 'AbortError';
    throw err;
  }
}
