import { fitsSigned } from '../codec';
import type { DispatchEntry, RuntimeImage, RuntimeLayout } from '../../probe/injection/payload';
import { Ctrl, Rec } from '../../probe/injection/recordLayout';
import { exitRoutineRestore, exitRoutineRestoreLink, exitRoutineSave, exitRoutineSaveLink } from './trampolineRv32Kept';
import {
  Rv32Assembler,
  rvAdd,
  rvAddi,
  rvAnd,
  rvAndi,
  rvCsrrci,
  rvCsrw,
  rvEbreak,
  rvJalr,
  rvLoadAddress,
  rvLw,
  rvSlli,
  rvSltu,
  rvSub,
  rvSw,
  Reg,
} from './trampolineRv32Isa';

/** CSRs and bits the payloads use (Privileged ISA 3.1.6.1, 3.1.12). */
export const MSTATUS = 0x300;
export const MSTATUS_MIE = 8;
export const MCOUNTINHIBIT = 0x320;
const {
  zero: X0,
  ra: RA,
  tp: TP,
  t0: T0,
  t1: T1,
  t2: T2,
  t3: T3,
  t4: T4,
  t5: T5,
  t6: T6,
  a2: A2,
  a3: A3,
  a4: A4,
  a5: A5,
} = Reg;

/** Base register + offset through which the control block's fields are reached. */
export interface Base {
  reg: number;
  off: number;
}

/** rd = address: one ADDI from tp when it is in reach, else LUI (+ ADDI). */
export function loadAddress(a: Rv32Assembler, rd: number, address: number, layout: RuntimeLayout): void {
  const tp = layout.threadPointer;
  if (tp !== undefined && fitsSigned(address - tp, 12)) {
    a.i(rvAddi(rd, TP, address - tp));
    return;
  }
  const bytes = rvLoadAddress(rd, address);
  a.code(bytes, bytes.length / 4);
}

/** The control block through tp, or through `scratch` loaded with its address. */
export function ctrlBase(a: Rv32Assembler, scratch: number, layout: RuntimeLayout): Base {
  const tp = layout.threadPointer;
  if (tp !== undefined && fitsSigned(layout.ctrl - tp, 12) && fitsSigned(layout.ctrl + Ctrl.shadow - tp, 12)) {
    return { reg: TP, off: layout.ctrl - tp };
  }
  loadAddress(a, scratch, layout.ctrl, layout);
  return { reg: scratch, off: 0 };
}

/**
 * The routines every RV32 measurement shares, placed once in the reserved memory: the function
 * entry (CE), the software and hardware-gated exits (CX, HX), the pass accumulation (ACC) and, in
 * tp mode, the dispatcher (D) of rewritten 2-byte calls. Each routine's instruction count per path
 * goes into `paths`, from which the stubs state their counted overhead.
 */
export class Rv32Runtime {
  constructor(
    private readonly csr: number,
    private readonly inhibitBit: number,
  ) {}

  build(layout: RuntimeLayout): RuntimeImage {
    const a = new Rv32Assembler(layout.runtime);
    const paths: Record<string, number> = {};
    if (layout.threadPointer !== undefined) {
      if (layout.threadPointer !== layout.runtime) throw new Error('the dispatcher must sit where tp points');
      this.dispatcher(a, layout);
    }
    this.commonEntry(a, layout, paths);
    this.commonExit(a, layout, paths, false);
    this.commonExit(a, layout, paths, true);
    this.commonExit(a, layout, paths, false, true);
    this.commonExit(a, layout, paths, false, true, true);
    this.accumulate(a, paths);
    const bytes = a.bytes();
    const labels: Record<string, number> = {};
    for (const name of ['CE', 'CX', 'HX', 'CXK', 'CXT', 'ACC', 'D']) {
      try {
        labels[name] = a.address(name);
      } catch {
        // the dispatcher exists in tp mode only
      }
    }
    return { address: layout.runtime, bytes, labels, paths };
  }

