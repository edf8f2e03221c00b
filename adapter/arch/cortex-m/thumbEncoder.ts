import { concatBytes, fitsSigned } from '../codec';

/**
 * Thumb-2 encoders for the instructions trampolines are built from. Each function encodes one
 * instruction form of the ARMv7-M ARM (DDI 0403E, section A7.7.x) and throws a RangeError when an
 * operand does not fit, so a planner never emits a silently truncated branch.
 *
 * The 16-bit ADDS/SUBS/MOVS forms set the flags outside an IT block; trampolines run between two
 * arbitrary instructions of the user's program and must leave APSR alone, so the helpers here
 * choose flag-preserving encodings unless asked otherwise.
 */

export type ThumbRegister = number; // 0-15; 13 = SP, 14 = LR, 15 = PC

export const SP = 13;
export const LR = 14;
export const PC = 15;

/** Condition codes (A7.3). */
export const Cond = {
  eq: 0,
  ne: 1,
  cs: 2,
  cc: 3,
  mi: 4,
  pl: 5,
  vs: 6,
  vc: 7,
  hi: 8,
  ls: 9,
  ge: 10,
  lt: 11,
  gt: 12,
  le: 13,
} as const;

/** One 16-bit instruction, stored little-endian. */
export function halfword(hw: number): Uint8Array {
  return Uint8Array.of(hw & 0xff, (hw >> 8) & 0xff);
}

/** One 32-bit instruction: the first halfword first, each little-endian (A5.1). */
export function halfwords(hw1: number, hw2: number): Uint8Array {
  return Uint8Array.of(hw1 & 0xff, (hw1 >> 8) & 0xff, hw2 & 0xff, (hw2 >> 8) & 0xff);
}

/** A 32-bit little-endian data word (literal pool entry). */
export function word(value: number): Uint8Array {
  return Uint8Array.of(value & 0xff, (value >>> 8) & 0xff, (value >>> 16) & 0xff, (value >>> 24) & 0xff);
}

function checkRegister(r: number, what: string, allowed: (r: number) => boolean = (x) => x >= 0 && x <= 15): void {
  if (!Number.isInteger(r) || !allowed(r)) throw new RangeError(`${what}: register r${r} is not allowed here`);
}
const isLow = (r: number): boolean => r >= 0 && r <= 7;
const notSpPc = (r: number): boolean => r >= 0 && r <= 14 && r !== 13;

function branchOffset(from: number, to: number, bits: number, what: string): number {
  const offset = to - (from + 4); // A5.1.2: PC reads as the instruction address + 4
  if (offset % 2 !== 0) throw new RangeError(`${what}: target 0x${to.toString(16)} is not halfword aligned`);
  if (!fitsSigned(offset, bits)) {
    throw new RangeError(
      `${what}: 0x${to.toString(16)} is out of reach from 0x${from.toString(16)} (offset ${offset}, ` +
        `${bits}-bit signed)`,
    );
  }
  return offset;
}

/** A7.7.12 B T2: unconditional, 16-bit, +/-2 KiB. */
export function encodeBNarrow(from: number, to: number): Uint8Array {
  const off = branchOffset(from, to, 12, 'B (T2)');
  return halfword(0xe000 | ((off >> 1) & 0x7ff));
}

/** A7.7.12 B T4 (B.W): unconditional, 32-bit, +/-16 MiB. */
export function encodeBWide(from: number, to: number): Uint8Array {
  return branchT4(from, to, 0x9000, 'B.W (T4)');
}

/** A7.7.18 BL T1: call, +/-16 MiB; LR = next instruction | 1. */
export function encodeBl(from: number, to: number): Uint8Array {
  return branchT4(from, to, 0xd000, 'BL');
}

function branchT4(from: number, to: number, hw2Base: number, what: string): Uint8Array {
  const off = branchOffset(from, to, 25, what);
  const s = (off >> 24) & 1;
  const j1 = ~(((off >> 23) & 1) ^ s) & 1; // I1 = NOT(J1 EOR S)  =>  J1 = NOT(I1 EOR S)
  const j2 = ~(((off >> 22) & 1) ^ s) & 1;
  return halfwords(
    0xf000 | (s << 10) | ((off >> 12) & 0x3ff),
    hw2Base | (j1 << 13) | (j2 << 11) | ((off >> 1) & 0x7ff),
  );
}

