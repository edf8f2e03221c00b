import {
  DecodeError,
  signExtend,
  u32,
  type DecodedInstruction,
  type InstructionCodec,
  type InstructionKind,
} from '../codec';

/**
 * RV32IMC + Zicsr decoder (plus the A/F/D encodings as far as their length and kind go).
 * Chapter references are to the RISC-V Unprivileged ISA, version 20191213: 2 (RV32I), 7 (M),
 * 9 (Zicsr), 16 ("C" compressed); MRET/WFI are in the Privileged ISA, 3.3.
 * Mnemonics are GNU objdump's with `-M no-aliases` (c.jr, jalr, csrrs ...).
 */

/** Unprivileged ISA 1.5: bits [1:0] != 11 is a 16-bit instruction; [4:2] != 111 with [1:0] = 11 is 32-bit. */
export function rvInstructionLength(firstHalfword: number): 2 | 4 | undefined {
  if ((firstHalfword & 3) !== 3) return 2;
  if ((firstHalfword & 0x1c) !== 0x1c) return 4;
  return undefined; // 48-bit and longer encodings: not part of RV32IMC
}

export const abiNames = [
  'zero',
  'ra',
  'sp',
  'gp',
  'tp',
  't0',
  't1',
  't2',
  's0',
  's1',
  'a0',
  'a1',
  'a2',
  'a3',
  'a4',
  'a5',
  'a6',
  'a7',
  's2',
  's3',
  's4',
  's5',
  's6',
  's7',
  's8',
  's9',
  's10',
  's11',
  't3',
  't4',
  't5',
  't6',
] as const;

/**
 * Link registers of the calling convention; 2.5 "Control Transfer Instructions" uses them as
 * return-address-stack hints.
 */
const isLink = (r: number): boolean => r === 1 || r === 5;

interface Fields {
  mnemonic: string;
  kind: InstructionKind;
  readsPc?: boolean;
  target?: number;
}

const plain = (mnemonic: string): Fields => ({ mnemonic, kind: 'plain' });

/** Operand fields of a decoded RV32 instruction the relocator needs again. */
export interface RvFields {
  rd: number;
  rs1: number;
  rs2: number;
  /** The instruction's immediate (sign-extended where the format says so). */
  imm: number;
}

export class Rv32Codec implements InstructionCodec {
  readonly isa = 'rv32' as const;

  decode(bytes: Uint8Array, address: number): DecodedInstruction {
    if (address % 2 !== 0) throw new DecodeError(address, 'RISC-V instructions are at least halfword aligned');
    if (bytes.length < 2) throw new DecodeError(address, 'truncated');
    const hw = bytes[0]! | (bytes[1]! << 8);
    const length = rvInstructionLength(hw);
    if (length === undefined) throw new DecodeError(address, 'instruction longer than 32 bits');
    if (bytes.length < length) throw new DecodeError(address, 'truncated 32-bit instruction');
    const f =
      length === 2 ? decodeCompressed(hw, address) : decode32(u32(hw | (bytes[2]! << 16) | (bytes[3]! << 24)), address);
    const insn: DecodedInstruction = {
      address,
      length,
      bytes: bytes.slice(0, length),
      mnemonic: f.mnemonic,
      kind: f.kind,
      readsPc: f.readsPc ?? false,
    };
    if (f.target !== undefined) insn.target = u32(f.target);
    return insn;
  }
}

/** The 32-bit word of a 4-byte instruction. */
/** The register and funct3 fields of a 32-bit instruction word (R/I/S/B layouts share them). */
export function wordFields(w: number): { rd: number; rs1: number; rs2: number; funct3: number } {
  return { rd: (w >> 7) & 0x1f, rs1: (w >> 15) & 0x1f, rs2: (w >> 20) & 0x1f, funct3: (w >> 12) & 7 };
}

