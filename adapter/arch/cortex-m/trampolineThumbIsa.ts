import { concatBytes, fitsSigned, type DecodedInstruction } from '../codec';
import {
  thumbModifiedImmediate,
  halfword,
  halfwords,
  encodeBCondNarrow,
  encodeBCondWide,
  encodeBl,
  encodeBNarrow,
  encodeBWide,
  encodeCbz,
  word,
  type ThumbRegister,
} from './thumbEncoder';

/**
 * Thumb-2 pieces for trampolines that thumbEncoder.ts does not have, and a small assembler with
 * labels and a literal pool. Sections are those of the ARMv7-M ARM (DDI 0403E).
 */

export const R = { r0: 0, r1: 1, r2: 2, r3: 3, r4: 4, r12: 12, sp: 13, lr: 14, pc: 15 } as const;

/** Special registers for MRS/MSR (B5.1.1 SYSm): APSR 0, PRIMASK 16. */
export const SYSM_APSR = 0;
export const SYSM_PRIMASK = 16;

/** B5.2.2 MRS Rd, <spec_reg>. */
export const thMrs = (rd: ThumbRegister, sysm: number): Uint8Array => halfwords(0xf3ef, 0x8000 | (rd << 8) | sysm);
/**
 * B5.2.3 MSR <spec_reg>, Rn. For APSR, mask 0b10 writes NZCVQ and 0b11 also the GE bits (DSP
 * extension); for PRIMASK the mask field must be 0b10.
 */
export const thMsr = (sysm: number, rn: ThumbRegister, ge = false): Uint8Array =>
  halfwords(0xf380 | rn, 0x8000 | ((sysm === SYSM_APSR && ge ? 3 : 2) << 10) | sysm);
/** B5.2.1 CPSID i: PRIMASK = 1. */
export const thCpsidI = (): Uint8Array => halfword(0xb672);
/** A7.7.17 BKPT #imm8. */
export const thBkpt = (imm = 0): Uint8Array => halfword(0xbe00 | (imm & 0xff));
export const thNop = (): Uint8Array => halfword(0xbf00);
export const thNopW = (): Uint8Array => halfwords(0xf3af, 0x8000);

function modImm(value: number, what: string): number {
  const f = thumbModifiedImmediate(value);
  if (f === undefined) throw new RangeError(`${what}: ${value} is not a modified immediate`);
  return f;
}
const imm12Fields = (f: number): [number, number] => [((f >> 11) & 1) << 10, (((f >> 8) & 7) << 12) | (f & 0xff)];

/** A7.7.27 CMP (immediate) T2: CMP.W Rn, #const. */
export function thCmpImmW(rn: ThumbRegister, value: number): Uint8Array {
  const [i, rest] = imm12Fields(modImm(value, 'CMP.W'));
  return halfwords(0xf1b0 | i | rn, rest | 0x0f00);
}
/** A7.7.28 CMP (register) T2: any registers. */
export const thCmpReg = (rn: ThumbRegister, rm: ThumbRegister): Uint8Array =>
  halfword(0x4500 | ((rn & 8) << 4) | (rm << 3) | (rn & 7));
/** A7.7.75 MOV (immediate) T2: MOV.W Rd, #const, flags untouched (S = 0). */
export function thMovImmW(rd: ThumbRegister, value: number): Uint8Array {
  const [i, rest] = imm12Fields(modImm(value, 'MOV.W'));
  return halfwords(0xf04f | i, rest | (rd << 8));
}
/** A7.7.1 ADC (immediate) T1, S = 1: Rd = Rn + #0 + C. */
export const thAdcsImm0 = (rd: ThumbRegister, rn: ThumbRegister): Uint8Array => halfwords(0xf150 | rn, rd << 8);
/** A7.7.9 AND (immediate) T1 (S = 0). */
export function thAndImm(rd: ThumbRegister, rn: ThumbRegister, value: number): Uint8Array {
  const [i, rest] = imm12Fields(modImm(value, 'AND'));
  return halfwords(0xf000 | i | rn, rest | (rd << 8));
}
/** A7.7.91 ORR (immediate) T1 (S = 0). */
export function thOrrImm(rd: ThumbRegister, rn: ThumbRegister, value: number): Uint8Array {
  const [i, rest] = imm12Fields(modImm(value, 'ORR'));
  return halfwords(0xf040 | i | rn, rest | (rd << 8));
}
/** A7.7.4 ADD (register) T3: Rd = Rn + (Rm LSL #shift), `s` sets the flags. */
export const thAddRegW = (rd: ThumbRegister, rn: ThumbRegister, rm: ThumbRegister, shift = 0, s = false): Uint8Array =>
  halfwords(0xeb00 | (s ? 0x10 : 0) | rn, (((shift >> 2) & 7) << 12) | (rd << 8) | ((shift & 3) << 6) | rm);
