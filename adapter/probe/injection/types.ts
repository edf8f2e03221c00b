import type { InjectionWarning } from '../../../common/dapCustom';
import type { TargetFamily } from '../../../common/launchArgs';
import type { DecodedInstruction, InstructionCodec, InstructionRelocator } from '../../arch/codec';

/**
 * Shared vocabulary of code injection: what the planner decides, what the per-family payload
 * generators (adapter/arch/<family>/trampoline*.ts) build, and what the service reports.
 */

/** Where the counter value comes from and how it moves. */
export type CounterSource =
  /** A RISC-V CSR read with `csrr` (minstret 0xB02, mcycle 0xB00, mhpmcounterN). */
  | {
      kind: 'csr';
      name: string;
      csr: number;
      /** mcountinhibit bit of the counter (for hardware gating). */ inhibitBit: number;
    }
  /**
   * A memory-mapped counter read with one load: DWT_CYCCNT (up, 32 bits) or SysTick CVR (down,
   * 24 bits). `width` < 32 means deltas are taken modulo 2^width.
   */
  | { kind: 'mmio'; name: string; address: number; direction: 'up' | 'down'; width: number };

/** RV32 `minstret`: exact instruction counts under QEMU `-icount`. */
export const MINSTRET: CounterSource = { kind: 'csr', name: 'minstret', csr: 0xb02, inhibitBit: 2 };
export const MCYCLE: CounterSource = { kind: 'csr', name: 'mcycle', csr: 0xb00, inhibitBit: 0 };
/** SysTick current value (ARMv7-M B3.3): 24-bit down counter; the service programs RVR = 0xFFFFFF. */
export const SYSTICK_CVR: CounterSource = {
  kind: 'mmio',
  name: 'SysTick CVR',
  address: 0xe000e018,
  direction: 'down',
  width: 24,
};
/** DWT cycle counter (ARMv7-M C1.8): absent on QEMU (reads zero). */
export const DWT_CYCCNT: CounterSource = {
  kind: 'mmio',
  name: 'DWT CYCCNT',
  address: 0xe0001004,
  direction: 'up',
  width: 32,
};

/** Payload kinds of docs/design.md, "Measurement semantics". */
export type PayloadKind = 'software' | 'hardware';

/** The RAM the injector owns: control block, shadow stack, records, trampolines. */
export interface ReservedMemory {
  start: number;
  size: number;
  /** Where it came from (launch configuration, linker symbols, or a gap found in the ELF). */
  source: 'launch' | 'linker' | 'unused';
  /** Set when the memory was guessed, for the Debug Console. */
  warning?: string;
}

/** A function's code as the static disassembly sees it. */
export interface FunctionCode {
  name: string;
  start: number;
  /** One past the last byte (symbol size). */
  end: number;
  /** Decoded instructions in address order; data islands (literal pools, inline tables) skipped. */
  instructions: DecodedInstruction[];
  /** Set when decoding stopped early; the function cannot be instrumented. */
  undecodable?: { address: number; reason: string };
}

/** An edge of the static control flow into `target`. */
export interface BranchEdge {
  from: number;
  target: number;
  kind: 'branch' | 'condBranch' | 'call' | 'table';
  /** The instruction's mnemonic, for messages. */
  mnemonic: string;
}

export interface JumpTableInfo {
  /** Address of the dispatching instruction (TBB/TBH, `jr`). */
  branch: number;
  function: string;
  resolved: boolean;
  table?: number;
  targets: number[];
  /** Why it could not be resolved. */
  reason?: string;
  /** Unresolved, but shaped like a compiler switch (offsets from the table base): its targets stay in the function. */
  switchShaped?: boolean;
}

