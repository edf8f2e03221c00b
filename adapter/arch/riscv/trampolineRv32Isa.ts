import { concatBytes, fitsSigned, type DecodedInstruction } from '../codec';
import { immI, rvWord, wordFields } from './rvDecoder';
import {
  encodeAddi,
  encodeAuipc,
  encodeBranch,
  encodeJal,
  encodeJalr,
  encodeLui,
  encodeLw,
  encodeSw,
  half16,
  splitHiLo,
  word32,
  type BranchCondition,
  type RvRegister,
} from './rvEncoder';

/**
 * RV32IMC facts the injection planner needs beyond the codec: which integer registers an
 * instruction reads and writes (for liveness), the ILP32 calling convention, a few more encoders,
 * and a small assembler with labels for trampolines. References are to the RISC-V Unprivileged ISA
 * 20191213 (2 RV32I, 7 M, 9 Zicsr, 16 C) and the RISC-V ELF psABI ("Integer Calling Convention").
 */

export const Reg = {
  zero: 0,
  ra: 1,
  sp: 2,
  gp: 3,
  tp: 4,
  t0: 5,
  t1: 6,
  t2: 7,
  s0: 8,
  s1: 9,
  a0: 10,
  a1: 11,
  a2: 12,
  a3: 13,
  a4: 14,
  a5: 15,
  a6: 16,
  a7: 17,
  s2: 18,
  s3: 19,
  s4: 20,
  s5: 21,
  s6: 22,
  s7: 23,
  s8: 24,
  s9: 25,
  s10: 26,
  s11: 27,
  t3: 28,
  t4: 29,
  t5: 30,
  t6: 31,
} as const;

export const mask = (...regs: number[]): number => regs.reduce((m, r) => (m | (1 << r)) >>> 0, 0);

/** psABI: t0-t6 are caller-saved temporaries that carry no argument; dead at a function's entry. */
export const TEMPORARIES = mask(Reg.t0, Reg.t1, Reg.t2, Reg.t3, Reg.t4, Reg.t5, Reg.t6);
export const ARGUMENTS = mask(Reg.a0, Reg.a1, Reg.a2, Reg.a3, Reg.a4, Reg.a5, Reg.a6, Reg.a7);
/** s0-s11 and sp are preserved across calls; gp/tp are never written by compiled code after start-up. */
export const CALLEE_SAVED = mask(
  Reg.sp,
  Reg.s0,
  Reg.s1,
  Reg.s2,
  Reg.s3,
  Reg.s4,
  Reg.s5,
  Reg.s6,
  Reg.s7,
  Reg.s8,
  Reg.s9,
  Reg.s10,
  Reg.s11,
);
export const GLOBALS = mask(Reg.gp, Reg.tp);
/** What a callee may clobber (psABI caller-saved): what a call defines as far as liveness goes. */
export const CALLER_SAVED = (TEMPORARIES | ARGUMENTS | mask(Reg.ra)) >>> 0;
/** Live when a function returns: the return value (a0/a1), callee-saved registers, gp/tp. */
export const LIVE_AT_RETURN = (mask(Reg.a0, Reg.a1) | CALLEE_SAVED | GLOBALS) >>> 0;
/** Live when control passes to another function (call or tail call): arguments and the same. */
export const LIVE_AT_CALL = (ARGUMENTS | CALLEE_SAVED | GLOBALS | mask(Reg.ra)) >>> 0;
export const ALL_REGISTERS = 0xfffffffe; // x1-x31

export interface RegisterEffects {
  /** Integer registers read (bit n = xn). */
  uses: number;
  /** Integer registers certainly written. */
  defs: number;
}

const cr = (field: number): number => 8 + (field & 7);

/** Integer registers an RV32IMC(+Zicsr, A, F/D) instruction reads and writes; x0 never counts. */
export function rvRegisterEffects(insn: DecodedInstruction): RegisterEffects {
  const e =
    insn.length === 2 ? compressedEffects(insn.bytes[0]! | (insn.bytes[1]! << 8)) : wordEffects(rvWord(insn.bytes));
  return { uses: (e.uses & ~1) >>> 0, defs: (e.defs & ~1) >>> 0 };
}

