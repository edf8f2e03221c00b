import { concatBytes, type DecodedInstruction } from '../codec';
import type { FunctionCode, PatchSite } from '../../probe/injection/types';
import { immI, rvWord } from './rvDecoder';
import { EXIT_FRAME, EXIT_RA, exitSlot } from './trampolineRv32Kept';
import { Reg, rvAddi, rvJalr, rvLw, rvSw, type Rv32Assembler } from './trampolineRv32Isa';

/**
 * picolibc's -msave-restore millicode on RV32 (docs/design.md, "Millicode"):
 * - `__riscv_save_N` is called with `jal t0` from a function's prologue and returns with `jr t0`;
 *   ra and the prologue's arguments a0-a7 are live across it. Its entry stub keeps ra in a frame
 *   while t0 plays ra's part for the shared entry routine, and its exit stub returns through t0 and
 *   gives every register back (CXT in trampolineRv32Runtime.ts);
 * - `__riscv_restore_N` is reached by a tail jump from an epilogue: straight-line loads of the
 *   s-registers and ra, sp adjustments, `ret`. Its entry stub hooks the stack word ra is loaded
 *   from (`returnSlot`): it pushes the word on the shadow stack and writes the exit stub there;
 * - the labels are aliases at entry points into shared code, so `__riscv_restore_10`'s entry is also
 *   reached by falling through from `__riscv_restore_12`: that code is sent to a folded copy of
 *   the rest of the epilogue (`foldedEpilogue`), which runs as many instructions as it replaces.
 */

const { zero: X0, ra: RA, sp: SP, t0: T0 } = Reg;

type EpilogueStep = { op: 'load'; rd: number; offset: number } | { op: 'sp'; imm: number } | { op: 'ret' };

/** One instruction of a restore epilogue, or undefined for anything else. */
function stepOf(insn: DecodedInstruction): EpilogueStep | undefined {
  if (insn.kind === 'return' && insn.length === 2) {
    const hw = insn.bytes[0]! | (insn.bytes[1]! << 8);
    return ((hw >> 7) & 0x1f) === RA ? { op: 'ret' } : undefined; // c.jr ra
  }
  if (insn.length === 2) {
    const hw = insn.bytes[0]! | (insn.bytes[1]! << 8);
    const q = hw & 3;
    const f3 = hw >> 13;
    const rd = (hw >> 7) & 0x1f;
    if (q === 2 && f3 === 2 && rd !== 0) {
      // C.LWSP: uimm[5] = 12, uimm[4:2] = 6:4, uimm[7:6] = 3:2
      const offset = (((hw >> 12) & 1) << 5) | (((hw >> 4) & 7) << 2) | (((hw >> 2) & 3) << 6);
      return { op: 'load', rd, offset };
    }
    if (q === 1 && f3 === 3 && rd === SP) {
      // C.ADDI16SP: nzimm[9] = 12, [4] = 6, [6] = 5, [8:7] = 4:3, [5] = 2
      const raw =
        (((hw >> 12) & 1) << 9) |
        (((hw >> 6) & 1) << 4) |
        (((hw >> 5) & 1) << 6) |
        (((hw >> 3) & 3) << 7) |
        (((hw >> 2) & 1) << 5);
      return { op: 'sp', imm: (raw << 22) >> 22 };
    }
    if (q === 1 && f3 === 0 && rd === SP) {
      const raw = (((hw >> 12) & 1) << 5) | ((hw >> 2) & 0x1f);
      return { op: 'sp', imm: (raw << 26) >> 26 };
    }
    return undefined;
  }
  const w = rvWord(insn.bytes);
  const rd = (w >> 7) & 0x1f;
  const rs1 = (w >> 15) & 0x1f;
  const f3 = (w >> 12) & 7;
  if ((w & 0x7f) === 0x03 && f3 === 2 && rs1 === SP && rd !== 0) return { op: 'load', rd, offset: immI(w) };
  if ((w & 0x7f) === 0x13 && f3 === 0 && rd === SP && rs1 === SP) return { op: 'sp', imm: immI(w) };
  if ((w & 0x7f) === 0x67 && rd === 0 && rs1 === RA && immI(w) === 0) return { op: 'ret' };
  return undefined;
}

