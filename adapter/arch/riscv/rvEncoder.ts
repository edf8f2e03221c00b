import { fitsSigned } from '../codec';

/**
 * RV32I/C/Zicsr encoders for trampolines (RISC-V Unprivileged ISA 20191213: 2.2-2.6 base formats,
 * 9.1 CSR instructions, 16 compressed formats). Operands that do not fit throw a RangeError.
 */

export type RvRegister = number; // x0-x31

export const ZERO = 0;
export const RA = 1;
export const SP = 2;
export const T0 = 5;

/** Well-known CSR numbers (Privileged ISA 2.2). */
export const Csr = {
  mstatus: 0x300,
  mepc: 0x341,
  mscratch: 0x340,
  mcountinhibit: 0x320,
  mcycle: 0xb00,
  minstret: 0xb02,
  mcycleh: 0xb80,
  minstreth: 0xb82,
  mhpmcounter3: 0xb03,
  mhpmevent3: 0x323,
} as const;

function check(value: number, ok: boolean, what: string): void {
  if (!Number.isInteger(value) || !ok) throw new RangeError(`${what}: ${value} does not fit`);
}
const reg = (r: number, what: string): number => {
  check(r, r >= 0 && r <= 31, `${what} register`);
  return r;
};

/** A 32-bit instruction, little-endian. */
export function word32(w: number): Uint8Array {
  return Uint8Array.of(w & 0xff, (w >>> 8) & 0xff, (w >>> 16) & 0xff, (w >>> 24) & 0xff);
}
/** A 16-bit compressed instruction, little-endian. */
export function half16(h: number): Uint8Array {
  return Uint8Array.of(h & 0xff, (h >> 8) & 0xff);
}

function iType(opcode: number, funct3: number, rd: number, rs1: number, imm: number, what: string): Uint8Array {
  check(imm, fitsSigned(imm, 12), `${what} immediate`);
  return word32(((imm & 0xfff) << 20) | (reg(rs1, what) << 15) | (funct3 << 12) | (reg(rd, what) << 7) | opcode);
}

function uType(opcode: number, rd: number, upper: number, what: string): Uint8Array {
  check(upper, upper >= -0x80000 && upper <= 0xfffff, `${what} immediate`);
  return word32(((upper & 0xfffff) << 12) | (reg(rd, what) << 7) | opcode);
}

/** 2.4 LUI rd, upper: rd = upper << 12. */
export const encodeLui = (rd: RvRegister, upper: number): Uint8Array => uType(0x37, rd, upper, 'LUI');
/** 2.4 AUIPC rd, upper: rd = pc + (upper << 12). */
export const encodeAuipc = (rd: RvRegister, upper: number): Uint8Array => uType(0x17, rd, upper, 'AUIPC');
/** 2.4 ADDI rd, rs1, imm12. */
export const encodeAddi = (rd: RvRegister, rs1: RvRegister, imm: number): Uint8Array =>
  iType(0x13, 0, rd, rs1, imm, 'ADDI');
/** 2.6 LW rd, imm(rs1). */
export const encodeLw = (rd: RvRegister, rs1: RvRegister, imm: number): Uint8Array =>
  iType(0x03, 2, rd, rs1, imm, 'LW');
/** 2.5 JALR rd, imm(rs1). */
export const encodeJalr = (rd: RvRegister, rs1: RvRegister, imm: number): Uint8Array =>
  iType(0x67, 0, rd, rs1, imm, 'JALR');

/** 2.6 SW rs2, imm(rs1). */
export function encodeSw(rs2: RvRegister, rs1: RvRegister, imm: number): Uint8Array {
  check(imm, fitsSigned(imm, 12), 'SW immediate');
  return word32(
    (((imm >> 5) & 0x7f) << 25) |
      (reg(rs2, 'SW') << 20) |
      (reg(rs1, 'SW') << 15) |
      (2 << 12) |
      ((imm & 0x1f) << 7) |
      0x23,
  );
}

/** 2.5 JAL rd, target: +/-1 MiB (J-immediate). */
export function encodeJal(rd: RvRegister, from: number, to: number): Uint8Array {
  const off = to - from;
  check(off, fitsSigned(off, 21) && off % 2 === 0, `JAL offset from 0x${from.toString(16)} to 0x${to.toString(16)}`);
  const w =
    (((off >> 20) & 1) << 31) | (((off >> 1) & 0x3ff) << 21) | (((off >> 11) & 1) << 20) | (((off >> 12) & 0xff) << 12);
  return word32(w | (reg(rd, 'JAL') << 7) | 0x6f);
}

export type BranchCondition = 'beq' | 'bne' | 'blt' | 'bge' | 'bltu' | 'bgeu';
const branchFunct3: Record<BranchCondition, number> = { beq: 0, bne: 1, blt: 4, bge: 5, bltu: 6, bgeu: 7 };
export const invertBranch: Record<BranchCondition, BranchCondition> = {
  beq: 'bne',
  bne: 'beq',
  blt: 'bge',
  bge: 'blt',
  bltu: 'bgeu',
  bgeu: 'bltu',
};

