/**
 * The instruction-codec contract shared by the three core families (Thumb-2, RV32IMC, ARCv2).
 *
 * Injection overwrites a few instructions at a region's start/end with a jump to a trampoline; the
 * overwritten instructions must then run at the trampoline's address. A codec tells the planner
 * how long each instruction is and whether it depends on where it sits (reads the PC, branches
 * PC-relatively, predicates its neighbours, owns a delay slot); a relocator turns a run of
 * instructions into an equivalent sequence at a new address, or refuses and says why.
 */

/** What an instruction does to control flow; everything that cannot be moved blindly has its own kind. */
export type InstructionKind =
  /** Falls through; may still read the PC (see `readsPc`). */
  | 'plain'
  /** Unconditional direct jump (target known). */
  | 'branch'
  /** Conditional direct branch (target known); falls through when not taken. */
  | 'condBranch'
  /** Direct call: links a return address (target known). */
  | 'call'
  /** Jump through a register or memory (target unknown statically). */
  | 'indirectBranch'
  /** Call through a register or memory. */
  | 'indirectCall'
  /** Function return (BX LR, POP {..pc}, `jalr x0, 0(ra)`, `j [blink]` ...). */
  | 'return'
  /** Jump through an inline table that follows the instruction (TBB/TBH, ARC BI/BIH). */
  | 'tableBranch'
  /** Thumb IT: predicates the next `itCount` instructions; never split the block. */
  | 'it'
  /** Return from an exception/interrupt (MRET, RTIE). */
  | 'exceptionReturn'
  /** Traps, barriers, sleep, status/system-register access: position independent, but never casual. */
  | 'system'
  /** Hardware loop set-up (ARC LP, Armv8.1-M LE/WLS/DLS/BF): holds absolute loop addresses. */
  | 'loop';

export interface DecodedInstruction {
  /** Address the instruction was decoded at. */
  address: number;
  /** Length in bytes, including an ARC long immediate. */
  length: number;
  /** The instruction's bytes as stored in memory (a copy). */
  bytes: Uint8Array;
  /** Lower-case mnemonic as GNU objdump prints it for the forms that matter; a family name otherwise. */
  mnemonic: string;
  kind: InstructionKind;
  /**
   * The result depends on the instruction's own address (literal loads, ADR/AUIPC, PC-relative
   * branches, PC as operand).
   */
  readsPc: boolean;
  /**
   * Absolute address the instruction refers to: a direct branch/call target, the address a
   * PC-relative load reads, the value ADR/AUIPC/`add rd, pcl, imm` computes, the end of a hardware loop.
   */
  target?: number;
  /** Thumb IT: how many following instructions the IT predicates (1-4). */
  itCount?: number;
  /** ARC `.d`: the next instruction runs in the delay slot, so the pair cannot be split. */
  delaySlot?: boolean;
}

export interface InstructionCodec {
  readonly isa: 'thumb' | 'rv32' | 'arcv2';
  /** Decodes one instruction from the start of `bytes`; throws `DecodeError` when undecodable or truncated. */
  decode(bytes: Uint8Array, address: number): DecodedInstruction;
}

export class DecodeError extends Error {
  constructor(
    readonly address: number,
    reason: string,
  ) {
    super(`cannot decode the instruction at 0x${address.toString(16)}: ${reason}`);
    this.name = 'DecodeError';
  }
}

/** Why a relocator refused; the planner picks another patch site or tells the user. */
export type RefusalCode =
  /** Splitting or moving this would break an IT block / a delay-slot pair. */
  | 'unsplittable'
  /** Inline jump table follows the instruction (TBB/TBH, BI/BIH). */
  | 'tableBranch'
  /** Hardware loop set-up or loop end. */
  | 'loop'
  /** A branch lands inside the bytes the patch overwrites. */
  | 'branchIntoPatch'
  /** The target cannot be reached from the new address without a free register. */
  | 'outOfRange'
  /** PC used as an operand in a form that is unpredictable or that we do not rewrite. */
  | 'pcOperand'
  /** The instruction would need a register the caller did not offer. */
  | 'needsScratch'
  /** The core profile lacks an instruction the rewrite needs. */
  | 'profile';

