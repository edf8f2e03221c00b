import {
  DecodeError,
  signExtend,
  u32,
  type DecodedInstruction,
  type InstructionCodec,
  type InstructionKind,
} from '../codec';

/**
 * ARCv2 (ARC EM / ARC HS) decoder: length (16/32 bits plus a 32-bit long immediate), control
 * flow, delay slots, zero-overhead loop set-up and PCL-relative operands.
 *
 * Facts from the ARCv2 ISA Programmer's Reference Manual ("Instruction Formats", "Condition
 * Codes", "Zero-Overhead Loop") as encoded in GNU binutils' opcode table (opcodes/arc-tbl.h,
 * arc-dis.c `arc_insn_length`):
 * - The major opcode is bits [15:11] of the first halfword; 0x00-0x07 are 32-bit, 0x08-0x1F 16-bit.
 * - A 32-bit instruction is stored as two 16-bit halves, the high half first, each little-endian;
 *   a long immediate (limm) follows in the same middle-endian order.
 * - A limm follows when a *source* register field names r62 (5-bit 16-bit `h` fields: r30).
 * - PCL (r63) is the address of the current instruction with bits [1:0] cleared; branch targets
 *   and PCL-relative operands are PCL + offset.
 * Every bit pattern gets a length and a kind (user extension instructions share the general
 * formats, so an unknown opcode is `plain`); only truncated input throws.
 */

/** Register numbers with a meaning of their own. */
export const LIMM_REG = 62;
export const PCL_REG = 63;
export const BLINK_REG = 31;
/** Zero-overhead loop auxiliary registers (binutils opcodes/arc-regs.h). */
export const AUX_LP_START = 0x02;
export const AUX_LP_END = 0x03;

export const conditionNames = [
  '',
  'eq',
  'ne',
  'p',
  'n',
  'c',
  'nc',
  'v',
  'nv',
  'gt',
  'ge',
  'lt',
  'le',
  'hi',
  'ls',
  'pnz',
] as const;
const condName = (q: number): string => conditionNames[q] ?? `cc${q}`;

/** The 16-bit halfword at `offset` (little-endian). */
const half = (bytes: Uint8Array, offset: number): number => bytes[offset]! | (bytes[offset + 1]! << 8);

/** A 32-bit instruction word or limm: high halfword first (PRM "Instruction Formats"). */
export function arcWord(bytes: Uint8Array, offset = 0): number {
  return u32((half(bytes, offset) << 16) | half(bytes, offset + 2));
}

/** Fields of the 32-bit general formats (majors 0x04-0x07): `00100 bbb PP aaaaaa F BBB cccccc AAAAAA`. */
export interface ArcGeneralFields {
  major: number;
  /** Source/destination register b = B[2:0] (bits 26:24) : B[5:3] (bits 14:12). */
  b: number;
  c: number;
  /** Format: 0 = a,b,c; 1 = a,b,u6; 2 = b,b,s12; 3 = conditional b,b,c / b,b,u6 (bit 5). */
  p: number;
  /** Sub-opcode (bits 21:16). */
  op: number;
  a: number;
}

export function generalFields(w: number): ArcGeneralFields {
  return {
    major: w >>> 27,
    b: ((w >> 24) & 7) | (((w >> 12) & 7) << 3),
    c: (w >> 6) & 0x3f,
    p: (w >> 22) & 3,
    op: (w >> 16) & 0x3f,
    a: w & 0x3f,
  };
}

/** 16-bit `h` register field (ARCv2): h[2:0] in bits 7:5, h[4:3] in bits 1:0; 30 means limm. */
export const hRegister = (hw: number): number => ((hw >> 5) & 7) | ((hw & 3) << 3);

/**
 * Whether b is a source operand in a general-format instruction: MOV, LR, LDI and the
 * single-operand ops write it; J/JL, BI/BIH, LP and FLAG/KFLAG leave the field unused.
 */
export function bIsSource(f: ArcGeneralFields): boolean {
  if (f.op === 0x2f) return false; // SOP: `op b, c` (b is the destination); ZOP: b is a sub-opcode
  if (f.major !== 4) return true;
  return !(
    f.op === 0x0a ||
    f.op === 0x2a ||
    f.op === 0x26 ||
    (f.op >= 0x20 && f.op <= 0x25) ||
    f.op === 0x28 ||
    f.op === 0x29
  );
}

