import { CycleLensError, ErrorCode } from '../errors';
import { Emitter } from '../util/emitter';
import type { Debugger, OutputLine, RunToOptions, RunToResult } from './debugger';
import { runToWithTemporaryBreakpoint } from './runTo';
import type { ExitEvent, StopEvent } from './types';

/**
 * What every `Debugger` implementation shares: its events and the waiters for the next stop. The
 * implementation fires the events from what its debugger reports and resolves the waiters at each
 * stop (or with undefined when the program or the debugger ends).
 */
export abstract class DebuggerBase {
  protected readonly stopEmitter = new Emitter<StopEvent>();
  protected readonly runningEmitter = new Emitter<void>();
  protected readonly exitEmitter = new Emitter<ExitEvent>();
  protected readonly outputEmitter = new Emitter<OutputLine>();
  protected readonly diedEmitter = new Emitter<string>();
  protected readonly memoryWriteEmitter = new Emitter<void>();
  private stopWaiters: Array<(e: StopEvent | undefined) => void> = [];
  /** Hidden run-tos under way: their stops are internal, and their chatter is not the user's. */
  protected hiddenRuns = 0;

  readonly onStop = this.stopEmitter.event;
  readonly onRunning = this.runningEmitter.event;
  /** The program ended (not the debugger). */
  readonly onExit = this.exitEmitter.event;
  readonly onOutput = this.outputEmitter.event;
  /** The debugger itself died; the argument is the message for the user. */
  readonly onDied = this.diedEmitter.event;
  /**
   * Target memory may have been written through the debugger: a memory write, a load, a console or
   * monitor command, an assignment or a call in an expression. Caches of target memory listen.
   */
  readonly onMemoryWrite = this.memoryWriteEmitter.event;

  /** Resolves at the next stop (or undefined on timeout / target exit / debugger death). */
  waitForStop(timeoutMs: number): Promise<StopEvent | undefined> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.stopWaiters = this.stopWaiters.filter((w) => w !== waiter);
        resolve(undefined);
      }, timeoutMs);
      const waiter = (e: StopEvent | undefined): void => {
        clearTimeout(timer);
        resolve(e);
      };
      this.stopWaiters.push(waiter);
    });
  }

  /** A run to an address, the same for every debugger; a hidden one marks its stop as internal. */
  async runTo(this: DebuggerBase & Debugger, address: bigint, options: RunToOptions): Promise<RunToResult> {
    this.expectStopped('run to an address');
    if (options.hidden) this.hiddenRuns++;
    try {
      return await runToWithTemporaryBreakpoint(this, address, options.timeoutMs ?? 120_000);
    } finally {
      if (options.hidden) this.hiddenRuns--;
    }
  }

  /** Refuses `what` unless the target is halted, with what to do instead. */
  protected expectStopped(this: DebuggerBase & Debugger, what: string): void {
    if (this.executionState === 'running')
      throw new CycleLensError(ErrorCode.NotStopped, `Cannot ${what} while the target is running: pause it first.`);
    if (this.executionState === 'exited')
      throw new CycleLensError(ErrorCode.NotRunning, `Cannot ${what}: the program has ended. Restart the session.`);
  }

  protected resolveStopWaiters(e: StopEvent | undefined): void {
    const waiters = this.stopWaiters;
    this.stopWaiters = [];
    for (const w of waiters) w(e);
  }
}

/** An assignment (`=`, `+=`, `++` …) or a call (`f(…)`) in a C expression may write memory. */
export function mayWriteMemory(expression: string): boolean {
  return /(^|[^=!<>])=(?!=)|\+\+|--|[A-Za-z_]\w*\s*\(/.test(expression);
}

/**
 * `$name = value` with nothing else that writes: a register or a convenience variable is set, not
 * memory (the Registers view sets registers this way).
 */
export function writesOnlyRegisters(expression: string): boolean {
  const m = /^\s*\$\w+\s*=(?!=)(.*)$/s.exec(expression);
  return m !== null && !mayWriteMemory(m[1]!);
}