export function rvWord(bytes: Uint8Array): number {
  return u32(bytes[0]! | (bytes[1]! << 8) | (bytes[2]! << 16) | (bytes[3]! << 24));
}

// 2.3 "Immediate Encoding Variants".
export const immI = (w: number): number => w >> 20;
export const immS = (w: number): number => ((w >> 25) << 5) | ((w >> 7) & 0x1f);
export const immB = (w: number): number =>
  signExtend(
    (((w >>> 31) & 1) << 12) | (((w >> 7) & 1) << 11) | (((w >> 25) & 0x3f) << 5) | (((w >> 8) & 0xf) << 1),
    13,
  );
export const immU = (w: number): number => w & 0xfffff000;
export const immJ = (w: number): number =>
  signExtend(
    (((w >>> 31) & 1) << 20) | (((w >> 12) & 0xff) << 12) | (((w >> 20) & 1) << 11) | (((w >> 21) & 0x3ff) << 1),
    21,
  );

export function rvFields32(w: number): RvFields {
  return { rd: (w >> 7) & 0x1f, rs1: (w >> 15) & 0x1f, rs2: (w >> 20) & 0x1f, imm: immI(w) };
}

const branchNames: Record<number, string> = { 0: 'beq', 1: 'bne', 4: 'blt', 5: 'bge', 6: 'bltu', 7: 'bgeu' };
const loadNames: Record<number, string> = { 0: 'lb', 1: 'lh', 2: 'lw', 4: 'lbu', 5: 'lhu' };
const storeNames: Record<number, string> = { 0: 'sb', 1: 'sh', 2: 'sw' };
const opImmNames = ['addi', 'slli', 'slti', 'sltiu', 'xori', 'srli', 'ori', 'andi'];
const opNames = ['add', 'sll', 'slt', 'sltu', 'xor', 'srl', 'or', 'and'];
const mulNames = ['mul', 'mulh', 'mulhsu', 'mulhu', 'div', 'divu', 'rem', 'remu'];
const amoNames: Record<number, string> = {
  0x00: 'amoadd',
  0x01: 'amoswap',
  0x02: 'lr',
  0x03: 'sc',
  0x04: 'amoxor',
  0x08: 'amoor',
  0x0c: 'amoand',
  0x10: 'amomin',
  0x14: 'amomax',
  0x18: 'amominu',
  0x1c: 'amomaxu',
};
const csrNames: Record<number, string> = { 1: 'csrrw', 2: 'csrrs', 3: 'csrrc', 5: 'csrrwi', 6: 'csrrsi', 7: 'csrrci' };