/**
 * Whether c is a register (not u6/s12) in a general-format instruction. LD a, [b, c] (major 4,
 * sub-opcodes 0x30-0x37) has no format field: bits 23:22 are its address write-back mode.
 */
export function cIsRegister(f: ArcGeneralFields, w: number): boolean {
  if (f.major === 4 && f.op >= 0x30 && f.op <= 0x37) return true;
  return f.p === 0 || (f.p === 3 && (w & 0x20) === 0);
}

/** Length in bytes of the instruction starting at `bytes` (needs the first 4 bytes for 32-bit forms). */
export function arcInstructionLength(bytes: Uint8Array): 2 | 4 | 6 | 8 {
  const hw = half(bytes, 0);
  const major = hw >> 11;
  if (major >= 8) {
    const h = hRegister(hw);
    // 0x08 `mov_s g, h` (bit 2 = 0); 0x0E add_s/cmp_s/mov_s.ne with h, except `mov_s h, s3` (h written).
    const limm = h === 30 && ((major === 0x08 && (hw & 4) === 0) || (major === 0x0e && ((hw >> 2) & 7) !== 3));
    return limm ? 6 : 2;
  }
  return has32BitLimm(arcWord(bytes)) ? 8 : 4;
}

function has32BitLimm(w: number): boolean {
  const f = generalFields(w);
  switch (f.major) {
    case 0:
      return false; // B, Bcc
    case 1:
      // BRcc/BBIT (bit 16 = 1): b and c (bit 4 = 0: register form) are sources; BL/BLcc have none.
      return (w & 0x10000) !== 0 && (f.b === LIMM_REG || ((w & 0x10) === 0 && f.c === LIMM_REG));
    case 2:
      return f.b === LIMM_REG; // LD a, [limm, s9]
    case 3:
      return f.b === LIMM_REG || ((w & 1) === 0 && f.c === LIMM_REG); // ST c|limm, [b|limm, s9]; bit 0 = w6 form
    default:
      return (bIsSource(f) && f.b === LIMM_REG) || (cIsRegister(f, w) && f.c === LIMM_REG);
  }
}

interface Fields {
  mnemonic: string;
  kind: InstructionKind;
  readsPc?: boolean;
  target?: number;
  delaySlot?: boolean;
}

const plain = (mnemonic: string): Fields => ({ mnemonic, kind: 'plain' });
const system = (mnemonic: string): Fields => ({ mnemonic, kind: 'system' });

export class ArcCodec implements InstructionCodec {
  readonly isa = 'arcv2' as const;

  decode(bytes: Uint8Array, address: number): DecodedInstruction {
    if (address % 2 !== 0) throw new DecodeError(address, 'ARC instructions are halfword aligned');
    if (bytes.length < 2 || (half(bytes, 0) >> 11 < 8 && bytes.length < 4)) throw new DecodeError(address, 'truncated');
    const length = arcInstructionLength(bytes);
    if (bytes.length < length) throw new DecodeError(address, 'truncated long immediate');
    const pcl = (address & ~3) >>> 0;
    const f =
      length === 2 || length === 6
        ? decode16(half(bytes, 0), pcl)
        : decode32(arcWord(bytes), length === 8 ? arcWord(bytes, 4) : undefined, pcl);
    const insn: DecodedInstruction = {
      address,
      length,
      bytes: bytes.slice(0, length),
      mnemonic: f.mnemonic,
      kind: f.kind,
      readsPc: f.readsPc ?? false,
    };
    if (f.target !== undefined) insn.target = u32(f.target);
    if (f.delaySlot) insn.delaySlot = true;
    return insn;
  }
}

/** Offsets of the branch formats (PRM "Branch" / "Branch and Link" / "Branch on Compare"). */
export const arcOffsets = {
  /** Bcc s21: s[10:1] in bits 26:17, s[20:11] in bits 15:6. */
  bcc: (w: number): number => signExtend((((w >> 6) & 0x3ff) << 11) | (((w >> 17) & 0x3ff) << 1), 21),
  /** B s25: as Bcc plus s[24:21] in bits 3:0. */
  b: (w: number): number => signExtend(((w & 0xf) << 21) | (((w >> 6) & 0x3ff) << 11) | (((w >> 17) & 0x3ff) << 1), 25),
  /** BLcc s21: s[10:2] in bits 26:18 (word aligned). */
  blcc: (w: number): number => signExtend((((w >> 6) & 0x3ff) << 11) | (((w >> 18) & 0x1ff) << 2), 21),
  /** BL s25: as BLcc plus s[24:21] in bits 3:0. */
  bl: (w: number): number =>
    signExtend(((w & 0xf) << 21) | (((w >> 6) & 0x3ff) << 11) | (((w >> 18) & 0x1ff) << 2), 25),
  /** BRcc/BBIT s9: s[7:1] in bits 23:17, s[8] in bit 15. */
  brcc: (w: number): number => signExtend((((w >> 15) & 1) << 8) | (((w >> 17) & 0x7f) << 1), 9),
  /** LD/ST s9: s[7:0] in bits 23:16, s[8] in bit 15. */
  s9: (w: number): number => signExtend((((w >> 15) & 1) << 8) | ((w >> 16) & 0xff), 9),
  /** General format s12: s[5:0] in bits 11:6, s[11:6] in bits 5:0. */
  s12: (w: number): number => signExtend(((w >> 6) & 0x3f) | ((w & 0x3f) << 6), 12),
};

