import { fallsThrough, signExtend, type DecodedInstruction } from '../codec';
import type { AddressTaking, FunctionCode, ProgramFacts } from '../../probe/injection/types';
import { immI, rvWord, wordFields } from './rvDecoder';
import { ARGUMENTS, Reg, rvRegisterEffects } from './trampolineRv32Isa';

/**
 * Addresses RV32 code forms in a register (planSupport.ts `takenAddresses`). A function's address
 * takes two instructions here (`lui` + `addi` for %hi/%lo, `auipc` + `addi` for %pcrel_hi/lo,
 * often apart: the upper half hoisted out of a loop), or one `addi` from gp after the linker
 * relaxed the pair (`__global_pointer$`). So each function is walked along its control flow with,
 * per register, the set of constants it may hold on some path: `lui`, `auipc`, `c.lui` start an
 * upper half, `c.li` a constant; `addi`, `add`, `sub`, the logic and shift forms and their
 * compressed versions (`c.addi`, `c.add` ...) compute new ones, `c.mv` copies; anything else
 * writing a register forgets it. Every constant computed counts as formed, and an upper half
 * wherever it is used whole; so the result is a superset of the addresses taken: a register
 * unknown on one path keeps the constants of the others, and a call keeps them all (code that
 * breaks the calling convention cannot hide a value that way). `jal`/`jalr` targets are calls and
 * jumps, not takes; a link register holds a return address and is forgotten. A set that outgrows
 * `MAX_VALUES` (a pointer stepping through a table) stops being followed; the values it held are
 * already counted. Words in memory (tables, `.data`, `.init_array`) are read by the generic side;
 * no bit of a code pointer marks an instruction set here (`modeBit: false`).
 */
export const rv32AddressTaking: AddressTaking = {
  modeBit: false,
  formed: (fn, program) => formedAddresses(fn, program),
};

const MAX_VALUES = 16;
/** Added to an upper half (`lui`, `auipc`) not yet completed by a lower one. */
const PARTIAL = 2 ** 32;
/** Constants a register may hold; `many` when too many to follow; absent when none is known. */
type Values = readonly number[] | 'many';
type State = Array<Values | undefined>;

const GLOBAL_POINTER = '__global_pointer$';

function formedAddresses(fn: FunctionCode, program: ProgramFacts): Set<number> | string {
  const insns = fn.instructions;
  // Code past an instruction that could not be decoded may form any address.
  if (fn.undecodable)
    return (
      `${fn.name}: its code from 0x${fn.undecodable.address.toString(16)} ` +
      `could not be decoded (${fn.undecodable.reason})`
    );
  const formed = new Set<number>();
  if (insns.length === 0) return formed;
  const flow = flowOf(insns);
  const entry: State = new Array<Values | undefined>(32).fill(undefined);
  const gp = program.symbolAddress(GLOBAL_POINTER);
  if (gp !== undefined) entry[Reg.gp] = [gp >>> 0];
  const states: Array<State | undefined> = new Array<State | undefined>(insns.length).fill(undefined);
  states[0] = entry;
  // Sweeps in address order until nothing changes: most code runs forwards, so few sweeps do.
  // Code the walk does not reach from the entry (entered from another function's code, or dead)
  // is walked too, from a state that knows nothing but gp.
  const dirty = new Uint8Array(insns.length);
  dirty[0] = 1;
  for (;;) {
    let changed = false;
    for (let k = 0; k < insns.length; k++) {
      if (!dirty[k]) continue;
      dirty[k] = 0;
      const insn = insns[k]!;
      const out = transfer(insn, states[k]!, formed);
      if (typeof out === 'string')
        return `${fn.name}: ${out}${gp === undefined ? ` (no ${GLOBAL_POINTER} in the symbol table)` : ''}`;
      for (const s of successors(insn, k, insns, flow, program)) {
        const merged = states[s] === undefined ? out : join(states[s]!, out);
        if (merged === undefined) continue;
        states[s] = merged;
        dirty[s] = 1;
        changed = true;
      }
    }
    if (changed) continue;
    const unreached = states.findIndex((x) => x === undefined);
    if (unreached < 0) break;
    states[unreached] = entry;
    dirty[unreached] = 1;
  }
  return formed;
}

/**
 * Where control goes after `insns[k]` inside the function. An unresolved indirect jump (a switch
 * whose table could not be read) may go to any block start: an instruction after one that does
 * not fall through, or one a branch targets. Not into the middle of straight-line code, where it
 * would mix its registers into an upper half about to be completed.
 */
function successors(
  insn: DecodedInstruction,
  k: number,
  insns: readonly DecodedInstruction[],
  flow: Flow,
  program: ProgramFacts,
): readonly number[] {
  const out: number[] = [];
  if (fallsThrough(insn.kind) && k + 1 < insns.length) out.push(k + 1);
  if ((insn.kind === 'branch' || insn.kind === 'condBranch') && insn.target !== undefined) {
    const t = flow.index.get(insn.target);
    if (t !== undefined) out.push(t);
  }
  if (insn.kind === 'indirectBranch') {
    const targets = program.tableTargets(insn.address);
    if (targets === undefined) return flow.leaders();
    for (const a of targets) {
      const t = flow.index.get(a);
      if (t !== undefined) out.push(t);
    }
  }
  return out;
}