/** A7.7.12 B T1: conditional, 16-bit, -256..+254. */
export function encodeBCondNarrow(cond: number, from: number, to: number): Uint8Array {
  checkCond(cond);
  const off = branchOffset(from, to, 9, 'B<c> (T1)');
  return halfword(0xd000 | (cond << 8) | ((off >> 1) & 0xff));
}

/** A7.7.12 B T3: conditional, 32-bit, +/-1 MiB. */
export function encodeBCondWide(cond: number, from: number, to: number): Uint8Array {
  checkCond(cond);
  const off = branchOffset(from, to, 21, 'B<c>.W (T3)');
  const s = (off >> 20) & 1;
  const j2 = (off >> 19) & 1;
  const j1 = (off >> 18) & 1;
  return halfwords(
    0xf000 | (s << 10) | (cond << 6) | ((off >> 12) & 0x3f),
    0x8000 | (j1 << 13) | (j2 << 11) | ((off >> 1) & 0x7ff),
  );
}

function checkCond(cond: number): void {
  if (!Number.isInteger(cond) || cond < 0 || cond > 13)
    throw new RangeError(`condition ${cond} cannot be encoded in a conditional branch`);
}

/** A7.7.21 CBZ/CBNZ T1: forward 0..126 bytes, low register. */
export function encodeCbz(nonZero: boolean, rn: ThumbRegister, from: number, to: number): Uint8Array {
  checkRegister(rn, 'CBZ/CBNZ', isLow);
  const off = to - (from + 4);
  if (off < 0 || off > 126 || off % 2 !== 0) throw new RangeError(`CBZ/CBNZ: offset ${off} is outside 0..126`);
  return halfword(0xb100 | (nonZero ? 0x0800 : 0) | ((off >> 6) << 9) | (((off >> 1) & 0x1f) << 3) | rn);
}

/** Offset of a literal at `literal` from an LDR at `from`: Align(PC, 4) is the base (A7.7.43). */
function literalOffset(from: number, literal: number): number {
  return literal - (((from + 4) & ~3) >>> 0);
}

/** A7.7.43 LDR (literal) T1: low Rt, word-aligned literal 0..1020 bytes past Align(PC,4). */
export function encodeLdrLiteralNarrow(rt: ThumbRegister, from: number, literal: number): Uint8Array {
  checkRegister(rt, 'LDR (literal) T1', isLow);
  const off = literalOffset(from, literal);
  if (off < 0 || off > 1020 || off % 4 !== 0)
    throw new RangeError(`LDR (literal) T1: offset ${off} is not a multiple of 4 in 0..1020`);
  return halfword(0x4800 | (rt << 8) | (off >> 2));
}

/** A7.7.43 LDR (literal) T2, `LDR.W Rt, [PC, #+/-imm12]`; Rt = PC loads the PC (interworking: bit 0 must be 1). */
export function encodeLdrLiteralWide(rt: ThumbRegister, from: number, literal: number): Uint8Array {
  checkRegister(rt, 'LDR.W (literal)');
  const off = literalOffset(from, literal);
  if (Math.abs(off) > 4095) throw new RangeError(`LDR.W (literal): offset ${off} is outside +/-4095`);
  return halfwords(0xf85f | (off >= 0 ? 0x80 : 0), (rt << 12) | Math.abs(off));
}

/** A7.7.76 MOV (immediate) T3, MOVW: Rd = imm16 (flags untouched). */
export function encodeMovw(rd: ThumbRegister, imm16: number): Uint8Array {
  return movImm16(0xf240, rd, imm16, 'MOVW');
}

/** A7.7.79 MOVT T1: Rd[31:16] = imm16. */
export function encodeMovt(rd: ThumbRegister, imm16: number): Uint8Array {
  return movImm16(0xf2c0, rd, imm16, 'MOVT');
}