/** BRcc/BBIT condition (ARCv2: bits 2:0; bit 3 is the static prediction hint `.t`, bit 4 selects u6). */
export const brccNames = ['breq', 'brne', 'brlt', 'brge', 'brlo', 'brhs', 'bbit0', 'bbit1'] as const;

function decode32(w: number, limm: number | undefined, pcl: number): Fields {
  const f = generalFields(w);
  const delay = (w & 0x20) !== 0; // N bit of B/BL/BRcc
  switch (f.major) {
    case 0: {
      if (w & 0x10000)
        return { mnemonic: 'b', kind: 'branch', readsPc: true, target: pcl + arcOffsets.b(w), delaySlot: delay };
      const q = w & 0x1f;
      return {
        mnemonic: `b${condName(q)}`,
        kind: q === 0 ? 'branch' : 'condBranch',
        readsPc: true,
        target: pcl + arcOffsets.bcc(w),
        delaySlot: delay,
      };
    }
    case 1: {
      if ((w & 0x10000) === 0) {
        const uncond = (w & 0x20000) !== 0;
        const q = uncond ? 0 : w & 0x1f;
        return {
          mnemonic: `bl${condName(q)}`,
          kind: 'call',
          readsPc: true,
          target: pcl + (uncond ? arcOffsets.bl(w) : arcOffsets.blcc(w)),
          delaySlot: delay,
        };
      }
      const name = brccNames[w & 7]!;
      return { mnemonic: name, kind: 'condBranch', readsPc: true, target: pcl + arcOffsets.brcc(w), delaySlot: delay };
    }
    case 2: {
      // LD<zz><.x><.aa><.di> a, [b, s9]; with b = PCL the address is PCL + s9 (no writeback, no scaling).
      if (f.b !== PCL_REG) return plain('ld');
      const aa = (w >> 9) & 3;
      return { mnemonic: 'ld', kind: 'plain', readsPc: true, ...(aa === 0 ? { target: pcl + arcOffsets.s9(w) } : {}) };
    }
    case 3: {
      const readsPc = f.b === PCL_REG || ((w & 1) === 0 && f.c === PCL_REG);
      return {
        mnemonic: 'st',
        kind: 'plain',
        readsPc,
        ...(f.b === PCL_REG && ((w >> 3) & 3) === 0 ? { target: pcl + arcOffsets.s9(w) } : {}),
      };
    }
    default:
      return decodeGeneral(w, f, limm, pcl);
  }
}

