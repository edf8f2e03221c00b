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
import { cbRegister, immI, rvWord } from './rvDecoder';
import {
  RA,
  ZERO,
  encodeAuipc,
  encodeBranch,
  encodeCJ,
  encodeJal,
  encodeJalr,
  encodeLoadImmediate,
  invertBranch,
  splitHiLo,
  word32,
  type BranchCondition,
  type RvRegister,
} from './rvEncoder';

/**
 * Moves RV32IMC instructions to a trampoline. Only AUIPC and the direct jumps/branches read the
 * PC; everything else (JALR, C.JR, C.JALR, loads, CSR access, MRET ...) moves verbatim.
 *
 * - AUIPC rd becomes LUI+ADDI of the value it computed, which is exact wherever its user runs;
 *   when the next instruction consumes and overwrites rd (`auipc rd; addi/lw/jalr rd, lo(rd)`,
 *   the `la`/`lw sym`/`call` idioms) the pair is re-derived as AUIPC+use at the new address.
 * - JAL/C.J/C.JAL re-encode to the same absolute target; beyond JAL's +/-1 MiB a linking jump uses
 *   its own link register as the AUIPC temporary, a plain jump needs `options.scratch`.
 * - Bcc/C.BEQZ/C.BNEZ re-encode, or become an inverted branch over a (far) jump.
 */
export class Rv32Relocator implements InstructionRelocator {
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
      falls = kindFallsThrough(insn.kind);
      if (!insn.readsPc) {
        if (insn.kind === 'indirectCall')
          notes.push(
            `${insn.mnemonic} at 0x${insn.address.toString(16)}: the link register now points into the trampoline`,
          );
        emit(insn.bytes);
        continue;
      }
      const target = insn.target!;
      if (insn.mnemonic === 'auipc') {
        const w = rvWord(insn.bytes);
        const rd = (w >> 7) & 0x1f;
        if (rd === ZERO) {
          emit(insn.bytes); // a HINT: no architectural effect
          continue;
        }
        const pair = next ? fusedPair(rd, target, next, at) : undefined;
        if (pair && next!.mnemonic === 'jalr' && landsInsidePatch(pair.final, options)) {
          return refuse(
            next!,
            'branchIntoPatch',
            `its target 0x${(pair.final >>> 0).toString(16)} lies inside the patched bytes`,
          );
        }
        if (pair) {
          emit(pair.bytes);
          i++;
          falls = kindFallsThrough(next!.kind);
          continue;
        }
        emit(encodeLoadImmediate(rd, target));
        continue;
      }
      if (landsInsidePatch(target, options))
        return refuse(insn, 'branchIntoPatch', `its target 0x${target.toString(16)} lies inside the patched bytes`);
      let code: Uint8Array | string;
      switch (insn.mnemonic) {
        case 'jal':
        case 'c.j':
        case 'c.jal': {
          const rd = insn.mnemonic === 'c.j' ? ZERO : insn.mnemonic === 'c.jal' ? RA : (rvWord(insn.bytes) >> 7) & 0x1f;
          code = jumpTo(rd, target, at, options?.scratch);
          if (rd !== ZERO)
            notes.push(
              `${insn.mnemonic} at 0x${insn.address.toString(16)}: the link register now points into the trampoline`,
            );
          break;
        }
        case 'c.beqz':
        case 'c.bnez': {
          const hw = insn.bytes[0]! | (insn.bytes[1]! << 8);
          code = branchTo(
            insn.mnemonic === 'c.beqz' ? 'beq' : 'bne',
            cbRegister(hw),
            ZERO,
            target,
            at,
            options?.scratch,
          );
          break;
        }
        default: {
          const w = rvWord(insn.bytes);
          code = branchTo(
            insn.mnemonic as BranchCondition,
            (w >> 15) & 0x1f,
            (w >> 20) & 0x1f,
            target,
            at,
            options?.scratch,
          );
        }
      }
      if (typeof code === 'string')
        return refuse(insn, code === 'needsScratch' ? 'needsScratch' : 'outOfRange', farReason(target, at));
      emit(code);
    }
    return { ok: true, bytes: concatBytes(chunks), fallsThrough: falls, notes };
  }
}

function farReason(target: number, at: number): string {
  return (
    `its target 0x${target.toString(16)} is beyond JAL's +/-1 MiB from 0x${at.toString(16)} and ` +
    `no scratch register was offered`
  );
}

/**
 * AUIPC rd + a use that reads rd as its base and writes rd: re-derive both at `at` so the use sees
 * the same final address. Returns undefined when the follower is not such a use.
 */
function fusedPair(
  rd: RvRegister,
  auipcValue: number,
  use: DecodedInstruction,
  at: number,
): { bytes: Uint8Array; final: number } | undefined {
  if (use.length !== 4 || !['addi', 'lw', 'jalr'].includes(use.mnemonic)) return undefined;
  const w = rvWord(use.bytes);
  if (((w >> 15) & 0x1f) !== rd || ((w >> 7) & 0x1f) !== rd) return undefined;
  const final = (auipcValue + immI(w)) | 0;
  const { hi, lo } = splitHiLo(final - at);
  const rewritten = (w & 0x000fffff) | ((lo & 0xfff) << 20);
  return { bytes: concatBytes([encodeAuipc(rd, hi), word32(rewritten)]), final: final >>> 0 };
}

/** A jump (rd = x0) or call (rd = link) to an absolute target from `at`. */
function jumpTo(rd: RvRegister, target: number, at: number, scratch: number | undefined): Uint8Array | 'needsScratch' {
  const off = target - at;
  if (rd === ZERO && fitsSigned(off, 12)) return encodeCJ(at, target);
  if (fitsSigned(off, 21)) return encodeJal(rd, at, target);
  // AUIPC t, %hi; JALR rd, %lo(t). A linking jump overwrites rd anyway, so rd is the temporary.
  const temp = rd !== ZERO ? rd : scratch;
  if (temp === undefined || temp === ZERO) return 'needsScratch';
  const { hi, lo } = splitHiLo(off);
  return concatBytes([encodeAuipc(temp, hi), encodeJalr(rd, temp, lo)]);
}

function branchTo(
  cond: BranchCondition,
  rs1: RvRegister,
  rs2: RvRegister,
  target: number,
  at: number,
  scratch: number | undefined,
): Uint8Array | 'needsScratch' {
  if (fitsSigned(target - at, 13)) return encodeBranch(cond, rs1, rs2, at, target);
  // B<!cond> rs1, rs2, over; <jump to target>; over:
  const jump = jumpTo(ZERO, target, at + 4, scratch);
  if (typeof jump === 'string') return jump;
  return concatBytes([encodeBranch(invertBranch[cond], rs1, rs2, at, at + 4 + jump.length), jump]);
}
