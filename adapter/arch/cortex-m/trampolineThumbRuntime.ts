import type { RuntimeImage, RuntimeLayout } from '../../probe/injection/payload';
import { Ctrl, Rec } from '../../probe/injection/recordLayout';
import type { CounterSource } from '../../probe/injection/types';
import {
  Cond,
  encodeAddImmediate,
  encodeAddRegister,
  encodeBx,
  encodeLdrImmediate,
  encodePop,
  encodePush,
  encodeStrImmediate,
  encodeSubImmediate,
  type ThumbRegister,
} from './thumbEncoder';
import {
  R,
  SYSM_APSR,
  SYSM_PRIMASK,
  ThumbAssembler,
  thAdcsImm0,
  thAddRegW,
  thAndImm,
  thBkpt,
  thCmpImmW,
  thCmpReg,
  thCpsidI,
  thIt,
  thLdrPreDec,
  thLsrImm,
  thMovImmW,
  thMrs,
  thMsr,
  thMul,
  thStrPostInc,
  thSubRegW,
  thUbfx,
} from './trampolineThumbIsa';

const { r0: R0, r1: R1, r2: R2, r3: R3, r12: R12, lr: LR } = R;

/**
 * The Cortex-M runtime shared by every stub (trampolineThumb.ts has the AAPCS facts it relies on):
 * the common entry (CE), the common exit (CX) and the software accumulation (ACC), assembled at the
 * runtime's address with the counter and the ratio of counter units per payload instruction.
 */
export class ThumbRuntime {
  constructor(
    private readonly counter: CounterSource,
    /** Counter units per payload instruction as multiplier >> shift (fixedPointRatio). */
    private readonly ratio: { multiplier: number; shift: number },
    /** MSR APSR_nzcvqg (GE bits) exists (the DSP extension). */
    private readonly ge: boolean,
  ) {}

  build(layout: RuntimeLayout): RuntimeImage {
    // Twice: the untracked paths add their own length difference, known after the first pass.
    const first = this.assembleRuntime(layout, {});
    return this.assembleRuntime(layout, {
      CE_exc: first.paths.CE_exc! - first.paths.CE_nested!,
      CE_full: first.paths.CE_full! - first.paths.CE_nested!,
    });
  }

  private assembleRuntime(layout: RuntimeLayout, diffs: Record<string, number>): RuntimeImage {
    const a = new ThumbAssembler(layout.runtime);
    const paths: Record<string, number> = {};
    this.commonEntry(a, layout, paths, diffs);
    this.commonExit(a, layout, paths);
    this.accumulate(a, layout, paths);
    const bytes = a.bytes();
    return {
      address: layout.runtime,
      bytes,
      labels: { CE: a.address('CE'), CX: a.address('CX'), ACC: a.address('ACC') },
      paths,
    };
  }