interface Flow {
  readonly index: ReadonlyMap<number, number>;
  leaders(): readonly number[];
}

function flowOf(insns: readonly DecodedInstruction[]): Flow {
  const index = new Map(insns.map((i, k) => [i.address, k]));
  let leaders: number[] | undefined;
  return {
    index,
    leaders: () => {
      if (leaders) return leaders;
      const targets = new Set(insns.filter((i) => i.kind === 'branch' || i.kind === 'condBranch').map((i) => i.target));
      return (leaders = insns
        .map((_, k) => k)
        .filter((k) => k === 0 || !fallsThrough(insns[k - 1]!.kind) || targets.has(insns[k]!.address)));
    },
  };
}

/**
 * The state after `insn`; the addresses it forms go to `formed`. An upper half (`lui`, `auipc`)
 * is no address until something adds the lower half (`addi`, or the offset of a load, store or
 * jump, which only reach memory or code there): it counts as formed only where it is used whole
 * (stored, compared, written to a CSR, passed to a call or returned). A sentence when gp is read
 * but unknown.
 */
function transfer(insn: DecodedInstruction, before: State, formed: Set<number>): State | string {
  const after = before.slice();
  const { defs } = rvRegisterEffects(insn);
  const op = operation(insn);
  const whole = op ? 0 : wholeReads(insn);
  for (let r = 1; r < 32; r++) {
    const v = before[r];
    if (whole & (1 << r) && v !== undefined && v !== 'many') for (const x of v) formed.add(x % PARTIAL);
  }
  for (let r = 1; r < 32; r++) if (defs & (1 << r)) after[r] = undefined;
  if (!op || op.rd === 0) return after;
  const read = (r: number): Values | undefined => (r === 0 ? [0] : before[r]);
  if (op.kind === 'const') {
    after[op.rd] = [op.value];
    if (op.value < PARTIAL) formed.add(op.value);
  } else if (op.kind === 'copy') after[op.rd] = read(op.rs);
  else {
    const a = read(op.rs1);
    const b = op.rs2 === undefined ? [op.imm!] : read(op.rs2);
    if (op.fn === add && (op.rs1 === Reg.gp || op.rs2 === Reg.gp) && (a === undefined || b === undefined)) {
      return (
        `${insn.mnemonic} at 0x${insn.address.toString(16)} forms an address from gp, whose value ` +
        `is not known there`
      );
    }
    after[op.rd] = combine(a, b, op.fn);
    const v = after[op.rd];
    if (v !== undefined && v !== 'many') for (const x of v) formed.add(x);
  }
  return after;
}

/**
 * Registers `insn` reads as whole values (not an arithmetic instruction's operands, whose result
 * counts instead, nor the base of a load, store or jump): store data, compared values, CSR
 * sources, and the argument registers where control leaves for a call, a return or a jump.
 */
function wholeReads(insn: DecodedInstruction): number {
  let uses = rvRegisterEffects(insn).uses;
  if (insn.length === 4) {
    const w = rvWord(insn.bytes);
    const opcode = w & 0x7f;
    if ([0x03, 0x07, 0x27, 0x23, 0x2f, 0x67].includes(opcode)) uses &= ~(1 << ((w >> 15) & 0x1f));
    // the data stored, even from the base register
    if (opcode === 0x23 || opcode === 0x2f) uses |= 1 << ((w >> 20) & 0x1f);
  } else {
    const hw = insn.bytes[0]! | (insn.bytes[1]! << 8);
    if ((hw & 3) === 0) uses &= ~(1 << (8 + ((hw >> 7) & 7))); // C.LW/C.SW/C.FLW ... base rs1'
    if ((hw & 3) === 0 && hw >> 13 === 6) uses |= 1 << (8 + ((hw >> 2) & 7)); // C.SW data rs2'
    if ((hw & 3) === 2 && hw >> 13 === 4 && ((hw >> 2) & 0x1f) === 0) uses &= ~(1 << ((hw >> 7) & 0x1f)); // C.JR/C.JALR
  }
  if (insn.kind !== 'plain' && insn.kind !== 'condBranch' && insn.kind !== 'system') uses |= ARGUMENTS;
  return uses >>> 0;
}

function combine(
  a: Values | undefined,
  b: Values | undefined,
  fn: (x: number, y: number) => number,
): Values | undefined {
  if (a === undefined || b === undefined) return undefined;
  if (a === 'many' || b === 'many' || a.length * b.length > MAX_VALUES) return 'many';
  const out = new Set<number>();
  for (const x of a) for (const y of b) out.add(fn(x % PARTIAL, y % PARTIAL) >>> 0);
  return [...out].sort((x, y) => x - y);
}