function movImm16(base: number, rd: ThumbRegister, imm16: number, what: string): Uint8Array {
  checkRegister(rd, what, (r) => r >= 0 && r <= 14 && r !== 13);
  if (!Number.isInteger(imm16) || imm16 < 0 || imm16 > 0xffff)
    throw new RangeError(`${what}: 0x${imm16.toString(16)} is not a 16-bit value`);
  const imm4 = imm16 >> 12;
  const i = (imm16 >> 11) & 1;
  const imm3 = (imm16 >> 8) & 7;
  return halfwords(base | (i << 10) | imm4, (imm3 << 12) | (rd << 8) | (imm16 & 0xff));
}

/** MOVW + MOVT: any 32-bit constant in 8 bytes (MOVT omitted when the top half is zero). */
export function encodeMovConstant(rd: ThumbRegister, value: number): Uint8Array {
  const v = value >>> 0;
  const low = encodeMovw(rd, v & 0xffff);
  return v >>> 16 === 0 ? low : concatBytes([low, encodeMovt(rd, v >>> 16)]);
}

function registerList(regs: readonly ThumbRegister[], what: string): number {
  if (regs.length === 0) throw new RangeError(`${what}: empty register list`);
  let mask = 0;
  for (const r of regs) {
    checkRegister(r, what);
    mask |= 1 << r;
  }
  return mask;
}

/**
 * PUSH: A7.7.99 T1 (r0-r7, LR) when it fits, else T2 (STMDB SP!, two or more of r0-r12, LR) or
 * T3 (STR Rt, [SP, #-4]!) for a single high register.
 */
export function encodePush(regs: readonly ThumbRegister[]): Uint8Array {
  const mask = registerList(regs, 'PUSH');
  if ((mask & ~0x40ff) === 0) return halfword(0xb400 | (((mask >> 14) & 1) << 8) | (mask & 0xff));
  if (mask & ((1 << SP) | (1 << PC))) throw new RangeError('PUSH: SP and PC cannot be pushed');
  if (regs.length === 1) return halfwords(0xf84d, (regs[0]! << 12) | 0x0d04);
  return halfwords(0xe92d, mask);
}

/**
 * POP: A7.7.98 T1 (r0-r7, PC) when it fits, else T2 (LDMIA SP!, two or more of r0-r12 plus LR or
 * PC, not both) or T3 (LDR Rt, [SP], #4) for a single register.
 */
export function encodePop(regs: readonly ThumbRegister[]): Uint8Array {
  const mask = registerList(regs, 'POP');
  if ((mask & ~0x80ff) === 0) return halfword(0xbc00 | (((mask >> 15) & 1) << 8) | (mask & 0xff));
  if (mask & (1 << SP)) throw new RangeError('POP: SP cannot be popped');
  if (mask & (1 << LR) && mask & (1 << PC)) throw new RangeError('POP: LR and PC cannot both be popped');
  if (regs.length === 1) return halfwords(0xf85d, (regs[0]! << 12) | 0x0b04);
  return halfwords(0xe8bd, mask);
}

/** A7.7.20 BX T1. */
export function encodeBx(rm: ThumbRegister): Uint8Array {
  checkRegister(rm, 'BX', (r) => r >= 0 && r <= 14);
  return halfword(0x4700 | (rm << 3));
}

/** A7.7.19 BLX (register) T1: LR = next instruction | 1. */
export function encodeBlx(rm: ThumbRegister): Uint8Array {
  checkRegister(rm, 'BLX', (r) => r >= 0 && r <= 14);
  return halfword(0x4780 | (rm << 3));
}

/** A7.7.88 NOP T1 (16-bit) and T2 (NOP.W, 32-bit). */
export function encodeNop(wide = false): Uint8Array {
  return wide ? halfwords(0xf3af, 0x8000) : halfword(0xbf00);
}

/** A7.7.77 MOV (register) T1: any registers, flags untouched (Rd = PC jumps). */
export function encodeMovRegister(rd: ThumbRegister, rm: ThumbRegister): Uint8Array {
  checkRegister(rd, 'MOV');
  checkRegister(rm, 'MOV');
  return halfword(0x4600 | ((rd & 8) << 4) | (rm << 3) | (rd & 7));
}