function wordEffects(w: number): RegisterEffects {
  const { rd, rs1, rs2, funct3 } = wordFields(w);
  switch (w & 0x7f) {
    case 0x37: // LUI
    case 0x17: // AUIPC
    case 0x6f: // JAL
      return { uses: 0, defs: mask(rd) };
    case 0x67: // JALR
    case 0x03: // loads
    case 0x13: // OP-IMM
      return { uses: mask(rs1), defs: mask(rd) };
    case 0x63: // branches
    case 0x23: // stores
      return { uses: mask(rs1, rs2), defs: 0 };
    case 0x33: // OP, M
    case 0x2f: // A
      return { uses: mask(rs1, rs2), defs: mask(rd) };
    case 0x73: // SYSTEM: CSR forms read rs1 (register forms) and write rd
      if (funct3 === 0) return { uses: 0, defs: 0 };
      return { uses: funct3 < 4 ? mask(rs1) : 0, defs: mask(rd) };
    case 0x07: // FP loads, stores: the integer base register
    case 0x27:
      return { uses: mask(rs1), defs: 0 };
    case 0x53: // OP-FP: some forms move to/from integer registers; claim the read, never the write
      return { uses: mask(rs1), defs: 0 };
    default:
      return { uses: 0, defs: 0 }; // FENCE, fused multiply-add (FP registers only)
  }
}

function compressedEffects(hw: number): RegisterEffects {
  const q = hw & 3;
  const f3 = hw >> 13;
  const rd = (hw >> 7) & 0x1f;
  const rs2 = (hw >> 2) & 0x1f;
  const rdp = cr(hw >> 2); // rd'/rs2' in bits [4:2]
  const rs1p = cr(hw >> 7); // rs1'/rd' in bits [9:7]
  if (q === 0) {
    switch (f3) {
      case 0:
        return { uses: mask(Reg.sp), defs: mask(rdp) }; // C.ADDI4SPN
      case 2:
        return { uses: mask(rs1p), defs: mask(rdp) }; // C.LW
      case 6:
        return { uses: mask(rs1p, rdp), defs: 0 }; // C.SW
      default:
        return { uses: mask(rs1p), defs: 0 }; // C.FLD/FLW/FSD/FSW
    }
  }
  if (q === 1) {
    switch (f3) {
      case 0:
        return { uses: mask(rd), defs: mask(rd) }; // C.ADDI / C.NOP
      case 1:
        return { uses: 0, defs: mask(Reg.ra) }; // C.JAL
      case 2:
        return { uses: 0, defs: mask(rd) }; // C.LI
      case 3:
        // C.ADDI16SP / C.LUI
        return rd === Reg.sp ? { uses: mask(Reg.sp), defs: mask(Reg.sp) } : { uses: 0, defs: mask(rd) };
      case 4: {
        const op = (hw >> 10) & 3;
        if (op < 3) return { uses: mask(rs1p), defs: mask(rs1p) }; // C.SRLI/SRAI/ANDI
        return { uses: mask(rs1p, rdp), defs: mask(rs1p) }; // C.SUB/XOR/OR/AND
      }
      case 5:
        return { uses: 0, defs: 0 }; // C.J
      default:
        return { uses: mask(rs1p), defs: 0 }; // C.BEQZ/C.BNEZ
    }
  }
  switch (f3) {
    case 0:
      return { uses: mask(rd), defs: mask(rd) }; // C.SLLI
    case 2:
      return { uses: mask(Reg.sp), defs: mask(rd) }; // C.LWSP
    case 4: {
      const bit12 = (hw >> 12) & 1;
      if (!bit12) return rs2 === 0 ? { uses: mask(rd), defs: 0 } : { uses: mask(rs2), defs: mask(rd) }; // C.JR / C.MV
      if (rs2 !== 0) return { uses: mask(rd, rs2), defs: mask(rd) }; // C.ADD
      return rd === 0 ? { uses: 0, defs: 0 } : { uses: mask(rd), defs: mask(Reg.ra) }; // C.EBREAK / C.JALR
    }
    case 6:
      return { uses: mask(Reg.sp, rs2), defs: 0 }; // C.SWSP
    default:
      return { uses: mask(Reg.sp), defs: 0 }; // C.FLDSP/FLWSP/FSDSP/FSWSP
  }
}

/** The link register of a call (JAL/JALR rd, C.JAL/C.JALR write ra), or undefined for non-calls. */
export function rvLinkRegister(insn: DecodedInstruction): number | undefined {
  if (insn.kind !== 'call' && insn.kind !== 'indirectCall') return undefined;
  if (insn.length === 2) return Reg.ra;
  return (rvWord(insn.bytes) >> 7) & 0x1f;
}

