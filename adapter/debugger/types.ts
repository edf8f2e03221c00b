/** Debugger-neutral types the session and the probe services use; debuggers (adapter/debugger/*) produce them. */

export type StopReason =
  'breakpoint' | 'step' | 'function-finished' | 'pause' | 'signal' | 'exception' | 'watchpoint' | 'entry' | 'unknown';

export interface StopEvent {
  reason: StopReason;
  threadId: number | undefined;
  allStopped: boolean;
  /** The debugger's breakpoint numbers that caused the stop. */
  breakpointIds: number[];
  /** Signal name or other detail for the user (e.g. `SIGSEGV`, `SIGTRAP`). */
  description?: string;
  frame?: Frame;
  /** A stop the session made for its own work: the editor should not jump to it. */
  preserveFocus?: boolean;
  /** The end of a hidden run-to (Debugger.runTo): the adapter's own stop, never shown to the user. */
  internal?: boolean;
}

export interface ExitEvent {
  exitCode: number | undefined;
  /** true when the target ended by itself (semihosting exit, QEMU finisher). */
  normal: boolean;
}

export interface Frame {
  level: number;
  address: bigint;
  func: string | undefined;
  file: string | undefined;
  fullname: string | undefined;
  line: number | undefined;
}

export interface Thread {
  id: number;
  name: string;
  state: 'stopped' | 'running' | 'unknown';
}

export interface BreakpointInfo {
  id: number;
  verified: boolean;
  file: string | undefined;
  line: number | undefined;
  address: bigint | undefined;
  pending: boolean;
  message?: string;
}

/**
 * Where a breakpoint goes. A function breakpoint stops after the prologue (where its arguments are
 * readable) unless `atEntry`, which stops at its first instruction (where an injected patch sits).
 */
export type BreakpointLocation =
  | { kind: 'line'; path: string; line: number }
  | { kind: 'function'; name: string; atEntry?: boolean }
  | { kind: 'address'; address: bigint };

export interface BreakpointRequest {
  location: BreakpointLocation;
  condition?: string;
  /** Number of hits to ignore before stopping. */
  ignoreCount?: number;
  temporary?: boolean;
  hardware?: boolean;
}

/** A data breakpoint: stops when the expression's storage is written (or read). */
export interface WatchpointRequest {
  expression: string;
  access: 'write' | 'read' | 'readWrite';
  condition?: string;
}

/** What kind of memory an address is: patches may only be written where a debugger write sticks (RAM). */
export type MemoryKind = 'ram' | 'flash' | 'rom' | 'unknown';

export interface MemoryRegion {
  start: number;
  size: number;
  kind: MemoryKind;
  name?: string;
}

/** A variable object: a value the user can expand and assign. */
export interface VarObject {
  name: string;
  expression: string;
  value: string;
  type: string;
  numChildren: number;
  /** true for dynamic varobjs whose child count is not known until listed. */
  dynamic: boolean;
}

/** A variable at file scope, as the debug information declares it. */
export interface FileScopeVariable {
  name: string;
  /** Source file as the compiler named it, and its absolute path when known. */
  file: string;
  fullname?: string;
  line?: number;
  /** `static`: visible in its own file only. */
  isStatic: boolean;
}

export interface RegisterValue {
  number: number;
  value: string;
}

export interface DisassembledInstruction {
  address: bigint;
  opcodes: string;
  instruction: string;
  functionName: string | undefined;
  offset: number | undefined;
  file: string | undefined;
  line: number | undefined;
}

export interface MemoryBlock {
  address: bigint;
  data: Buffer;
}

/** Bytes the program's file places at `address` in the target (a read-only section's contents). */
export interface ImageBytes {
  readonly address: number;
  readonly bytes: Uint8Array;
}
