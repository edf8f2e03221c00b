import type { CodeLocation, MeasuredPass, MeasurementResponse } from '../../common/dapCustom';
import type { Debugger } from '../debugger/debugger';
import { breakpointLocation, describeBreakpointLocation } from '../debugger/locations';
import type { StopEvent } from '../debugger/types';
import { CycleLensError, ErrorCode } from '../errors';
import type { CounterService } from './counterService';
import { difference } from './counterService';

/** What the measurement needs from the debug target: the debugger and a way to run without user-visible stops. */
export interface MeasurementHost {
  debugger: Debugger;
  /** Runs `fn` with the target's stops hidden from the user. */
  internally<T>(fn: () => Promise<T>): Promise<T>;
}

/**
 * Measurements between two points with breakpoints (no code injected): counters are read at each
 * halt, before resuming, so time spent halted in the debugger is never counted. A region is the
 * code executed from the start location (included) until the end location (excluded), the same
 * definition the oracle uses.
 */
export class BreakpointMeasurement {
  constructor(
    private readonly host: MeasurementHost,
    private readonly counters: CounterService,
  ) {}

  /** From the current stop to `to`, once ("measure to cursor"). */
  async measureTo(to: CodeLocation, timeoutMs = 60_000): Promise<MeasurementResponse> {
    const gdb = this.host.debugger;
    this.expectHalted();
    return this.host.internally(async () => {
      await this.counters.start();
      const bp = await gdb.insertBreakpoint({ location: breakpointLocation(to) });
      try {
        const before = await this.counters.read();
        const stop = await this.continueToStop(timeoutMs);
        if (!stop) return { passes: [], incomplete: this.endReason(timeoutMs) };
        const after = await this.counters.read();
        const pass: MeasuredPass = { values: difference(before, after) };
        const arrived = stop.breakpointIds.includes(bp.id);
        return {
          passes: arrived ? [pass] : [],
          ...(arrived ? {} : { incomplete: `The target stopped before reaching the end (${describeStop(stop)}).` }),
          ...stoppedAt(stop),
        };
      } finally {
        if (gdb.executionState === 'stopped') await gdb.deleteBreakpoints([bp.id]);
      }
    });
  }

  /** Counters read at `start` and `end` on every pass, until `passes` passes or the program stops elsewhere. */
  async measureRange(
    start: CodeLocation,
    end: CodeLocation,
    passes: number,
    timeoutMs = 120_000,
    onProgress?: (done: number) => void,
  ): Promise<MeasurementResponse> {
    if (!Number.isInteger(passes) || passes < 1)
      throw new CycleLensError(ErrorCode.InvalidRequest, `passes must be a whole number ≥ 1 (got ${passes}).`);
    const gdb = this.host.debugger;
    this.expectHalted();
    return this.host.internally(async () => {
      await this.counters.start();
      // start == end measures one iteration per pass: each arrival ends a pass and opens the next.
      const loop = sameLocation(start, end);
      const startBp = await gdb.insertBreakpoint({ location: breakpointLocation(start) });
      const endBp = loop ? startBp : await gdb.insertBreakpoint({ location: breakpointLocation(end) });
      const deadline = Date.now() + timeoutMs;
      const out: MeasuredPass[] = [];
      let last: StopEvent | undefined;
      let incomplete: string | undefined;
      try {
        let opened: Awaited<ReturnType<CounterService['read']>> | undefined;
        while (out.length < passes) {
          const stop = await this.continueToStop(Math.max(1, deadline - Date.now()));
          if (!stop) {
            incomplete = `${this.endReason(timeoutMs)} after ${out.length} of ${passes} passes.`;
            break;
          }
          last = stop;
          if (loop && stop.breakpointIds.includes(startBp.id)) {
            const now = await this.counters.read();
            if (opened) {
              out.push({ values: difference(opened, now) });
              onProgress?.(out.length);
            }
            opened = now;
          } else if (stop.breakpointIds.includes(startBp.id)) {
            // A start seen again before the end (recursion, or an end skipped by an early return)
            // restarts the pass: the region is from the latest start to the next end.
            opened = await this.counters.read();
          } else if (stop.breakpointIds.includes(endBp.id)) {
            if (opened) {
              out.push({ values: difference(opened, await this.counters.read()) });
              opened = undefined;
              onProgress?.(out.length);
            }
          } else {
            incomplete =
              `The target stopped outside the region (${describeStop(stop)}) after ${out.length} of ${passes} ` +
              `passes.`;
            break;
          }
        }
      } finally {
        if (gdb.executionState === 'stopped') await gdb.deleteBreakpoints(loop ? [startBp.id] : [startBp.id, endBp.id]);
      }
      return { passes: out, ...(incomplete ? { incomplete } : {}), ...(last ? stoppedAt(last) : {}) };
    });
  }

  private async continueToStop(timeoutMs: number): Promise<StopEvent | undefined> {
    const gdb = this.host.debugger;
    const stopped = gdb.waitForStop(timeoutMs);
    await gdb.continue();
    const stop = await stopped;
    if (!stop && gdb.isRunning) await gdb.interrupt();
    return stop;
  }

  private endReason(timeoutMs: number): string {
    return this.host.debugger.executionState === 'exited'
      ? 'The program ended'
      : `No stop within ${Math.round(timeoutMs / 1000)} s`;
  }

  private expectHalted(): void {
    if (this.host.debugger.executionState !== 'stopped') {
      throw new CycleLensError(ErrorCode.NotStopped, 'Pause the target first: a measurement starts from a halt.');
    }
  }
}

function sameLocation(a: CodeLocation, b: CodeLocation): boolean {
  return describeBreakpointLocation(breakpointLocation(a)) === describeBreakpointLocation(breakpointLocation(b));
}

function describeStop(e: StopEvent): string {
  const where = e.frame?.func ? ` in ${e.frame.func}` : e.frame ? ` at 0x${e.frame.address.toString(16)}` : '';
  return `${e.reason}${e.description ? ` ${e.description}` : ''}${where}`;
}

function stoppedAt(e: StopEvent): Pick<MeasurementResponse, 'stoppedAt'> {
  if (!e.frame) return {};
  return {
    stoppedAt: {
      address: `0x${e.frame.address.toString(16)}`,
      ...(e.frame.fullname ? { path: e.frame.fullname } : {}),
      ...(e.frame.line !== undefined ? { line: e.frame.line } : {}),
      ...(e.frame.func ? { function: e.frame.func } : {}),
    },
  };
}
