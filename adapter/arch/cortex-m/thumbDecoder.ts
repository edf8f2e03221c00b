import {
  DecodeError,
  signExtend,
  u32,
  type DecodedInstruction,
  type InstructionCodec,
  type InstructionKind,
} from '../codec';

/**
 * Thumb-2 decoder for M-profile cores (ARMv6-M, ARMv7-M/v7E-M, ARMv8-M, Armv8.1-M).
 *
 * It decodes exactly as much as injection needs: the length (always exact, from the first
 * halfword), the control-flow kind, and every form that reads the PC, with the absolute address it
 * refers to. Section numbers are those of the ARMv7-M Architecture Reference Manual (DDI 0403E),
 * chapter A5 "The Thumb Instruction Set Encoding", and A7 for individual encodings.
 */

export const conditionNames = [
  'eq',
  'ne',
  'cs',
  'cc',
  'mi',
  'pl',
  'vs',
  'vc',
  'hi',
  'ls',
  'ge',
  'lt',
  'gt',
  'le',
  'al',
] as const;

/** A5.1: a first halfword whose bits [15:11] are 0b11101, 0b11110 or 0b11111 starts a 32-bit instruction. */
export function thumbInstructionLength(firstHalfword: number): 2 | 4 {
  return firstHalfword >>> 11 >= 0b11101 ? 4 : 2;
}

interface Fields {
  mnemonic: string;
  kind: InstructionKind;
  readsPc: boolean;
  target?: number;
  itCount?: number;
}

const plain = (mnemonic: string, readsPc = false): Fields => ({ mnemonic, kind: 'plain', readsPc });
const system = (mnemonic: string): Fields => ({ mnemonic, kind: 'system', readsPc: false });

/** The PC value an instruction at `a` reads (A5.1.2: the address of the instruction plus 4). */
const pcOf = (a: number): number => a + 4;
/** Align(PC, 4): the base of literal loads and ADR (A7.3 "Use of the PC"). */
const alignedPcOf = (a: number): number => ((a + 4) & ~3) >>> 0;

export class ThumbCodec implements InstructionCodec {
  readonly isa = 'thumb' as const;

  decode(bytes: Uint8Array, address: number): DecodedInstruction {
    if (address % 2 !== 0) throw new DecodeError(address, 'Thumb instructions are halfword aligned');
    if (bytes.length < 2) throw new DecodeError(address, 'truncated');
    const hw1 = bytes[0]! | (bytes[1]! << 8);
    const length = thumbInstructionLength(hw1);
    if (bytes.length < length) throw new DecodeError(address, 'truncated 32-bit instruction');
    let f: Fields;
    if (length === 2) {
      f = decode16(hw1, address);
    } else {
      const hw2 = bytes[2]! | (bytes[3]! << 8);
      f = decode32(hw1, hw2, address);
    }
    const insn: DecodedInstruction = {
      address,
      length,
      bytes: bytes.slice(0, length),
      mnemonic: f.mnemonic,
      kind: f.kind,
      readsPc: f.readsPc,
    };
    if (f.target !== undefined) insn.target = u32(f.target);
    if (f.itCount !== undefined) insn.itCount = f.itCount;
    return insn;
  }
}

