import type { Disposable } from '../util/emitter';
import type {
  BreakpointInfo,
  BreakpointRequest,
  DisassembledInstruction,
  ExitEvent,
  FileScopeVariable,
  Frame,
  ImageBytes,
  MemoryRegion,
  RegisterValue,
  StopEvent,
  Thread,
  VarObject,
  WatchpointRequest,
} from './types';

/** The debuggers CycleLens can drive; the launch argument `debugger` picks one. */
export type DebuggerKind = 'gdb' | 'lldb';

export type ExecutionState = 'stopped' | 'running' | 'exited';

export interface OutputLine {
  category: 'console' | 'stdout' | 'stderr';
  text: string;
}

export type Event<T> = (listener: (value: T) => void) => Disposable;

/** Where a run-to ended: at the address, or elsewhere (another stop, the program's end, the time limit). */
export interface RunToResult {
  reached: boolean;
  /** The stop that ended the run, when the target stopped (at the address or elsewhere). */
  stop: StopEvent | undefined;
}

export interface RunToOptions {
  /**
   * The stop is the adapter's own: it is marked `internal` (DebugTarget never shows it) and the
   * debugger's console chatter while running there is dropped.
   */
  hidden: boolean;
  timeoutMs?: number;
}

/**
 * What every service of the adapter needs from a debugger, and all it may use: run control,
 * breakpoints, memory, registers, disassembly, expressions, frames and variables, and typed events.
 * Implementations (adapter/debugger/gdb, adapter/debugger/lldb) own everything textual about their
 * debugger: nothing outside their folder parses what a debugger prints.
 */
export interface Debugger {
  readonly kind: DebuggerKind;
  readonly executionState: ExecutionState;
  readonly isRunning: boolean;

  /** The target stopped (every stop, including hidden ones, which carry `internal: true`). */
  readonly onStop: Event<StopEvent>;
  readonly onRunning: Event<void>;
  /** The program ended (not the debugger). */
  readonly onExit: Event<ExitEvent>;
  /** What the debugger and the program printed, for the Debug Console. */
  readonly onOutput: Event<OutputLine>;
  /** The debugger itself died; the argument is the message for the user. */
  readonly onDied: Event<string>;
  /** Target memory may have changed through the debugger: caches of target memory listen. */
  readonly onMemoryWrite: Event<void>;
  /** Every line exchanged with the debugger, for the launch argument `trace`. */
  readonly onTrace: Event<string>;

  // ---- session and target
  loadProgram(path: string): Promise<void>;
  /** Connects to a gdbserver at `host:port`; resolves with the frame the target is halted in. */
  connectRemote(address: string, timeoutMs?: number): Promise<Frame | undefined>;
  /** Writes the program's loadable sections to the target (boards; QEMU loads the ELF itself). */
  download(): Promise<void>;
  /**
   * The target holds the program as its file has it (QEMU loaded it, or a download just ran). A
   * debugger may answer reads of the read-only sections (`readOnly`) from the file from now on, as
   * long as no write makes the target differ.
   */
  imageLoaded(readOnly: readonly ImageBytes[]): Promise<void>;
  detach(): Promise<void>;
  /** A command in the debugger's own language, from the user (initCommands, `>` in the Debug Console). */
  command(text: string, timeoutMs?: number): Promise<string>;
  /** `monitor CMD`: passed to the gdbserver (QEMU's HMP, OpenOCD's command line …). */
  monitor(command: string, timeoutMs?: number): Promise<string>;
  /** Forgets cached registers and memory: the target was reset behind the debugger's back. */
  flushCaches(): Promise<void>;
  /** The target's memory map as the gdbserver describes it (empty when it describes none). */
  memoryRegions(): Promise<MemoryRegion[]>;
  /** Keeps breakpoints in the target while halted: a run that stops thousands of times saves a write per stop. */
  setBreakpointsAlwaysInserted(on: boolean): Promise<void>;
  exit(): Promise<void>;

  // ---- run control
  continue(): Promise<void>;
  /** Interrupts a running target and resolves with the stop it produced. */
  interrupt(timeoutMs?: number): Promise<StopEvent | undefined>;
  stepOver(instruction?: boolean): Promise<void>;
  stepIn(instruction?: boolean): Promise<void>;
  stepOut(): Promise<void>;
  /** Resolves at the next stop (undefined on timeout or when the program ends). */
  waitForStop(timeoutMs: number): Promise<StopEvent | undefined>;
  /**
   * Runs until the core reaches `address` (a temporary breakpoint, removed afterwards whatever
   * happened); the user's breakpoints stay as they were. Interrupts on timeout.
   */
  runTo(address: bigint, options: RunToOptions): Promise<RunToResult>;

  // ---- breakpoints
  insertBreakpoint(request: BreakpointRequest): Promise<BreakpointInfo>;
  insertWatchpoint(request: WatchpointRequest): Promise<BreakpointInfo>;
  deleteBreakpoints(ids: number[]): Promise<void>;
  /** Disables or enables breakpoints, keeping them (the adapter's own runs pass the user's by). */
  setBreakpointsEnabled?(ids: number[], enabled: boolean): Promise<void>;

  // ---- stack, threads, variables
  threads(): Promise<Thread[]>;
  stackDepth(threadId: number, maxDepth?: number): Promise<number>;
  stackFrames(threadId: number, low: number, high: number): Promise<Frame[]>;
  /** Locals and arguments of a frame, with the values of the simple ones (scalars, pointers, enums). */
  frameVariables(
    threadId: number,
    frameLevel: number,
  ): Promise<Array<{ name: string; type: string; value: string | undefined }>>;
  fileScopeVariables(): Promise<FileScopeVariable[]>;
  createVariable(expression: string, threadId?: number, frameLevel?: number): Promise<VarObject>;
  variableChildren(name: string): Promise<VarObject[]>;
  assignVariable(name: string, value: string): Promise<string>;
  deleteVariable(name: string): Promise<void>;
  evaluate(expression: string, threadId?: number, frameLevel?: number): Promise<string>;

  // ---- registers
  /** Register names by number; gaps are empty strings. */
  registerNames(): Promise<string[]>;
  registerValues(numbers: number[] | undefined, threadId?: number, frameLevel?: number): Promise<RegisterValue[]>;
  readRegister(name: string): Promise<bigint>;
  writeRegister(name: string, value: bigint): Promise<void>;

  // ---- memory and code
  readMemory(address: bigint, count: number): Promise<Buffer>;
  writeMemory(address: bigint, data: Uint8Array): Promise<void>;
  disassemble(start: bigint, end: bigint): Promise<DisassembledInstruction[]>;
}
