/**
 * GDB/MI output records (GDB manual, "GDB/MI Output Syntax"). Values keep the MI shape: a const is a
 * string, a tuple an object, a list an array. Read them with the accessors in ./values.ts, never
 * by position.
 */
export type MiValue = string | MiTuple | MiValue[];
export interface MiTuple {
  [key: string]: MiValue;
}

export type MiResultClass = 'done' | 'running' | 'connected' | 'error' | 'exit';
export type MiAsyncKind = 'exec' | 'status' | 'notify';
export type MiStreamKind = 'console' | 'target' | 'log';

export interface MiResultRecord {
  type: 'result';
  token: number | undefined;
  resultClass: MiResultClass;
  results: MiTuple;
}

export interface MiAsyncRecord {
  type: MiAsyncKind;
  token: number | undefined;
  /** e.g. `stopped`, `running`, `breakpoint-modified`, `thread-group-exited`. */
  asyncClass: string;
  results: MiTuple;
}

export interface MiStreamRecord {
  type: MiStreamKind;
  text: string;
}

export interface MiPromptRecord {
  type: 'prompt';
}

/** A line that is not MI: inferior output on GDB's tty, or a malformed record (with why). */
export interface MiUnparsedRecord {
  type: 'unparsed';
  line: string;
  error?: string;
}

export type MiRecord = MiResultRecord | MiAsyncRecord | MiStreamRecord | MiPromptRecord | MiUnparsedRecord;