  /**
   * `c.jalr tp` lands here with ra = call site + 2: find ra in the table of rewritten 2-byte calls
   * and enter that call's stub, passing this path's payload instructions in t3.
   */
  private dispatcher(a: Rv32Assembler, layout: RuntimeLayout): void {
    a.label('D').i(rvAddi(T1, TP, layout.dispatchTable - layout.threadPointer!));
    a.label('D_loop')
      .i(rvLw(T2, T1, 0))
      .i(rvAddi(T1, T1, 12))
      .b('beq', T2, X0, 'D_miss')
      .b('bne', T2, RA, 'D_loop');
    a.i(rvLw(T3, T1, -4))
      .i(rvLw(T2, T1, -8))
      .i(rvJalr(X0, T2, 0));
    // A `c.jalr tp` the service did not write. EBREAK enters debug mode when the debugger set
    // dcsr.ebreakm (OpenOCD does), else it traps to the program's handler: either way it stops here.
    a.label('D_miss').i(rvEbreak());
  }

  dispatchCost(index: number): number {
    // addi, (lw, addi, beq, bne) per entry visited, lw, lw, jalr. The `c.jalr tp` itself stands in
    // for the program's `c.jal`, so it is the program's instruction, not payload.
    return 1 + 4 * (index + 1) + 3;
  }

  dispatchTable(entries: readonly DispatchEntry[], layout: RuntimeLayout): Uint8Array {
    if (entries.length > layout.dispatchCapacity) throw new Error('dispatch table full');
    const b = Buffer.alloc(12 * (layout.dispatchCapacity + 1));
    entries.forEach((e, i) => {
      b.writeUInt32LE(e.returnAddress >>> 0, 12 * i);
      b.writeUInt32LE(e.stub >>> 0, 12 * i + 4);
      b.writeUInt32LE(this.dispatchCost(i), 12 * i + 8);
    });
    return new Uint8Array(b);
  }

  /**
   * Function entry, shared by every measurement. In: t1 = record, ra = the real return address,
   * t3 = payload instructions already run on the way here (patch, dispatcher), link t6.
   * Out: interrupts masked (t0 = old mstatus), t2 = depth before this entry (0: open a pass),
   * ra = the exit stub (or the real return address when the shadow stack is full).
   */
  private commonEntry(a: Rv32Assembler, layout: RuntimeLayout, paths: Record<string, number>): void {
    a.label('CE').i(rvCsrrci(T0, MSTATUS, MSTATUS_MIE));
    const c = ctrlBase(a, T4, layout);
    a.i(rvLw(T2, c.reg, c.off + Ctrl.ssp)).i(rvLw(T5, c.reg, c.off + Ctrl.sslimit));
    a.label('CE_fullbr').b('bgeu', T2, T5, 'CE_full');
    a.i(rvSw(RA, T2, 0))
      .i(rvAddi(T2, T2, 4))
      .i(rvSw(T2, c.reg, c.off + Ctrl.ssp));
    a.i(rvLw(T5, T1, Rec.calls))
      .i(rvAddi(T5, T5, 1))
      .i(rvSw(T5, T1, Rec.calls));
    a.i(rvLw(RA, T1, Rec.exit)); // the function now returns into the exit stub
    a.i(rvLw(T2, T1, Rec.depth))
      .i(rvAddi(T5, T2, 1))
      .i(rvSw(T5, T1, Rec.depth));
    a.i(rvLw(T5, c.reg, c.off + Ctrl.pay)).i(rvAdd(T5, T5, T3));
    a.label('CE_br').b('bne', T2, X0, 'CE_nested');
    a.label('CE_outer')
      .i(rvLw(T3, T1, Rec.costEntryOuter))
      .i(rvAdd(T5, T5, T3))
      .i(rvSw(T5, c.reg, c.off + Ctrl.pay));
    a.i(rvSw(T5, T1, Rec.payStart)).i(rvJalr(X0, T6, 0));
    a.label('CE_nested')
      .i(rvLw(T3, T1, Rec.costEntryNested))
      .i(rvAdd(T5, T5, T3))
      .i(rvSw(T5, c.reg, c.off + Ctrl.pay))
      .i(rvJalr(X0, T6, 0));
    a.label('CE_full')
      .i(rvLw(T5, T1, Rec.untracked))
      .i(rvAddi(T5, T5, 1))
      .i(rvSw(T5, T1, Rec.untracked));
    a.i(rvLw(T5, c.reg, c.off + Ctrl.pay)).i(rvAdd(T5, T5, T3));
    // An untracked entry runs the stub's nested path with this routine's full path instead.
    a.i(rvLw(T3, T1, Rec.costEntryNested)).late(() => rvAddi(T3, T3, paths.CE_full! - paths.CE_nested!));
    a.i(rvAdd(T5, T5, T3))
      .i(rvSw(T5, c.reg, c.off + Ctrl.pay))
      .i(rvAddi(T2, X0, 1))
      .i(rvJalr(X0, T6, 0));
    a.label('CE_end');
    paths.CE_outer = a.between('CE', 'CE_br') + 1 + a.between('CE_outer', 'CE_nested');
    paths.CE_nested = a.between('CE', 'CE_br') + 1 + a.between('CE_nested', 'CE_full');
    paths.CE_full = a.between('CE', 'CE_fullbr') + 1 + a.between('CE_full', 'CE_end');
  }

