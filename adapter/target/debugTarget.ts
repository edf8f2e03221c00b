import type { ValidatedLaunch } from '../session/launchValidation';
import { CycleLensError, ErrorCode, errorMessage } from '../errors';
import { GdbBackend } from '../backend/gdb/gdbBackend';
import type { StopEvent } from '../backend/types';
import { createServer } from '../servers';
import type { GdbServer } from '../servers/strategy';
import { Emitter } from '../util/emitter';

export interface TargetOutput {
  category: 'console' | 'stdout' | 'stderr' | 'important';
  text: string;
}

export type LaunchMode = 'launch' | 'attach';

/**
 * A connected debug target: the gdbserver strategy plus GDB, and the lifecycle rules that keep them
 * consistent — startup order, halting briefly to change breakpoints while running, and a teardown
 * that never leaves a process behind whatever failed.
 */
export class DebugTarget {
  private readonly outputEmitter = new Emitter<TargetOutput>();
  private readonly endedEmitter = new Emitter<{ message: string | undefined }>();
  private readonly stopEmitter = new Emitter<StopEvent>();
  private ended = false;
  private programExited = false;
  /** Stops the target makes for its own purposes are not reported to the user. */
  private internalStops = 0;
  /** The last stop hidden from the user: one that raced an internal interrupt may be theirs. */
  private lastHiddenStop: StopEvent | undefined;
  private entryBreakpointId: number | undefined;
  /** Run before every reset: patched code must be restored while the journal still matches. */
  private readonly resetHooks: Array<() => Promise<void>> = [];
  private readonly afterResetHooks: Array<() => Promise<void>> = [];

  readonly onOutput = this.outputEmitter.event;
  /** The session is over (program exit, GDB death, server death); message set when abnormal. */
  readonly onEnded = this.endedEmitter.event;
  /** A stop the user should see. */
  readonly onStop = this.stopEmitter.event;

  private constructor(
    readonly config: ValidatedLaunch,
    readonly mode: LaunchMode,
    readonly server: GdbServer,
    readonly gdb: GdbBackend,
    readonly hasDebugInfo: boolean,
  ) {
    // Once the session is ending, GDB's complaints about the server it just lost are noise; so is
    // its chatter about the session's own stops ("Temporary breakpoint 7, program_end …" once per
    // profiling run). Failures of internal work come back as errors, not as console text.
    gdb.onOutput((o) => {
      if (this.ended || (this.internalStops > 0 && o.category === 'console')) return;
      this.outputEmitter.fire(o);
    });
    gdb.onStop((e) => {
      if (this.internalStops > 0) {
        this.lastHiddenStop = e;
        return;
      }
      this.deliverStop(e);
    });
    gdb.onExit((e) => this.programEnded(e.exitCode !== undefined ? `with code ${e.exitCode}` : ''));
    gdb.onDied((message) => this.end(message));
    server.onUnexpectedExit((exit) => {
      if (exit.programEnded) this.programEnded(`(${exit.message})`);
      else this.end(this.programExited ? undefined : exit.message);
    });
  }

  /** Starts the server and GDB, connects, and leaves the target halted. Cleans up on failure. */
  static async start(config: ValidatedLaunch, mode: LaunchMode, log: (o: TargetOutput) => void): Promise<DebugTarget> {
    const server = createServer(config.server);
    // The server and GDB start side by side (each takes a few hundred ms, mostly its own startup);
    // GDB reads the symbols meanwhile and connects once both are up.
    const serverStarted = server.start({ executable: config.executable, family: config.family, cwd: config.cwd, log: (text) => log({ category: 'stdout', text }) });
    const gdbStarted = GdbBackend.start({ gdbPath: config.gdbPath, cwd: config.cwd });
    const [serverResult, gdbResult] = await Promise.allSettled([serverStarted, gdbStarted]);
    const gdb = gdbResult.status === 'fulfilled' ? gdbResult.value : undefined;
    try {
      if (serverResult.status === 'rejected') throw serverResult.reason;
      if (gdbResult.status === 'rejected') throw gdbResult.reason;
      const early = gdb!.onOutput((o) => log(o));
      await DebugTarget.connect(config, mode, server, gdb!, log);
      early.dispose();
      return new DebugTarget(config, mode, server, gdb!, config.image.hasDebugInfo);
    } catch (err) {
      await gdb?.exit();
      await server.stop();
      throw err;
    }
  }

  private static async connect(config: ValidatedLaunch, mode: LaunchMode, server: GdbServer, gdb: GdbBackend, log: (o: TargetOutput) => void): Promise<void> {
    await gdb.fileExecAndSymbols(config.executable);
    if (!config.image.hasDebugInfo) {
      log({ category: 'important', text: `${config.executable} has no debug information: source lines, locals and stepping by line are unavailable. Build with -g to get them.\n` });
    }
    for (const c of config.initCommands) await gdb.console(c);
    try {
      await gdb.targetSelectRemote(server.gdbAddress);
    } catch (err) {
      throw new CycleLensError(ErrorCode.ConnectFailed, `GDB could not connect to the ${server.kind} gdbserver at ${server.gdbAddress}: ${errorMessage(err)}`);
    }
    if (mode === 'launch') await DebugTarget.prepareLaunch(config, server, gdb);
    for (const c of config.postConnectCommands) await gdb.console(c);
  }

