import type { ValidatedLaunch } from '../session/launchValidation';
import { CycleLensError, ErrorCode, errorMessage } from '../errors';
import type { Debugger, RunToOptions, RunToResult } from '../debugger/debugger';
import { startDebugger } from '../debugger/factory';
import type { StopEvent } from '../debugger/types';
import { createServer } from '../servers';
import type { GdbServer } from '../servers/strategy';
import { Emitter } from '../util/emitter';

export interface TargetOutput {
  category: 'console' | 'stdout' | 'stderr' | 'important';
  text: string;
}

export type LaunchMode = 'launch' | 'attach';

/** How long a restart waits for the program to reach its entry before it works on a running target. */
const ENTRY_WAIT_MS = 30_000;

/**
 * A connected debug target: the gdbserver strategy plus GDB, and the lifecycle rules that keep them
 * consistent — startup order, halting briefly to change breakpoints while running, and a teardown
 * that never leaves a process behind whatever failed.
 */
export class DebugTarget {
  private readonly outputEmitter = new Emitter<TargetOutput>();
  private readonly endedEmitter = new Emitter<{ message: string | undefined }>();
  private readonly stopEmitter = new Emitter<StopEvent>();
  private readonly movedEmitter = new Emitter<void>();
  /** The client was last told the target is halted (a stop it saw, and no user resume since). */
  private userSeesHalted = false;
  private ended = false;
  /** What the server's unexpected exit said, when it was not the program's end. */
  private serverDeath: string | undefined;
  private serverDied!: () => void;
  private readonly serverExit = new Promise<void>((resolve) => (this.serverDied = resolve));
  private programExited = false;
  /** Stops the target makes for its own purposes are not reported to the user. */
  private internalStops = 0;
  /** The last stop hidden from the user: one that raced an internal interrupt may be theirs. */
  private lastHiddenStop: StopEvent | undefined;
  private entryBreakpointId: number | undefined;
  /** Run before every reset: patched code must be restored while the journal still matches. */
  private readonly resetHooks: Array<() => Promise<void>> = [];
  private readonly afterResetHooks: Array<() => Promise<void>> = [];
  readonly debugger: Debugger;

  readonly onOutput = this.outputEmitter.event;
  /** The session is over (program exit, GDB death, server death); message set when abnormal. */
  readonly onEnded = this.endedEmitter.event;
  /** A stop the user should see. */
  readonly onStop = this.stopEmitter.event;
  /**
   * The target moved and halted again without the user asking (a profiling run), while the client
   * shows it halted: the client's stack and variables are stale, but there is no stop to report.
   */
  readonly onMovedWhileHalted = this.movedEmitter.event;

  private constructor(
    readonly config: ValidatedLaunch,
    readonly mode: LaunchMode,
    readonly server: GdbServer,
    debugger_: Debugger,
    readonly hasDebugInfo: boolean,
  ) {
    this.debugger = debugger_;
    // Once the session is ending, GDB's complaints about the server it just lost are noise; so is
    // its chatter about the session's own stops ("Temporary breakpoint 7, program_end …" once per
    // profiling run). Failures of internal work come back as errors, not as console text.
    debugger_.onOutput((o) => {
      if (this.ended || (this.internalStops > 0 && o.category === 'console')) return;
      this.outputEmitter.fire(o);
    });
    debugger_.onStop((e) => {
      // The end of a hidden run-to is the adapter's own, whoever waits for it.
      if (e.internal) return;
      if (this.internalStops > 0) {
        this.lastHiddenStop = e;
        return;
      }
      this.deliverStop(e);
    });
    debugger_.onRunning(() => {
      if (this.internalStops === 0) this.userSeesHalted = false;
    });
    debugger_.onExit((e) => this.programEnded(e.exitCode !== undefined ? `with code ${e.exitCode}` : ''));
    debugger_.onDied((message) => this.end(message, true));
    server.onUnexpectedExit((exit) => {
      if (!exit.programEnded) this.serverDeath = exit.message;
      this.serverDied();
      if (exit.programEnded) this.programEnded(`(${exit.message})`);
      else this.end(this.programExited ? undefined : exit.message);
    });
  }