/** Registers a JALR / C.JR / C.JALR jumps through. */
export function rvJumpRegister(insn: DecodedInstruction): number | undefined {
  if (insn.length === 2) {
    const hw = insn.bytes[0]! | (insn.bytes[1]! << 8);
    if ((hw & 3) === 2 && hw >> 13 === 4 && ((hw >> 2) & 0x1f) === 0) return (hw >> 7) & 0x1f;
    return undefined;
  }
  const w = rvWord(insn.bytes);
  return (w & 0x7f) === 0x67 ? (w >> 15) & 0x1f : undefined;
}

// ---- extra encoders ----------------------------------------------------------------------------

function rType(funct7: number, rs2: number, rs1: number, funct3: number, rd: number): Uint8Array {
  return word32(((funct7 << 25) | (rs2 << 20) | (rs1 << 15) | (funct3 << 12) | (rd << 7) | 0x33) >>> 0);
}
function iType(opcode: number, funct3: number, rd: number, rs1: number, imm: number, what: string): Uint8Array {
  if (!fitsSigned(imm, 12)) throw new RangeError(`${what}: immediate ${imm} does not fit 12 bits`);
  return word32((((imm & 0xfff) << 20) | (rs1 << 15) | (funct3 << 12) | (rd << 7) | opcode) >>> 0);
}
export const rvAdd = (rd: RvRegister, rs1: RvRegister, rs2: RvRegister): Uint8Array => rType(0, rs2, rs1, 0, rd);
export const rvSub = (rd: RvRegister, rs1: RvRegister, rs2: RvRegister): Uint8Array => rType(0x20, rs2, rs1, 0, rd);
export const rvSltu = (rd: RvRegister, rs1: RvRegister, rs2: RvRegister): Uint8Array => rType(0, rs2, rs1, 3, rd);
export const rvAnd = (rd: RvRegister, rs1: RvRegister, rs2: RvRegister): Uint8Array => rType(0, rs2, rs1, 7, rd);
export const rvMul = (rd: RvRegister, rs1: RvRegister, rs2: RvRegister): Uint8Array => rType(1, rs2, rs1, 0, rd);
export const rvAndi = (rd: RvRegister, rs1: RvRegister, imm: number): Uint8Array =>
  iType(0x13, 7, rd, rs1, imm, 'ANDI');
export const rvSlli = (rd: RvRegister, rs1: RvRegister, shamt: number): Uint8Array =>
  iType(0x13, 1, rd, rs1, shamt & 0x1f, 'SLLI');
export const rvSrli = (rd: RvRegister, rs1: RvRegister, shamt: number): Uint8Array =>
  iType(0x13, 5, rd, rs1, shamt & 0x1f, 'SRLI');
// The codec's encoders under the names the payload generators use.
export const rvAddi = encodeAddi;
export const rvLw = encodeLw;
export const rvJalr = encodeJalr;
export const rvSw = encodeSw;
export const rvLui = encodeLui;
export const rvAuipc = encodeAuipc;
/** 9.1 CSRRS rd, csr, x0 (`csrr`). */
export const rvCsrr = (rd: RvRegister, csr: number): Uint8Array =>
  word32(((csr << 20) | (2 << 12) | (rd << 7) | 0x73) >>> 0);
/** 9.1 CSRRW x0, csr, rs1 (`csrw`). */
export const rvCsrw = (csr: number, rs1: RvRegister): Uint8Array =>
  word32(((csr << 20) | (rs1 << 15) | (1 << 12) | 0x73) >>> 0);
/** 9.1 CSRRCI rd, csr, uimm (`csrrci`): reads the old value and clears bits in one instruction. */
export const rvCsrrci = (rd: RvRegister, csr: number, uimm: number): Uint8Array =>
  word32(((csr << 20) | ((uimm & 0x1f) << 15) | (7 << 12) | (rd << 7) | 0x73) >>> 0);
export const rvCsrrsi = (rd: RvRegister, csr: number, uimm: number): Uint8Array =>
  word32(((csr << 20) | ((uimm & 0x1f) << 15) | (6 << 12) | (rd << 7) | 0x73) >>> 0);
