import {
  concatBytes,
  fallsThrough as kindFallsThrough,
  fitsSigned,
  landsInsidePatch,
  refuse,
  type DecodedInstruction,
  type InstructionRelocator,
  type Relocation,
  type RelocationOptions,
} from '../codec';
import { LIMM_REG, PCL_REG, arcWord, bIsSource, cIsRegister, generalFields } from './arcIsaDecoder';
import {
  arcWordBytes,
  compactRegister,
  encodeB,
  encodeBcc,
  encodeBl,
  encodeBlcc,
  encodeBrcc,
  encodeJ,
  encodeJl,
  encodeLd,
  encodeMovLimm,
} from './arcIsaEncoder';

/**
 * Moves ARCv2 instructions to a trampoline.
 * - Direct branches re-encode to the same absolute target (B s25, Bcc/BLcc s21, BL s25); beyond
 *   reach they become `j`/`jcc`/`jl`/`jlcc` with a limm, which reach anywhere without a register.
 *   BRcc/BBIT (s9) beyond reach become the inverted compare over a `j limm`.
 * - A branch with a delay slot (`.d`) moves with its slot instruction; beyond reach an
 *   unconditional one becomes "slot instruction, then the plain jump/call"; a conditional one is
 *   refused (the condition is evaluated before the slot instruction runs).
 * - PCL-relative operands become limms: `ld r, [pcl, s9]` -> `ld r, [limm]`, `ld_s r, [pcl, u10]`
 *   -> `ld r, [limm]`, `op a, pcl, c` -> `op a, limm, c` with limm = the original PCL.
 * - LP (zero-overhead loop set-up) and BI/BIH (inline branch tables) are refused.
 */
export class ArcRelocator implements InstructionRelocator {
  relocate(instructions: readonly DecodedInstruction[], newAddress: number, options?: RelocationOptions): Relocation {
    const chunks: Uint8Array[] = [];
    const notes: string[] = [];
    let at = newAddress;
    let falls = true;
    const emit = (b: Uint8Array): void => {
      chunks.push(b);
      at += b.length;
    };
    for (let i = 0; i < instructions.length; i++) {
      const insn = instructions[i]!;
      const next = instructions[i + 1];
      if (next && next.address !== insn.address + insn.length) {
        throw new Error(`relocate: instructions are not consecutive at 0x${insn.address.toString(16)}`);
      }
      if (insn.delaySlot) {
        if (!next)
          return refuse(
            insn,
            'unsplittable',
            'its delay-slot instruction lies outside the relocated range; patch before the branch or after its slot',
          );
        if (next.readsPc || next.delaySlot || (next.kind !== 'plain' && next.kind !== 'system')) {
          return refuse(next, 'unsplittable', 'a delay slot must hold a plain, position-independent instruction');
        }
        const r = this.delayed(insn, next, at, options);
        if (!r.ok) return r;
        emit(r.bytes);
        if (insn.kind === 'call' || insn.kind === 'indirectCall') notes.push(linkNote(insn));
        falls = fallsThrough(insn);
        i++;
        continue;
      }
      const r = this.one(insn, at, options);
      if (!r.ok) return r;
      if (insn.kind === 'call' || insn.kind === 'indirectCall') notes.push(linkNote(insn));
      emit(r.bytes);
      falls = fallsThrough(insn);
    }
    return { ok: true, bytes: concatBytes(chunks), fallsThrough: falls, notes };
  }

  private one(insn: DecodedInstruction, at: number, options: RelocationOptions | undefined): Relocation {
    const ok = (bytes: Uint8Array): Relocation => ({ ok: true, bytes, fallsThrough: true, notes: [] });
    if (!insn.readsPc) return ok(insn.bytes);
    if (insn.kind === 'loop')
      return refuse(
        insn,
        'loop',
        'sets up a zero-overhead loop (LP_START/LP_END are absolute); patch outside the loop',
      );
    if (insn.kind === 'tableBranch')
      return refuse(insn, 'tableBranch', 'branches into the table that follows it; patch outside the switch');
    const target = insn.target;
    if ((insn.kind === 'branch' || insn.kind === 'condBranch' || insn.kind === 'call') && target !== undefined) {
      if (landsInsidePatch(target, options))
        return refuse(insn, 'branchIntoPatch', `its target 0x${target.toString(16)} lies inside the patched bytes`);
      return ok(this.branch(insn, at, target, false));
    }
    if (insn.mnemonic === 'ei_s')
      return refuse(insn, 'pcOperand', 'executes an EI-table instruction as if at its own address; patch elsewhere');
    const rewritten = pclOperandRewrite(insn);
    return rewritten
      ? ok(rewritten)
      : refuse(insn, 'pcOperand', 'reads PCL in a form that is not rewritten; patch elsewhere');
  }