  /**
   * Function exit, shared. In: t3 = counter value read by the exit stub, t1 = record. Pops the
   * real return address and returns there with interrupts restored. `hardware`: the counter is
   * gated (stopped by the exit stub); a nested exit re-bases and restarts it.
   */
  private commonExit(
    a: Rv32Assembler,
    layout: RuntimeLayout,
    paths: Record<string, number>,
    hardware: boolean,
    keeps = false,
    t0Link = false,
  ): void {
    // `keeps` (CXK): the exit stub read the counter into ra and reserved a frame; the routine gives
    // back every register it uses, for callers that keep values across the call (trampolineRv32Kept.ts).
    // `t0Link` (CXT): millicode linked through t0; the counter is in t0, ra is kept too, and the
    // routine returns through t0 (trampolineRv32Millicode.ts).
    const p = hardware ? 'HX' : t0Link ? 'CXT' : keeps ? 'CXK' : 'CX';
    a.label(p);
    if (t0Link) exitRoutineSaveLink(a);
    else if (keeps) exitRoutineSave(a);
    a.i(rvCsrrci(T0, MSTATUS, MSTATUS_MIE));
    const c = ctrlBase(a, T4, layout);
    a.i(rvLw(T2, T1, Rec.depth))
      .i(rvAddi(T2, T2, -1))
      .i(rvSw(T2, T1, Rec.depth));
    a.i(rvLw(T5, c.reg, c.off + Ctrl.pay));
    a.label(`${p}_br`).b('bne', T2, X0, `${p}_nested`);
    if (hardware) a.i(rvSw(T3, T1, Rec.held)); // what the counter holds until the next pass
    a.jal(T6, 'ACC')
      .i(rvLw(A3, T1, Rec.costExitOuter))
      .jal(X0, `${p}_pay`);
    a.label(`${p}_nested`).i(rvLw(A3, T1, Rec.costExitNested));
    a.label(`${p}_pay`)
      .i(rvAdd(T5, T5, A3))
      .i(rvSw(T5, c.reg, c.off + Ctrl.pay));
    a.i(rvLw(T6, c.reg, c.off + Ctrl.ssp))
      .i(rvLw(A3, c.reg, c.off + Ctrl.ssbase))
      .b('beq', T6, A3, `${p}_under`);
    a.i(rvAddi(T6, T6, -4))
      .i(rvSw(T6, c.reg, c.off + Ctrl.ssp))
      .i(rvLw(RA, T6, 0));
    a.i(rvCsrw(MSTATUS, T0));
    if (hardware) {
      a.label(`${p}_rb`).b('beq', T2, X0, `${p}_ret`);
      a.i(rvCsrw(this.csr, T3)).i(rvCsrrci(X0, MCOUNTINHIBIT, 1 << this.inhibitBit));
    }
    a.label(`${p}_ret`);
    if (t0Link) exitRoutineRestoreLink(a);
    else if (keeps) exitRoutineRestore(a);
    a.i(rvJalr(X0, t0Link ? T0 : RA, 0));
    a.label(`${p}_under`).i(rvEbreak()); // an exit with an empty shadow stack: trap rather than jump anywhere
    const head = a.between(p, `${p}_br`) + 1;
    const tail =
      a.between(`${p}_pay`, hardware ? `${p}_rb` : `${p}_ret`) +
      (hardware ? 1 : 0) +
      a.between(`${p}_ret`, `${p}_under`);
    paths[`${p}_outer`] = head + a.between(`${p}_br`, `${p}_nested`) - 1 + tail; // + ACC, added by the caller
    paths[`${p}_nested`] = head + 1 + tail + (hardware ? 2 : 0);
  }