export const rvEbreak = (): Uint8Array => word32(0x00100073);
/** 16.4 C.JALR rs1 (jalr ra, 0(rs1)). */
export const rvCJalr = (rs1: RvRegister): Uint8Array => half16(0x9002 | (rs1 << 7));

/** rd = value with LUI (+ ADDI), the psABI %hi/%lo split. */
export function rvLoadAddress(rd: RvRegister, value: number): Uint8Array {
  const { hi, lo } = splitHiLo(value);
  return lo === 0 ? rvLui(rd, hi) : concatBytes([rvLui(rd, hi), rvAddi(rd, rd, lo)]);
}

// ---- a tiny assembler with labels ---------------------------------------------------------------

interface Fixup {
  at: number;
  insnIndex: number;
  encode: (from: number, to: number) => Uint8Array;
  label: string;
}

/**
 * Emits 32-bit RV32 instructions (and data words) at a known address, with forward labels.
 * `count` is the number of instructions emitted so far: the difference between two labels' counts
 * is the number of instructions a straight-line path between them executes.
 */
export class Rv32Assembler {
  private readonly chunks: Uint8Array[] = [];
  private size = 0;
  private insns = 0;
  private readonly labelAt = new Map<string, { address: number; count: number }>();
  private readonly fixups: Fixup[] = [];

  constructor(readonly base: number) {}

  get pc(): number {
    return this.base + this.size;
  }

  get count(): number {
    return this.insns;
  }

  /** One instruction (2 or 4 bytes). */
  i(bytes: Uint8Array): this {
    this.chunks.push(bytes);
    this.size += bytes.length;
    this.insns++;
    return this;
  }

  /** Several instructions given as one byte string (relocated code); `instructions` says how many. */
  code(bytes: Uint8Array, instructions: number): this {
    this.chunks.push(bytes);
    this.size += bytes.length;
    this.insns += instructions;
    return this;
  }

  word(value: number): this {
    this.chunks.push(word32(value >>> 0));
    this.size += 4;
    return this;
  }

  align(n: number): this {
    while (this.size % n !== 0) this.i(half16(0x0001)); // C.NOP: only ever padding that is not executed
    return this;
  }

  label(name: string): this {
    if (this.labelAt.has(name)) throw new Error(`label ${name} defined twice`);
    this.labelAt.set(name, { address: this.pc, count: this.insns });
    return this;
  }

  /** Conditional branch to a label (B-type, +/-4 KiB). */
  b(cond: BranchCondition, rs1: RvRegister, rs2: RvRegister, label: string): this {
    return this.fixup(label, (from, to) => encodeBranch(cond, rs1, rs2, from, to));
  }

  /** JAL rd, label. */
  jal(rd: RvRegister, label: string): this {
    return this.fixup(label, (from, to) => encodeJal(rd, from, to));
  }

  private fixup(label: string, encode: (from: number, to: number) => Uint8Array): this {
    this.fixups.push({ at: this.size, insnIndex: this.insns, encode, label });
    return this.i(new Uint8Array(4));
  }

  /** A label for code outside this assembly (a shared routine), so branches to it are fixed up. */
  defineExternal(name: string, address: number): this {
    if (this.labelAt.has(name)) throw new Error(`label ${name} defined twice`);
    this.labelAt.set(name, { address, count: Number.NaN });
    return this;
  }

  /** A 4-byte instruction whose encoding is only known once the whole routine is assembled. */
  late(encode: () => Uint8Array): this {
    this.fixups.push({ at: this.size, insnIndex: this.insns, encode: () => encode(), label: '' });
    return this.i(new Uint8Array(4));
  }

  address(label: string): number {
    const l = this.labelAt.get(label);
    if (!l) throw new Error(`undefined label ${label}`);
    return l.address;
  }

  /** Instructions on the straight line from label `a` to label `b`. */
  between(a: string, b: string): number {
    const la = this.labelAt.get(a);
    const lb = this.labelAt.get(b);
    if (!la || !lb) throw new Error(`undefined label ${la ? b : a}`);
    return lb.count - la.count;
  }

  bytes(): Uint8Array {
    const out = concatBytes(this.chunks);
    for (const f of this.fixups) {
      const encoded = f.encode(this.base + f.at, f.label === '' ? 0 : this.address(f.label));
      out.set(encoded, f.at);
    }
    return out;
  }
}

// ---- jump tables ---------------------------------------------------------------------------------

