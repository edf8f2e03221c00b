import { decodeAll, fitsSigned, type DecodedInstruction } from '../codec';
import { InjectionRefusedError, hex, refusal } from '../../probe/injection/errors';
import { reachableDisplaced } from '../../probe/injection/planner';
import type { PatchSite } from '../../probe/injection/types';
import { Rv32Codec, cbRegister, rvWord } from './rvDecoder';
import { encodeJal, splitHiLo } from './rvEncoder';
import { Rv32Relocator } from './rvRelocator';
import { mask, Rv32Assembler, rvAddi, rvJalr, rvLui, rvRegisterEffects, Reg } from './trampolineRv32Isa';

const { zero: X0, ra: RA, t0: T0, t1: T1, t2: T2, t3: T3, t4: T4, t5: T5, t6: T6 } = Reg;

/** Far exits of a stub: the register holding each target's upper bits. */
export interface ExitPlan {
  resume: number;
  regs: Map<number, number>;
  /** Registers the displaced code reads: loaded right before their jump, after that code. */
  late: Set<number>;
  /**
   * Displaced AUIPCs whose LUI half is emitted before the window opens (function entries only):
   * in the window the AUIPC is replaced one for one by the ADDI half, so it costs no payload.
   */
  hoisted: Map<number, { rd: number; hi: number; lo: number }>;
}

/**
 * The program's instructions a patch displaced, moved into a stub (relocated by Rv32Relocator),
 * and the ways out of the stub: the jump back to the resume point and the exits of displaced
 * conditional branches, through a register loaded before the window opens when a `jal` cannot reach.
 */
export class Rv32DisplacedCode {
  private readonly codec = new Rv32Codec();
  private readonly relocator = new Rv32Relocator();

  /**
   * Where the displaced code can leave the stub: the resume point after it, and the targets of
   * conditional branches among it. Each far exit gets a register loaded (with `lui`, before the
   * counter is read) from `candidates`; near ones use `jal x0`.
   */
  planExits(
    at: number,
    site: PatchSite | undefined,
    resume: number,
    candidates: number[],
    fixed: Record<number, number> = {},
    late: Set<number> = new Set(),
  ): ExitPlan {
    const targets = [resume, ...(site?.displaced.filter((i) => i.kind === 'condBranch').map((i) => i.target!) ?? [])];
    const regs = new Map<number, number>();
    const byHi = new Map<number, number>();
    const free = candidates.filter((r) => !(this.touched(site?.displaced ?? []) & (1 << r)));
    for (const t of targets) {
      if (!this.mayBeFar(at, t) || regs.has(t)) continue;
      const hi = splitHiLo(t).hi;
      const reg = fixed[t] ?? byHi.get(hi) ?? free.shift();
      if (reg === undefined) {
        throw new InjectionRefusedError(
          refusal(
            'noFreeRegister',
            `No register is free to leave the trampoline for ${hex(t)}` +
              `${site ? ` (patch at ${hex(site.address)})` : ''}: ` +
              `the stub is beyond JAL's +/-1 MiB from the code and the displaced instructions use every ` +
              `candidate.`,
            site?.address ?? t,
          ),
        );
      }
      regs.set(t, reg);
      byHi.set(hi, reg);
    }
    return { resume, regs, late, hoisted: new Map() };
  }

  /**
   * At a function's entry an AUIPC rd, with rd no stub register and untouched by the displaced
   * code before it, only defines rd: LUI rd, %hi before the counter read and ADDI rd, %lo in its place.
   * Not when the next displaced instruction consumes it (the relocator keeps such pairs one for one).
   */
  hoistAuipcs(site: PatchSite, plan: ExitPlan): void {
    const live = reachableDisplaced(site.displaced);
    const stubRegs = mask(T0, T1, T2, T3, T4, T5, T6, RA);
    let seen = 0;
    live.forEach((insn, k) => {
      const e = rvRegisterEffects(insn);
      if (insn.mnemonic === 'auipc') {
        const rd = (rvWord(insn.bytes) >> 7) & 0x1f;
        const next = live[k + 1];
        const fused =
          next !== undefined &&
          (rvRegisterEffects(next).uses & (1 << rd)) !== 0 &&
          (rvRegisterEffects(next).defs & (1 << rd)) !== 0 &&
          ['addi', 'lw', 'jalr'].includes(next.mnemonic);
        if (rd !== X0 && !(stubRegs & (1 << rd)) && !(seen & (1 << rd)) && !fused) {
          const { hi, lo } = splitHiLo(insn.target!);
          plan.hoisted.set(insn.address, { rd, hi, lo });
        }
      }
      seen |= e.uses | e.defs;
    });
  }