/** `a` joined with `b`, or undefined when `a` already holds everything `b` does. */
function join(a: State, b: State): State | undefined {
  let changed = false;
  const out = a.slice();
  for (let r = 1; r < 32; r++) {
    const x = a[r];
    const y = b[r];
    if (y === undefined || x === 'many') continue;
    if (y === 'many' || x === undefined) {
      out[r] = y;
      changed = true;
      continue;
    }
    const extra = y.filter((v) => !x.includes(v));
    if (extra.length === 0) continue;
    out[r] = x.length + extra.length > MAX_VALUES ? 'many' : [...x, ...extra].sort((p, q) => p - q);
    changed = true;
  }
  return changed ? out : undefined;
}

const add = (x: number, y: number): number => x + y;
const sub = (x: number, y: number): number => x - y;
const xor = (x: number, y: number): number => x ^ y;
const or = (x: number, y: number): number => x | y;
const and = (x: number, y: number): number => x & y;
const sll = (x: number, y: number): number => x << (y & 31);
const srl = (x: number, y: number): number => x >>> (y & 31);
const sra = (x: number, y: number): number => x >> (y & 31);

type Operation =
  | { kind: 'const'; rd: number; value: number }
  | { kind: 'copy'; rd: number; rs: number }
  | { kind: 'op'; rd: number; rs1: number; rs2?: number; imm?: number; fn: (x: number, y: number) => number };

/** The constant arithmetic an instruction does, as far as address forming goes. */
function operation(insn: DecodedInstruction): Operation | undefined {
  if (insn.length === 4) {
    const w = rvWord(insn.bytes);
    const { rd, rs1, rs2, funct3 } = wordFields(w);
    switch (w & 0x7f) {
      case 0x37: // LUI
        return { kind: 'const', rd, value: PARTIAL + ((w & 0xfffff000) >>> 0) };
      case 0x17: // AUIPC
        return { kind: 'const', rd, value: PARTIAL + insn.target! };
      case 0x13: {
        // OP-IMM: addi, xori, ori, andi; slli, srli, srai (shamt in imm[4:0])
        const fn = [add, sll, undefined, undefined, xor, (w >>> 30) & 1 ? sra : srl, or, and][funct3];
        return fn ? { kind: 'op', rd, rs1, imm: immI(w), fn } : undefined;
      }
      case 0x33: {
        // OP: add, sub, xor, or, and (not M, not other extensions)
        const funct7 = w >>> 25;
        if (funct7 === 0x20 && funct3 === 0) return { kind: 'op', rd, rs1, rs2, fn: sub };
        if (funct7 !== 0) return undefined;
        const fn = [add, sll, undefined, undefined, xor, srl, or, and][funct3];
        return fn ? { kind: 'op', rd, rs1, rs2, fn } : undefined;
      }
      default:
        return undefined;
    }
  }
  const hw = insn.bytes[0]! | (insn.bytes[1]! << 8);
  const quadrant = hw & 3;
  const funct3 = hw >> 13;
  const rd = (hw >> 7) & 0x1f;
  const rs2 = (hw >> 2) & 0x1f;
  const imm6 = signExtend((((hw >> 12) & 1) << 5) | ((hw >> 2) & 0x1f), 6);
  const rdp = 8 + ((hw >> 7) & 7);
  const rs2p = 8 + ((hw >> 2) & 7);
  if (quadrant === 1) {
    if (funct3 === 0) return { kind: 'op', rd, rs1: rd, imm: imm6, fn: add }; // C.ADDI
    if (funct3 === 2) return { kind: 'const', rd, value: imm6 >>> 0 }; // C.LI
    if (funct3 === 3 && rd !== Reg.sp) return { kind: 'const', rd, value: PARTIAL + ((imm6 << 12) >>> 0) }; // C.LUI
    if (funct3 === 4) {
      const op2 = (hw >> 10) & 3;
      if (op2 === 0) return { kind: 'op', rd: rdp, rs1: rdp, imm: imm6 & 31, fn: srl }; // C.SRLI
      if (op2 === 1) return { kind: 'op', rd: rdp, rs1: rdp, imm: imm6 & 31, fn: sra }; // C.SRAI
      if (op2 === 2) return { kind: 'op', rd: rdp, rs1: rdp, imm: imm6, fn: and }; // C.ANDI
      return { kind: 'op', rd: rdp, rs1: rdp, rs2: rs2p, fn: [sub, xor, or, and][(hw >> 5) & 3]! }; // C.SUB/XOR/OR/AND
    }
    return undefined;
  }
  if (quadrant === 2) {
    if (funct3 === 0) return { kind: 'op', rd, rs1: rd, imm: rs2, fn: sll }; // C.SLLI
    if (funct3 === 4 && rs2 !== 0) {
      return (hw >> 12) & 1 ? { kind: 'op', rd, rs1: rd, rs2, fn: add } : { kind: 'copy', rd, rs: rs2 }; // C.ADD / C.MV
    }
  }
  return undefined; // C.ADDI4SPN, C.ADDI16SP: from sp, whose value is never known
}
