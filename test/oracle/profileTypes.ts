/** What the trace analyser produces (traceAnalyzer.ts); the JSON summary carries these as they are. */

/** A measured region: from executing `start` until executing `end` (each pass separately). */
export interface RegionSpec {
  name: string;
  start: number;
  end: number;
}

export interface RegionResult {
  name: string;
  start: number;
  end: number;
  /**
   * Instructions of each completed pass: from `start` (counted) to `end` (not counted), callees and
   * interrupts included.
   */
  passes: number[];
  /** The same passes without the instructions of interrupt handlers that ran meanwhile. */
  passesExcludingInterrupts: number[];
  /** `start` executed again while a pass was open: the pass restarted (as a re-armed counter would). */
  restarts: number;
  /** `end` executed with no pass open. */
  unmatchedEnds: number;
  /** A pass was still open when the trace ended. */
  openAtEnd: boolean;
}

export interface FunctionProfile {
  name: string;
  start: number;
  end: number;
  aliases: string[];
  /** Instructions whose PC lies in the function. */
  exclusive: number;
  /**
   * Instructions executed while the function was anywhere on the call stack (each counted once, even
   * under recursion).
   */
  inclusive: number;
  /** `inclusive` without interrupt handlers that preempted the function (traps it raised itself stay in). */
  inclusiveExcludingInterrupts: number;
  /** Entries by call or tail call. */
  calls: number;
  /** Entries as an asynchronous exception (interrupt) handler. */
  interrupts: number;
  /** Entries as a synchronous exception (trap) handler. */
  traps: number;
}

export interface CallEdge {
  caller: string;
  callee: string;
  calls: number;
}

/**
 * One node of the calling-context tree: the stack of functions from the root frame to it (as the
 * shadow stack holds them: a tail callee above its tail caller, an interrupt handler above the code
 * it interrupted, code run on into from another function under that function's frame) and the
 * instructions executed with exactly that stack.
 */
export interface ContextStack {
  frames: string[];
  self: number;
}

export interface AddressCount {
  address: number;
  count: number;
  function: string;
}

export interface Anomaly {
  kind: string;
  count: number;
  /** The first few: instruction number (0-based), PC and the PC before it. */
  examples: Array<{ at: number; pc: number; previous: number }>;
}

export interface AnalysisResult {
  total: number;
  functions: FunctionProfile[];
  edges: CallEdge[];
  addresses: AddressCount[];
  regions: RegionResult[];
  /** The calling-context tree, as stacks with their own counts (they add up to `total`). */
  contexts: ContextStack[];
  /** Function of the first instruction: the bottom of the call stack for the whole run. */
  root: string;
  maxStackDepth: number;
  /** Call stack when the trace ended, bottom first. */
  finalStack: string[];
  anomalies: Anomaly[];
}