/** A5.2: 16-bit Thumb instruction encoding. */
function decode16(hw: number, a: number): Fields {
  // A7.7.43 LDR (literal) T1: 01001 Rt imm8; address = Align(PC,4) + imm8*4.
  if ((hw & 0xf800) === 0x4800) return { ...plain('ldr', true), target: alignedPcOf(a) + ((hw & 0xff) << 2) };
  // A7.7.7 ADR T1: 10100 Rd imm8; value = Align(PC,4) + imm8*4.
  if ((hw & 0xf800) === 0xa000) return { ...plain('adr', true), target: alignedPcOf(a) + ((hw & 0xff) << 2) };
  // A5.2.3 Special data instructions and branch and exchange: 010001 op(2) ...
  if ((hw & 0xfc00) === 0x4400) return decodeSpecialData(hw);
  // A5.2.5 Miscellaneous 16-bit instructions: 1011 xxxx.
  if ((hw & 0xf000) === 0xb000) return decodeMisc16(hw, a);
  // A5.2.6 Conditional branch, and Supervisor Call: 1101 cond imm8.
  if ((hw & 0xf000) === 0xd000) {
    const cond = (hw >> 8) & 0xf;
    if (cond === 0xe) return system('udf'); // A7.7.191 UDF T1 (permanently undefined)
    if (cond === 0xf) return system('svc'); // A7.7.175 SVC T1
    // A7.7.12 B T1: imm32 = SignExtend(imm8:'0', 32).
    return {
      mnemonic: `b${conditionNames[cond]}`,
      kind: 'condBranch',
      readsPc: true,
      target: pcOf(a) + signExtend((hw & 0xff) << 1, 9),
    };
  }
  // A7.7.12 B T2: 11100 imm11; imm32 = SignExtend(imm11:'0', 32).
  if ((hw & 0xf800) === 0xe000)
    return { mnemonic: 'b', kind: 'branch', readsPc: true, target: pcOf(a) + signExtend((hw & 0x7ff) << 1, 12) };
  // A7.7.40 / A7.7.159 T1: low registers only
  if ((hw & 0xf000) === 0xc000) return plain(hw & 0x0800 ? 'ldmia' : 'stmia');
  if ((hw & 0xf800) === 0xa800) return plain('add'); // A7.7.5 ADD (SP plus immediate) T1
  if (hw >>> 14 === 0) return plain('alu'); // A5.2.1 shift (immediate), add, subtract, move, compare
  if ((hw & 0xfc00) === 0x4000) return plain('alu'); // A5.2.2 data processing
  return plain('ldst'); // A5.2.4 load/store single data item
}

/** A5.2.3: ADD/CMP/MOV with high registers, BX, BLX. Any of them may name the PC. */
function decodeSpecialData(hw: number): Fields {
  const op = (hw >> 8) & 3;
  const rm = (hw >> 3) & 0xf;
  const rdn = ((hw >> 4) & 8) | (hw & 7);
  switch (op) {
    case 0: // A7.7.4 ADD (register) T2: Rdn = Rdn + Rm. `add pc, rm` is a PC-relative computed jump.
      if (rdn === 15) return { mnemonic: 'add', kind: 'indirectBranch', readsPc: true };
      return plain('add', rm === 15);
    case 1: // A7.7.28 CMP (register) T2
      return plain('cmp', rm === 15 || rdn === 15);
    case 2: // A7.7.77 MOV (register) T1: `mov pc, lr` returns; any other `mov pc, rm` jumps.
      if (rdn === 15) return { mnemonic: 'mov', kind: rm === 14 ? 'return' : 'indirectBranch', readsPc: rm === 15 };
      return plain('mov', rm === 15);
    default: // A7.7.20 BX T1 (bit 7 = 0), A7.7.19 BLX (register) T1 (bit 7 = 1)
      if (hw & 0x80) return { mnemonic: 'blx', kind: 'indirectCall', readsPc: rm === 15 };
      return { mnemonic: 'bx', kind: rm === 14 ? 'return' : 'indirectBranch', readsPc: rm === 15 };
  }
}

/** A5.2.5 Miscellaneous 16-bit instructions. */
function decodeMisc16(hw: number, a: number): Fields {
  // A7.7.21 CBNZ, CBZ T1: 1011 op 0 i 1 imm5 Rn; imm32 = ZeroExtend(i:imm5:'0'); forward only.
  if ((hw & 0xf500) === 0xb100) {
    const imm = (((hw >> 9) & 1) << 6) | (((hw >> 3) & 0x1f) << 1);
    return { mnemonic: hw & 0x0800 ? 'cbnz' : 'cbz', kind: 'condBranch', readsPc: true, target: pcOf(a) + imm };
  }
  if ((hw & 0xfe00) === 0xb400) return plain('push'); // A7.7.99 PUSH T1: low registers and LR
  // A7.7.98 POP T1: bit 8 (P) pops the PC, which is a return (EXC_RETURN values included).
  if ((hw & 0xfe00) === 0xbc00) return hw & 0x0100 ? { mnemonic: 'pop', kind: 'return', readsPc: false } : plain('pop');
  if ((hw & 0xff00) === 0xbe00) return system('bkpt'); // A7.7.17 BKPT
  if ((hw & 0xffe0) === 0xb660) return system(hw & 0x10 ? 'cpsid' : 'cpsie'); // B5.2.1 CPS
  if ((hw & 0xff00) === 0xbf00) {
    const mask = hw & 0xf;
    if (mask !== 0) return decodeIt(hw);
    // A5.2.5 hints: NOP, YIELD, WFE, WFI, SEV.
    const hint = ['nop', 'yield', 'wfe', 'wfi', 'sev'][(hw >> 4) & 0xf] ?? 'hint';
    return hint === 'nop' || hint === 'yield' ? plain(hint) : system(hint);
  }
  return plain('misc');
}