  /** The `lui` of every far exit (uncounted: emitted before the window opens). */
  loadExits(a: Rv32Assembler, plan: ExitPlan): void {
    const done = new Set<number>();
    for (const [t, reg] of plan.regs) {
      if (done.has(reg) || plan.late.has(reg)) continue;
      a.i(rvLui(reg, splitHiLo(t).hi));
      done.add(reg);
    }
    for (const h of plan.hoisted.values()) a.i(rvLui(h.rd, h.hi));
  }

  /**
   * The displaced instructions, rewritten for the stub. Conditional branches become 4-byte
   * branches to exit jumps after the stub, so either outcome runs exactly one payload jump (the
   * exit or the jump back): the window's payload count does not depend on the branch.
   */
  emitDisplaced(
    a: Rv32Assembler,
    site: PatchSite,
    plan: ExitPlan,
  ): { extra: number; falls: boolean; notes: string[]; exits: Array<{ label: string; target: number }> } {
    const exits: Array<{ label: string; target: number }> = [];
    const notes: string[] = [];
    let extra = 0;
    let falls = true;
    let run: DecodedInstruction[] = [];
    const flush = (): void => {
      if (run.length === 0) return;
      const r = this.relocator.relocate(run, a.pc, {
        patched: { start: site.address, end: site.address + site.shape.length },
        ...this.scratchFor(plan),
      });
      if (!r.ok) throw new InjectionRefusedError(refusal('unrelocatable', `Cannot move ${r.reason}.`, r.address));
      const count = decodeAll(this.codec, r.bytes, a.pc).length;
      a.code(r.bytes, count);
      extra += count - run.length;
      notes.push(...r.notes);
      falls = r.fallsThrough;
      run = [];
    };
    for (const insn of reachableDisplaced(site.displaced)) {
      const h = plan.hoisted.get(insn.address);
      if (h) {
        flush();
        a.i(rvAddi(h.rd, h.rd, h.lo));
        continue;
      }
      if (insn.kind !== 'condBranch') {
        run.push(insn);
        continue;
      }
      flush();
      const label = `TK${exits.length}`;
      exits.push({ label, target: insn.target! });
      const { cond, rs1, rs2 } = branchOperands(insn);
      a.b(cond, rs1, rs2, label);
      falls = true;
    }
    flush();
    return { extra, falls, notes, exits };
  }

  private scratchFor(plan: ExitPlan): { scratch?: number } {
    const r = plan.regs.get(plan.resume) ?? [...plan.regs.values()][0];
    return r !== undefined ? { scratch: r } : {};
  }

  /** Jump to `target`: `jal x0` when in reach, else `jalr x0, %lo(target)` through its exit register. */
  jumpTo(a: Rv32Assembler, target: number, plan: ExitPlan): void {
    if (fitsSigned(target - a.pc, 21)) {
      a.i(encodeJal(X0, a.pc, target));
      return;
    }
    const reg = plan.regs.get(target);
    if (reg === undefined) throw new Error(`no exit register for ${hex(target)}`);
    if (plan.late.has(reg)) a.i(rvLui(reg, splitHiLo(target).hi));
    a.i(rvJalr(X0, reg, splitHiLo(target).lo));
  }

  emitExits(a: Rv32Assembler, exits: Array<{ label: string; target: number }>, plan: ExitPlan): void {
    for (const e of exits) {
      a.label(e.label);
      this.jumpTo(a, e.target, plan);
    }
  }

  /** Whether a `jal` anywhere in a stub at `at` (stubs are < 1 KiB) might not reach `target`. */
  private mayBeFar(at: number, target: number): boolean {
    return !fitsSigned(target - at, 21) || !fitsSigned(target - (at + 1024), 21);
  }

  touched(insns: readonly DecodedInstruction[]): number {
    return insns.reduce((m, x) => {
      const e = rvRegisterEffects(x);
      return (m | e.uses | e.defs) >>> 0;
    }, 0);
  }
}

/** A conditional branch's condition and registers (C.BEQZ/C.BNEZ compare rs1' with x0). */
function branchOperands(insn: DecodedInstruction): {
  cond: 'beq' | 'bne' | 'blt' | 'bge' | 'bltu' | 'bgeu';
  rs1: number;
  rs2: number;
} {
  if (insn.length === 2) {
    const hw = insn.bytes[0]! | (insn.bytes[1]! << 8);
    return { cond: insn.mnemonic === 'c.beqz' ? 'beq' : 'bne', rs1: cbRegister(hw), rs2: X0 };
  }
  const w = rvWord(insn.bytes);
  return { cond: insn.mnemonic as 'beq', rs1: (w >> 15) & 0x1f, rs2: (w >> 20) & 0x1f };
}