/** Per-family knowledge the planner needs; implemented in adapter/arch/<family>/. */
export interface InjectionArch {
  readonly family: TargetFamily;
  readonly codec: InstructionCodec;
  readonly relocator: InstructionRelocator;
  /** Mapping-symbol names that start data ($d) or code ($t, $x...) inside a code section. */
  mappingKind(symbolName: string): 'code' | 'data' | undefined;
  /** Resolves an inline/offset jump table at `insns[index]`, or says why not. */
  resolveTable(
    fn: FunctionCode,
    index: number,
    readWord: (address: number, bytes: 1 | 2 | 4) => number | undefined,
  ): { ok: true; table: number; targets: number[] } | { ok: false; reason: string; switchShaped?: boolean };
  /** The link register a direct call writes (RV32: rd of JAL; Thumb: always LR). */
  linkRegister(insn: DecodedInstruction): number | undefined;
  /** True when the instruction names register `reg` at all (RV32 `tp` usage scan). */
  referencesRegister?(insn: DecodedInstruction, reg: number): boolean;
  /**
   * The patch that jumps from `site` to anywhere in the cave. `free`: registers dead at the site
   * (bit mask). Returns a sentence when no shape fits.
   */
  choosePatch(site: number, cave: CaveReach, free: number): PatchShape | string;
  /** Why a direct call site cannot be rewritten to reach the cave, or undefined when it can. */
  callSiteRefusal(site: CallSite, cave: CaveReach): string | undefined;
  /** Registers dead at a function's entry by the calling convention (RV32 t0-t6; Thumb r12). */
  readonly freeAtEntry: number;
  /** The register a standard call links (RV32 ra = x1, Thumb LR = r14). */
  readonly returnAddressRegister: number;
  /**
   * A thread-pointer register the injector may hold its cave base in when no instruction of the
   * program names it (RV32 tp = x4: `jalr x0, off(tp)` then reaches the cave from anywhere).
   */
  readonly threadPointer?: number;
  /** How the program takes addresses, for whether an indirect call can reach a function. */
  readonly addressTaking: AddressTaking;
  /** Instructions that execute conditionally without being branches (Thumb IT blocks). */
  predicated?(fn: FunctionCode): Set<number>;
  /** Register effects and calling-convention sets for liveness; absent when patches need no register. */
  readonly liveness?: LivenessModel;
  /**
   * Link registers other than `returnAddressRegister` that function stubs can hook (bit mask):
   * millicode called with another link (RV32 `jal t0, __riscv_save_N`).
   */
  readonly alternateLinks?: number;
  /**
   * A shared epilogue that loads its return address from the stack (RV32 `__riscv_restore_N`):
   * the offset from sp at `from` of the word it loads, when the code from `from` to its return is
   * straight-line sp-relative loads and sp adjustments; otherwise a sentence saying why not.
   */
  returnSlot?(fn: FunctionCode, from: number): { offset: number; load: DecodedInstruction } | string;
  /**
   * A copy of such an epilogue's code from `from` through its return that runs as many
   * instructions as the original plus the jump into it (one sp adjustment folded into the loads
   * after it): where code that falls through into a patched entry is sent instead, at no cost to
   * any open window. A sentence when the code has no such copy.
   */
  foldedEpilogue?(fn: FunctionCode, from: number): Uint8Array | string;
  /**
   * Thumb: code that falls through into a patched entry is relocated into the entry's stub instead
   * of folded (`BypassSite.code`). `farBypass` gives the entry patch with room for a second literal
   * and the 4-byte patch at `at` that jumps through it, for when fewer bytes precede the entry
   * than a patch of its own needs.
   */
  readonly relocatesFallThrough?: boolean;
  farBypass?(entry: PatchShape, entryAddress: number, at: number): { entry: PatchShape; bypass: PatchShape } | string;
}

/**
 * How a family's code takes a function's address (planSupport.ts `takenAddresses`). Words in
 * loaded memory (function pointers in data, literal pools, tables) are read the same way for every
 * family; this says how a code pointer looks there and which addresses the instructions form.
 */
export interface AddressTaking {
  /** Bit 0 of a code pointer marks the instruction set (Thumb interworking) and is no part of the address. */
  readonly modeBit: boolean;
  /**
   * Every address the instructions of `fn` may form other than as the target of a call or branch
   * (Thumb ADR; RV32 `lui`/`auipc` + `addi`), a superset where unsure; or a sentence saying why they
   * cannot be told, and then any function may be reached by an indirect call.
   */
  formed(fn: FunctionCode, program: ProgramFacts): Iterable<number> | string;
}

/** What address forming may need to know of the whole program. */
export interface ProgramFacts {
  /** A symbol's value (RV32 `__global_pointer$`, which gp holds). */
  symbolAddress(name: string): number | undefined;
  /** The resolved targets of the indirect jump at `branch`; undefined when it was not resolved. */
  tableTargets(branch: number): readonly number[] | undefined;
}