/**
 * A7.7.38 IT: 10111111 firstcond mask. The block length is 4 minus the number of trailing zeros of
 * mask; each later slot is "then" when its mask bit equals firstcond[0].
 */
function decodeIt(hw: number): Fields {
  const firstcond = (hw >> 4) & 0xf;
  const mask = hw & 0xf;
  let count = 4;
  while (((mask >> (4 - count)) & 1) === 0) count--;
  let pattern = 'it';
  for (let k = 1; k < count; k++) pattern += ((mask >> (4 - k)) & 1) === (firstcond & 1) ? 't' : 'e';
  return { mnemonic: pattern, kind: 'it', readsPc: false, itCount: count };
}

/** A5.3: 32-bit Thumb instruction encoding; op1 = hw1[12:11], op2 = hw1[10:4], op = hw2[15]. */
function decode32(hw1: number, hw2: number, a: number): Fields {
  const op1 = (hw1 >> 11) & 3;
  const op2 = (hw1 >> 4) & 0x7f;
  if (op1 === 1) {
    if ((op2 & 0x64) === 0x00) return decodeLoadStoreMultiple(hw1, hw2, a);
    if ((op2 & 0x64) === 0x04) return decodeDualExclusiveTable(hw1, hw2, a);
    if ((op2 & 0x60) === 0x20) return decodeDpShiftedRegister(hw1, hw2);
    return decodeCoprocessor(hw1, hw2, a);
  }
  if (op1 === 2) {
    if (hw2 & 0x8000) return decodeBranchMisc(hw1, hw2, a);
    if ((op2 & 0x20) === 0) return decodeDpModifiedImmediate(hw1);
    return decodeDpPlainImmediate(hw1, hw2, a);
  }
  // op1 === 3
  if ((op2 & 0x71) === 0x00) {
    // A5.3.10 Store single data item; Rn = 1111 is UNDEFINED.
    if ((hw1 & 0xf) === 15) throw new DecodeError(a, 'store with Rn = PC is UNDEFINED');
    return plain('str');
  }
  if ((op2 & 0x67) === 0x01 || (op2 & 0x67) === 0x03 || (op2 & 0x67) === 0x05) return decodeLoadSingle(hw1, hw2, a);
  if ((op2 & 0x67) === 0x07) throw new DecodeError(a, 'UNDEFINED load encoding (A5.3 op2 = 00xx111)');
  const rn = hw1 & 0xf;
  const rm = hw2 & 0xf;
  if ((op2 & 0x70) === 0x20) {
    // A5.3.12 Data processing (register). Rn = 1111 in the extend forms (hw1[7] = 0, hw2[7] = 1) means "no add".
    const extendForm = (hw1 & 0x80) === 0 && (hw2 & 0x80) !== 0;
    return plain('dp', rm === 15 || (rn === 15 && !extendForm));
  }
  if ((op2 & 0x78) === 0x30 || (op2 & 0x78) === 0x38) {
    // A5.3.16 multiply/accumulate, A5.3.17 long multiply/divide: a PC operand is UNPREDICTABLE.
    return plain('mul', rm === 15 || rn === 15);
  }
  return decodeCoprocessor(hw1, hw2, a);
}