  /** Starts the server and GDB, connects, and leaves the target halted. Cleans up on failure. */
  static async start(config: ValidatedLaunch, mode: LaunchMode, log: (o: TargetOutput) => void): Promise<DebugTarget> {
    const server = createServer(config.server);
    // The server and GDB start side by side (each takes a few hundred ms, mostly its own startup);
    // GDB reads the symbols meanwhile and connects once both are up.
    const serverStarted = server.start({
      executable: config.executable,
      family: config.family,
      cwd: config.cwd,
      log: (text) => log({ category: 'stdout', text }),
    });
    // The debugger reads the program's symbols while the server is still starting (QEMU takes longer).
    let started: Debugger | undefined;
    let early: { dispose(): void } | undefined;
    const gdbStarted = startDebugger({
      kind: config.debugger,
      family: config.family,
      gdbPath: config.gdbPath,
      lldbPython: config.lldbPython,
      cwd: config.cwd,
    }).then(async (d) => {
      started = d;
      early = d.onOutput((o) => log(o));
      // Traced from here on, so the trace shows how the launch connected and prepared the target.
      if (config.trace) d.onTrace((line) => log({ category: 'console', text: `${line}\n` }));
      await d.loadProgram(config.executable);
      return d;
    });
    const [serverResult, gdbResult] = await Promise.allSettled([serverStarted, gdbStarted]);
    const gdb = started as Debugger | undefined;
    try {
      if (serverResult.status === 'rejected') throw serverResult.reason;
      if (gdbResult.status === 'rejected') throw gdbResult.reason;
      await DebugTarget.connect(config, mode, server, gdb!, log);
      early?.dispose();
      return new DebugTarget(config, mode, server, gdb!, config.image.hasDebugInfo);
    } catch (err) {
      await gdb?.exit();
      await server.stop();
      throw err;
    }
  }

  /** With the program's symbols loaded: the debugger's own commands, then the connection. */
  private static async connect(
    config: ValidatedLaunch,
    mode: LaunchMode,
    server: GdbServer,
    gdb: Debugger,
    log: (o: TargetOutput) => void,
  ): Promise<void> {
    if (!config.image.hasDebugInfo) {
      log({
        category: 'important',
        text:
          `${config.executable} has no debug information: source lines, locals and stepping by line ` +
          `are unavailable. Build with -g to get them.\n`,
      });
    }
    for (const c of config.initCommands) await gdb.command(c);
    try {
      await gdb.connectRemote(server.gdbAddress);
    } catch (err) {
      throw new CycleLensError(
        ErrorCode.ConnectFailed,
        `The debugger could not connect to the ${server.kind} gdbserver at ${server.gdbAddress}: ${errorMessage(err)}`,
      );
    }
    const imagePlaced = mode === 'launch' && (await DebugTarget.prepareLaunch(config, server, gdb));
    for (const c of config.postConnectCommands) await gdb.command(c);
    // Only an image put there by this launch is known to match the file: a target attached to, or
    // not loaded, may run another build, or keep patches of a session that was killed.
    const readOnly = imagePlaced ? config.image.readOnlyContents() : undefined;
    if (readOnly) await gdb.imageLoaded(readOnly);
  }

  /** Resolves true when the target now holds the program as its file has it. */
  private static async prepareLaunch(config: ValidatedLaunch, server: GdbServer, gdb: Debugger): Promise<boolean> {
    // QEMU loads the ELF itself (-kernel) and starts at reset; real boards need reset and load.
    if (server.kind === 'qemu') return true;
    if (server.resetCommand) await gdb.monitor(server.resetCommand);
    const load = 'load' in config.server ? config.server.load : undefined;
    if (!(load ?? server.kind === 'openocd')) return false;
    await gdb.download();
    return true;
  }

  get isEnded(): boolean {
    return this.ended;
  }

  /**
   * Lets the program run to `stopAtEntry` (reported as reason `entry`) or freely. With `atEntry`
   * (the adapter's own work, such as measurements applied again after a restart), the run is
   * awaited: `atEntry` runs halted at the first stop, before the user is shown it, so nothing has
   * to interrupt a target that is still on its way there. Without an entry to stop at, it runs
   * halted where the target is now, before the free run starts.
   */
  async runToEntry(atEntry?: () => Promise<void>): Promise<void> {
    const entry = this.config.stopAtEntry;
    if (entry !== undefined) {
      try {
        const bp = await this.debugger.insertBreakpoint({
          location: { kind: 'function', name: entry },
          temporary: true,
        });
        this.entryBreakpointId = bp.id;
      } catch (err) {
        this.outputEmitter.fire({
          category: 'important',
          text:
            `Cannot stop at '${entry}': ${errorMessage(err)}. Stopped at reset instead; set ` +
            `\`stopAtEntry\` to an existing function.\n`,
        });
        if (atEntry) await this.internally(atEntry);
        const frame = (await this.debugger.stackFrames(1, 0, 0).catch(() => []))[0];
        this.showStop({
          reason: 'entry',
          threadId: 1,
          allStopped: true,
          breakpointIds: [],
          ...(frame ? { frame } : {}),
        });
        return;
      }
    }
    if (!atEntry) {
      await this.debugger.continue();
      return;
    }
    if (entry === undefined) {
      await this.internally(atEntry);
      await this.debugger.continue();
      return;
    }
    // The stop is taken hidden, so the work runs before the client sees the target halted there.
    const stop = await this.internally(async () => {
      const stopped = this.debugger.waitForStop(ENTRY_WAIT_MS);
      await this.debugger.continue();
      const e = await stopped;
      if (e && !this.ended && this.debugger.executionState === 'stopped') await atEntry();
      return e;
    });
    if (stop) {
      if (!this.ended) this.deliverStop(stop);
      return;
    }
    // Not there in time (a program that waits before its entry): the work is done the way any
    // change to a running target is, and the entry stop comes when it is reached.
    if (!this.ended) await this.withHalted(atEntry);
  }

