import {
  concatBytes,
  fitsSigned,
  landsInsidePatch,
  refuse,
  fallsThrough as kindFallsThrough,
  type DecodedInstruction,
  type InstructionRelocator,
  type Relocation,
  type RelocationOptions,
} from '../codec';
import {
  LR,
  PC,
  SP,
  encodeAddRegister,
  encodeBCondNarrow,
  encodeBCondWide,
  encodeBl,
  encodeBlx,
  encodeBNarrow,
  encodeBWide,
  encodeCbz,
  encodeLdrImmediate,
  encodeLdrLiteralNarrow,
  encodeLdrLiteralWide,
  encodeMovConstant,
  encodeMovRegister,
  encodeNop,
  encodePop,
  encodePush,
  encodeStrImmediate,
  halfwords,
  word,
  type ThumbRegister,
} from './thumbEncoder';

/**
 * Moves Thumb instructions to a trampoline. Flash (0x0000_0000/0x0800_0000) and SRAM
 * (0x2000_0000) are 512 MiB apart, beyond B.W's +/-16 MiB, so every rewrite here has a
 * register-free long form: `LDR.W PC, [PC, #k]` + literal for jumps, MOVW/MOVT (or a literal on
 * ARMv6-M) for addresses, PUSH/POP around a borrowed register where the original had none to spare.
 * Flags are never touched: only MOV/MOVW/MOVT/LDR/STR/PUSH/POP/ADD (register) are emitted.
 */

export type ThumbProfile = 'armv6-m' | 'armv7-m' | 'armv7e-m' | 'armv8-m.base' | 'armv8-m.main' | 'armv8.1-m.main';

interface Features {
  /** Full Thumb-2: 32-bit loads/stores, B<c>.W, IT (ARMv7-M and ARMv8-M Mainline). */
  thumb2: boolean;
  /** MOVW/MOVT (also ARMv8-M Baseline). */
  movw: boolean;
  /** B.W (T4) (also ARMv8-M Baseline's "wide branches"). */
  wideBranch: boolean;
}

const features: Record<ThumbProfile, Features> = {
  'armv6-m': { thumb2: false, movw: false, wideBranch: false },
  'armv8-m.base': { thumb2: false, movw: true, wideBranch: true },
  'armv7-m': { thumb2: true, movw: true, wideBranch: true },
  'armv7e-m': { thumb2: true, movw: true, wideBranch: true },
  'armv8-m.main': { thumb2: true, movw: true, wideBranch: true },
  'armv8.1-m.main': { thumb2: true, movw: true, wideBranch: true },
};

const align4 = (x: number): number => ((x + 3) & ~3) >>> 0;
const isLow = (r: number): boolean => r >= 0 && r <= 7;

/** Appends code while tracking the address the next byte lands at (literal placement needs it). */
class Emitter {
  private readonly chunks: Uint8Array[] = [];
  constructor(public at: number) {}
  emit(bytes: Uint8Array): void {
    this.chunks.push(bytes);
    this.at += bytes.length;
  }
  /** Pads with a NOP to a word boundary before a literal (the NOP is never executed). */
  padToWord(): void {
    if (this.at % 4 !== 0) this.emit(encodeNop());
  }
  bytes(): Uint8Array {
    return concatBytes(this.chunks);
  }
}

/** A rewrite that cannot be done, with the refusal code it maps to. */
class Cannot extends Error {
  constructor(
    readonly code: 'pcOperand' | 'profile',
    message: string,
  ) {
    super(message);
  }
}

export class ThumbRelocator implements InstructionRelocator {
  private readonly f: Features;

  constructor(readonly profile: ThumbProfile = 'armv7-m') {
    this.f = features[profile];
  }

