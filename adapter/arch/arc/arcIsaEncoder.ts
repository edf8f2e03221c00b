import { concatBytes, fitsSigned } from '../codec';
import { LIMM_REG } from './arcIsaDecoder';

/**
 * ARCv2 encoders for trampolines. Formats from the ARCv2 ISA Programmer's Reference Manual
 * ("Instruction Formats"), cross-checked against GNU as (binutils opcodes/arc-tbl.h):
 *   general   00100 bbb PP oooooo F BBB cccccc aaaaaa   (major 4: ALU, MOV 0x0A, J 0x20, JL 0x22, LR 0x2A, SR 0x2B)
 *   LD        00010 bbb ssssssss S BBB D aa zz x aaaaaa
 *   ST        00011 bbb ssssssss S BBB cccccc D aa zz w
 *   B/Bcc     00000 sssssssssss N? ... (see arcOffsets in arcIsaDecoder)
 * 32-bit words and limms are stored high halfword first; everything throws a RangeError when an
 * operand does not fit.
 */

export type ArcRegister = number; // r0-r63; r62 = limm marker, r63 = PCL

export const SP = 28;
export const BLINK = 31;

/** Stores a 32-bit instruction word or limm: high halfword first, each halfword little-endian. */
export function arcWordBytes(w: number): Uint8Array {
  const hi = (w >>> 16) & 0xffff;
  const lo = w & 0xffff;
  return Uint8Array.of(hi & 0xff, hi >> 8, lo & 0xff, lo >> 8);
}

export function arcHalfBytes(h: number): Uint8Array {
  return Uint8Array.of(h & 0xff, (h >> 8) & 0xff);
}

function check(value: number, ok: boolean, what: string): void {
  if (!Number.isInteger(value) || !ok) throw new RangeError(`${what}: ${value} does not fit`);
}
const core = (r: number, what: string): number => {
  check(r, r >= 0 && r <= 63 && r !== LIMM_REG, `${what} register`);
  return r;
};

/** The general format with fields placed; `a` doubles as the s12 high bits / condition. */
export function generalWord(op: number, p: number, b: number, c: number, a: number, major = 4, flags = false): number {
  return (
    ((major << 27) |
      ((b & 7) << 24) |
      (p << 22) |
      (op << 16) |
      (flags ? 0x8000 : 0) |
      ((b >> 3) << 12) |
      ((c & 0x3f) << 6) |
      (a & 0x3f)) >>>
    0
  );
}

const withLimm = (w: number, limm: number): Uint8Array => concatBytes([arcWordBytes(w), arcWordBytes(limm >>> 0)]);

/** The aux-register operand of LR/SR: u6 (P=1), s12 (P=2) or a limm (P=0, c = 62). */
function auxOperand(aux: number): { p: number; c: number; a: number; limm?: number } {
  check(aux, aux >= 0 && aux <= 0xffffffff, 'aux register');
  if (aux < 64) return { p: 1, c: aux, a: 0 };
  if (aux < 2048) return { p: 2, c: aux & 0x3f, a: (aux >> 6) & 0x3f };
  return { p: 0, c: LIMM_REG, a: 0, limm: aux };
}

/** LR b, [aux] (sub-opcode 0x2A): read an auxiliary register (PCT_COUNTL 0x250, ...). */
export function encodeLr(rd: ArcRegister, aux: number): Uint8Array {
  const o = auxOperand(aux);
  const w = generalWord(0x2a, o.p, core(rd, 'LR'), o.c, o.a);
  return o.limm === undefined ? arcWordBytes(w) : withLimm(w, o.limm);
}

/** LR b, [c]: aux register number in a core register. */
export function encodeLrRegister(rd: ArcRegister, auxReg: ArcRegister): Uint8Array {
  return arcWordBytes(generalWord(0x2a, 0, core(rd, 'LR'), core(auxReg, 'LR'), 0));
}

/**
 * SR value, [aux] (sub-opcode 0x2B): write an auxiliary register. `value` is a core register, or
 * `{ imm }` which travels as the limm in the b field (`sr limm, [s12]`, 0x26AB7000 family).
 */