/** A7.7.4 ADD (register) T2: Rdn = Rdn + Rm, flags untouched. */
export function encodeAddRegister(rdn: ThumbRegister, rm: ThumbRegister): Uint8Array {
  checkRegister(rdn, 'ADD (register)', notSpPc);
  checkRegister(rm, 'ADD (register)', notSpPc);
  return halfword(0x4400 | ((rdn & 8) << 4) | (rm << 3) | (rdn & 7));
}

/** B5.2.2 MRS Rd, APSR (SYSm = 0): saves the flags a trampoline is about to clobber. */
export function encodeMrsApsr(rd: ThumbRegister): Uint8Array {
  checkRegister(rd, 'MRS', (r) => r >= 0 && r <= 12);
  return halfwords(0xf3ef, 0x8000 | (rd << 8));
}

/**
 * B5.2.3 MSR APSR_nzcvq, Rn (mask = 0b10, SYSm = 0); with `ge` also the DSP GE bits
 * (APSR_nzcvqg, mask = 0b11, ARMv7E-M only).
 */
export function encodeMsrApsr(rn: ThumbRegister, ge = false): Uint8Array {
  checkRegister(rn, 'MSR', (r) => r >= 0 && r <= 12);
  return halfwords(0xf380 | rn, ge ? 0x8c00 : 0x8800);
}

type LoadStoreSize = 'word' | 'halfword' | 'byte';

/**
 * LDR/STR (immediate), word/halfword/byte: the 16-bit T1 form (low registers, scaled imm5), T2 for
 * SP-relative words, otherwise the 32-bit imm12 (positive) or imm8 (negative) forms:
 * A7.7.42/A7.7.158 (word), A7.7.54/A7.7.170 (halfword), A7.7.45/A7.7.161 (byte).
 */
export function encodeLoadStoreImmediate(
  load: boolean,
  size: LoadStoreSize,
  rt: ThumbRegister,
  rn: ThumbRegister,
  offset: number,
): Uint8Array {
  const what = `${load ? 'LDR' : 'STR'}${size === 'word' ? '' : size === 'halfword' ? 'H' : 'B'} (immediate)`;
  checkRegister(rt, what, (r) => r >= 0 && r <= 14 && !(size !== 'word' && r === SP));
  checkRegister(rn, what, (r) => r >= 0 && r <= 14);
  if (!Number.isInteger(offset)) throw new RangeError(`${what}: offset ${offset}`);
  const scale = size === 'word' ? 4 : size === 'halfword' ? 2 : 1;
  if (isLow(rt) && isLow(rn) && offset >= 0 && offset <= 31 * scale && offset % scale === 0) {
    const base = { word: 0x6000, halfword: 0x8000, byte: 0x7000 }[size] | (load ? 0x0800 : 0);
    return halfword(base | ((offset / scale) << 6) | (rn << 3) | rt);
  }
  if (size === 'word' && rn === SP && isLow(rt) && offset >= 0 && offset <= 1020 && offset % 4 === 0) {
    return halfword((load ? 0x9800 : 0x9000) | (rt << 8) | (offset >> 2));
  }
  const sizeBits = { word: 2, halfword: 1, byte: 0 }[size] << 5;
  const hw1 = 0xf800 | sizeBits | (load ? 0x10 : 0) | rn;
  if (offset >= 0 && offset <= 4095) return halfwords(hw1 | 0x80, (rt << 12) | offset); // T3 / T2: imm12
  if (offset < 0 && offset >= -255) return halfwords(hw1, (rt << 12) | 0x0c00 | -offset); // T4: P=1 U=0 W=0 imm8
  throw new RangeError(`${what}: offset ${offset} is outside -255..4095`);
}

/** A7.7.42 LDR (immediate): `ldr rt, [rn, #offset]`. */
export function encodeLdrImmediate(rt: ThumbRegister, rn: ThumbRegister, offset = 0): Uint8Array {
  return encodeLoadStoreImmediate(true, 'word', rt, rn, offset);
}