  relocate(instructions: readonly DecodedInstruction[], newAddress: number, options?: RelocationOptions): Relocation {
    const e = new Emitter(newAddress);
    const notes: string[] = [];
    const exits = { jumps: 0 };
    let falls = true;
    for (let i = 0; i < instructions.length; i++) {
      const insn = instructions[i]!;
      const next = instructions[i + 1];
      if (next && next.address !== insn.address + insn.length) {
        throw new Error(`relocate: instructions are not consecutive at 0x${insn.address.toString(16)}`);
      }
      if (insn.kind === 'it') {
        const count = insn.itCount ?? 0;
        const block = instructions.slice(i + 1, i + 1 + count);
        if (block.length < count)
          return refuse(
            insn,
            'unsplittable',
            `its IT block runs past the relocated instructions; patch before the IT or after the block`,
          );
        // Predication is position independent, so an IT block whose members do not read the PC moves verbatim.
        const pcReader = block.find((m) => m.readsPc);
        if (pcReader) return refuse(pcReader, 'unsplittable', 'reads the PC inside an IT block; patch elsewhere');
        e.emit(insn.bytes);
        for (const m of block) e.emit(m.bytes);
        i += count;
        falls = true; // the last member is conditional
        continue;
      }
      const r = this.relocateOne(insn, e, options, notes, exits);
      if (r) return r;
      falls = kindFallsThrough(insn.kind);
    }
    return {
      ok: true,
      bytes: e.bytes(),
      fallsThrough: falls,
      notes,
      ...(options?.evenExits ? { exitJumps: exits.jumps } : {}),
    };
  }

  /** Emits one instruction's rewrite; returns a refusal, or undefined when done. */
  private relocateOne(
    insn: DecodedInstruction,
    e: Emitter,
    options: RelocationOptions | undefined,
    notes: string[],
    exits: { jumps: number },
  ): Relocation | undefined {
    const hw1 = insn.bytes[0]! | (insn.bytes[1]! << 8);
    const hw2 = insn.length === 4 ? insn.bytes[2]! | (insn.bytes[3]! << 8) : 0;
    const target = insn.target;
    if (!insn.readsPc) {
      e.emit(insn.bytes); // position independent: returns, BX/BLX Rm, LDR PC from a register, everything plain
      return undefined;
    }
    try {
      switch (insn.kind) {
        case 'loop':
          return refuse(
            insn,
            'loop',
            'Armv8.1-M low-overhead loop/branch-future instructions hold loop addresses; patch outside the loop',
          );
        case 'tableBranch':
          return refuse(insn, 'tableBranch', 'the jump table follows the instruction inline; patch outside the switch');
        case 'branch':
        case 'condBranch':
        case 'call': {
          if (target === undefined) break;
          if (landsInsidePatch(target, options))
            return refuse(insn, 'branchIntoPatch', `its target 0x${target.toString(16)} lies inside the patched bytes`);
          if (insn.kind === 'branch') this.jumpTo(e, target);
          else if (insn.kind === 'call') {
            this.callTo(e, target);
            notes.push(`${insn.mnemonic} at 0x${insn.address.toString(16)}: LR now points into the trampoline`);
          } else if (insn.mnemonic === 'cbz' || insn.mnemonic === 'cbnz')
            exits.jumps += this.cbzTo(e, insn.mnemonic === 'cbnz', hw1 & 7, target, options?.evenExits);
          else
            exits.jumps += this.condBranchTo(
              e,
              insn.length === 2 ? (hw1 >> 8) & 0xf : (hw1 >> 6) & 0xf,
              target,
              options?.evenExits,
            );
          return undefined;
        }
        default:
          break;
      }
      return this.relocatePcReader(insn, hw1, hw2, e, notes);
    } catch (err) {
      if (err instanceof Cannot) return refuse(insn, err.code, err.message);
      throw err;
    }
  }