export function encodeSr(value: ArcRegister | { imm: number }, aux: number): Uint8Array {
  const o = auxOperand(aux);
  if (typeof value === 'number') {
    const w = generalWord(0x2b, o.p, core(value, 'SR'), o.c, o.a);
    return o.limm === undefined ? arcWordBytes(w) : withLimm(w, o.limm);
  }
  // Only one limm per instruction: an immediate value needs the aux number in u6/s12.
  if (o.limm !== undefined)
    throw new RangeError(`SR of an immediate: aux register 0x${aux.toString(16)} needs a limm too`);
  return withLimm(generalWord(0x2b, o.p, LIMM_REG, o.c, o.a), value.imm);
}

/** SR b, [c]: both in core registers. */
export function encodeSrRegister(value: ArcRegister, auxReg: ArcRegister): Uint8Array {
  return arcWordBytes(generalWord(0x2b, 0, core(value, 'SR'), core(auxReg, 'SR'), 0));
}

/** MOV b, limm (sub-opcode 0x0A, c = 62): any 32-bit constant in 8 bytes, flags untouched. */
export function encodeMovLimm(rd: ArcRegister, value: number): Uint8Array {
  return withLimm(generalWord(0x0a, 0, core(rd, 'MOV'), LIMM_REG, 0), value >>> 0);
}

/** MOV b, s12 (P = 2): small constants in 4 bytes. */
export function encodeMovS12(rd: ArcRegister, value: number): Uint8Array {
  check(value, fitsSigned(value, 12), 'MOV s12');
  return arcWordBytes(generalWord(0x0a, 2, core(rd, 'MOV'), value & 0x3f, (value >> 6) & 0x3f));
}

/** MOV b, c. */
export function encodeMovRegister(rd: ArcRegister, rs: ArcRegister): Uint8Array {
  return arcWordBytes(generalWord(0x0a, 0, core(rd, 'MOV'), core(rs, 'MOV'), 0));
}

/** NOP (`mov 0, 0`, 0x264A7000) and NOP_S (0x78E0). */
export const encodeNop = (): Uint8Array => arcWordBytes(0x264a7000);
export const encodeNopS = (): Uint8Array => arcHalfBytes(0x78e0);
/** J_S [blink] (0x7EE0): return. */
export const encodeReturnS = (): Uint8Array => arcHalfBytes(0x7ee0);

/** Branch offsets are relative to PCL, the instruction address with bits [1:0] cleared. */
const pclOffset = (from: number, to: number): number => to - ((from & ~3) >>> 0);

/** B s25 (major 0, bit 16 = 1): +/-16 MiB, halfword-aligned targets; `delay` sets .d. */
export function encodeB(from: number, to: number, delay = false): Uint8Array {
  const off = pclOffset(from, to);
  check(off, fitsSigned(off, 25) && off % 2 === 0, `B offset 0x${from.toString(16)} -> 0x${to.toString(16)}`);
  return arcWordBytes(
    (((off >> 1) & 0x3ff) << 17) | 0x10000 | (((off >> 11) & 0x3ff) << 6) | (delay ? 0x20 : 0) | ((off >> 21) & 0xf),
  );
}

/** Bcc s21 (major 0, bit 16 = 0): +/-1 MiB; cond is the 5-bit ARC condition (1 = eq ...). */
export function encodeBcc(cond: number, from: number, to: number, delay = false): Uint8Array {
  check(cond, cond >= 0 && cond < 32, 'condition');
  const off = pclOffset(from, to);
  check(off, fitsSigned(off, 21) && off % 2 === 0, `Bcc offset 0x${from.toString(16)} -> 0x${to.toString(16)}`);
  return arcWordBytes((((off >> 1) & 0x3ff) << 17) | (((off >> 11) & 0x3ff) << 6) | (delay ? 0x20 : 0) | cond);
}