  /** A branch and its delay-slot instruction. */
  private delayed(
    insn: DecodedInstruction,
    slot: DecodedInstruction,
    at: number,
    options: RelocationOptions | undefined,
  ): Relocation {
    const ok = (bytes: Uint8Array): Relocation => ({ ok: true, bytes, fallsThrough: true, notes: [] });
    if (!insn.readsPc) return ok(concatBytes([insn.bytes, slot.bytes])); // J.D [reg], JL.D [reg], J_S.D [blink]
    const target = insn.target!;
    if (landsInsidePatch(target, options))
      return refuse(insn, 'branchIntoPatch', `its target 0x${target.toString(16)} lies inside the patched bytes`);
    const inRange = this.branch(insn, at, target, true);
    if (inRange.length > 0) return ok(concatBytes([inRange, slot.bytes]));
    if (insn.kind === 'condBranch' || conditionOf(insn) !== 0) {
      return refuse(
        insn,
        'outOfRange',
        `a conditional branch with a delay slot cannot reach 0x${target.toString(16)} from 0x${at.toString(16)}`,
      );
    }
    // Unconditional: the slot instruction ran before the transfer anyway.
    return ok(concatBytes([slot.bytes, this.branch(insn, at + slot.length, target, false)]));
  }

  /**
   * Re-encodes a direct branch/call at `at`. With `keepDelay` it only uses the same form with its
   * .d bit and returns an empty array when that is out of reach.
   */
  private branch(insn: DecodedInstruction, at: number, target: number, keepDelay: boolean): Uint8Array {
    const fromPcl = target - ((at & ~3) >>> 0);
    const delay = keepDelay && insn.delaySlot === true;
    const isBrcc = insn.mnemonic.startsWith('br') || insn.mnemonic.startsWith('bbit');
    if (isBrcc) return brcc(insn, at, target, delay);
    const cond = conditionOf(insn);
    const link = insn.kind === 'call';
    if (link) {
      if (target % 4 === 0 && fitsSigned(fromPcl, cond === 0 ? 25 : 21))
        return cond === 0 ? encodeBl(at, target, delay) : encodeBlcc(cond, at, target, delay);
      return keepDelay ? new Uint8Array(0) : encodeJl(target, cond);
    }
    if (fitsSigned(fromPcl, cond === 0 ? 25 : 21))
      return cond === 0 ? encodeB(at, target, delay) : encodeBcc(cond, at, target, delay);
    return keepDelay ? new Uint8Array(0) : encodeJ(target, cond);
  }
}

function linkNote(insn: DecodedInstruction): string {
  return `${insn.mnemonic} at 0x${insn.address.toString(16)}: BLINK now points into the trampoline`;
}

/** 16-bit Bcc_S conditions (bits 8:6) as 5-bit ARC condition codes: gt ge lt le hi hs(nc) lo(c) ls. */
const bccSConditions = [9, 10, 11, 12, 13, 6, 5, 14];

/** The 5-bit condition of a direct branch/call or conditional jump (0 = always). */
export function conditionOf(insn: DecodedInstruction): number {
  const hw = insn.bytes[0]! | (insn.bytes[1]! << 8);
  const major = hw >> 11;
  if (insn.length === 2 || insn.length === 6) {
    if (major === 0x1e) {
      const sel = (hw >> 9) & 3;
      return sel === 0 ? 0 : sel === 1 ? 1 : sel === 2 ? 2 : bccSConditions[(hw >> 6) & 7]!;
    }
    if (insn.mnemonic === 'jeq_s') return 1;
    if (insn.mnemonic === 'jne_s') return 2;
    return 0;
  }
  const w = arcWord(insn.bytes);
  if (major === 0) return w & 0x10000 ? 0 : w & 0x1f;
  if (major === 1) return w & 0x10000 || w & 0x20000 ? 0 : w & 0x1f;
  const f = generalFields(w);
  return f.p === 3 ? w & 0x1f : 0;
}

function fallsThrough(insn: DecodedInstruction): boolean {
  return kindFallsThrough(insn.kind) || conditionOf(insn) !== 0;
}