  /** Literal loads, ADR, and ADD/MOV with a PC operand. */
  private relocatePcReader(
    insn: DecodedInstruction,
    hw1: number,
    hw2: number,
    e: Emitter,
    notes: string[],
  ): Relocation | undefined {
    const target = insn.target;
    const m = insn.mnemonic;
    if (insn.length === 2) {
      if (m === 'ldr' && target !== undefined) {
        // A7.7.43 LDR (literal) T1 -> Rt = address; LDR Rt, [Rt].
        const rt = (hw1 >> 8) & 7;
        this.loadConstant(e, rt, target);
        e.emit(encodeLdrImmediate(rt, rt, 0));
        return undefined;
      }
      if (m === 'adr' && target !== undefined) {
        this.loadConstant(e, (hw1 >> 8) & 7, target);
        return undefined;
      }
      if ((hw1 & 0xff00) === 0x4400 && insn.kind === 'plain') {
        // A7.7.4 ADD (register) T2 `add Rdn, pc`: Rdn += address + 4, through a borrowed register.
        const rdn = ((hw1 >> 4) & 8) | (hw1 & 7);
        if (rdn === SP) return refuse(insn, 'pcOperand', 'adds the PC to SP; patch elsewhere');
        const borrowed = rdn === 0 ? 1 : 0;
        e.emit(encodePush([borrowed]));
        this.loadConstant(e, borrowed, insn.address + 4);
        e.emit(encodeAddRegister(rdn, borrowed));
        e.emit(encodePop([borrowed]));
        return undefined;
      }
      if ((hw1 & 0xff00) === 0x4600 && insn.kind === 'plain') {
        // A7.7.77 MOV (register) T1 `mov Rd, pc`: Rd = address + 4.
        const rd = ((hw1 >> 4) & 8) | (hw1 & 7);
        if (rd === SP) return refuse(insn, 'pcOperand', 'moves the PC into SP; patch elsewhere');
        this.loadConstant(e, rd, insn.address + 4);
        return undefined;
      }
      return refuse(
        insn,
        'pcOperand',
        'uses the PC as an operand in a form that is not rewritten (CMP/ADD PC, BX/BLX PC); patch elsewhere',
      );
    }
    const rn = hw1 & 0xf;
    if (target !== undefined && m === 'adr') {
      const rd = (hw2 >> 8) & 0xf;
      if (rd === SP || rd === PC) return refuse(insn, 'pcOperand', 'ADR into SP/PC is UNPREDICTABLE');
      this.loadConstant(e, rd, target);
      return undefined;
    }
    if (target !== undefined && (m === 'pld' || m === 'pli' || m === 'nop')) {
      notes.push(`${m} at 0x${insn.address.toString(16)}: prefetch hint dropped (it has no architectural effect)`);
      return undefined;
    }
    if (target !== undefined && rn === 15 && (hw1 & 0xfe00) === 0xf800) {
      // A5.3.7-A5.3.9 load (literal) T2 -> Rt = address; LDR<sz> Rt, [Rt, #0] (imm12 form: bit 7 set, Rn = Rt).
      const rt = (hw2 >> 12) & 0xf;
      if (rt === SP) return refuse(insn, 'pcOperand', 'loads SP from a literal; patch elsewhere');
      if (rt === PC) {
        this.jumpThroughLiteral(e, target);
        return undefined;
      }
      this.loadConstant(e, rt, target);
      e.emit(halfwords((hw1 & ~0x008f) | 0x0080 | rt, hw2 & 0xf000));
      return undefined;
    }
    if (target !== undefined && m === 'ldrd') {
      // A7.7.51 LDRD (literal) -> Rt = address; LDRD Rt, Rt2, [Rt] (A7.7.50 T1, P=1 U=1 W=0).
      const rt = (hw2 >> 12) & 0xf;
      const rt2 = (hw2 >> 8) & 0xf;
      if (rt === SP || rt === PC || rt2 === SP || rt2 === PC)
        return refuse(insn, 'pcOperand', 'LDRD into SP/PC is UNPREDICTABLE');
      this.loadConstant(e, rt, target);
      e.emit(halfwords(0xe9d0 | rt, (rt << 12) | (rt2 << 8)));
      return undefined;
    }
    if (target !== undefined && (m === 'vldr' || m === 'ldc')) {
      // A7.7.246 VLDR (literal): the destination is an FP register, so borrow r0 for the address:
      // PUSH {r0}; r0 = address; VLDR <Sd|Dd>, [r0] (U = 1, Rn = r0, imm8 = 0); POP {r0}.
      e.emit(encodePush([0]));
      this.loadConstant(e, 0, target);
      e.emit(halfwords((hw1 & ~0x008f) | 0x0080, hw2 & 0xff00));
      e.emit(encodePop([0]));
      return undefined;
    }
    return refuse(insn, 'pcOperand', 'uses the PC as an operand (UNPREDICTABLE or not rewritten); patch elsewhere');
  }

  /** Unconditional jump to an absolute address, whatever the distance. */
  /** Emits a jump to `target`; returns the instructions it runs. */
  private jumpTo(e: Emitter, target: number): number {
    const off = target - (e.at + 4);
    if (fitsSigned(off, 12)) return (e.emit(encodeBNarrow(e.at, target)), 1);
    if (this.f.wideBranch && fitsSigned(off, 25)) return (e.emit(encodeBWide(e.at, target)), 1);
    if (this.f.thumb2) {
      // LDR.W PC, [PC, #k]; .word target|1 (the literal must be word aligned: LDR to PC needs it).
      const at = e.at;
      e.emit(encodeLdrLiteralWide(PC, at, align4(at + 4)));
      e.padToWord();
      e.emit(word((target | 1) >>> 0));
      return 1;
    }
    // ARMv6-M: PUSH {r0, r1}; LDR r0, =target|1; STR r0, [SP, #4]; POP {r0, pc}.
    e.emit(encodePush([0, 1]));
    const at = e.at;
    e.emit(encodeLdrLiteralNarrow(0, at, align4(at + 6)));
    e.emit(encodeStrImmediate(0, SP, 4));
    e.emit(encodePop([0, PC]));
    e.padToWord();
    e.emit(word((target | 1) >>> 0));
    return 4;
  }

