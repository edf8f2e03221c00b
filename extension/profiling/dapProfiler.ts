import type { CounterValue } from '../../common/counters';
import type {
  CallGraphResponse,
  CodeLocation,
  ConfigureArguments,
  CountersResponse,
  InjectArguments,
  InjectedResult,
  InjectedResultsResponse,
  InjectResponse,
  ReadResponse,
  RemoveInjectionsArguments,
  RunArguments,
  RunResponse,
} from '../../common/dapCustom';
import { CustomRequests } from '../../common/dapCustom';
import type { BatchMeasurer } from '../analysis/descent';
import { newResultSetId, type FunctionMeasurement, type RefusedFunction, type ResultSet } from '../analysis/resultSet';

/**
 * A BatchMeasurer that drives a CycleLens debug session over its custom DAP requests. It needs
 * nothing but `customRequest`, so the extension (vscode.DebugSession) and the CLI (its own DAP
 * client) both use it. Per batch, single-pass programs:
 *   run {restart, until: start} -> inject batch -> run {until: end} -> injectedResults -> removeInjections
 * (plus one run without injections first, for the total); cyclic programs reconfigure at the safe
 * stop instead of restarting and dwell for `dwell` passes. Each batch is one result set. Functions
 * the adapter refuses come back as refused with its reason, never dropped.
 */

const Req = CustomRequests;

export interface DapRequester {
  customRequest(command: string, args?: unknown): Promise<unknown>;
}

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
  /** Measure functions too short to patch at their call sites (default true). */
  callSitesIfTooShort?: boolean;
  timeoutMs?: number;
  /** Debug Console / terminal lines. */
  log?(line: string): void;
}

export class ProfilingError extends Error {
  override name = 'ProfilingError';
}

/** The counter an injected payload reads, as the counter event it counts. */
export function eventOfCounter(counter: string): string {
  return /instret|instruction|iall/i.test(counter) ? 'instructions' : 'cycles';
}

export class DapProfiler implements BatchMeasurer {
  readonly slots: number;
  /** Baseline runs taken (single-pass: one, before the first batch). */
  baselineRuns = 0;
  private atSafeStop = false;
  private widths: Map<string, number> | undefined;
  private baseline: Record<string, number> | undefined;

  constructor(
    private readonly dap: DapRequester,
    private readonly options: DapProfilerOptions,
  ) {
    if (!Number.isInteger(options.slots) || options.slots < 1) throw new ProfilingError(`slots must be a whole number >= 1 (got ${options.slots})`);
    if (options.mode.kind === 'cyclic' && !(Number.isInteger(options.mode.dwell) && options.mode.dwell >= 1)) {
      throw new ProfilingError(`the dwell must be a whole number of passes >= 1 (got ${options.mode.dwell})`);
    }
    this.slots = options.slots;
  }

  async callGraph(): Promise<CallGraphResponse> {
    return (await this.request(Req.callGraph)) as CallGraphResponse;
  }

  async measure(batch: readonly string[], signal?: AbortSignal): Promise<ResultSet> {
    return this.options.mode.kind === 'single-pass' ? this.measureSinglePass(batch, this.options.mode, signal) : this.measureCyclic(batch, this.options.mode, signal);
  }

  /**
   * A single-pass program repeats exactly (QEMU -icount, sleep=off), so the run's total comes from
   * one run without injections: the payloads' own instructions would otherwise inflate it by
   * their full cost per call, which the adapter does not report (only the part inside the window).
   */
  private async measureSinglePass(batch: readonly string[], mode: Extract<ProfilingMode, { kind: 'single-pass' }>, signal: AbortSignal | undefined): Promise<ResultSet> {
    const from = mode.start ?? 'main';
    const end = mode.end ? describe(mode.end) : 'end';
    await this.prepareCounters();
    if (!this.baseline) {
      checkAbort(signal);
      await this.runTo({ restart: true, until: { function: from } }, `the start of the run (${from})`);
      const before = await this.readAll();
      await this.runTo({ ...(mode.end ? { until: mode.end } : {}) }, mode.end ? describe(mode.end) : 'the end of the program');
      this.baseline = this.window(before, await this.readAll());
      this.baselineRuns++;
      this.options.log?.(`baseline run ${from} -> ${end}: ${Object.entries(this.baseline).map(([e, v]) => `${v} ${e}`).join(', ') || 'no counter read'}`);
    }
    checkAbort(signal);
    await this.runTo({ restart: true, until: { function: from } }, `the start of the run (${from})`);
    return this.withInjected(batch, async () => {
      await this.runTo({ ...(mode.end ? { until: mode.end } : {}) }, mode.end ? describe(mode.end) : 'the end of the program');
      return { totals: { ...this.baseline! }, from, to: end, subtractPayload: false };
    });
  }