function decodeGeneral(w: number, f: ArcGeneralFields, limm: number | undefined, pcl: number): Fields {
  const cReg = cIsRegister(f, w);
  const readsPc = (bIsSource(f) && f.b === PCL_REG) || (cReg && f.c === PCL_REG);
  const q = f.p === 3 ? w & 0x1f : 0;
  if (f.major === 4) {
    switch (f.op) {
      case 0x20:
      case 0x21:
      case 0x22:
      case 0x23:
        return decodeJump(w, f, limm, q);
      case 0x24:
      case 0x25: // BI/BIH [c]: branch into a table of B (BIH: B_S) instructions that follows
        return { mnemonic: f.op === 0x24 ? 'bi' : 'bih', kind: 'tableBranch', readsPc: true, target: pcl };
      case 0x28: {
        // LP s13 (P = 2) / LPcc u7 (P = 1, 3): loop end = PCL + offset; LP_START = the next instruction.
        const offset = f.p === 2 ? arcOffsets.s12(w) * 2 : ((w >> 6) & 0x3f) * 2;
        return { mnemonic: `lp${condName(q)}`, kind: 'loop', readsPc: true, target: pcl + offset };
      }
      case 0x29:
        return system(w & 0x8000 ? 'kflag' : 'flag');
      case 0x2a:
        return system('lr');
      case 0x2b: {
        // SR to LP_START (aux 0x02) / LP_END (0x03) sets up a zero-overhead loop by hand.
        const aux = f.p === 1 ? f.c : f.p === 2 ? arcOffsets.s12(w) : undefined;
        if (aux === AUX_LP_START || aux === AUX_LP_END) return { mnemonic: 'sr', kind: 'loop', readsPc };
        return system('sr');
      }
      case 0x27:
        return system('aex');
      case 0x2f:
        if (f.a === 0x3f) return zop(f.b);
        break;
      case 0x0a:
        if (f.c === PCL_REG && cReg) return { mnemonic: 'mov', kind: 'plain', readsPc: true, target: pcl };
        return plain(f.b === LIMM_REG && f.p === 1 && f.c === 0 && (w & 0x8000) === 0 ? 'nop' : 'mov');
      case 0x00:
      case 0x02:
        if (f.b === PCL_REG && !cReg) {
          // ADD/SUB a, pcl, u6|s12 (and b, pcl, ... forms): the `add rx, pcl, @sym@pcl` idiom.
          const imm = f.p === 2 ? arcOffsets.s12(w) : f.c;
          return {
            mnemonic: f.op === 0 ? 'add' : 'sub',
            kind: 'plain',
            readsPc: true,
            target: pcl + (f.op === 0 ? imm : -imm),
          };
        }
        if (f.b === PCL_REG && f.c === LIMM_REG && limm !== undefined) {
          return {
            mnemonic: f.op === 0 ? 'add' : 'sub',
            kind: 'plain',
            readsPc: true,
            target: pcl + (f.op === 0 ? limm : -limm),
          };
        }
        break;
      default:
        break;
    }
  } else if (f.op === 0x2f && f.a === 0x3f) {
    return { mnemonic: 'zop', kind: 'system', readsPc };
  }
  return { mnemonic: 'alu', kind: 'plain', readsPc };
}

/** J/J.D/JL/JL.D (sub-opcodes 0x20-0x23): `[c]`, limm (absolute), u6/s12 (absolute, small). */
function decodeJump(w: number, f: ArcGeneralFields, limm: number | undefined, q: number): Fields {
  const link = (f.op & 2) !== 0;
  const delaySlot = (f.op & 1) !== 0;
  const mnemonic = `${link ? 'jl' : 'j'}${condName(q)}`;
  const cReg = cIsRegister(f, w);
  let target: number | undefined;
  if (cReg && f.c === LIMM_REG) target = limm;
  else if (!cReg) target = f.p === 2 ? arcOffsets.s12(w) : f.c;
  if (target !== undefined) {
    // An absolute target: position independent, but still a direct jump/call.
    return { mnemonic, kind: link ? 'call' : q === 0 ? 'branch' : 'condBranch', target, delaySlot };
  }
  const readsPc = f.c === PCL_REG;
  if (!link && f.c === BLINK_REG) return { mnemonic, kind: 'return', delaySlot, readsPc };
  return { mnemonic, kind: link ? 'indirectCall' : 'indirectBranch', delaySlot, readsPc };
}

/** Zero-operand ops (sub-opcode 0x2F, a = 0x3F): the b field selects the operation. */
function zop(b: number): Fields {
  const names: Record<number, string> = {
    0: 'zop0',
    1: 'sleep',
    2: 'swi',
    3: 'sync',
    4: 'rtie',
    5: 'brk',
    6: 'seti',
    7: 'clri',
    8: 'wevt',
    9: 'wlfc',
    10: 'dsync',
  };
  const name = names[b] ?? 'zop';
  return name === 'rtie' ? { mnemonic: name, kind: 'exceptionReturn' } : system(name);
}

const bccSNames = ['bgt_s', 'bge_s', 'blt_s', 'ble_s', 'bhi_s', 'bhs_s', 'blo_s', 'bls_s'];