/** A5.3.5 Load Multiple and Store Multiple: 1110100 op 0 W L Rn | register list. */
function decodeLoadStoreMultiple(hw1: number, hw2: number, a: number): Fields {
  const op = (hw1 >> 7) & 3;
  if (op === 0 || op === 3) throw new DecodeError(a, 'SRS/RFE do not exist in M-profile');
  const writeback = (hw1 & 0x20) !== 0;
  const load = (hw1 & 0x10) !== 0;
  const rn = hw1 & 0xf;
  const isStack = rn === 13 && writeback;
  if (!load) return plain(isStack && op === 2 ? 'push' : op === 1 ? 'stmia' : 'stmdb', rn === 15);
  const name = isStack && op === 1 ? 'pop' : op === 1 ? 'ldmia' : 'ldmdb';
  if (hw2 & 0x8000) return { mnemonic: name, kind: name === 'pop' ? 'return' : 'indirectBranch', readsPc: rn === 15 };
  return plain(name, rn === 15);
}

/** A5.3.6 Load/store dual or exclusive, table branch: 1110100 op1(2) 1 op2(2) Rn | ... op3 ... */
function decodeDualExclusiveTable(hw1: number, hw2: number, a: number): Fields {
  const op1 = (hw1 >> 7) & 3;
  const op2 = (hw1 >> 4) & 3;
  const op3 = (hw2 >> 4) & 0xf;
  const rn = hw1 & 0xf;
  if (op1 === 0 && op2 === 0) return plain('strex', rn === 15); // (also TT/TTT/TTA/TTAT in ARMv8-M)
  if (op1 === 0 && op2 === 1) return plain('ldrex', rn === 15);
  if (((op1 & 2) === 0 && op2 === 2) || ((op1 & 2) !== 0 && (op2 & 1) === 0)) return plain('strd', rn === 15);
  if (((op1 & 2) === 0 && op2 === 3) || ((op1 & 2) !== 0 && (op2 & 1) === 1)) {
    if (rn !== 15) return plain('ldrd');
    // A7.7.51 LDRD (literal) T1: 1110100 P U 1 W 1 1111 | Rt Rt2 imm8; address = Align(PC,4) +/- imm8*4.
    const imm = (hw2 & 0xff) << 2;
    return { ...plain('ldrd', true), target: alignedPcOf(a) + (hw1 & 0x80 ? imm : -imm) };
  }
  if (op1 === 1 && op2 === 1 && (op3 === 0 || op3 === 1)) {
    // A7.7.182 TBB, TBH: 111010001101 Rn | 11110000000 H Rm. With Rn = PC the table follows the instruction.
    const insn: Fields = { mnemonic: op3 === 0 ? 'tbb' : 'tbh', kind: 'tableBranch', readsPc: rn === 15 };
    if (rn === 15) insn.target = pcOf(a);
    return insn;
  }
  // byte/halfword exclusives, ARMv8-M load-acquire/store-release
  return plain(op2 === 0 ? 'strex' : 'ldrex', rn === 15);
}

/** A5.3.11 Data processing (shifted register): 1110101 op(4) S Rn | 0 imm3 Rd imm2 type Rm. */
function decodeDpShiftedRegister(hw1: number, hw2: number): Fields {
  const op = (hw1 >> 5) & 0xf;
  const rn = hw1 & 0xf;
  const rm = hw2 & 0xf;
  // ORR/ORN with Rn = 1111 are MOV/MVN (and the shifts): Rn is then not an operand.
  const rnIsOperand = !(rn === 15 && (op === 2 || op === 3));
  return plain(rn === 15 && op === 2 ? 'mov' : 'dp', rm === 15 || (rn === 15 && rnIsOperand));
}

/** A5.3.1 Data processing (modified immediate): 11110 i 0 op(4) S Rn | 0 imm3 Rd imm8. */
function decodeDpModifiedImmediate(hw1: number): Fields {
  const op = (hw1 >> 5) & 0xf;
  const rn = hw1 & 0xf;
  // ORR/ORN with Rn = 1111 are MOV/MVN; for every other op a PC operand is UNPREDICTABLE.
  return plain(rn === 15 && op === 2 ? 'mov' : 'dp', rn === 15 && op !== 2 && op !== 3);
}