export interface Rv32JumpTable {
  ok: true;
  table: number;
  entries: number;
  targets: number[];
}
export interface Rv32JumpTableFailure {
  ok: false;
  reason: string;
  /**
   * The dispatch has the shape of a compiler switch (entries are offsets from the table base), so
   * its targets lie inside the function although they could not be listed.
   */
  switchShaped?: boolean;
}

/**
 * Resolves GCC's RV32 switch dispatch (`-O2`, medany), the form the fixture's `vm_run` uses:
 *
 *     auipc rB, %pcrel_hi(table); addi rB, rB, %pcrel_lo   (anywhere earlier: the table base)
 *     bltu  rK, rI, default        with rK = li N            (the bound: rI <= N)
 *     slli  rI, rI, 2 ; add rI, rI, rB ; lw rJ, 0(rI) ; add rJ, rJ, rB ; jr rJ
 *
 * Entries are 32-bit offsets from the table base (or absolute addresses when no `add rJ, rB`
 * follows the load). Register values come from straight-line constant propagation over the
 * function up to the jump, so each answer is validated: every target must be an instruction
 * boundary of the same function.
 */
export function resolveRv32JumpTable(
  insns: readonly DecodedInstruction[],
  jumpIndex: number,
  readWord: (address: number) => number | undefined,
  isInstructionInFunction: (address: number) => boolean,
): Rv32JumpTable | Rv32JumpTableFailure {
  const jump = insns[jumpIndex]!;
  const rJ = rvJumpRegister(jump);
  if (rJ === undefined) return { ok: false, reason: 'not a register jump' };
  const consts = constantsBefore(insns, jumpIndex);
  // Walk back over the dispatch sequence.
  let k = jumpIndex - 1;
  let base: number | undefined;
  let relative = false;
  let defJ = lastDef(insns, k, rJ);
  if (defJ && isAdd(defJ.insn)) {
    const [x, y] = addSources(defJ.insn);
    const baseReg = x === rJ ? y : y === rJ ? x : undefined;
    if (baseReg === undefined) return { ok: false, reason: 'the jump register is not an offset plus a base' };
    base = consts.get(baseReg);
    relative = true;
    k = defJ.index - 1;
    defJ = lastDef(insns, k, rJ);
  }
  if (!defJ || (defJ.insn.mnemonic !== 'lw' && defJ.insn.mnemonic !== 'c.lw'))
    return { ok: false, reason: 'no table load feeds the jump register' };
  const loadBase = loadBaseRegister(defJ.insn);
  if (defJ.insn.mnemonic === 'lw' && immI(rvWord(defJ.insn.bytes)) !== 0)
    return { ok: false, reason: 'the table load has an offset' };
  k = defJ.index - 1;
  const defI = lastDef(insns, k, loadBase);
  if (!defI || !isAdd(defI.insn)) return { ok: false, reason: 'the table address is not index plus base' };
  const [p, q] = addSources(defI.insn);
  const other = p === loadBase ? q : p;
  const tableBase = consts.get(other) ?? consts.get(p === other ? q : p);
  if (!relative) base = tableBase;
  if (tableBase === undefined) return { ok: false, reason: 'the table base address is not a constant' };
  if (relative && base !== tableBase) return { ok: false, reason: 'the offsets are not relative to the table base' };
  const indexReg = p === loadBase ? p : q;
  const shift = lastDef(insns, defI.index - 1, indexReg);
  if (!shift || !['slli', 'c.slli'].includes(shift.insn.mnemonic))
    return { ok: false, reason: 'the index is not scaled by 4' };
  const bound = findBound(insns, shift.index - 1, indexReg, consts);
  if (bound === undefined)
    return {
      ok: false,
      reason: `no bounds check of the index register x${indexReg} was found before the dispatch`,
      ...(relative ? { switchShaped: true } : {}),
    };
  const targets: number[] = [];
  for (let e = 0; e < bound; e++) {
    const v = readWord(tableBase + 4 * e);
    if (v === undefined)
      return {
        ok: false,
        reason: `the table at 0x${tableBase.toString(16)} is not in the image`,
        ...(relative ? { switchShaped: true } : {}),
      };
    const t = (relative ? tableBase + (v | 0) : v) >>> 0;
    if (!isInstructionInFunction(t))
      return {
        ok: false,
        reason: `entry ${e} (0x${t.toString(16)}) is not an instruction of this function`,
        ...(relative ? { switchShaped: true } : {}),
      };
    targets.push(t);
  }
  return { ok: true, table: tableBase, entries: bound, targets };
}