/** BRcc/BBIT (and BREQ_S/BRNE_S): same compare at `at`, or the inverted compare over `j limm`. */
function brcc(insn: DecodedInstruction, at: number, target: number, delay: boolean): Uint8Array {
  const fits = (from: number, to: number): boolean => fitsSigned(to - ((from & ~3) >>> 0), 9);
  if (insn.length === 2) {
    // BREQ_S/BRNE_S b, 0, s8 -> BREQ/BRNE b, 0 (u6), s9
    const hw = insn.bytes[0]! | (insn.bytes[1]! << 8);
    const b = compactRegister((hw >> 8) & 7);
    const cc = hw & 0x80 ? 1 : 0;
    if (fits(at, target)) return encodeBrcc(cc, b, { u6: 0 }, at, target);
    return concatBytes([encodeBrcc(cc ^ 1, b, { u6: 0 }, at, at + 4 + 8), encodeJ(target)]);
  }
  // 32-bit: keep every field (operands, limm, .t hint) and rewrite the offset (and condition).
  const w = arcWord(insn.bytes);
  const limm = insn.length === 8 ? insn.bytes.subarray(4, 8) : new Uint8Array(0);
  const withOffset = (from: number, to: number, invert: boolean): Uint8Array => {
    const off = to - ((from & ~3) >>> 0);
    let v = (w & ~((0x7f << 17) | 0x8000 | 0x20)) >>> 0;
    v |= (((off >> 1) & 0x7f) << 17) | (((off >> 8) & 1) << 15) | (delay ? 0x20 : 0);
    if (invert) v ^= 1; // breq<->brne, brlt<->brge, brlo<->brhs, bbit0<->bbit1
    return concatBytes([arcWordBytes(v >>> 0), limm]);
  };
  if (fits(at, target)) return withOffset(at, target, false);
  if (delay) return new Uint8Array(0);
  return concatBytes([withOffset(at, at + insn.length + 8, true), encodeJ(target)]);
}

/** Replaces PCL operands with a limm holding the original PCL; undefined when that is impossible. */
function pclOperandRewrite(insn: DecodedInstruction): Uint8Array | undefined {
  const pcl = (insn.address & ~3) >>> 0;
  const hw = insn.bytes[0]! | (insn.bytes[1]! << 8);
  const major = hw >> 11;
  if (insn.length === 2 || insn.length === 6) {
    // LD_S b, [pcl, u10] -> LD b, [limm]
    if (major === 0x1a && insn.target !== undefined)
      return encodeLd(compactRegister((hw >> 8) & 7), { limm: insn.target });
    return undefined;
  }
  const w = arcWord(insn.bytes);
  const f = generalFields(w);
  const hasLimm = insn.length === 8;
  const bToLimm = (v: number): number => ((v & ~0x07007000) | 0x06007000) >>> 0;
  const cToLimm = (v: number): number => ((v & ~0xfc0) | (LIMM_REG << 6)) >>> 0;
  if (major === 2 && insn.target !== undefined) {
    // LD a, [pcl, s9] -> LD a, [limm] (s9 = 0): the same size, extension and cache bits.
    return concatBytes([arcWordBytes(bToLimm((w & ~0x00ff8000) >>> 0)), arcWordBytes(insn.target)]);
  }
  if (major === 3) {
    if (insn.target === undefined || hasLimm || ((w & 1) === 0 && f.c === PCL_REG)) return undefined;
    return concatBytes([arcWordBytes(bToLimm((w & ~0x00ff8000) >>> 0)), arcWordBytes(insn.target)]);
  }
  if (major < 4) return undefined;
  if (hasLimm) {
    // ADD/SUB a, pcl, limm (flags untouched): the result is a constant -> MOV a, limm.
    const addSub = major === 4 && (f.op === 0 || f.op === 2) && f.b === PCL_REG && f.p === 0 && (w & 0x8000) === 0;
    if (!addSub || insn.target === undefined) return undefined;
    return f.a === LIMM_REG ? new Uint8Array(0) : encodeMovLimm(f.a, insn.target);
  }
  // General formats: b is a pure source only in the a,b,c (P=0) and a,b,u6 (P=1) forms (and LD a,[b,c]).
  const cReg = cIsRegister(f, w);
  const ldRegister = f.major === 4 && f.op >= 0x30 && f.op <= 0x37;
  let v = w;
  if (f.b === PCL_REG && bIsSource(f)) {
    if (f.p > 1 && !ldRegister) return undefined;
    v = bToLimm(v);
  }
  if (cReg && f.c === PCL_REG) v = cToLimm(v);
  if (v === w) return undefined;
  return concatBytes([arcWordBytes(v), arcWordBytes(pcl)]);
}