  /**
   * Runs `fn` with the target halted: in all-stop mode GDB cannot insert breakpoints or read memory
   * while the target runs, so a running target is interrupted and resumed afterwards, invisibly.
   */
  async withHalted<T>(fn: () => Promise<T>): Promise<T> {
    if (!this.debugger.isRunning) return fn();
    this.internalStops++;
    this.lastHiddenStop = undefined;
    let hidden = true;
    try {
      let stop: StopEvent | undefined;
      try {
        stop = await this.debugger.interrupt();
      } catch (err) {
        if (this.debugger.isRunning || !this.lastHiddenStop) throw err;
      }
      // The target may have stopped by itself just before the interrupt landed (a breakpoint hit, a
      // fault): that stop is the user's, and the target stays halted for them afterwards.
      const users = stop === undefined ? this.lastHiddenStop : isInterruptStop(stop) ? undefined : stop;
      if (!stop && !users)
        throw new CycleLensError(
          ErrorCode.NotStopped,
          'The target did not halt when asked. It may be in a state the debugger cannot interrupt; ' +
            'try Pause, or restart the session.',
        );
      const result = await fn();
      // Every stop after this resume is the user's: a breakpoint just set can be hit before the
      // continue's reply is handled (both may arrive in one read of GDB's output).
      this.internalStops--;
      hidden = false;
      if (users) this.deliverStop(users);
      else await this.debugger.continue();
      return result;
    } finally {
      if (hidden) this.internalStops--;
    }
  }

  private showStop(e: StopEvent): void {
    this.userSeesHalted = true;
    this.stopEmitter.fire(e);
  }

  private deliverStop(e: StopEvent): void {
    if (this.entryBreakpointId !== undefined && e.breakpointIds.includes(this.entryBreakpointId)) {
      this.entryBreakpointId = undefined;
      this.showStop({ ...e, reason: 'entry' });
      return;
    }
    this.showStop(e);
  }

  /**
   * The one run-to of the adapter: every internal stop at an address (injection calibration,
   * profiling runs) comes through here. Hidden, the run interrupts a running target first, the
   * stop at the end never reaches the client, the debugger's chatter about it is dropped, and the
   * temporary breakpoint is gone afterwards, leaving the user's breakpoints as they were.
   */
  async runTo(address: bigint, options: RunToOptions): Promise<RunToResult> {
    if (!options.hidden) return this.debugger.runTo(address, options);
    return this.internally(async () => {
      if (this.debugger.isRunning) await this.debugger.interrupt();
      // The user's breakpoints are passed by (disabled for the run, enabled again after it): an
      // analysis run stops only where it was sent.
      const user = this.debugger.setBreakpointsEnabled ? this.userBreakpoints() : [];
      if (user.length > 0) await this.debugger.setBreakpointsEnabled!(user, false);
      try {
        return await this.debugger.runTo(address, options);
      } finally {
        if (user.length > 0) {
          if (this.debugger.isRunning) await this.debugger.interrupt().catch(() => undefined);
          await this.debugger.setBreakpointsEnabled!(user, true);
        }
      }
    });
  }

  /** The user's breakpoints (their debugger numbers), which hidden runs pass by; the session sets it. */
  userBreakpoints: () => number[] = () => [];

  /** True while the adapter runs the target for its own work (profiling runs, calibration). */
  get runsInternally(): boolean {
    return this.internalStops > 0;
  }

  /** Runs `fn` (which may resume and halt the target) with its stops hidden from the user. */
  async internally<T>(fn: () => Promise<T>): Promise<T> {
    this.internalStops++;
    try {
      return await fn();
    } finally {
      this.internalStops--;
    }
  }

  /** Steps one instruction without telling the user (probe services run code on the core this way). */
  async stepInstructionInternally(): Promise<void> {
    await this.internally(async () => {
      const stopped = this.debugger.waitForStop(5_000);
      await this.debugger.stepIn(true);
      if (!(await stopped))
        throw new CycleLensError(
          ErrorCode.NotStopped,
          'A single instruction step did not complete: the target may be stuck. Restart the session.',
        );
    });
  }