/** A7.7.172 SUB (register) T2: Rd = Rn - Rm, `s` sets the flags. */
export const thSubRegW = (rd: ThumbRegister, rn: ThumbRegister, rm: ThumbRegister, s = false): Uint8Array =>
  halfwords(0xeba0 | (s ? 0x10 : 0) | rn, (rd << 8) | rm);
/** A7.7.193 UBFX Rd, Rn, #lsb, #width. */
export const thUbfx = (rd: ThumbRegister, rn: ThumbRegister, lsb: number, width: number): Uint8Array =>
  halfwords(0xf3c0 | rn, (((lsb >> 2) & 7) << 12) | (rd << 8) | ((lsb & 3) << 6) | (width - 1));
/** A7.7.84 MUL T2: Rd = Rn * Rm (flags untouched). */
export const thMul = (rd: ThumbRegister, rn: ThumbRegister, rm: ThumbRegister): Uint8Array =>
  halfwords(0xfb00 | rn, 0xf000 | (rd << 8) | rm);
/** A7.7.69 LSR (immediate) T2 (S = 0): Rd = Rm >> n. */
export const thLsrImm = (rd: ThumbRegister, rm: ThumbRegister, n: number): Uint8Array =>
  halfwords(0xea4f, (((n >> 2) & 7) << 12) | (rd << 8) | ((n & 3) << 6) | 0x10 | rm);
/** A7.7.38 IT <cond> with one instruction. */
export const thIt = (cond: number): Uint8Array => halfword(0xbf00 | (cond << 4) | 0x8);
/** A7.7.42 LDR (immediate) T4 pre-indexed with writeback: LDR Rt, [Rn, #-imm]!. */
export const thLdrPreDec = (rt: ThumbRegister, rn: ThumbRegister, imm: number): Uint8Array =>
  halfwords(0xf850 | rn, (rt << 12) | 0x0d00 | imm);
/** A7.7.158 STR (immediate) T4 post-indexed: STR Rt, [Rn], #+imm. */
export const thStrPostInc = (rt: ThumbRegister, rn: ThumbRegister, imm: number): Uint8Array =>
  halfwords(0xf840 | rn, (rt << 12) | 0x0b00 | imm);

// ---- assembler -------------------------------------------------------------------------------

interface Fixup {
  at: number;
  size: number;
  encode: (from: number, to: number) => Uint8Array;
  label: string;
}

/**
 * Emits Thumb code at a known address with labels and a literal pool placed after the code
 * (word aligned, reached by LDR.W Rt, [PC, #imm12]).
 */
export class ThumbAssembler {
  private readonly chunks: Uint8Array[] = [];
  private size = 0;
  private insns = 0;
  private readonly labels = new Map<string, { address: number; count: number }>();
  private readonly fixups: Fixup[] = [];
  private readonly literals = new Map<string, number>();

  constructor(readonly base: number) {}

  get pc(): number {
    return this.base + this.size;
  }

  get count(): number {
    return this.insns;
  }

  i(bytes: Uint8Array): this {
    this.chunks.push(bytes);
    this.size += bytes.length;
    this.insns++;
    return this;
  }

  code(bytes: Uint8Array, instructions: number): this {
    this.chunks.push(bytes);
    this.size += bytes.length;
    this.insns += instructions;
    return this;
  }

  label(name: string): this {
    if (this.labels.has(name)) throw new Error(`label ${name} defined twice`);
    this.labels.set(name, { address: this.pc, count: this.insns });
    return this;
  }

  defineExternal(name: string, address: number): this {
    this.labels.set(name, { address, count: Number.NaN });
    return this;
  }

  /** LDR.W Rt, =value (a pool literal named `name`). */
  ldrLiteral(rt: ThumbRegister, name: string, value: number): this {
    this.literals.set(name, value >>> 0);
    return this.fixup(`lit:${name}`, 4, (from, to) => {
      const off = to - ((from + 4) & ~3);
      if (off < 0 || off > 4095) throw new RangeError(`literal ${name} out of reach`);
      return halfwords(0xf8df, (rt << 12) | off);
    });
  }

  /** B<c> (16-bit when in reach at assembly time is not known: always the 32-bit T3 form). */
  bcond(cond: number, label: string): this {
    return this.fixup(label, 4, (from, to) => encodeBCondWide(cond, from, to));
  }

  bcondNarrow(cond: number, label: string): this {
    return this.fixup(label, 2, (from, to) => encodeBCondNarrow(cond, from, to));
  }