function decode16(hw: number, pcl: number): Fields {
  const major = hw >> 11;
  switch (major) {
    case 0x0b:
      // JLI_S u10 calls through the JLI table (absolute addresses). EI_S u10 executes an instruction
      // from the EI table in place of itself, so whatever that instruction does relative to the PC
      // happens relative to the EI_S: treat it as PC-reading.
      return hw & 0x400
        ? { mnemonic: 'ei_s', kind: 'system', readsPc: true }
        : { mnemonic: 'jli_s', kind: 'indirectCall' };
    case 0x0f:
      return decodeGeneral16(hw);
    case 0x18: {
      // LEAVE_S u7 (bits 7:5 = 110, bit 0 = 0): bit 10 also jumps to BLINK.
      if ((hw & 0xe1) === 0xc0) return hw & 0x400 ? { mnemonic: 'leave_s', kind: 'return' } : plain('leave_s');
      if ((hw & 0xe1) === 0xe0) return plain('enter_s');
      if ((hw & 0xef) === 0xc1) return plain('pop_s');
      if ((hw & 0xef) === 0xe1) return plain('push_s');
      return plain('sp_s');
    }
    case 0x1a: // LD_S b, [PCL, u10]: u10 = u8 * 4
      return { mnemonic: 'ld_s', kind: 'plain', readsPc: true, target: pcl + ((hw & 0xff) << 2) };
    case 0x1d: // BREQ_S / BRNE_S b, 0, s8
      return {
        mnemonic: hw & 0x80 ? 'brne_s' : 'breq_s',
        kind: 'condBranch',
        readsPc: true,
        target: pcl + signExtend((hw & 0x7f) << 1, 8),
      };
    case 0x1e: {
      const sel = (hw >> 9) & 3;
      if (sel === 3) {
        // Bcc_S s7 with a 3-bit condition in bits 8:6
        return {
          mnemonic: bccSNames[(hw >> 6) & 7]!,
          kind: 'condBranch',
          readsPc: true,
          target: pcl + signExtend((hw & 0x3f) << 1, 7),
        };
      }
      const target = pcl + signExtend((hw & 0x1ff) << 1, 10);
      return {
        mnemonic: ['b_s', 'beq_s', 'bne_s'][sel]!,
        kind: sel === 0 ? 'branch' : 'condBranch',
        readsPc: true,
        target,
      };
    }
    case 0x1f: // BL_S s13 (word aligned)
      return { mnemonic: 'bl_s', kind: 'call', readsPc: true, target: pcl + signExtend((hw & 0x7ff) << 2, 13) };
    default:
      return plain(major === 0x08 || major === 0x0e ? 'mov_s' : 'alu_s');
  }
}

/** Major 0x0F: `01111 bbb ccc iiiii`; i = 0 holds the jumps and zero-operand ops. */
function decodeGeneral16(hw: number): Fields {
  const i = hw & 0x1f;
  const c = (hw >> 5) & 7;
  const b = (hw >> 8) & 7;
  if (i === 0x1e) return system('trap_s');
  if (i === 0x1f) return system(hw === 0x7fff ? 'brk_s' : 'swi_s');
  if (i !== 0) return plain('alu_s');
  switch (c) {
    case 0:
      return { mnemonic: 'j_s', kind: 'indirectBranch' };
    case 1:
      return { mnemonic: 'j_s', kind: 'indirectBranch', delaySlot: true };
    case 2:
      return { mnemonic: 'jl_s', kind: 'indirectCall' };
    case 3:
      return { mnemonic: 'jl_s', kind: 'indirectCall', delaySlot: true };
    case 7:
      switch (b) {
        case 0:
          return plain('nop_s');
        case 1:
          return system('unimp_s');
        case 2:
          return system('swi_s');
        case 4:
          return { mnemonic: 'jeq_s', kind: 'return' };
        case 5:
          return { mnemonic: 'jne_s', kind: 'return' };
        case 6:
          return { mnemonic: 'j_s', kind: 'return' };
        case 7:
          return { mnemonic: 'j_s', kind: 'return', delaySlot: true };
        default:
          return plain('alu_s');
      }
    default:
      return plain('alu_s');
  }
}

/**
 * Zero-overhead loops set up by LP in `instructions`: the body runs from the instruction after the
 * LP to `end` (LP_END). The hardware loops back when the PC reaches LP_END, so the last
 * instruction of a body (the one ending at `end`) must never be moved: the jump back from a
 * trampoline would land on LP_END itself and the loop would silently stop.
 */
export function arcLoopBodies(
  instructions: readonly DecodedInstruction[],
): { lp: number; start: number; end: number }[] {
  return instructions
    .filter((i) => i.kind === 'loop' && i.mnemonic.startsWith('lp') && i.target !== undefined)
    .map((i) => ({ lp: i.address, start: i.address + i.length, end: i.target! }));
}