  /**
   * After running internally (measurements, profiling runs), shows the user where the target now
   * stands, if it is halted: its stops meanwhile were hidden.
   */
  async announceCurrentStop(description?: string, options: { preserveFocus?: boolean } = {}): Promise<void> {
    if (this.debugger.executionState !== 'stopped') return;
    // A profiling scenario makes a run after another: a client that already shows the target halted
    // refreshes its stack instead of seeing a stop (and "Paused on entry") per run.
    if (options.preserveFocus && this.userSeesHalted) {
      this.movedEmitter.fire();
      return;
    }
    const frames = await this.debugger.stackFrames(1, 0, 0).catch(() => []);
    this.showStop({
      reason: 'step',
      threadId: 1,
      allStopped: true,
      breakpointIds: [],
      ...(description ? { description } : {}),
      ...(frames[0] ? { frame: frames[0] } : {}),
      ...(options.preserveFocus ? { preserveFocus: true } : {}),
    });
  }

  /** Resets the target and runs to the entry point again. */
  async restart(): Promise<void> {
    await this.resetHalted();
    await this.runToEntry();
  }

  onBeforeReset(hook: () => Promise<void>): void {
    this.resetHooks.push(hook);
  }

  /** Runs after every reset this target makes, with the core halted at the reset vector. */
  onAfterReset(hook: () => Promise<void>): void {
    this.afterResetHooks.push(hook);
  }

  /** Resets the target and leaves it halted at the reset vector, without telling the user. */
  async resetHalted(): Promise<void> {
    const reset = this.server.resetCommand;
    if (!reset) {
      throw new CycleLensError(
        ErrorCode.Unsupported,
        `Restart needs a reset command, and a ${this.server.kind} gdbserver has none CycleLens ` +
          `knows. Stop and start the session instead.`,
      );
    }
    await this.resetWith(reset);
  }

  /** What a `monitor` command typed in the Debug Console does to the target (GdbServer.resetKind). */
  resetKind(command: string): 'halts' | 'runs' | undefined {
    return this.server.resetKind(command);
  }

  /**
   * A halting reset by `monitor command`, the user's or the adapter's: measurements come out of the
   * code first, the debugger forgets what it read before, and the counters are set up again after.
   */
  async resetWith(command: string): Promise<string> {
    return this.internally(async () => {
      if (this.debugger.isRunning) await this.debugger.interrupt();
      for (const hook of this.resetHooks) await hook();
      const output = await this.debugger.monitor(command);
      await this.debugger.flushCaches();
      for (const hook of this.afterResetHooks) await hook();
      return output;
    });
  }

  /**
   * Ends the session. Terminating stops the server first, with the target halted: GDB quitting
   * first would detach, and a detached target runs on (a board freely); QEMU, which ends with the
   * session, is stopped while GDB quits.
   * Otherwise GDB detaches and the target resumes (attach).
   */
  async shutdown(terminateDebuggee: boolean): Promise<void> {
    this.ended = true;
    const gdb = this.debugger;
    try {
      if (gdb.executionState === 'running') {
        this.internalStops++;
        await gdb.interrupt(2_000).catch(() => undefined);
      }
      if (terminateDebuggee && this.server.kind === 'qemu') {
        // QEMU ends with the session, so GDB need not wait for it: both go at once.
        await Promise.all([this.server.stop(), gdb.exit()]);
      } else if (terminateDebuggee) {
        await this.server.stop();
      } else if (this.server.kind !== 'qemu' && gdb.executionState !== 'exited') {
        await gdb.detach().catch(() => undefined);
      }
    } finally {
      await gdb.exit();
      await this.server.stop();
    }
  }

  private programEnded(detail: string): void {
    if (this.programExited) return;
    this.programExited = true;
    this.outputEmitter.fire({ category: 'console', text: `The program exited${detail ? ` ${detail}` : ''}.\n` });
    this.end(undefined);
  }

  /**
   * Ends the session. When the debugger died, the server may have died first and taken it along
   * (GDB can even crash on the connection it lost): the two exits arrive in either order, so the
   * server's, which says what happened, is waited for a moment and named instead.
   */
  private end(message: string | undefined, debuggerDied = false): void {
    if (this.ended) return;
    this.ended = true;
    void (async () => {
      if (debuggerDied) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          this.serverExit,
          new Promise<void>((resolve) => (timer = setTimeout(resolve, SERVER_EXIT_GRACE_MS))),
        ]);
        clearTimeout(timer);
        if (this.serverDeath !== undefined && !this.programExited) message = this.serverDeath;
      }
      await this.debugger.exit();
      await this.server.stop();
      this.endedEmitter.fire({ message });
    })();
  }
}

/** How long a debugger's death waits for the server's, which explains it when both die. */
const SERVER_EXIT_GRACE_MS = 500;

/** A stop an interrupt caused (SIGINT, or SIGTRAP on stubs that report it so), not the program's own. */
function isInterruptStop(e: StopEvent): boolean {
  return e.reason === 'signal' || e.reason === 'pause' || e.reason === 'unknown';
}