/** BL s25 (major 1, bits 17:16 = 10): +/-16 MiB, 32-bit aligned targets; BLINK = next (after a delay slot). */
export function encodeBl(from: number, to: number, delay = false): Uint8Array {
  const off = pclOffset(from, to);
  check(off, fitsSigned(off, 25) && off % 4 === 0, `BL offset 0x${from.toString(16)} -> 0x${to.toString(16)}`);
  return arcWordBytes(
    (1 << 27) |
      (((off >> 2) & 0x1ff) << 18) |
      0x20000 |
      (((off >> 11) & 0x3ff) << 6) |
      (delay ? 0x20 : 0) |
      ((off >> 21) & 0xf),
  );
}

/** BLcc s21 (major 1, bits 17:16 = 00): +/-1 MiB, 32-bit aligned targets. */
export function encodeBlcc(cond: number, from: number, to: number, delay = false): Uint8Array {
  check(cond, cond >= 0 && cond < 32, 'condition');
  const off = pclOffset(from, to);
  check(off, fitsSigned(off, 21) && off % 4 === 0, `BLcc offset 0x${from.toString(16)} -> 0x${to.toString(16)}`);
  return arcWordBytes(
    (1 << 27) | (((off >> 2) & 0x1ff) << 18) | (((off >> 11) & 0x3ff) << 6) | (delay ? 0x20 : 0) | cond,
  );
}

/**
 * BRcc/BBIT b, c|u6, s9 (major 1, bit 16 = 1): `cc` is the 3-bit ARCv2 code (0 breq .. 5 brhs,
 * 6 bbit0, 7 bbit1); `c` is a register, `{ u6 }`, or `{ limm }` (c = 62 and a trailing limm).
 */
export function encodeBrcc(
  cc: number,
  b: ArcRegister,
  c: ArcRegister | { u6: number } | { limm: number },
  from: number,
  to: number,
  delay = false,
): Uint8Array {
  check(cc, cc >= 0 && cc <= 7, 'BRcc condition');
  core(b, 'BRcc'); // b = 62 (limm) is possible in the ISA; here the constant goes in c
  const off = pclOffset(from, to);
  check(off, fitsSigned(off, 9) && off % 2 === 0, `BRcc offset 0x${from.toString(16)} -> 0x${to.toString(16)}`);
  let cField: number;
  let u6 = 0;
  let limm: number | undefined;
  if (typeof c === 'number') cField = core(c, 'BRcc');
  else if ('u6' in c) {
    check(c.u6, c.u6 >= 0 && c.u6 < 64, 'BRcc u6');
    cField = c.u6;
    u6 = 0x10;
  } else {
    cField = LIMM_REG;
    limm = c.limm;
  }
  const w =
    ((1 << 27) |
      ((b & 7) << 24) |
      (((off >> 1) & 0x7f) << 17) |
      0x10000 |
      (((off >> 8) & 1) << 15) |
      ((b >> 3) << 12) |
      (cField << 6) |
      (delay ? 0x20 : 0) |
      u6 |
      cc) >>>
    0;
  return limm === undefined ? arcWordBytes(w) : withLimm(w, limm);
}

/** J limm / Jcc limm (sub-opcode 0x20, c = 62): an absolute jump anywhere; no delay slot with a limm. */
export function encodeJ(target: number, cond = 0): Uint8Array {
  check(cond, cond >= 0 && cond < 32, 'condition');
  const w = cond === 0 ? generalWord(0x20, 0, 0, LIMM_REG, 0) : generalWord(0x20, 3, 0, LIMM_REG, cond);
  return withLimm(w, target);
}

/** JL limm / JLcc limm (sub-opcode 0x22): an absolute call anywhere; BLINK = the next instruction. */
export function encodeJl(target: number, cond = 0): Uint8Array {
  check(cond, cond >= 0 && cond < 32, 'condition');
  const w = cond === 0 ? generalWord(0x22, 0, 0, LIMM_REG, 0) : generalWord(0x22, 3, 0, LIMM_REG, cond);
  return withLimm(w, target);
}

/** J [c] / JL [c] (register). */
export function encodeJRegister(rs: ArcRegister, link = false): Uint8Array {
  return arcWordBytes(generalWord(link ? 0x22 : 0x20, 0, 0, core(rs, 'J'), 0));
}

