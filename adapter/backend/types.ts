/** Debugger-neutral types the session and the probe services use; backends produce them. */

export type StopReason =
  | 'breakpoint'
  | 'step'
  | 'function-finished'
  | 'pause'
  | 'signal'
  | 'exception'
  | 'watchpoint'
  | 'entry'
  | 'unknown';

export interface StopEvent {
  reason: StopReason;
  threadId: number | undefined;
  allStopped: boolean;
  /** GDB breakpoint numbers that caused the stop. */
  breakpointIds: number[];
  /** Signal name or other detail for the user (e.g. `SIGSEGV`, `SIGTRAP`). */
  description?: string;
  frame?: Frame;
  /** A stop the session made for its own work: the editor should not jump to it. */
  preserveFocus?: boolean;
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

export interface BreakpointRequest {
  /** GDB location: `file:line`, `function`, or `*0xADDR`. */
  location: string;
  condition?: string;
  /** Number of hits to ignore before stopping. */
  ignoreCount?: number;
  temporary?: boolean;
  hardware?: boolean;
}

/** A GDB variable object: a value the user can expand and assign. */
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