  private static async prepareLaunch(config: ValidatedLaunch, server: GdbServer, gdb: GdbBackend): Promise<void> {
    // QEMU loads the ELF itself (-kernel) and starts at reset; real boards need reset and load.
    if (server.kind === 'qemu') return;
    if (server.resetCommand) await gdb.monitor(server.resetCommand);
    const load = 'load' in config.server ? config.server.load : undefined;
    if (load ?? server.kind === 'openocd') await gdb.targetDownload();
  }

  get isEnded(): boolean {
    return this.ended;
  }

  /** Lets the program run to `stopAtEntry` (reported as reason `entry`) or freely. */
  async runToEntry(): Promise<void> {
    const entry = this.config.stopAtEntry;
    if (entry !== undefined) {
      try {
        const bp = await this.gdb.breakInsert({ location: entry, temporary: true });
        this.entryBreakpointId = bp.id;
      } catch (err) {
        this.outputEmitter.fire({ category: 'important', text: `Cannot stop at '${entry}': ${errorMessage(err)}. Stopped at reset instead; set \`stopAtEntry\` to an existing function.\n` });
        const frame = (await this.gdb.stackListFrames(1, 0, 0).catch(() => []))[0];
        this.stopEmitter.fire({ reason: 'entry', threadId: 1, allStopped: true, breakpointIds: [], ...(frame ? { frame } : {}) });
        return;
      }
    }
    await this.gdb.execContinue();
  }

  /**
   * Runs `fn` with the target halted: in all-stop mode GDB cannot insert breakpoints or read memory
   * while the target runs, so a running target is interrupted and resumed afterwards, invisibly.
   */
  async withHalted<T>(fn: () => Promise<T>): Promise<T> {
    if (!this.gdb.isRunning) return fn();
    this.internalStops++;
    this.lastHiddenStop = undefined;
    let hidden = true;
    try {
      let stop: StopEvent | undefined;
      try {
        stop = await this.gdb.execInterrupt();
      } catch (err) {
        if (this.gdb.isRunning || !this.lastHiddenStop) throw err;
      }
      // The target may have stopped by itself just before the interrupt landed (a breakpoint hit, a
      // fault): that stop is the user's, and the target stays halted for them afterwards.
      const users = stop === undefined ? this.lastHiddenStop : isInterruptStop(stop) ? undefined : stop;
      if (!stop && !users) throw new CycleLensError(ErrorCode.NotStopped, 'The target did not halt when asked. It may be in a state the debugger cannot interrupt; try Pause, or restart the session.');
      const result = await fn();
      // Every stop after this resume is the user's: a breakpoint just set can be hit before the
      // continue's reply is handled (both may arrive in one read of GDB's output).
      this.internalStops--;
      hidden = false;
      if (users) this.deliverStop(users);
      else await this.gdb.execContinue();
      return result;
    } finally {
      if (hidden) this.internalStops--;
    }
  }

  private deliverStop(e: StopEvent): void {
    if (this.entryBreakpointId !== undefined && e.breakpointIds.includes(this.entryBreakpointId)) {
      this.entryBreakpointId = undefined;
      this.stopEmitter.fire({ ...e, reason: 'entry' });
      return;
    }
    this.stopEmitter.fire(e);
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
      const stopped = this.gdb.waitForStop(5_000);
      await this.gdb.execStep(true);
      if (!(await stopped)) throw new CycleLensError(ErrorCode.NotStopped, 'A single instruction step did not complete: the target may be stuck. Restart the session.');
    });
  }

  /**
   * After running internally (measurements, profiling runs), shows the user where the target now
   * stands, if it is halted: its stops meanwhile were hidden.
   */
  async announceCurrentStop(description?: string, options: { preserveFocus?: boolean } = {}): Promise<void> {
    if (this.gdb.executionState !== 'stopped') return;
    const frames = await this.gdb.stackListFrames(1, 0, 0).catch(() => []);
    this.stopEmitter.fire({
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
      throw new CycleLensError(ErrorCode.Unsupported, `Restart needs a reset command, and a ${this.server.kind} gdbserver has none CycleLens knows. Stop and start the session instead.`);
    }
    await this.internally(async () => {
      if (this.gdb.isRunning) await this.gdb.execInterrupt();
      for (const hook of this.resetHooks) await hook();
      await this.gdb.monitor(reset);
      // GDB caches registers; after a reset behind its back they are stale.
      await this.gdb.console('maintenance flush register-cache');
      for (const hook of this.afterResetHooks) await hook();
    });
  }

  /**
   * Ends the session. Terminating stops the server first, with the target halted: GDB quitting
   * first would detach, and a detached target runs on (QEMU to the program's end, a board freely).
   * Otherwise GDB detaches and the target resumes (attach).
   */
  async shutdown(terminateDebuggee: boolean): Promise<void> {
    this.ended = true;
    const gdb = this.gdb;
    try {
      if (gdb.executionState === 'running') {
        this.internalStops++;
        await gdb.execInterrupt(2_000).catch(() => undefined);
      }
      if (terminateDebuggee) {
        await this.server.stop();
      } else if (this.server.kind !== 'qemu' && gdb.executionState !== 'exited') {
        await gdb.targetDetach().catch(() => undefined);
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

  private end(message: string | undefined): void {
    if (this.ended) return;
    this.ended = true;
    void (async () => {
      await this.gdb.exit();
      await this.server.stop();
      this.endedEmitter.fire({ message });
    })();
  }
}

/** A stop an interrupt caused (SIGINT, or SIGTRAP on stubs that report it so), not the program's own. */
function isInterruptStop(e: StopEvent): boolean {
  return e.reason === 'signal' || e.reason === 'pause' || e.reason === 'unknown';
}
