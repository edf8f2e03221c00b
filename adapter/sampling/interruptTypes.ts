import type { TargetAccess } from '../probe/targetAccess';

/**
 * The on-target interrupt sampler's contract with a core family (docs/design.md, "The interrupt
 * sampler"). The family writes a timer interrupt handler into reserved RAM that counts the
 * interrupted PC into 2^N buckets, hooks it into the core's interrupt entry and takes it out
 * again; the generic sampler (interruptSampler.ts) journals, reads the buckets and restores.
 */
export interface InterruptSamplerArch {
  /** What the sampler needs on this family, for the catalogue's "needs" text. */
  readonly needs: string;
  /** The machines (QEMU names) whose timer and interrupt controller the family knows, or a reason. */
  plan(request: InterruptSamplerRequest): InterruptSamplerPlan | { unsupported: string };
}

export interface InterruptSamplerRequest {
  /** The QEMU machine, when the server is QEMU; undefined on a board. */
  machine: string | undefined;
  /** The RAM the sampler may own: its handler, state and buckets. */
  area: { start: number; size: number };
  /** The code the buckets cover: [start, end). */
  text: { start: number; end: number };
  /** Mean sampling interval in the timer's units of virtual time (ns on RV32 virt, core cycles on Cortex-M). */
  meanInterval: number;
}

/** A word of device memory the sampler changes, with what it held. */
export interface SavedWord {
  address: number;
  original: number;
  patched: number;
}

/** What the sampler changed in the target, read before anything is written (journaled). */
export interface SavedState {
  /** Registers by the debugger's name, and their original values. */
  registers: Record<string, bigint>;
  /** What install writes into each of those registers. */
  patchedRegisters: Record<string, bigint>;
  /** Device words (interrupt controller, timer, vector table) in the order written. */
  words: SavedWord[];
}

export interface InterruptSamplerPlan {
  /** Address of the first 32-bit bucket; `buckets` of them, then one for PCs outside the text. */
  bucketsAt: number;
  buckets: number;
  /** bucket = (pc - textBase) >> shift. */
  textBase: number;
  shift: number;
  /** A 32-bit count of the samples taken inside another interrupt handler (the nested ones). */
  nestedAt: number;
  /** Everything the sampler writes lies in [area.start, area.start + used). */
  used: number;
  /** Reads what install will change; nothing is written. */
  capture(access: TargetAccess): Promise<SavedState>;
  /**
   * Writes the handler and its state, then hooks it in. The target is halted; device registers are
   * written by stores the core runs (`stepInstruction`): QEMU's gdbstub drops debugger writes to them.
   */
  install(access: TargetAccess, saved: SavedState, stepInstruction: () => Promise<void>): Promise<void>;
  /**
   * Unhooks the handler and puts every register and word back; returns what could not be restored.
   * The target is halted, possibly inside the handler or inside a handler the sampler wraps.
   */
  uninstall(access: TargetAccess, saved: SavedState, stepInstruction: () => Promise<void>): Promise<string[]>;
  /** What a sample means on this family, for the user. */
  readonly semantics: string;
}