/** 2.5 Bcc rs1, rs2, target: +/-4 KiB (B-immediate). */
export function encodeBranch(
  cond: BranchCondition,
  rs1: RvRegister,
  rs2: RvRegister,
  from: number,
  to: number,
): Uint8Array {
  const off = to - from;
  check(
    off,
    fitsSigned(off, 13) && off % 2 === 0,
    `${cond} offset from 0x${from.toString(16)} to 0x${to.toString(16)}`,
  );
  const w =
    (((off >> 12) & 1) << 31) | (((off >> 5) & 0x3f) << 25) | (((off >> 1) & 0xf) << 8) | (((off >> 11) & 1) << 7);
  return word32(w | (reg(rs2, cond) << 20) | (reg(rs1, cond) << 15) | (branchFunct3[cond] << 12) | 0x63);
}

export type CsrOp = 'csrrw' | 'csrrs' | 'csrrc';
export type CsrImmediateOp = 'csrrwi' | 'csrrsi' | 'csrrci';
const csrFunct3: Record<CsrOp | CsrImmediateOp, number> = {
  csrrw: 1,
  csrrs: 2,
  csrrc: 3,
  csrrwi: 5,
  csrrsi: 6,
  csrrci: 7,
};

/** 9.1 CSRRW/CSRRS/CSRRC rd, csr, rs1 (`csrr rd, csr` is csrrs rd, csr, x0; `csrw` is csrrw x0, csr, rs1). */
export function encodeCsr(op: CsrOp, rd: RvRegister, csr: number, rs1: RvRegister): Uint8Array {
  check(csr, csr >= 0 && csr <= 0xfff, 'CSR number');
  return word32((csr << 20) | (reg(rs1, op) << 15) | (csrFunct3[op] << 12) | (reg(rd, op) << 7) | 0x73);
}

/** 9.1 CSRRWI/CSRRSI/CSRRCI rd, csr, uimm5: set/clear up to five low bits in one instruction (mcountinhibit). */
export function encodeCsrImmediate(op: CsrImmediateOp, rd: RvRegister, csr: number, uimm: number): Uint8Array {
  check(csr, csr >= 0 && csr <= 0xfff, 'CSR number');
  check(uimm, uimm >= 0 && uimm <= 31, `${op} immediate`);
  return word32((csr << 20) | (uimm << 15) | (csrFunct3[op] << 12) | (reg(rd, op) << 7) | 0x73);
}

/**
 * The %hi/%lo split of a 32-bit value for LUI/AUIPC + ADDI/LW/JALR: ADDI sign-extends its 12 bits,
 * so the upper part is rounded by 0x800 (RISC-V ELF psABI, R_RISCV_HI20/LO12).
 */
export function splitHiLo(value: number): { hi: number; lo: number } {
  const v = value | 0;
  const hi = ((v + 0x800) >> 12) & 0xfffff;
  const lo = (v - (hi << 12)) | 0;
  return { hi, lo: (lo << 20) >> 20 };
}

/** rd = value in one (LUI or ADDI) or two (LUI + ADDI) instructions. */
export function encodeLoadImmediate(rd: RvRegister, value: number): Uint8Array {
  const v = value | 0;
  if (fitsSigned(v, 12)) return encodeAddi(rd, ZERO, v);
  const { hi, lo } = splitHiLo(v);
  if (lo === 0) return encodeLui(rd, hi);
  const out = new Uint8Array(8);
  out.set(encodeLui(rd, hi), 0);
  out.set(encodeAddi(rd, rd, lo), 4);
  return out;
}

// ---- 16: compressed instructions ----------------------------------------------------------

const cRegister = (r: number, what: string): number => {
  check(r, r >= 8 && r <= 15, `${what} compressed register (x8-x15)`);
  return r - 8;
};

/** 16.5 C.NOP. */
export const encodeCNop = (): Uint8Array => half16(0x0001);
/** 16.8 C.EBREAK. */
export const encodeCEbreak = (): Uint8Array => half16(0x9002);

function cjOffset(from: number, to: number, what: string): number {
  const off = to - from;
  check(off, fitsSigned(off, 12) && off % 2 === 0, `${what} offset`);
  return (
    (((off >> 11) & 1) << 12) |
    (((off >> 4) & 1) << 11) |
    (((off >> 8) & 3) << 9) |
    (((off >> 10) & 1) << 8) |
    (((off >> 6) & 1) << 7) |
    (((off >> 7) & 1) << 6) |
    (((off >> 1) & 7) << 3) |
    (((off >> 5) & 1) << 2)
  );
}

/** 16.4 C.J: jal x0, +/-2 KiB. */
export const encodeCJ = (from: number, to: number): Uint8Array => half16(0xa001 | cjOffset(from, to, 'C.J'));
/** 16.4 C.JAL (RV32 only): jal x1, +/-2 KiB. */
export const encodeCJal = (from: number, to: number): Uint8Array => half16(0x2001 | cjOffset(from, to, 'C.JAL'));

