import type { PatchSite } from '../../probe/injection/types';
import { Reg, TEMPORARIES, mask, rvAddi, rvLw, rvSw, type Rv32Assembler } from './trampolineRv32Isa';

/**
 * Registers that callers keep across a call (-fipa-ra: a caller may keep a value in a
 * caller-saved register the callee never writes; adapter/probe/injection/keptRegisters.ts finds
 * them). The function stubs use t0-t6 at entry and t0-t6, a2-a5 at exit; these helpers give back
 * the ones a caller keeps, on the program's stack:
 * - the stack below sp is free at a function's entry and after its return (the psABI's frame is
 *   above sp), and an interrupt handler pushes below the current sp, so a frame is reserved with
 *   `addi sp` before anything is stored in it and given back after the last load;
 * - the entry frame lives from the stub's first instruction until right after the counter window
 *   opens (the registers the window's own instructions need come back last, inside the window);
 * - the exit frame lives from the first instruction after the counter read to the jump to the real
 *   return address. At the exit stub ra is free: the caller's call wrote it, and the exit routine
 *   sets it to the real return address again, so the counter is read into ra and nothing is
 *   stored before the window closes.
 */

const { sp: SP, ra: RA, t0: T0, t1: T1, t2: T2, t3: T3, t4: T4, t5: T5, t6: T6, a2: A2, a3: A3, a4: A4, a5: A5 } = Reg;

/** Registers the entry stub and the entry routine overwrite. */
const ENTRY_USES = TEMPORARIES;
/** Registers the exit routine and the accumulation overwrite (ra is set to the return address). */
export const EXIT_USES = (TEMPORARIES | mask(A2, A3, A4, A5)) >>> 0;
/** The entry registers still needed once the counter window opens: mstatus, record, depth, value. */
const IN_WINDOW = mask(T0, T1, T2, T3);

/** The exit frame: every register of EXIT_USES, one slot each (16-byte aligned like the psABI's). */
const EXIT_ORDER: number[] = [T0, T1, T2, T3, T4, T5, T6, A2, A3, A4, A5];
export const EXIT_FRAME = 48;
export const exitSlot = (r: number): number => 4 * EXIT_ORDER.indexOf(r);
/** Slot of ra in the exit frame of a t0-linked function (millicode, trampolineRv32Millicode.ts): past the others. */
export const EXIT_RA = 4 * EXIT_ORDER.length;

const regsOf = (m: number): number[] => Array.from({ length: 32 }, (_, r) => r).filter((r) => (m & (1 << r)) !== 0);

/** `x5, x7` for a register mask. */
export const regNames = (m: number): string =>
  regsOf(m)
    .map((r) => `x${r}`)
    .join(', ');

/** The entry registers callers keep, in slot order. */
export class EntryFrame {
  readonly regs: number[];
  readonly size: number;

  constructor(site: PatchSite | undefined) {
    this.regs = regsOf((site?.keptRegisters ?? 0) & ENTRY_USES);
    this.size = this.regs.length ? (4 * this.regs.length + 15) & ~15 : 0;
  }

  private slot(r: number): number {
    return 4 * this.regs.indexOf(r);
  }

  private get late(): number[] {
    return this.regs.filter((r) => (IN_WINDOW & (1 << r)) !== 0);
  }

  /** First in the stub, before t3 is loaded: reserve the frame and store. Returns the instructions. */
  save(a: Rv32Assembler): number {
    if (!this.size) return 0;
    a.i(rvAddi(SP, SP, -this.size));
    for (const r of this.regs) a.i(rvSw(r, SP, this.slot(r)));
    return 1 + this.regs.length;
  }

  /** After the entry routine: the registers the window does not need (and the frame, when that is all). */
  restoreEarly(a: Rv32Assembler): void {
    if (!this.size) return;
    for (const r of this.regs.filter((x) => (IN_WINDOW & (1 << x)) === 0)) a.i(rvLw(r, SP, this.slot(r)));
    if (this.late.length === 0) a.i(rvAddi(SP, SP, this.size));
  }

  /** Right after the window's csrw mstatus: the rest, and the frame. Returns the instructions (counted). */
  restoreInWindow(a: Rv32Assembler): number {
    const late = this.late;
    if (late.length === 0) return 0;
    for (const r of late) a.i(rvLw(r, SP, this.slot(r)));
    a.i(rvAddi(SP, SP, this.size));
    return late.length + 1;
  }

  describe(): string {
    return regNames(mask(...this.regs));
  }
}

/** Whether the exit stub must give registers back: some caller of some function on the record keeps one. */
export function exitKeeps(kept: number): boolean {
  return (kept & EXIT_USES) !== 0;
}

/**
 * The exit stub before it jumps to the saving exit routine (`jal x0`): reads the counter into ra,
 * reserves the frame and frees t1 for the record's address. The routine stores the rest.
 */
export function exitStubSave(a: Rv32Assembler, readCounter: (rd: number) => Uint8Array): void {
  a.i(readCounter(RA))
    .i(rvAddi(SP, SP, -EXIT_FRAME))
    .i(rvSw(T1, SP, exitSlot(T1)));
}

/** First in the saving exit routine: the registers it overwrites (t1 is stored), and t3 = the counter value. */
export function exitRoutineSave(a: Rv32Assembler): void {
  for (const r of EXIT_ORDER) if (r !== T1) a.i(rvSw(r, SP, exitSlot(r)));
  a.i(rvAddi(T3, RA, 0));
}

/** Last in the saving exit routine, after mstatus is restored and before the jump through ra. */
export function exitRoutineRestore(a: Rv32Assembler): void {
  for (const r of EXIT_ORDER) a.i(rvLw(r, SP, exitSlot(r)));
  a.i(rvAddi(SP, SP, EXIT_FRAME));
}

/**
 * First in the t0-linked exit routine (CXT): the exit stub read the counter into t0 and stored ra
 * and t1; the routine stores the rest, and t3 = the counter value.
 */
export function exitRoutineSaveLink(a: Rv32Assembler): void {
  for (const r of EXIT_ORDER) if (r !== T1 && r !== T0) a.i(rvSw(r, SP, exitSlot(r)));
  a.i(rvAddi(T3, T0, 0));
}

/** Last in CXT, before `jr t0`: t0 = the return address (ra, popped), every register back, ra too. */
export function exitRoutineRestoreLink(a: Rv32Assembler): void {
  a.i(rvAddi(T0, RA, 0));
  for (const r of EXIT_ORDER) if (r !== T0) a.i(rvLw(r, SP, exitSlot(r)));
  a.i(rvLw(RA, SP, EXIT_RA)).i(rvAddi(SP, SP, EXIT_FRAME));
}

/**
 * Far exits of a function's entry stub (the jump back, displaced branches): t4-t6, then other
 * registers dead at the entry (the planner's `freeRegisters`, which leaves out what callers keep).
 * t0-t3 still hold the window's values when the exit registers are loaded.
 */
export function entryExitCandidates(site: PatchSite | undefined): number[] {
  if (!site) return [T4, T5, T6];
  const order = [T4, T5, T6, Reg.a7, Reg.a6, A5, A4, A3, A2, Reg.a1, Reg.a0];
  return order.filter((r) => (site.freeRegisters & (1 << r)) !== 0);
}