export interface Refusal {
  ok: false;
  code: RefusalCode;
  /** Which instruction, and what a person would do about it. */
  reason: string;
  address: number;
}

export interface Relocated {
  ok: true;
  /** Code to place at the new address; it runs the original instructions' effect. */
  bytes: Uint8Array;
  /** False when the last instruction never falls through (jump, return): nothing needs to follow. */
  fallsThrough: boolean;
  /** Caveats worth a log line (a dropped prefetch hint, a link register that now points into the trampoline). */
  notes: string[];
  /** With `evenExits`: the jumps emitted for conditional branches leaving the code, in instructions. */
  exitJumps?: number;
}

export type Relocation = Relocated | Refusal;

export interface RelocationOptions {
  /**
   * The original bytes the patch overwrites, [start, end). A branch whose target lies strictly
   * inside would land in the middle of the patch, so it is refused; `start` itself is fine.
   */
  patched?: { start: number; end: number };
  /**
   * A register that is dead at this point and may be clobbered (RISC-V x-register number, Thumb
   * r0-r12). Only used where no register-free rewrite exists (RISC-V far jumps).
   */
  scratch?: number;
  /**
   * Every conditional branch leaves through a jump of its own (`B<!c> over; <jump>; over:`), even
   * where a direct branch would reach: the path it takes then runs one jump, as the path that falls
   * through runs the stub's jump back, and a stub's cost does not depend on the branch (Thumb).
   */
  evenExits?: boolean;
}

export interface InstructionRelocator {
  /**
   * Rewrites consecutive instructions (as decoded at their original addresses) to run at
   * `newAddress`. Instructions that must stay together (IT blocks, delay-slot pairs, AUIPC+use)
   * are handled as a unit when they all appear in `instructions`.
   */
  relocate(instructions: readonly DecodedInstruction[], newAddress: number, options?: RelocationOptions): Relocation;
}

/** Decodes `bytes` from start to end; throws at the first undecodable instruction. */
export function decodeAll(codec: InstructionCodec, bytes: Uint8Array, address: number): DecodedInstruction[] {
  const out: DecodedInstruction[] = [];
  let offset = 0;
  while (offset < bytes.length) {
    const insn = codec.decode(bytes.subarray(offset), address + offset);
    out.push(insn);
    offset += insn.length;
  }
  return out;
}

/** Concatenates byte chunks (encoders return small arrays). */
export function concatBytes(chunks: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** Two's-complement sign extension of the low `bits` bits of `value`. */
export function signExtend(value: number, bits: number): number {
  const shift = 32 - bits;
  return (value << shift) >> shift;
}

/** Whether `value` fits a signed field of `bits` bits. */
export function fitsSigned(value: number, bits: number): boolean {
  return Number.isInteger(value) && value >= -(2 ** (bits - 1)) && value < 2 ** (bits - 1);
}

/** Addresses are unsigned 32-bit. */
export function u32(value: number): number {
  return value >>> 0;
}

/** True when a branch to `target` would land strictly inside the patched bytes. */
export function landsInsidePatch(target: number, options: RelocationOptions | undefined): boolean {
  const p = options?.patched;
  return p !== undefined && target > p.start && target < p.end;
}

export function refuse(insn: DecodedInstruction, code: RefusalCode, why: string): Refusal {
  return {
    ok: false,
    code,
    address: insn.address,
    reason: `${insn.mnemonic} at 0x${insn.address.toString(16)}: ${why}`,
  };
}

/** Whether control can reach the next instruction after `insn`. */
export function fallsThrough(kind: InstructionKind): boolean {
  return !(
    kind === 'branch' ||
    kind === 'indirectBranch' ||
    kind === 'return' ||
    kind === 'tableBranch' ||
    kind === 'exceptionReturn'
  );
}