  /**
   * A cyclic program is reconfigured at its safe stop and measured for `dwell` passes; the window's
   * own counter difference is its total (windows differ), less the payload counts the adapter reports.
   */
  private async measureCyclic(batch: readonly string[], mode: Extract<ProfilingMode, { kind: 'cyclic' }>, signal: AbortSignal | undefined): Promise<ResultSet> {
    const at = describe(mode.safeStop);
    await this.prepareCounters();
    checkAbort(signal);
    if (!this.atSafeStop) {
      await this.runTo({ until: mode.safeStop }, `the safe stop ${at}`);
      this.atSafeStop = true;
    }
    return this.withInjected(batch, async () => {
      const before = await this.readAll();
      for (let pass = 0; pass < mode.dwell; pass++) {
        checkAbort(signal);
        await this.runTo({ until: mode.safeStop }, `the safe stop ${at}`);
      }
      return { totals: this.window(before, await this.readAll()), from: at, to: `${at} x${mode.dwell}`, subtractPayload: true };
    });
  }

  /** Injects the batch, runs the window, collects the results, and always removes the injections. */
  private async withInjected(batch: readonly string[], window: () => Promise<{ totals: Record<string, number>; from: string; to: string; subtractPayload: boolean }>): Promise<ResultSet> {
    const injected = (await this.request(Req.inject, {
      targets: batch.map((name) => ({ function: name })),
      payload: this.options.payload ?? 'software',
      callSitesIfTooShort: this.options.callSitesIfTooShort ?? true,
    } satisfies InjectArguments)) as InjectResponse;
    const ids = injected.injected.map((i) => i.id);
    try {
      const w = await window();
      const results = ids.length > 0 ? ((await this.request(Req.injectedResults)) as InjectedResultsResponse).results : [];
      return this.resultSet(batch, injected, results, w);
    } finally {
      if (ids.length > 0) {
        await this.request(Req.removeInjections, { ids } satisfies RemoveInjectionsArguments).catch((err: unknown) => this.options.log?.(`could not remove the injections ${ids.join(', ')}: ${message(err)}`));
      }
    }
  }

  private resultSet(
    batch: readonly string[],
    injected: InjectResponse,
    results: readonly InjectedResult[],
    w: { totals: Record<string, number>; from: string; to: string; subtractPayload: boolean },
  ): ResultSet {
    const measurements: FunctionMeasurement[] = [];
    const refused: RefusedFunction[] = injected.refused.map((r) => ({ name: 'function' in r.target ? r.target.function : describe(r.target.start), reason: r.reason }));
    const byId = new Map(results.map((r) => [r.id, r]));
    const counter = injected.injected[0]?.counter;
    const event = counter !== undefined ? eventOfCounter(counter) : (Object.keys(w.totals)[0] ?? 'cycles');
    let payloadCounts = 0;
    for (const info of injected.injected) {
      const r = byId.get(info.id);
      if (!r) {
        refused.push({ name: info.name, reason: 'the adapter injected it but returned no result for it' });
        continue;
      }
      const m: FunctionMeasurement = { name: info.name, inclusive: { [eventOfCounter(r.counter)]: r.compensatedTotal }, calls: r.calls, passes: r.passes, untracked: r.untracked, rawTotal: r.total };
      if (r.min !== null) m.min = r.min;
      if (r.max !== null) m.max = r.max;
      if (r.meanCompensated !== null) m.mean = r.meanCompensated;
      const gaps = [
        ...(r.untracked > 0 ? [`${r.untracked} entries could not be tracked`] : []),
        // Measured at call sites: calls through sites it could not rewrite are not counted.
        ...(info.kind === 'call-sites' ? info.warnings : []),
      ];
      if (gaps.length > 0) {
        m.incomplete = gaps.join('; ');
        this.options.log?.(`${info.name}: ${m.incomplete}; its value may be low`);
      }
      measurements.push(m);
      payloadCounts += r.total - r.compensatedTotal;
    }
    const answered = new Set([...measurements.map((m) => m.name), ...refused.map((r) => r.name)]);
    for (const name of batch) if (!answered.has(name)) refused.push({ name, reason: 'the adapter neither injected nor refused it' });
    const totals = { ...w.totals };
    if (w.subtractPayload && totals[event] !== undefined) totals[event] = Math.max(0, totals[event]! - payloadCounts);
    return {
      id: newResultSetId(),
      createdAt: new Date().toISOString(),
      program: { executable: this.options.executable, ...(this.options.family ? { family: this.options.family } : {}) },
      run: {
        kind: this.options.mode.kind,
        event,
        totals,
        method: `${this.options.payload ?? 'software'} injection, ${counter ?? 'no counter'}${w.subtractPayload ? '' : '; total from a run without injections'}`,
        from: w.from,
        to: w.to,
      },
      measurements,
      refused,
    };
  }