  b(label: string): this {
    return this.fixup(label, 4, (from, to) => encodeBWide(from, to));
  }

  bNarrow(label: string): this {
    return this.fixup(label, 2, (from, to) => encodeBNarrow(from, to));
  }

  bl(label: string): this {
    return this.fixup(label, 4, (from, to) => encodeBl(from, to));
  }

  cbz(nonZero: boolean, rn: ThumbRegister, label: string): this {
    return this.fixup(label, 2, (from, to) => encodeCbz(nonZero, rn, from, to));
  }

  private fixup(label: string, size: number, encode: (from: number, to: number) => Uint8Array): this {
    this.fixups.push({ at: this.size, size, encode, label });
    return this.i(new Uint8Array(size));
  }

  address(label: string): number {
    const l = this.labels.get(label);
    if (!l) throw new Error(`undefined label ${label}`);
    return l.address;
  }

  between(a: string, b: string): number {
    const la = this.labels.get(a);
    const lb = this.labels.get(b);
    if (!la || !lb) throw new Error(`undefined label ${la ? b : a}`);
    return lb.count - la.count;
  }

  /** Places the literal pool (word aligned) and resolves every fixup. */
  bytes(): Uint8Array {
    const pool: Uint8Array[] = [];
    let at = this.size;
    if (this.literals.size > 0 && at % 4 !== 0) {
      pool.push(halfword(0xbf00));
      at += 2;
    }
    for (const [name, value] of this.literals) {
      this.labels.set(`lit:${name}`, { address: this.base + at, count: Number.NaN });
      pool.push(word(value));
      at += 4;
    }
    const out = concatBytes([...this.chunks, ...pool]);
    for (const f of this.fixups) out.set(f.encode(this.base + f.at, this.address(f.label)), f.at);
    return out;
  }
}

// ---- TBB / TBH ------------------------------------------------------------------------------------

/**
 * A7.7.182 TBB/TBH [PC, Rm]: the table follows the instruction; entries are halfword offsets from
 * the instruction's PC (address + 4). Its size comes from the bounds check GCC puts before it:
 * `cmp Rm, #N` then `bhi`/`bcs` to the default, so N + 1 entries.
 */
export function resolveThumbTable(
  insns: readonly DecodedInstruction[],
  index: number,
  read: (address: number, bytes: 1 | 2 | 4) => number | undefined,
): { ok: true; table: number; targets: number[] } | { ok: false; reason: string } {
  const tb = insns[index]!;
  if (tb.kind !== 'tableBranch' || !tb.readsPc)
    return { ok: false, reason: `${tb.mnemonic} does not branch through an inline table` };
  const hw2 = tb.bytes[2]! | (tb.bytes[3]! << 8);
  const rm = hw2 & 0xf;
  let entries: number | undefined;
  for (let k = index - 1; k >= 0 && k >= index - 6; k--) {
    const x = insns[k]!;
    const hw = x.bytes[0]! | (x.bytes[1]! << 8);
    if (x.length === 2 && (hw & 0xf800) === 0x2800 && ((hw >> 8) & 7) === rm) {
      entries = (hw & 0xff) + 1; // A7.7.27 CMP (immediate) T1
      break;
    }
    if (x.length === 4 && (hw & 0xfbf0) === 0xf1b0 && (hw & 0xf) === rm && ((x.bytes[3]! >> 0) & 0x0f) === 0x0f) {
      const h2 = x.bytes[2]! | (x.bytes[3]! << 8);
      const f = (((hw >> 10) & 1) << 11) | (((h2 >> 12) & 7) << 8) | (h2 & 0xff);
      if (f < 0x100) entries = f + 1; // CMP.W with a plain 8-bit immediate
      break;
    }
    if (x.kind !== 'plain' && x.kind !== 'condBranch') break;
  }
  if (entries === undefined)
    return {
      ok: false,
      reason: `no bounds check (cmp r${rm}, #N) precedes ${tb.mnemonic} at 0x${tb.address.toString(16)}`,
    };
  const table = tb.address + 4;
  const width = tb.mnemonic === 'tbh' ? 2 : 1;
  const targets: number[] = [];
  for (let e = 0; e < entries; e++) {
    const v = read(table + e * width, width);
    if (v === undefined) return { ok: false, reason: `the table at 0x${table.toString(16)} is not in the image` };
    targets.push(table + 2 * v);
  }
  return { ok: true, table, targets };
}

/** Whether `to` is within B.W's +/-16 MiB of an instruction at `from`. */
export const reachesBW = (from: number, to: number): boolean => fitsSigned(to - (from + 4), 25);