/** A5.3.3 Data processing (plain binary immediate): 11110 i 1 op(5) Rn | 0 imm3 Rd imm8. */
function decodeDpPlainImmediate(hw1: number, hw2: number, a: number): Fields {
  const op = (hw1 >> 4) & 0x1f;
  const rn = hw1 & 0xf;
  const imm12 = (((hw1 >> 10) & 1) << 11) | (((hw2 >> 12) & 7) << 8) | (hw2 & 0xff);
  // A7.7.7 ADR T3 (ADDW Rd, PC, #imm12) and T2 (SUBW Rd, PC, #imm12): value = Align(PC,4) +/- imm12.
  if (op === 0b00000 && rn === 15) return { ...plain('adr', true), target: alignedPcOf(a) + imm12 };
  if (op === 0b01010 && rn === 15) return { ...plain('adr', true), target: alignedPcOf(a) - imm12 };
  if (op === 0b00100) return plain('movw'); // Rn field is imm4
  if (op === 0b01100) return plain('movt');
  if (op === 0b10110 && rn === 15) return plain('bfc');
  return plain(op === 0b00000 ? 'addw' : op === 0b01010 ? 'subw' : 'dp', rn === 15);
}

/** A5.3.4 Branches and miscellaneous control: 11110 op(7) ... | 1 op1(3) ... */
function decodeBranchMisc(hw1: number, hw2: number, a: number): Fields {
  const op = (hw1 >> 4) & 0x7f;
  const op1 = (hw2 >> 12) & 7;
  if ((op1 & 5) === 0) {
    if ((op & 0x38) !== 0x38) {
      // A7.7.12 B T3: 11110 S cond imm6 | 10 J1 0 J2 imm11; imm32 = SignExtend(S:J2:J1:imm6:imm11:'0').
      const s = (hw1 >> 10) & 1;
      const j1 = (hw2 >> 13) & 1;
      const j2 = (hw2 >> 11) & 1;
      const imm = signExtend((s << 20) | (j2 << 19) | (j1 << 18) | ((hw1 & 0x3f) << 12) | ((hw2 & 0x7ff) << 1), 21);
      return {
        mnemonic: `b${conditionNames[(hw1 >> 6) & 0xf]}`,
        kind: 'condBranch',
        readsPc: true,
        target: pcOf(a) + imm,
      };
    }
    if (op1 === 2 && op === 0x7f) return system('udf'); // A7.7.191 UDF T2
    if ((op & 0x7e) === 0x38) return system('msr'); // B5.2.3 MSR
    if (op === 0x3a) {
      // A5.3.4 hints (NOP.W, YIELD.W, WFE.W, WFI.W, SEV.W, DBG; ARMv8.1-M PAC/BTI live here too).
      const hint = hw2 & 0xff;
      if (hint === 0 || hint === 1) return plain(hint === 0 ? 'nop' : 'yield');
      return hint <= 4 ? system(['nop', 'yield', 'wfe', 'wfi', 'sev'][hint]!) : plain('hint');
    }
    // A5.3.4 misc control
    if (op === 0x3b) return system(['', '', 'clrex', '', 'dsb', 'dmb', 'isb'][(hw2 >> 4) & 0xf] || 'barrier');
    if ((op & 0x7e) === 0x3e) return system('mrs'); // B5.2.2 MRS
    throw new DecodeError(a, 'UNDEFINED in the branches and miscellaneous control space');
  }
  if ((op1 & 5) === 1) {
    // A7.7.12 B T4: 11110 S imm10 | 10 J1 1 J2 imm11; I1 = NOT(J1 EOR S), I2 = NOT(J2 EOR S).
    return { mnemonic: 'b', kind: 'branch', readsPc: true, target: pcOf(a) + branchT4Offset(hw1, hw2) };
  }
  if ((op1 & 5) === 5) {
    // A7.7.18 BL T1: 11110 S imm10 | 11 J1 1 J2 imm11, same offset as B T4.
    return { mnemonic: 'bl', kind: 'call', readsPc: true, target: pcOf(a) + branchT4Offset(hw1, hw2) };
  }
  // op1 = 1x0: BLX (immediate) in A-profile, UNDEFINED in ARMv7-M; Armv8.1-M puts the low-overhead
  // loop and branch-future instructions here (LE, LETP, WLS, DLS, BF*): they hold loop addresses.
  return { mnemonic: 'lob', kind: 'loop', readsPc: true };
}