  private async runTo(args: RunArguments, what: string): Promise<void> {
    const r = (await this.request(Req.run, { ...args, ...(this.options.timeoutMs ? { timeoutMs: this.options.timeoutMs } : {}) } satisfies RunArguments)) as RunResponse;
    if (!r.reached) throw new ProfilingError(`the program did not reach ${what}${r.detail ? `: ${r.detail}` : ''}`);
  }

  /** Once: counter widths, and the fixed cycle/instruction counters switched on if nothing counts yet. */
  private async prepareCounters(): Promise<void> {
    if (this.widths) return;
    const caps = (await this.request(Req.counters)) as CountersResponse;
    const widths = new Map<string, number>();
    for (const u of caps.units) for (const s of u.slots) widths.set(`${u.unit}:${s.index}`, s.width);
    const counting = caps.units.some((u) => u.present && u.slots.some((s) => s.event !== undefined));
    const fixed = [...new Set(caps.units.filter((u) => u.present).flatMap((u) => u.slots.map((s) => s.fixedEvent).filter((e): e is string => e !== undefined)))];
    if (!counting && fixed.length > 0) await this.request(Req.configure, { events: fixed } satisfies ConfigureArguments);
    this.widths = widths;
  }

  /** Every counted event's value, reliable readings first. */
  private async readAll(): Promise<Map<string, { value: number; width: number | undefined }>> {
    const values = ((await this.request(Req.read)) as ReadResponse).values;
    const out = new Map<string, { value: number; width: number | undefined }>();
    const ordered: CounterValue[] = [...values.filter((v) => v.reliable), ...values.filter((v) => !v.reliable)];
    for (const v of ordered) {
      if (v.event === undefined || out.has(v.event)) continue;
      out.set(v.event, { value: Number(v.value), width: this.widths?.get(`${v.unit}:${v.slot}`) });
    }
    return out;
  }

  /** after - before per event, modulo the counter's width when it wrapped (once: a 24-bit SysTick wraps every 16.7 M cycles). */
  private window(before: Map<string, { value: number; width: number | undefined }>, after: Map<string, { value: number; width: number | undefined }>): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [event, a] of after) {
      const b = before.get(event);
      if (!b) continue;
      if (a.value >= b.value) out[event] = a.value - b.value;
      else if (a.width !== undefined && a.width < 53) out[event] = a.value + 2 ** a.width - b.value;
      else this.options.log?.(`the '${event}' counter went backwards (${b.value} -> ${a.value}); the window has no ${event} total`);
    }
    if (Object.keys(out).length === 0) this.options.log?.('no counter was read across the window: the run has no total, so no share can be formed');
    return out;
  }

  private async request(command: string, args?: unknown): Promise<unknown> {
    try {
      return await this.dap.customRequest(command, args);
    } catch (err) {
      throw new ProfilingError(`${command} failed: ${message(err)}`);
    }
  }
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