/** The steps from `from` to the return, or why the code is not such an epilogue. */
function epilogue(fn: FunctionCode, from: number): { steps: EpilogueStep[]; insns: DecodedInstruction[] } | string {
  const start = fn.instructions.findIndex((i) => i.address === from);
  if (start < 0) return `no instruction of ${fn.name} starts at 0x${from.toString(16)}`;
  const steps: EpilogueStep[] = [];
  const insns: DecodedInstruction[] = [];
  for (const insn of fn.instructions.slice(start)) {
    const s = stepOf(insn);
    if (!s || (s.op === 'load' && s.rd === SP))
      return (
        `${insn.mnemonic} at 0x${insn.address.toString(16)} is not an sp-relative load, an sp ` +
        `adjustment or the return`
      );
    steps.push(s);
    insns.push(insn);
    if (s.op === 'ret') return { steps, insns };
  }
  return `${fn.name} does not reach its return in straight-line code`;
}

/** InjectionArch.returnSlot: the offset from sp at `from` of the word the epilogue loads ra from. */
export function rv32ReturnSlot(fn: FunctionCode, from: number): { offset: number; load: DecodedInstruction } | string {
  const e = epilogue(fn, from);
  if (typeof e === 'string') return e;
  let delta = 0;
  let slot: { offset: number; load: DecodedInstruction } | undefined;
  e.steps.forEach((s, k) => {
    if (s.op === 'sp') delta += s.imm;
    else if (s.op === 'load' && s.rd === RA) slot = { offset: delta + s.offset, load: e.insns[k]! };
  });
  return slot ?? `${fn.name} returns without loading ra from the stack`;
}

/**
 * InjectionArch.foldedEpilogue: the epilogue from `from` through its return with its first sp
 * adjustment added to the loads after it and to the next adjustment (4-byte encodings). One
 * instruction fewer than the original, so with the jump into it the count is the original's. The
 * stack pointer stays lower for longer, which keeps the frame's words above it until they are read.
 */
export function rv32FoldedEpilogue(fn: FunctionCode, from: number): Uint8Array | string {
  const e = epilogue(fn, from);
  if (typeof e === 'string') return e;
  const first = e.steps.findIndex((s) => s.op === 'sp');
  const second = e.steps.findIndex((s, k) => k > first && s.op === 'sp');
  if (first < 0 || second < 0)
    return `its code from 0x${from.toString(16)} adjusts sp fewer than twice, so no adjustment can be folded`;
  const fold = (e.steps[first] as { imm: number }).imm;
  const out: Uint8Array[] = [];
  e.steps.forEach((s, k) => {
    const pending = k > first && k < second ? fold : 0;
    if (s.op === 'load') out.push(rvLw(s.rd, SP, s.offset + pending));
    else if (s.op === 'sp' && k !== first) out.push(rvAddi(SP, SP, s.imm + (k === second ? fold : 0)));
    else if (s.op === 'ret') out.push(rvJalr(X0, RA, 0));
  });
  return concatBytes(out);
}

/** Instructions in a folded copy of `bytes` (all 4-byte). */
export const foldedInstructions = (bytes: Uint8Array): number => bytes.length / 4;

// ---- the t0 link ---------------------------------------------------------------------------------

/** The link frame of a t0-linked entry: ra's value, 16 bytes like the psABI's frames. */
const LINK_FRAME = 16;

/**
 * First in a t0-linked entry stub, before anything else moves sp: keep ra, and let ra carry the
 * return address (t0) into the shared entry routine. Returns the instructions.
 */
export function linkEntrySave(a: Rv32Assembler, site: PatchSite | undefined): number {
  if (site?.link !== T0) return 0;
  a.i(rvAddi(SP, SP, -LINK_FRAME))
    .i(rvSw(RA, SP, 0))
    .i(rvAddi(RA, T0, 0));
  return 3;
}

/**
 * In the window, once t0 is free (after `csrw mstatus, t0`) and the kept registers' frame is
 * gone: t0 = the exit stub (ra, as the entry routine left it), ra back, the frame popped.
 * Returns the instructions (counted: they run inside the window).
 */
export function linkEntryRestore(a: Rv32Assembler, site: PatchSite | undefined): number {
  if (site?.link !== T0) return 0;
  a.i(rvAddi(T0, RA, 0))
    .i(rvLw(RA, SP, 0))
    .i(rvAddi(SP, SP, LINK_FRAME));
  return 3;
}

/**
 * A t0-linked exit stub, reached by `jr t0`: t0 is free (its value was the exit stub's address),
 * so the counter goes there; ra and t1 are stored for the routine, which stores the rest.
 */
export function linkExitStub(a: Rv32Assembler, readCounter: (rd: number) => Uint8Array): void {
  a.i(readCounter(T0))
    .i(rvAddi(SP, SP, -EXIT_FRAME))
    .i(rvSw(RA, SP, EXIT_RA))
    .i(rvSw(Reg.t1, SP, exitSlot(Reg.t1)));
}