  /**
   * Function entry. In: r0 = record, r1 = LR of the entry; r0-r3 are saved by the stub. Out:
   * PRIMASK set (old value in r12), r3 = depth before this entry (0: open a pass; non-zero also for
   * untracked entries), r1 = the LR to return with (exit stub, or the entry's own when untracked).
   */
  private commonEntry(
    a: ThumbAssembler,
    layout: RuntimeLayout,
    paths: Record<string, number>,
    diffs: Record<string, number>,
  ): void {
    a.label('CE')
      .i(encodePush([LR]))
      .i(thMrs(R12, SYSM_PRIMASK))
      .i(thCpsidI());
    // r3 = LR + 0x0200_0000 wraps below 0x0100_0000 exactly for FNC_RETURN (0xFExx_xxxx): those
    // entries stay untracked. EXC_RETURN (0xFFxx_xxxx) is redirected like a return address; the
    // exit's closing BX, in Handler mode, then performs the exception return.
    a.i(encodeAddImmediate(R3, R1, 0x02000000))
      .i(thCmpImmW(R3, 0x01000000))
      .label('CE_excbr')
      .bcond(Cond.cc, 'CE_exc');
    a.ldrLiteral(R2, 'ctrl', layout.ctrl);
    a.i(encodeLdrImmediate(R3, R2, Ctrl.ssp))
      .i(encodeLdrImmediate(LR, R2, Ctrl.sslimit))
      .i(thCmpReg(R3, LR))
      .label('CE_fullbr')
      .bcond(Cond.cs, 'CE_full');
    a.i(thStrPostInc(R1, R3, 4)).i(encodeStrImmediate(R3, R2, Ctrl.ssp));
    a.i(encodeLdrImmediate(R3, R0, Rec.calls))
      .i(encodeAddImmediate(R3, R3, 1))
      .i(encodeStrImmediate(R3, R0, Rec.calls));
    a.i(encodeLdrImmediate(R3, R0, Rec.depth))
      .i(encodeAddImmediate(LR, R3, 1))
      .i(encodeStrImmediate(LR, R0, Rec.depth));
    a.i(encodeLdrImmediate(LR, R2, Ctrl.pay));
    a.label('CE_br').cbz(true, R3, 'CE_nested');
    a.i(encodeLdrImmediate(R1, R0, Rec.costEntryOuter))
      .i(encodeAddRegister(LR, R1))
      .i(encodeStrImmediate(LR, R2, Ctrl.pay))
      .i(encodeStrImmediate(LR, R0, Rec.payStart));
    a.i(encodeLdrImmediate(R1, R0, Rec.exit)).i(encodePop([15]));
    a.label('CE_nested')
      .i(encodeLdrImmediate(R1, R0, Rec.costEntryNested))
      .i(encodeAddRegister(LR, R1))
      .i(encodeStrImmediate(LR, R2, Ctrl.pay));
    a.i(encodeLdrImmediate(R1, R0, Rec.exit)).i(encodePop([15]));
    // Untracked: the LR is kept (never a FNC_RETURN replaced); the stub's nested path follows.
    for (const [label, head] of [
      ['CE_exc', 'CE_excbr'],
      ['CE_full', 'CE_fullbr'],
    ] as const) {
      a.label(label)
        .i(encodeLdrImmediate(R3, R0, Rec.untracked))
        .i(encodeAddImmediate(R3, R3, 1))
        .i(encodeStrImmediate(R3, R0, Rec.untracked));
      a.ldrLiteral(R2, 'ctrl', layout.ctrl);
      a.i(encodeLdrImmediate(LR, R2, Ctrl.pay)).i(encodeLdrImmediate(R3, R0, Rec.costEntryNested));
      a.i(encodeAddRegister(LR, R3));
      // this path's length minus the nested path's (ADDW/SUBW: 4 bytes either way)
      a.i(encodeAddImmediate(LR, LR, diffs[label] ?? 0));
      a.i(encodeStrImmediate(LR, R2, Ctrl.pay))
        .i(thMovImmW(R3, 1))
        .i(encodePop([15]));
      a.label(`${label}_end`);
      paths[label] = a.between('CE', head) + 1 + a.between(label, `${label}_end`);
    }
    paths.CE_outer = a.between('CE', 'CE_br') + 1 + a.between('CE_br', 'CE_nested') - 1;
    paths.CE_nested = a.between('CE', 'CE_br') + 1 + a.between('CE_nested', 'CE_exc');
  }

  /**
   * Function exit. In: r12 = counter at the exit, r2 = record; r0/r1 hold the result. Closes the
   * pass at depth 1 -> 0, pops the real LR and returns with PRIMASK restored.
   */
  private commonExit(a: ThumbAssembler, layout: RuntimeLayout, paths: Record<string, number>): void {
    a.label('CX').i(thMrs(R3, SYSM_PRIMASK)).i(thCpsidI());
    a.i(encodeLdrImmediate(LR, R2, Rec.depth))
      .i(encodeSubImmediate(LR, LR, 1, true))
      .i(encodeStrImmediate(LR, R2, Rec.depth));
    a.label('CX_br').bcond(Cond.ne, 'CX_nested');
    a.i(encodePush([R0, R1])).bl('ACC');
    a.i(encodeLdrImmediate(R1, R2, Rec.costExitOuter)).b('CX_pay');
    a.label('CX_nested')
      .i(encodePush([R0, R1]))
      .i(encodeLdrImmediate(R1, R2, Rec.costExitNested));
    a.label('CX_pay').ldrLiteral(R0, 'ctrl', layout.ctrl);
    a.i(encodeLdrImmediate(LR, R0, Ctrl.pay))
      .i(encodeAddRegister(LR, R1))
      .i(encodeStrImmediate(LR, R0, Ctrl.pay))
      .i(encodePop([R0, R1]));
    a.ldrLiteral(R2, 'ctrl', layout.ctrl);
    a.i(encodeLdrImmediate(R12, R2, Ctrl.ssp))
      .i(encodeLdrImmediate(LR, R2, Ctrl.ssbase))
      .i(thCmpReg(R12, LR))
      .bcond(Cond.eq, 'CX_under');
    a.i(thLdrPreDec(LR, R12, 4))
      .i(encodeStrImmediate(R12, R2, Ctrl.ssp))
      .i(thMsr(SYSM_PRIMASK, R3));
    // The exit stub saved r2, r3, r12 and the flags: give them back (see functionStubs).
    a.i(encodePop([R3]))
      .i(thMsr(SYSM_APSR, R3, this.ge))
      .i(encodePop([R2, R3, R12]))
      .i(encodeBx(LR));
    a.label('CX_ret');
    a.label('CX_under').i(thBkpt(0xcb)); // an exit with no shadow entry: halt rather than return anywhere
    const tail = a.between('CX_pay', 'CX_ret');
    paths.CX_outer = a.between('CX', 'CX_br') + 1 + a.between('CX_br', 'CX_nested') - 1 + tail;
    paths.CX_nested = a.between('CX', 'CX_br') + 1 + a.between('CX_nested', 'CX_pay') + tail;
  }