export interface LivenessModel {
  effects(insn: DecodedInstruction): { uses: number; defs: number };
  /** Read by a call (arguments, sp, gp ...), written by it (caller-saved registers). */
  callUses: number;
  callDefs: number;
  /** Live at a return / at a jump to another function (tail call). */
  liveAtReturn: number;
  liveAtTail: number;
  /** Every register (for unknown successors). */
  all: number;
  /** Registers never handed to a stub: zero, sp, gp, tp / sp, pc. */
  reserved: number;
  /** Registers to resume in, best first (temporaries before argument registers). */
  resumeRegisterPreference: readonly number[];
  /**
   * Registers the function-entry and exit stubs overwrite and leave changed (beyond the return
   * address). A caller compiled with -fipa-ra may keep a value in one across the call when the
   * callee itself never writes it: function stubs give such registers back (PatchSite.keptRegisters);
   * call-site stubs do not, and the planner refuses those.
   */
  stubClobbers: number;
}

/** A user-facing refusal: what, where, why, and what to do instead. */
export interface InjectionRefusal {
  ok: false;
  code: RefusalReason;
  /** One or more sentences naming the instruction/address and the reason. */
  reason: string;
  address?: number;
  /** A group's refusal: the member that cannot be patched (the others might be, in another group). */
  member?: string;
  /** When the function is too short for an entry patch: its call sites, if any could be used. */
  callSites?: CallSiteOffer;
}

export type RefusalReason =
  | 'notFound'
  | 'undecodable'
  | 'tooShort'
  | 'branchIntoPatch'
  | 'itBlock'
  | 'unrelocatable'
  | 'exceptionReturn'
  | 'alternateLink'
  | 'noFreeRegister'
  | 'entryLoop'
  | 'unreachable'
  | 'regionPaths'
  | 'memory';

export interface CallSite {
  /** Address of the call instruction. */
  address: number;
  length: number;
  /** `call` (links, JAL ra / C.JAL / BL) or `tail` (jump without link: JAL x0 / B.W). */
  kind: 'call' | 'tail';
  caller: string;
  mnemonic: string;
  /** Why this site cannot be rewritten (then it is missed). */
  refusal?: string;
}

export interface CallSiteOffer {
  /** Sites that can be rewritten to go through a stub. */
  usable: CallSite[];
  /** Direct sites that cannot (too short for a reachable encoding, tail jumps without link …). */
  missed: CallSite[];
  /** Indirect calls anywhere in the program: they may reach the function and are not counted. */
  indirectCalls: number[];
}

/** How the patch jumps to the trampoline. */
export type PatchShape =
  /** RV32 `jalr x0, off(tp)`: 4 bytes, no register (tp holds the cave's middle). */
  | { kind: 'rvTp'; length: 4 }
  /** RV32 `jal x0`: 4 bytes, +/-1 MiB. */
  | { kind: 'rvJal'; length: 4 }
  /** RV32 `auipc r, hi; jalr x0, lo(r)`: 8 bytes, needs a dead register. */
  | { kind: 'rvAuipc'; length: 8; scratch: number }
  /** Thumb `B.W`: 4 bytes, +/-16 MiB. */
  | { kind: 'thumbBW'; length: 4 }
  /**
   * Thumb `LDR.W pc, [pc, #k]` + literal: 8 bytes (10 when the site is not word aligned). With
   * `bypassLiteral`, a second literal word follows at that address (12 or 14 bytes): the one a
   * `thumbLdrPcFar` patch on the code that falls through into this entry jumps through.
   */
  | { kind: 'thumbLdrPc'; length: 8 | 10 | 12 | 14; bypassLiteral?: number }
  /**
   * Thumb `LDR.W pc, [pc, #k]` alone (4 bytes) whose literal lies at `literal`, within 4 KiB after
   * it, in the bytes of another patch (a `bypassLiteral`): where fewer than 8 bytes precede an entry.
   */
  | { kind: 'thumbLdrPcFar'; length: 4; literal: number };

