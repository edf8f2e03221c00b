import type { CountingRunResult, CountingStop } from './qemuCounting';
import type { ServerArgs, TargetFamily } from '../../common/launchArgs';

/** What a server needs to know about the debug target to start. */
export interface ServerContext {
  executable: string;
  family: TargetFamily;
  cwd: string;
  /** Where the server's own output goes (the Debug Console). */
  log: (line: string) => void;
}

/** Why a running server stopped, reported to the session so it can end cleanly with a message. */
export interface ServerExit {
  message: string;
  /**
   * The server ended because the program did: QEMU exits with status 0 when firmware stops it
   * (semihosting SYS_EXIT, the RISC-V test finisher). Not a fault.
   */
  programEnded: boolean;
}

/**
 * A gdbserver the adapter talks to: QEMU, OpenOCD, nSIM or any remote stub. A strategy declares how
 * to start its server, where GDB connects, and which extra services (monitor, Tcl RPC) it offers.
 */
export interface GdbServer {
  readonly kind: ServerArgs['type'];
  /** `host:port` for GDB's `target remote`. */
  readonly gdbAddress: string;
  /** Starts the server and resolves once it accepts GDB connections. */
  start(ctx: ServerContext): Promise<void>;
  /** Set when the server exits unexpectedly: the session ends with `message`. */
  onUnexpectedExit(listener: (exit: ServerExit) => void): void;
  /** GDB `monitor` command that resets and halts the target, for restart. */
  readonly resetCommand: string | undefined;
  /**
   * What a `monitor` command typed by the user does to the target: `halts` for a reset that leaves
   * the core halted at its reset vector, `runs` for one that lets it run from reset, undefined for
   * anything else.
   */
  resetKind(command: string): 'halts' | 'runs' | undefined;
  /** Stops the server and everything it started; idempotent. */
  stop(): Promise<void>;
  /**
   * An emulator only: runs the session's program once more on an instance of its own, free, and
   * counts how often each instruction ran (adapter/servers/qemuCounting.ts).
   */
  countInstructions?(timeoutMs: number, signal?: AbortSignal, stop?: CountingStop): Promise<CountingRunResult>;
}