  /** PC = the word at `literal` (LDR PC, =...): PUSH {r0, r1}; r0 = [literal]; STR r0, [SP, #4]; POP {r0, pc}. */
  private jumpThroughLiteral(e: Emitter, literal: number): void {
    e.emit(encodePush([0, 1]));
    this.loadConstant(e, 0, literal);
    e.emit(encodeLdrImmediate(0, 0, 0));
    e.emit(encodeStrImmediate(0, SP, 4));
    e.emit(encodePop([0, PC]));
  }

  /** Call with LR = the next instruction of the trampoline. */
  private callTo(e: Emitter, target: number): void {
    if (fitsSigned(target - (e.at + 4), 25)) return e.emit(encodeBl(e.at, target));
    // BL clobbers LR anyway, so LR carries the target: LR = target|1; BLX LR.
    this.loadConstant(e, LR, (target | 1) >>> 0);
    e.emit(encodeBlx(LR));
  }

  /** Returns the instructions of the jump it added (0 for a direct branch). */
  private condBranchTo(e: Emitter, cond: number, target: number, evenExits = false): number {
    const off = target - (e.at + 4);
    if (!evenExits && fitsSigned(off, 9)) return (e.emit(encodeBCondNarrow(cond, e.at, target)), 0);
    if (!evenExits && this.f.thumb2 && fitsSigned(off, 21)) return (e.emit(encodeBCondWide(cond, e.at, target)), 0);
    // B<!c> over; <jump to target>; over:
    const jump = new Emitter(e.at + 2);
    const n = this.jumpTo(jump, target);
    e.emit(encodeBCondNarrow(cond ^ 1, e.at, jump.at));
    e.emit(jump.bytes());
    return n;
  }

  /** Returns the instructions of the jump it added (0 for a direct branch). */
  private cbzTo(e: Emitter, nonZero: boolean, rn: ThumbRegister, target: number, evenExits = false): number {
    const off = target - (e.at + 4);
    if (!evenExits && off >= 0 && off <= 126) return (e.emit(encodeCbz(nonZero, rn, e.at, target)), 0);
    // CB<!Z> Rn, over; <jump to target>; over:
    const jump = new Emitter(e.at + 2);
    const n = this.jumpTo(jump, target);
    e.emit(encodeCbz(!nonZero, rn, e.at, jump.at));
    e.emit(jump.bytes());
    return n;
  }

  /** Rd = value, flags untouched: MOVW/MOVT where the profile has them, else an inline literal. */
  private loadConstant(e: Emitter, rd: ThumbRegister, value: number): void {
    if (rd === SP || rd === PC) throw new Cannot('pcOperand', 'cannot load a constant into SP/PC');
    if (this.f.movw) return e.emit(encodeMovConstant(rd, value));
    if (isLow(rd)) {
      // LDR Rd, [PC, #k]; B over; .word value; over:
      const at = e.at;
      const literal = align4(at + 4);
      e.emit(encodeLdrLiteralNarrow(rd, at, literal));
      e.emit(encodeBNarrow(e.at, literal + 4));
      e.padToWord();
      e.emit(word(value >>> 0));
      return;
    }
    // High register on ARMv6-M: go through r0.
    e.emit(encodePush([0]));
    this.loadConstant(e, 0, value);
    e.emit(encodeMovRegister(rd, 0));
    e.emit(encodePop([0]));
  }
}

/**
 * Addresses of instructions predicated by an IT block within `instructions` (decoded in order).
 * The planner must never place a patch on one of them: the IT before it would predicate the jump.
 */
export function itPredicatedAddresses(instructions: readonly DecodedInstruction[]): Set<number> {
  const out = new Set<number>();
  for (let i = 0; i < instructions.length; i++) {
    const insn = instructions[i]!;
    if (insn.kind !== 'it') continue;
    for (let k = 1; k <= (insn.itCount ?? 0) && i + k < instructions.length; k++) out.add(instructions[i + k]!.address);
  }
  return out;
}
