import type { InjectionWarning } from '../../../common/dapCustom';
import type { ElfImage } from '../../elf';
import type { TargetAccess } from '../targetAccess';
import type { Block } from './caveAllocator';
import type { MemoryRegion } from './memoryMap';
import type { CountedOverhead, DispatchEntry, PayloadGenerator, StubImage } from './payload';
import type { InjectionArch, InjectionPlan, PayloadKind, ReservedMemory } from './types';

// The injection service's contracts: what a family and a session hand it, and what it answers.
// injectionService.ts re-exports the public ones, so callers name one module.

/** Run control for calibration: resume until `address` executes (true), or give up after `timeoutMs`. */
export interface TargetRunner {
  runTo(address: number, timeoutMs: number): Promise<boolean>;
}

/** The per-family parts the service needs (built by adapter/arch/<family>/). */
export interface InjectionFamilySupport {
  arch: InjectionArch;
  generator: PayloadGenerator;
  /** Register names to save and restore around calibration runs. */
  registers: readonly string[];
  /** Thumb: entry and exit addresses carry bit 0. */
  codeAddressBit: number;
  /**
   * Programs the counter if it needs it (SysTick, DWT). Returns code to run on the target instead
   * when the debugger cannot reach the registers (QEMU's gdbstub does not reach the M-profile SCS).
   */
  prepareCounter?(access: TargetAccess): Promise<TargetCode | undefined>;
  /** Where the halted program will resume besides the PC (RV32 mepc, Cortex-M stacked PC). */
  resumePoints?(access: TargetAccess): Promise<Array<{ what: string; address: number }>>;
}

/** A routine the service runs on the halted target (registers saved and restored around it). */
export interface TargetCode {
  build(at: number): { bytes: Uint8Array; entry: number; done: number };
  what: string;
}

export interface InjectionServiceOptions {
  access: TargetAccess;
  elf: ElfImage;
  support: InjectionFamilySupport;
  /** The service injects and removes only while this says the target is halted. */
  isHalted: () => boolean;
  /** Directory of patch journals, e.g. `<workspace>/.cyclelens/journal`. */
  journalDir: string;
  reserved: ReservedMemory;
  /** The target's memory map (`info mem`, QEMU_MEMORY_MAPS); patches into flash/ROM are refused. */
  memoryMap?: readonly MemoryRegion[];
  allowFlashWrites?: boolean;
  /** RV32: keep the cave's base in tp when no instruction of the program names tp (default true). */
  useThreadPointer?: boolean;
  shadowSlots?: number;
  /**
   * Counter units per payload instruction (1 for instruction counters; 1/40 for SysTick at 25 MHz
   * under -icount shift=0).
   */
  counterUnitsPerInstruction?: number;
  runner?: TargetRunner;
  log?: (line: string) => void;
}

export interface MeasureOptions {
  payload?: PayloadKind;
  /**
   * When the entry cannot be patched (too short, a branch into the patch, an IT block …), measure at
   * the call sites instead of refusing.
   */
  callSitesIfTooShort?: boolean;
}

export interface GroupOptions {
  /** Software accumulation only: `hardware` is refused. */
  payload?: PayloadKind;
  /** Defaults to the members' names joined with " + ". */
  name?: string;
}

/** `group`: one record shared by the entry patches of several functions (measureGroup). */
export type MeasurementKind = InjectionPlan['kind'] | 'group';

export interface MeasurementInfo {
  id: number;
  name: string;
  kind: MeasurementKind;
  /** A group's functions, in the order given. */
  members?: string[];
  payload: PayloadKind;
  counter: string;
  patches: Array<{ address: number; length: number }>;
  stub: { address: number; size: number };
  record: number;
  counted: CountedOverhead;
  warnings: InjectionWarning[];
  notes: string[];
}

export interface PassValues {
  raw: number[];
  compensated: number[];
}

export interface MeasurementResults {
  id: number;
  name: string;
  kind: MeasurementKind;
  payload: PayloadKind;
  counter: string;
  /** Entries through the patch (every recursive call included). */
  calls: number;
  /** Completed outermost passes: what total, min, max and mean describe. */
  passes: number;
  /** Entries not redirected (FNC_RETURN in LR, full shadow stack) or region ends with no open pass. */
  untracked: number;
  /** Calls in flight when read (depth). */
  open: number;
  /** Counter units inside all passes, as counted. */
  total: number;
  /** Payload instructions of other measurements inside the passes, in counter units. */
  nested: number;
  /** total - nested - own payload per pass: the program's own cost. */
  compensatedTotal: number;
  ownOverheadPerPass: number;
  min: number | null;
  max: number | null;
  mean: number | null;
  meanCompensated: number | null;
  /** The last up to eight passes (each without nested payloads; compensated also without the own). */
  last: PassValues;
}

/** A live measurement: its patches with the bytes they replaced, the memory it holds, its dispatch entries. */
export interface Measurement {
  info: MeasurementInfo;
  stub: StubImage;
  blocks: Block[];
  patches: Array<{ address: number; original: Uint8Array; patched: Uint8Array; stopAt?: number }>;
  dispatch: DispatchEntry[];
  heldBase?: number;
  /** A displaced call runs from the stub, so its memory is never reused in this session. */
  pinned: boolean;
  /**
   * Its entry patch at this address sends the code there to a copy that never reaches the next
   * entry (PatchSite.divert).
   */
  diverts?: number;
  /**
   * A bypass patch (FunctionPlan.bypass) not written because measurement `host`'s diverting entry
   * patch sits there and does its work; written when the host is removed.
   */
  pendingBypass?: { host: number; patch: { address: number; original: Uint8Array; patched: Uint8Array } };
  /** Where its bypass patch is (written or pending): the code there falls through into its entry. */
  bypassAt?: number;
}

/** Where a stop asked for at some address is taken while measurements are patched in. */
export type StopPoint =
  { ok: true; address: number; moved?: { from: number; measurement: string } } | { ok: false; reason: string };

export interface Calibration {
  calls: number;
  passes: number;
  counter: string;
  /** Counter units per pass of the empty function (nested payloads excluded). */
  perPassRaw: number;
  /** Instructions of the empty function itself (a NOP and the return). */
  functionInstructions: number;
  /** perPassRaw minus the function's own instructions: what the payload adds per call. */
  measuredOverhead: number;
  /** What the generator says the payload adds (counted instructions x units per instruction). */
  statedOverhead: number;
  explanation: string;
  lastPasses: number[];
}