  /**
   * Closes a pass. In: r2 = record, r12 = counter at the close; r0, r1, r12, LR are scratch (the
   * caller saved what it needs). Straight-line (IT-predicated stores execute either way), so its
   * cost never depends on the values.
   */
  private accumulate(a: ThumbAssembler, layout: RuntimeLayout, paths: Record<string, number>): void {
    const c = this.counter;
    a.label('ACC')
      .i(encodePush([LR]))
      .i(encodeLdrImmediate(LR, R2, Rec.start));
    if (c.kind === 'mmio' && c.direction === 'down') a.i(thSubRegW(R12, LR, R12));
    else a.i(thSubRegW(R12, R12, LR));
    if (c.kind === 'mmio' && c.width < 32) a.i(thUbfx(R12, R12, 0, c.width));
    a.ldrLiteral(R0, 'ctrl', layout.ctrl);
    a.i(encodeLdrImmediate(R0, R0, Ctrl.pay))
      .i(encodeLdrImmediate(R1, R2, Rec.payStart))
      .i(thSubRegW(R1, R0, R1));
    this.add64(a, Rec.totalLo, R12);
    this.add64(a, Rec.nestedLo, R1);
    // This pass without the nested payloads, in counter units (16.16 fixed point when not 1:1).
    if (this.ratio.multiplier !== 1 << this.ratio.shift) {
      a.ldrLiteral(LR, 'ratio', this.ratio.multiplier);
      a.i(thMul(R1, R1, LR));
      if (this.ratio.shift > 0) a.i(thLsrImm(R1, R1, this.ratio.shift));
    }
    a.i(thSubRegW(R12, R12, R1));
    a.i(encodeLdrImmediate(LR, R2, Rec.passes))
      .i(encodeAddImmediate(LR, LR, 1))
      .i(encodeStrImmediate(LR, R2, Rec.passes));
    a.i(encodeLdrImmediate(LR, R2, Rec.min))
      .i(thCmpReg(R12, LR))
      .i(thIt(Cond.cc))
      .i(encodeStrImmediate(R12, R2, Rec.min));
    a.i(encodeLdrImmediate(LR, R2, Rec.max))
      .i(thCmpReg(R12, LR))
      .i(thIt(Cond.hi))
      .i(encodeStrImmediate(R12, R2, Rec.max));
    a.i(encodeLdrImmediate(LR, R2, Rec.ringIndex))
      .i(encodeAddImmediate(R1, LR, 1))
      .i(encodeStrImmediate(R1, R2, Rec.ringIndex));
    a.i(thAndImm(LR, LR, 7))
      .i(thAddRegW(LR, R2, LR, 2))
      .i(encodeStrImmediate(R12, LR, Rec.ring));
    a.i(encodePop([15]));
    a.label('ACC_end');
    paths.ACC = a.between('ACC', 'ACC_end');
  }

  /** 64-bit add of `reg` into the record pair at `lo` (LR scratch; ADDS/ADC carry the carry). */
  private add64(a: ThumbAssembler, lo: number, reg: ThumbRegister): void {
    a.i(encodeLdrImmediate(LR, R2, lo))
      .i(thAddRegW(LR, LR, reg, 0, true))
      .i(encodeStrImmediate(LR, R2, lo));
    a.i(encodeLdrImmediate(LR, R2, lo + 4))
      .i(thAdcsImm0(LR, LR))
      .i(encodeStrImmediate(LR, R2, lo + 4));
  }
}