function decode32(w: number, a: number): Fields {
  const opcode = w & 0x7f;
  const funct3 = (w >> 12) & 7;
  const funct7 = w >>> 25;
  const rd = (w >> 7) & 0x1f;
  const rs1 = (w >> 15) & 0x1f;
  switch (opcode) {
    case 0x37:
      return plain('lui');
    case 0x17: // 2.4 AUIPC: rd = pc + (imm20 << 12)
      return { mnemonic: 'auipc', kind: 'plain', readsPc: true, target: a + immU(w) };
    case 0x6f: // 2.5 JAL: rd = pc + 4; pc += J-immediate. rd = x0 is a plain jump.
      return { mnemonic: 'jal', kind: rd === 0 ? 'branch' : 'call', readsPc: true, target: a + immJ(w) };
    case 0x67: // 2.5 JALR: pc = (rs1 + imm) & ~1
      if (funct3 !== 0) break;
      if (rd !== 0) return { mnemonic: 'jalr', kind: 'indirectCall' };
      return { mnemonic: 'jalr', kind: isLink(rs1) && immI(w) === 0 ? 'return' : 'indirectBranch' };
    case 0x63: {
      // 2.5 conditional branches, B-immediate
      const name = branchNames[funct3];
      if (!name) break;
      return { mnemonic: name, kind: 'condBranch', readsPc: true, target: a + immB(w) };
    }
    case 0x03:
      if (loadNames[funct3]) return plain(loadNames[funct3]!);
      break;
    case 0x23:
      if (storeNames[funct3]) return plain(storeNames[funct3]!);
      break;
    case 0x13:
      if (funct3 === 5) return plain(funct7 === 0x20 ? 'srai' : 'srli');
      return plain(opImmNames[funct3]!);
    case 0x33:
      if (funct7 === 1) return plain(mulNames[funct3]!); // 7 "M" extension
      if (funct7 === 0x20 && (funct3 === 0 || funct3 === 5)) return plain(funct3 === 0 ? 'sub' : 'sra');
      if (funct7 === 0) return plain(opNames[funct3]!);
      return plain('op'); // other OP-space extensions (Zbb ...)
    case 0x0f: // 2.7 FENCE, Zifencei FENCE.I
      return { mnemonic: funct3 === 1 ? 'fence.i' : 'fence', kind: 'system' };
    case 0x73:
      return decodeSystem(w, funct3, a);
    case 0x2f: {
      // 8 "A": funct5 names the operation, aq/rl (bits 26/25) are objdump suffixes
      const name = amoNames[w >>> 27];
      if (funct3 !== 2 || !name) return plain('amo');
      const order = ['', '.rl', '.aq', '.aqrl'][(w >>> 25) & 3];
      return plain(`${name}.w${order}`);
    }
    case 0x07:
    case 0x27:
    case 0x43:
    case 0x47:
    case 0x4b:
    case 0x4f:
    case 0x53:
      return plain('fp'); // 11/12 "F"/"D" loads, stores, fused multiply-add, arithmetic
    default:
      break;
  }
  throw new DecodeError(a, `unknown 32-bit instruction 0x${w.toString(16).padStart(8, '0')}`);
}

/** SYSTEM opcode: ECALL/EBREAK (2.8), Zicsr (9.1), MRET/SRET/WFI (Privileged 3.3), DRET (debug spec). */
function decodeSystem(w: number, funct3: number, a: number): Fields {
  if (funct3 === 0) {
    switch (w) {
      case 0x00000073:
        return { mnemonic: 'ecall', kind: 'system' };
      case 0x00100073:
        return { mnemonic: 'ebreak', kind: 'system' };
      case 0x30200073:
        return { mnemonic: 'mret', kind: 'exceptionReturn' };
      case 0x10200073:
        return { mnemonic: 'sret', kind: 'exceptionReturn' };
      case 0x7b200073:
        return { mnemonic: 'dret', kind: 'exceptionReturn' };
      case 0x10500073:
        return { mnemonic: 'wfi', kind: 'system' };
      default:
        if (w >>> 25 === 0x09 && ((w >> 7) & 0x1f) === 0) return { mnemonic: 'sfence.vma', kind: 'system' };
        throw new DecodeError(a, `unknown SYSTEM instruction 0x${w.toString(16)}`);
    }
  }
  const name = csrNames[funct3];
  if (!name) throw new DecodeError(a, `unknown SYSTEM instruction 0x${w.toString(16)}`);
  return { mnemonic: name, kind: 'system' };
}

// 16.2-16.8: compressed formats. Register fields rd'/rs1'/rs2' (3 bits) name x8-x15.
const cReg = (field: number): number => 8 + (field & 7);

/** CJ format (C.J, C.JAL): offset[11|4|9:8|10|6|7|3:1|5] in bits [12:2]. */
export function immCJ(hw: number): number {
  return signExtend(
    (((hw >> 12) & 1) << 11) |
      (((hw >> 11) & 1) << 4) |
      (((hw >> 9) & 3) << 8) |
      (((hw >> 8) & 1) << 10) |
      (((hw >> 7) & 1) << 6) |
      (((hw >> 6) & 1) << 7) |
      (((hw >> 3) & 7) << 1) |
      (((hw >> 2) & 1) << 5),
    12,
  );
}