/** Offset of B T4 / BL T1 (A7.7.12, A7.7.18): SignExtend(S:I1:I2:imm10:imm11:'0', 25). */
export function branchT4Offset(hw1: number, hw2: number): number {
  const s = (hw1 >> 10) & 1;
  const i1 = ~(((hw2 >> 13) & 1) ^ s) & 1;
  const i2 = ~(((hw2 >> 11) & 1) ^ s) & 1;
  return signExtend((s << 24) | (i1 << 23) | (i2 << 22) | ((hw1 & 0x3ff) << 12) | ((hw2 & 0x7ff) << 1), 25);
}

/**
 * A5.3.7-A5.3.9 Load word / halfword / byte and memory hints: 1111100 S U size(2) 1 Rn | Rt ...
 * Rn = 1111 is the literal form: address = Align(PC,4) +/- imm12 (U = hw1[7]).
 */
function decodeLoadSingle(hw1: number, hw2: number, a: number): Fields {
  const signed = (hw1 & 0x100) !== 0;
  const size = (hw1 >> 5) & 3;
  const rn = hw1 & 0xf;
  const rt = (hw2 >> 12) & 0xf;
  if (size === 2 && signed) throw new DecodeError(a, 'LDRSW does not exist in Thumb');
  let name: string;
  if (size === 0) name = rt === 15 ? (signed ? 'pli' : 'pld') : signed ? 'ldrsb' : 'ldrb';
  else if (size === 1)
    name = rt === 15 ? 'nop' : signed ? 'ldrsh' : 'ldrh'; // Rt = PC: unallocated hints
  else name = 'ldr';
  if (rn === 15) {
    const imm = hw2 & 0xfff;
    const target = alignedPcOf(a) + (hw1 & 0x80 ? imm : -imm);
    // A7.7.43 LDR (literal) T2 with Rt = PC is a jump through the literal.
    if (size === 2 && rt === 15) return { mnemonic: name, kind: 'indirectBranch', readsPc: true, target };
    return { ...plain(name, true), target };
  }
  if (size === 2 && rt === 15) {
    // A7.7.98 POP T3 is LDR PC, [SP], #4 (hw2 = 1111 1011 00000100).
    const pop = rn === 13 && (hw2 & 0x0fff) === 0x0b04;
    return { mnemonic: pop ? 'pop' : 'ldr', kind: pop ? 'return' : 'indirectBranch', readsPc: false };
  }
  return plain(name);
}

/**
 * A5.3.18 Coprocessor instructions (and the FP extension's loads/stores, A6.4, and MVE in
 * Armv8.1-M): 111x 11 op1(6) Rn | ... coproc(4) ...
 * LDC/VLDR with Rn = PC, P = 1, W = 0 read a literal: Align(PC,4) +/- imm8*4 (imm8*2 for the
 * Armv8.1-M half-precision VLDR, coproc 1001).
 */
function decodeCoprocessor(hw1: number, hw2: number, a: number): Fields {
  const op1 = (hw1 >> 4) & 0x3f;
  const rn = hw1 & 0xf;
  const coproc = (hw2 >> 8) & 0xf;
  const fp = (coproc & 0xe) === 0xa || coproc === 9;
  const loadStore = (op1 & 0x20) === 0 && (op1 & 0x3a) !== 0; // 0xxxxx minus 00000x and 00010x
  if (!loadStore) return plain(fp ? 'vfp' : 'coproc');
  const load = (op1 & 1) !== 0;
  const p = (hw1 >> 8) & 1;
  const w = (hw1 >> 5) & 1;
  const name = (fp ? (load ? 'vldr' : 'vstr') : load ? 'ldc' : 'stc') + (p === 1 && w === 0 ? '' : 'm');
  if (rn !== 15) return plain(name === 'vldrm' ? 'vldm' : name === 'vstrm' ? 'vstm' : name);
  if (load && p === 1 && w === 0) {
    const imm = (hw2 & 0xff) << (coproc === 9 ? 1 : 2);
    return { ...plain(name, true), target: alignedPcOf(a) + (hw1 & 0x80 ? imm : -imm) };
  }
  return plain(name, true); // VLDM/VSTM/STC with PC base: UNPREDICTABLE
}