/** One place where code is overwritten with a jump to a trampoline. */
export interface PatchSite {
  address: number;
  shape: PatchShape;
  /** The whole instructions the patch covers; they run relocated in the trampoline. */
  displaced: DecodedInstruction[];
  /** Where the trampoline jumps back to: the first instruction after the displaced ones. */
  resume: number;
  /** Registers (bit mask) dead at the patch site that a stub may use without saving. */
  freeRegisters: number;
  /** Register the stub jumps back through (RV32), or undefined when it needs none. */
  resumeRegister?: number;
  /** The displaced code reads `resumeRegister`: load it after that code, not before the window opens. */
  resumeRegisterLate?: boolean;
  /**
   * Function entries: caller-saved registers some caller keeps live across a call of the function
   * (-fipa-ra; keptRegisters.ts). `freeRegisters` leaves them out; the stubs save and restore those
   * of them they use.
   */
  keptRegisters?: number;
  /**
   * Function entries: the register holding the return address when callers link through another
   * register than the standard one (millicode: RV32 t0).
   */
  link?: number;
  /**
   * Function entries of shared epilogues: the offset from sp at the entry of the stack word the
   * function loads its return address from. The entry stub hooks the return there.
   */
  returnSlot?: number;
  /**
   * Shared epilogues whose displaced code would resume at an entry their own code falls through
   * into (aliased millicode labels): the stub runs this copy of the function from its entry through
   * its return instead (`foldedEpilogue`, one instruction fewer), so it never reaches that entry.
   */
  divert?: Uint8Array;
  /**
   * Thumb's `divert`: the displaced code resumes at an entry it falls through into, so the stub
   * relocates the instructions the next function's entry patch displaces after it (a last `b` to
   * that entry left out) and resumes at `divertResume`, past that patch.
   */
  divertCode?: DecodedInstruction[];
  divertResume?: number;
  /**
   * A second entry of a millicode measurement: the code of another label that jumps into this
   * function's body (`__riscv_save_12` into `__riscv_save_10`). The pass it opens is not a call,
   * and the displaced instructions (that code's last ones, the jump among them) are not the function's.
   */
  bodyEntry?: boolean;
  /** Original bytes of [address, address + shape.length). */
  original: Uint8Array;
}

export interface FunctionPlan {
  ok: true;
  kind: 'function';
  function: FunctionCode;
  entry: PatchSite;
  /**
   * Code of another function that falls through into this entry (aliased millicode labels): a
   * patch there sends it to a copy that never reaches the entry patch (`foldedEpilogue`).
   */
  bypass?: BypassSite;
  /** Millicode: jumps from other labels' code into the body, hooked on the same record (PatchSite.bodyEntry). */
  bodyEntries?: PatchSite[];
  warnings: InjectionWarning[];
}

/** Where code falling through into a patched entry is diverted, and the copy it runs instead. */
export interface BypassSite {
  address: number;
  shape: PatchShape;
  original: Uint8Array;
  /** The function whose code falls through (for messages). */
  from: string;
  /** RV32: the folded copy, ready to place. Empty when `code` is set. */
  copy: Uint8Array;
  /**
   * Thumb: the instructions of that code from `address` up to the entry, which the stub relocates
   * ahead of the entry's displaced instructions and then jumps past the entry patch
   * (a last `b` to the entry itself is left out: it is the same fall-through).
   */
  code?: DecodedInstruction[];
  /** The entry site widened to hold the literal this bypass jumps through (PatchShape thumbLdrPcFar). */
  entry?: PatchSite;
}

export interface CallSitePlan {
  ok: true;
  kind: 'callSites';
  function: FunctionCode;
  sites: Array<CallSite & { original: Uint8Array }>;
  offer: CallSiteOffer;
  warnings: InjectionWarning[];
}

export interface RegionPlan {
  ok: true;
  kind: 'region';
  function: FunctionCode;
  start: PatchSite;
  end: PatchSite;
  warnings: InjectionWarning[];
}

export type InjectionPlan = FunctionPlan | CallSitePlan | RegionPlan;

/** What the planner knows about the cave when it chooses patch shapes. */
export interface CaveReach {
  start: number;
  size: number;
  /** RV32: tp holds this address (the cave's middle), so `jalr x0, off(tp)` reaches every stub. */
  threadPointerBase?: number;
}