/** CB format (C.BEQZ, C.BNEZ): offset[8|4:3] in bits [12:10], offset[7:6|2:1|5] in bits [6:2]. */
export function immCB(hw: number): number {
  return signExtend(
    (((hw >> 12) & 1) << 8) |
      (((hw >> 10) & 3) << 3) |
      (((hw >> 5) & 3) << 6) |
      (((hw >> 3) & 3) << 1) |
      (((hw >> 2) & 1) << 5),
    9,
  );
}

/** rs1' of CB-format branches (bits [9:7]). */
export const cbRegister = (hw: number): number => cReg(hw >> 7);

function decodeCompressed(hw: number, a: number): Fields {
  const quadrant = hw & 3;
  const funct3 = hw >> 13;
  const rd = (hw >> 7) & 0x1f;
  const rs2 = (hw >> 2) & 0x1f;
  const bit12 = (hw >> 12) & 1;
  // 16.8: the all-zero halfword is the defined illegal instruction (objdump: c.unimp); it traps.
  if (hw === 0) return { mnemonic: 'c.unimp', kind: 'system' };
  if (quadrant === 0) {
    const names = ['c.addi4spn', 'c.fld', 'c.lw', 'c.flw', '', 'c.fsd', 'c.sw', 'c.fsw'];
    if (funct3 === 4 || (funct3 === 0 && (hw & 0x1fe0) === 0)) throw new DecodeError(a, 'reserved compressed encoding');
    return plain(names[funct3]!);
  }
  if (quadrant === 1) {
    switch (funct3) {
      case 0:
        return plain(rd === 0 ? 'c.nop' : 'c.addi');
      case 1: // C.JAL (RV32 only): jal x1, offset
        return { mnemonic: 'c.jal', kind: 'call', readsPc: true, target: a + immCJ(hw) };
      case 2:
        return plain('c.li');
      case 3:
        return plain(rd === 2 ? 'c.addi16sp' : 'c.lui');
      case 4: {
        const op = (hw >> 10) & 3;
        if (op < 3) return plain(['c.srli', 'c.srai', 'c.andi'][op]!);
        if (bit12) throw new DecodeError(a, 'reserved compressed ALU encoding (RV64 C.SUBW/C.ADDW)');
        return plain(['c.sub', 'c.xor', 'c.or', 'c.and'][(hw >> 5) & 3]!);
      }
      case 5: // C.J: jal x0, offset
        return { mnemonic: 'c.j', kind: 'branch', readsPc: true, target: a + immCJ(hw) };
      default: // C.BEQZ / C.BNEZ: beq/bne rs1', x0, offset
        return {
          mnemonic: funct3 === 6 ? 'c.beqz' : 'c.bnez',
          kind: 'condBranch',
          readsPc: true,
          target: a + immCB(hw),
        };
    }
  }
  // quadrant 2
  switch (funct3) {
    case 0:
      return plain('c.slli');
    case 1:
      return plain('c.fldsp');
    case 2:
      if (rd === 0) throw new DecodeError(a, 'C.LWSP with rd = x0 is reserved');
      return plain('c.lwsp');
    case 3:
      return plain('c.flwsp');
    case 4:
      if (!bit12) {
        if (rs2 !== 0) return plain('c.mv');
        if (rd === 0) throw new DecodeError(a, 'C.JR with rs1 = x0 is reserved');
        return { mnemonic: 'c.jr', kind: isLink(rd) ? 'return' : 'indirectBranch' }; // jalr x0, 0(rs1)
      }
      if (rs2 !== 0) return plain('c.add');
      if (rd === 0) return { mnemonic: 'c.ebreak', kind: 'system' };
      return { mnemonic: 'c.jalr', kind: 'indirectCall' }; // jalr x1, 0(rs1)
    case 5:
      return plain('c.fsdsp');
    case 6:
      return plain('c.swsp');
    default:
      return plain('c.fswsp');
  }
}