  /**
   * Closes a pass. In: t1 = record, t3 = counter value at the close, t5 = payload counter. Adds
   * the raw delta to the total and the nested payload instructions to `nested`, and records the
   * pass without them (count, min, max, ring) with straight-line code, so every pass costs the same.
   * Clobbers a2-a5 and t3; returns through t6.
   */
  private accumulate(a: Rv32Assembler, paths: Record<string, number>): void {
    a.label('ACC')
      .i(rvLw(A2, T1, Rec.start))
      .i(rvSub(T3, T3, A2));
    a.i(rvLw(A2, T1, Rec.payStart)).i(rvSub(A2, T5, A2));
    this.add64(a, Rec.totalLo, T3);
    this.add64(a, Rec.nestedLo, A2);
    a.i(rvSub(T3, T3, A2));
    a.i(rvLw(A3, T1, Rec.passes))
      .i(rvAddi(A3, A3, 1))
      .i(rvSw(A3, T1, Rec.passes));
    // min = min + ((v - min) & -(v < min)); max likewise: no branch, so no path-dependent cost.
    a.i(rvLw(A3, T1, Rec.min))
      .i(rvSltu(A4, T3, A3))
      .i(rvSub(A5, T3, A3))
      .i(rvSub(A4, X0, A4))
      .i(rvAnd(A5, A5, A4))
      .i(rvAdd(A3, A3, A5))
      .i(rvSw(A3, T1, Rec.min));
    a.i(rvLw(A3, T1, Rec.max))
      .i(rvSltu(A4, A3, T3))
      .i(rvSub(A5, T3, A3))
      .i(rvSub(A4, X0, A4))
      .i(rvAnd(A5, A5, A4))
      .i(rvAdd(A3, A3, A5))
      .i(rvSw(A3, T1, Rec.max));
    a.i(rvLw(A3, T1, Rec.ringIndex))
      .i(rvAddi(A4, A3, 1))
      .i(rvSw(A4, T1, Rec.ringIndex));
    a.i(rvAndi(A3, A3, 7))
      .i(rvSlli(A3, A3, 2))
      .i(rvAdd(A3, A3, T1))
      .i(rvSw(T3, A3, Rec.ring));
    a.label('ACC_ret').i(rvJalr(X0, T6, 0));
    a.label('ACC_end');
    paths.ACC = a.between('ACC', 'ACC_end');
  }

  /** 64-bit add of `reg` into the record pair at `lo`/`lo + 4` (a3-a5 scratch). */
  private add64(a: Rv32Assembler, lo: number, reg: number): void {
    a.i(rvLw(A3, T1, lo))
      .i(rvAdd(A4, A3, reg))
      .i(rvSltu(A5, A4, A3))
      .i(rvSw(A4, T1, lo));
    a.i(rvLw(A3, T1, lo + 4))
      .i(rvAdd(A3, A3, A5))
      .i(rvSw(A3, T1, lo + 4));
  }
}