function isAdd(insn: DecodedInstruction): boolean {
  return insn.mnemonic === 'add' || insn.mnemonic === 'c.add';
}

function addSources(insn: DecodedInstruction): [number, number] {
  if (insn.length === 2) {
    const hw = insn.bytes[0]! | (insn.bytes[1]! << 8);
    return [(hw >> 7) & 0x1f, (hw >> 2) & 0x1f];
  }
  const w = rvWord(insn.bytes);
  return [(w >> 15) & 0x1f, (w >> 20) & 0x1f];
}

function loadBaseRegister(insn: DecodedInstruction): number {
  if (insn.length === 2) return cr((insn.bytes[0]! | (insn.bytes[1]! << 8)) >> 7);
  return (rvWord(insn.bytes) >> 15) & 0x1f;
}

function lastDef(
  insns: readonly DecodedInstruction[],
  from: number,
  reg: number,
): { insn: DecodedInstruction; index: number } | undefined {
  for (let k = from; k >= 0 && k > from - 16; k--) {
    const insn = insns[k]!;
    if (insn.kind !== 'plain') return undefined; // stay inside the basic block
    if (rvRegisterEffects(insn).defs & (1 << reg)) return { insn, index: k };
  }
  return undefined;
}

/** Unsigned upper bound check of `reg` within the few blocks before the dispatch: entries = N + 1. */
function findBound(
  insns: readonly DecodedInstruction[],
  from: number,
  reg: number,
  consts: Map<number, number>,
): number | undefined {
  for (let k = from; k >= 0 && k > from - 24; k--) {
    const insn = insns[k]!;
    if (insn.kind !== 'condBranch' || insn.length !== 4) continue;
    const w = rvWord(insn.bytes);
    const rs1 = (w >> 15) & 0x1f;
    const rs2 = (w >> 20) & 0x1f;
    // bltu rK, rI, default  (taken when rI > K)  |  bgeu rK, rI, ok is the inverted layout
    if (insn.mnemonic === 'bltu' && rs2 === reg && consts.has(rs1)) return consts.get(rs1)! + 1;
    if (insn.mnemonic === 'bgeu' && rs1 === reg && consts.has(rs2)) return consts.get(rs2)!;
  }
  return undefined;
}

/** Straight-line constant propagation up to (not including) `end`: LUI/AUIPC/ADDI/C.LI/C.LUI/MV. */
function constantsBefore(insns: readonly DecodedInstruction[], end: number): Map<number, number> {
  const c = new Map<number, number>();
  for (let k = 0; k < end; k++) {
    const insn = insns[k]!;
    const { defs } = rvRegisterEffects(insn);
    const value = constantValue(insn, c);
    for (let r = 1; r < 32; r++) if (defs & (1 << r)) c.delete(r);
    if (value) c.set(value.rd, value.value >>> 0);
  }
  return c;
}

function constantValue(insn: DecodedInstruction, c: Map<number, number>): { rd: number; value: number } | undefined {
  if (insn.length === 4) {
    const w = rvWord(insn.bytes);
    const rd = (w >> 7) & 0x1f;
    const rs1 = (w >> 15) & 0x1f;
    if (insn.mnemonic === 'auipc') return { rd, value: insn.target! };
    if (insn.mnemonic === 'lui') return { rd, value: w & 0xfffff000 };
    if (insn.mnemonic === 'addi') {
      const src = rs1 === 0 ? 0 : c.get(rs1);
      return src === undefined ? undefined : { rd, value: src + immI(w) };
    }
    return undefined;
  }
  const hw = insn.bytes[0]! | (insn.bytes[1]! << 8);
  const rd = (hw >> 7) & 0x1f;
  const imm6 = ((hw >> 12) & 1 ? -32 : 0) + ((hw >> 2) & 0x1f);
  if (insn.mnemonic === 'c.li') return { rd, value: imm6 };
  if (insn.mnemonic === 'c.lui') return { rd, value: imm6 << 12 };
  if (insn.mnemonic === 'c.addi') {
    const src = c.get(rd);
    return src === undefined ? undefined : { rd, value: src + imm6 };
  }
  if (insn.mnemonic === 'c.mv') {
    const src = c.get((hw >> 2) & 0x1f);
    return src === undefined ? undefined : { rd, value: src };
  }
  return undefined;
}