/** 16.4 C.JR rs1 (jalr x0, 0(rs1)); `c.jr ra` is the compressed return. */
export function encodeCJr(rs1: RvRegister): Uint8Array {
  check(rs1, rs1 >= 1 && rs1 <= 31, 'C.JR register');
  return half16(0x8002 | (rs1 << 7));
}

/** 16.4 C.JALR rs1 (jalr x1, 0(rs1)). */
export function encodeCJalr(rs1: RvRegister): Uint8Array {
  check(rs1, rs1 >= 1 && rs1 <= 31, 'C.JALR register');
  return half16(0x9002 | (rs1 << 7));
}

/** 16.4 C.BEQZ / C.BNEZ rs1', +/-256 bytes. */
export function encodeCBranchZero(nonZero: boolean, rs1: RvRegister, from: number, to: number): Uint8Array {
  const off = to - from;
  check(off, fitsSigned(off, 9) && off % 2 === 0, 'C.BEQZ/C.BNEZ offset');
  const bits =
    (((off >> 8) & 1) << 12) |
    (((off >> 3) & 3) << 10) |
    (((off >> 6) & 3) << 5) |
    (((off >> 1) & 3) << 3) |
    (((off >> 5) & 1) << 2);
  return half16((nonZero ? 0xe001 : 0xc001) | bits | (cRegister(rs1, 'C.BEQZ') << 7));
}

function imm6(value: number, what: string): number {
  check(value, fitsSigned(value, 6), `${what} immediate`);
  return (((value >> 5) & 1) << 12) | ((value & 0x1f) << 2);
}

/** 16.5 C.LI rd, imm6. */
export function encodeCLi(rd: RvRegister, imm: number): Uint8Array {
  check(rd, rd >= 1 && rd <= 31, 'C.LI register');
  return half16(0x4001 | (rd << 7) | imm6(imm, 'C.LI'));
}

/** 16.5 C.ADDI rd, nzimm6. */
export function encodeCAddi(rd: RvRegister, imm: number): Uint8Array {
  check(rd, rd >= 1 && rd <= 31, 'C.ADDI register');
  check(imm, imm !== 0, 'C.ADDI immediate');
  return half16(0x0001 | (rd << 7) | imm6(imm, 'C.ADDI'));
}

/** 16.5 C.MV rd, rs2. */
export function encodeCMv(rd: RvRegister, rs2: RvRegister): Uint8Array {
  check(rd, rd >= 1 && rd <= 31, 'C.MV register');
  check(rs2, rs2 >= 1 && rs2 <= 31, 'C.MV register');
  return half16(0x8002 | (rd << 7) | (rs2 << 2));
}

/** 16.3 C.LWSP rd, offset(sp): offset[5] at bit 12, offset[4:2|7:6] at bits [6:2]. */
export function encodeCLwsp(rd: RvRegister, offset: number): Uint8Array {
  check(rd, rd >= 1 && rd <= 31, 'C.LWSP register');
  check(offset, offset >= 0 && offset <= 252 && offset % 4 === 0, 'C.LWSP offset');
  return half16(
    0x4002 | (((offset >> 5) & 1) << 12) | (rd << 7) | (((offset >> 2) & 7) << 4) | (((offset >> 6) & 3) << 2),
  );
}

/** 16.3 C.SWSP rs2, offset(sp): offset[5:2|7:6] at bits [12:7]. */
export function encodeCSwsp(rs2: RvRegister, offset: number): Uint8Array {
  check(offset, offset >= 0 && offset <= 252 && offset % 4 === 0, 'C.SWSP offset');
  return half16(0xc002 | (((offset >> 2) & 0xf) << 9) | (((offset >> 6) & 3) << 7) | (reg(rs2, 'C.SWSP') << 2));
}

/** 16.3 C.LW / C.SW rd', offset(rs1'): offset[5:3] at bits [12:10], offset[2|6] at bits [6:5]. */
function cLoadStore(base: number, r: number, rs1: number, offset: number, what: string): Uint8Array {
  check(offset, offset >= 0 && offset <= 124 && offset % 4 === 0, `${what} offset`);
  return half16(
    base |
      (((offset >> 3) & 7) << 10) |
      (cRegister(rs1, what) << 7) |
      (((offset >> 2) & 1) << 6) |
      (((offset >> 6) & 1) << 5) |
      (cRegister(r, what) << 2),
  );
}
export const encodeCLw = (rd: RvRegister, rs1: RvRegister, offset: number): Uint8Array =>
  cLoadStore(0x4000, rd, rs1, offset, 'C.LW');
export const encodeCSw = (rs2: RvRegister, rs1: RvRegister, offset: number): Uint8Array =>
  cLoadStore(0xc000, rs2, rs1, offset, 'C.SW');
