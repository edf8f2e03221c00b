import type { TargetFamily } from '../../../common/launchArgs';
import type { DecodedInstruction } from '../../arch/codec';
import type { PathCosts } from './recordLayout';
import type { CallSite, CounterSource, PatchSite, PayloadKind } from './types';

/**
 * The contract between the service (which owns the cave and the records) and a family's payload
 * generator (adapter/arch/<family>/trampoline*.ts, which owns the instruction sequences).
 */

/** Where the fixed parts of the runtime live in the reserved memory. */
export interface RuntimeLayout {
  /** Control block (recordLayout.ts `Ctrl`), followed by the shadow stack. */
  ctrl: number;
  shadowSlots: number;
  /** Shared payload routines. */
  runtime: number;
  /** RV32 call-site dispatch table ({return address, stub, cost} triples, zero-terminated). */
  dispatchTable: number;
  dispatchCapacity: number;
  /**
   * RV32: the value the service writes to tp when the program never uses it. The dispatcher sits
   * exactly there (`c.jalr tp` jumps to it), and `jalr x0, off(tp)` reaches +/-2 KiB around it.
   */
  threadPointer?: number;
}

export interface RuntimeImage {
  address: number;
  bytes: Uint8Array;
  /** Entry points by name (commonEntry, commonExit, dispatcher ...). */
  labels: Record<string, number>;
  /** Instructions each path through a shared routine executes (outer, nested ...), by name. */
  paths: Record<string, number>;
}

/**
 * Instructions (NOPs) a group member's stub adds so that every member's stub has the same path
 * costs: the members share one record, which holds one set of costs, and the own overhead is
 * compensated once per pass whichever member opened it.
 */
export interface StubPadding {
  /** On the entry path before the counter window opens: payload, compensated through the payload counter. */
  outside: number;
  /** Inside the window, right after it opens: part of `counted.outer`. */
  inside: number;
}

export type StubRequest =
  | {
      kind: 'function';
      payload: PayloadKind;
      record: number;
      at: number;
      entry: PatchSite;
      padding?: StubPadding;
      /** Registers kept across calls of any function on the record (a group's union); default `entry.keptRegisters`. */
      exitKeeps?: number;
      /** Code that falls through into the entry runs this copy instead (FunctionPlan.bypass). */
      bypass?: Uint8Array;
      /**
       * Thumb: that code's instructions, relocated by the stub ahead of the entry's displaced ones
       * (BypassSite.code).
       */
      bypassCode?: DecodedInstruction[];
      /** Thumb: the bypass patch's length (the bytes of that code it overwrites). */
      bypassLength?: number;
    }
  | { kind: 'callSite'; payload: PayloadKind; record: number; at: number; target: number }
  | { kind: 'region'; payload: PayloadKind; record: number; at: number; start: PatchSite; end: PatchSite };

/** Instructions of a measurement's own payload that fall inside its own counter window. */
export interface CountedOverhead {
  /** Per outermost pass (entry part + exit part, including exactly one counter read). */
  outer: number;
  /** Per nested (recursive) call, hardware gating only: software accumulation counts nested payloads in `nested`. */
  nested: number;
  /** Which instructions these are, for the report. */
  explanation: string;
  /** Hardware gating: payload instructions a recursive (nested) entry + exit runs in full. */
  nestedPayload?: number;
}

export interface StubImage {
  address: number;
  bytes: Uint8Array;
  /** Where patches and rewritten direct calls jump. */
  entry: number;
  /** RV32: where the dispatcher enters (it passes its own cost in t3). */
  dispatchEntry?: number;
  /** Exit stub (function and call-site kinds): the return address the entry substitutes. */
  exit?: number;
  /** Region end stub. */
  regionEnd?: number;
  /** Where a bypass patch jumps (the copy of `StubRequest.bypass`). */
  bypass?: number;
  costs: PathCosts;
  counted: CountedOverhead;
  notes: string[];
}

export interface DispatchEntry {
  /** Return address of the rewritten 2-byte call (call site + 2). */
  returnAddress: number;
  /** The stub's dispatch entry. */
  stub: number;
}

export interface PayloadGenerator {
  readonly family: TargetFamily;
  readonly counter: CounterSource;
  /** Upper bound of the runtime's size. */
  runtimeSize(layout: RuntimeLayout): number;
  buildRuntime(layout: RuntimeLayout): RuntimeImage;
  /** Builds the stubs at `req.at`; throws InjectionRefusedError when they cannot be built. */
  buildStubs(req: StubRequest, runtime: RuntimeImage, layout: RuntimeLayout): StubImage;
  /**
   * Bytes that replace the patch site: a jump to `target`. `bypass`: where the second literal of
   * an entry patch that has one points (PatchShape thumbLdrPc `bypassLiteral`).
   */
  encodePatch(site: PatchSite, target: number, layout: RuntimeLayout, bypass?: number): Uint8Array;
  /** Bytes that replace a direct call: the same call, to the stub (or to the dispatcher). */
  encodeCallSite(site: CallSite, stub: StubImage, layout: RuntimeLayout): Uint8Array;
  /** Payload instructions the dispatcher runs for the entry at `index` (RV32 only). */
  dispatchCost?(index: number): number;
  /** The dispatch table's bytes (RV32 only). */
  dispatchTable?(entries: readonly DispatchEntry[], layout: RuntimeLayout): Uint8Array;
  /** Calibration: an empty function (and a driver that calls it `calls` times) placed at `at`. */
  calibrationCode(
    at: number,
    calls: number,
  ): { bytes: Uint8Array; fn: number; driver: number; done: number; functionInstructions: number };
}