/** A7.7.158 STR (immediate): `str rt, [rn, #offset]`. */
export function encodeStrImmediate(rt: ThumbRegister, rn: ThumbRegister, offset = 0): Uint8Array {
  return encodeLoadStoreImmediate(false, 'word', rt, rn, offset);
}

/**
 * A5.3.2 ThumbExpandImm, inverted: the 12-bit `i:imm3:imm8` field that expands to `value`, or
 * undefined when `value` is not a Thumb modified immediate.
 */
export function thumbModifiedImmediate(value: number): number | undefined {
  const v = value >>> 0;
  const b = v & 0xff;
  if (v === b) return v;
  if (v === ((b << 16) | b) >>> 0) return 0x100 | b;
  const b1 = (v >>> 8) & 0xff;
  if (v === ((b1 << 24) | (b1 << 8)) >>> 0) return 0x200 | b1;
  if (v === ((b1 << 24) | (b1 << 16) | (b1 << 8) | b1) >>> 0 && (v & 0xff) === b1) return 0x300 | b1;
  // '1bcdefgh' rotated right by 8..31.
  for (let rot = 8; rot < 32; rot++) {
    const unrotated = ((v << rot) | (v >>> (32 - rot))) >>> 0; // rotate left undoes rotate right
    if (unrotated >= 0x80 && unrotated <= 0xff) return (rot << 7) | (unrotated & 0x7f);
  }
  return undefined;
}

/**
 * ADD/SUB (immediate) with the flags untouched (unless `setFlags`): ADD SP forms (A7.7.5 T1/T2,
 * A7.7.173 T1), then ADDW/SUBW (A7.7.3 T4, A7.7.172 T4, imm12), then ADD.W/SUB.W with a modified
 * immediate (T3). With `setFlags`: ADDS/SUBS T1/T2 (16-bit) or T3 with S = 1.
 */
export function encodeAddImmediate(rd: ThumbRegister, rn: ThumbRegister, imm: number, setFlags = false): Uint8Array {
  checkRegister(rd, 'ADD (immediate)', (r) => r >= 0 && r <= 14);
  checkRegister(rn, 'ADD (immediate)', (r) => r >= 0 && r <= 14);
  if (!Number.isInteger(imm)) throw new RangeError(`ADD (immediate): ${imm}`);
  const sub = imm < 0;
  const mag = Math.abs(imm);
  if (!setFlags) {
    if (rd === SP && rn === SP && mag <= 508 && mag % 4 === 0) return halfword((sub ? 0xb080 : 0xb000) | (mag >> 2));
    if (!sub && rn === SP && isLow(rd) && mag <= 1020 && mag % 4 === 0)
      return halfword(0xa800 | (rd << 8) | (mag >> 2));
    if (rd !== SP && mag <= 4095) {
      return halfwords(
        (sub ? 0xf2a0 : 0xf200) | (((mag >> 11) & 1) << 10) | rn,
        (((mag >> 8) & 7) << 12) | (rd << 8) | (mag & 0xff),
      );
    }
  } else if (isLow(rd) && isLow(rn)) {
    if (mag <= 7) return halfword((sub ? 0x1e00 : 0x1c00) | (mag << 6) | (rn << 3) | rd);
    if (rd === rn && mag <= 255) return halfword((sub ? 0x3800 : 0x3000) | (rd << 8) | mag);
  }
  const field = thumbModifiedImmediate(mag);
  if (field === undefined) throw new RangeError(`ADD (immediate): ${imm} is neither a 12-bit nor a modified immediate`);
  const hw1 = (sub ? 0xf1a0 : 0xf100) | (setFlags ? 0x10 : 0) | (((field >> 11) & 1) << 10) | rn;
  return halfwords(hw1, (((field >> 8) & 7) << 12) | (rd << 8) | (field & 0xff));
}

/** SUB (immediate): `encodeAddImmediate(rd, rn, -imm)`. */
export function encodeSubImmediate(rd: ThumbRegister, rn: ThumbRegister, imm: number, setFlags = false): Uint8Array {
  return encodeAddImmediate(rd, rn, -imm, setFlags);
}