export type ArcSize = 'word' | 'byte' | 'half';
const zz: Record<ArcSize, number> = { word: 0, byte: 1, half: 2 };
/** Address write-back modes: none, .aw (pre-update), .ab (post-update), .as (scaled). */
export type ArcAddressMode = '' | 'aw' | 'ab' | 'as';
const aaBits: Record<ArcAddressMode, number> = { '': 0, aw: 1, ab: 2, as: 3 };

/** LD<zz><.aa> a, [b, s9] (major 2). With b = 62 the address is a limm: `ld a, [limm]`. */
export function encodeLd(
  rd: ArcRegister,
  base: ArcRegister | { limm: number },
  offset = 0,
  size: ArcSize = 'word',
  mode: ArcAddressMode = '',
): Uint8Array {
  check(offset, fitsSigned(offset, 9), 'LD offset');
  const b = typeof base === 'number' ? core(base, 'LD') : LIMM_REG;
  const w =
    ((2 << 27) |
      ((b & 7) << 24) |
      ((offset & 0xff) << 16) |
      (((offset >> 8) & 1) << 15) |
      ((b >> 3) << 12) |
      (aaBits[mode] << 9) |
      (zz[size] << 7) |
      core(rd, 'LD')) >>>
    0;
  return typeof base === 'number' ? arcWordBytes(w) : withLimm(w, base.limm);
}

/** ST<zz><.aa> c, [b, s9] (major 3). `st.aw r, [sp, -4]` pushes; b = 62 stores to `[limm]`. */
export function encodeSt(
  rs: ArcRegister,
  base: ArcRegister | { limm: number },
  offset = 0,
  size: ArcSize = 'word',
  mode: ArcAddressMode = '',
): Uint8Array {
  check(offset, fitsSigned(offset, 9), 'ST offset');
  const b = typeof base === 'number' ? core(base, 'ST') : LIMM_REG;
  const w =
    ((3 << 27) |
      ((b & 7) << 24) |
      ((offset & 0xff) << 16) |
      (((offset >> 8) & 1) << 15) |
      ((b >> 3) << 12) |
      (core(rs, 'ST') << 6) |
      (aaBits[mode] << 3) |
      (zz[size] << 1)) >>>
    0;
  return typeof base === 'number' ? arcWordBytes(w) : withLimm(w, base.limm);
}

/** The compact register numbers of 16-bit formats: r0-r3 and r12-r15 (3-bit field 0-7). */
export function compactRegisterField(r: ArcRegister): number {
  if (r >= 0 && r <= 3) return r;
  if (r >= 12 && r <= 15) return r - 8;
  throw new RangeError(`r${r} has no 16-bit encoding (r0-r3, r12-r15)`);
}
export const compactRegister = (field: number): ArcRegister => (field < 4 ? field : field + 8);

/** PUSH_S b / PUSH_S blink (major 0x18): `st.aw b, [sp, -4]` in 16 bits. */
export function encodePushS(r: ArcRegister): Uint8Array {
  return arcHalfBytes(r === BLINK ? 0xc0f1 : 0xc0e1 | (compactRegisterField(r) << 8));
}

/** POP_S b / POP_S blink (major 0x18): `ld.ab b, [sp, 4]` in 16 bits. */
export function encodePopS(r: ArcRegister): Uint8Array {
  return arcHalfBytes(r === BLINK ? 0xc0d1 : 0xc0c1 | (compactRegisterField(r) << 8));
}

/** Push any core register: PUSH_S where it has a 16-bit form, else ST.AW r, [sp, -4]. */
export function encodePush(r: ArcRegister): Uint8Array {
  return r === BLINK || (r >= 0 && r <= 3) || (r >= 12 && r <= 15) ? encodePushS(r) : encodeSt(r, SP, -4, 'word', 'aw');
}

/** Pop any core register: POP_S where it has a 16-bit form, else LD.AB r, [sp, 4]. */
export function encodePop(r: ArcRegister): Uint8Array {
  return r === BLINK || (r >= 0 && r <= 3) || (r >= 12 && r <= 15) ? encodePopS(r) : encodeLd(r, SP, 4, 'word', 'ab');
}
