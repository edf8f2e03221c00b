import type {
  CountedOverhead,
  RuntimeImage,
  RuntimeLayout,
  StubImage,
  StubRequest,
} from '../../probe/injection/payload';
import { InjectionRefusedError, refusal } from '../../probe/injection/errors';
import { reachableDisplaced } from '../../probe/injection/planner';
import { Ctrl, Rec, type PathCosts } from '../../probe/injection/recordLayout';
import type { CounterSource, PatchSite } from '../../probe/injection/types';
import { Rv32DisplacedCode } from './trampolineRv32Displaced';
import { EXIT_USES, EntryFrame, entryExitCandidates, exitKeeps, exitStubSave, regNames } from './trampolineRv32Kept';
import { foldedInstructions, linkEntryRestore, linkEntrySave, linkExitStub } from './trampolineRv32Millicode';
import { MCOUNTINHIBIT, MSTATUS, MSTATUS_MIE, ctrlBase, loadAddress } from './trampolineRv32Runtime';
import { Reg, Rv32Assembler, rvAdd, rvAddi, rvCsrr, rvCsrrci, rvCsrrsi, rvCsrw, rvLw, rvSw } from './trampolineRv32Isa';

const {
  zero: X0,
  ra: RA,
  sp: SP,
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

/**
 * The stubs of one RV32 measurement (docs/design.md, "Measurement semantics"): a function's entry
 * and exit stubs with software accumulation or hardware gating, and a region's start and end stubs.
 * Each runs its share of the shared runtime (trampolineRv32Runtime.ts) and states what it costs.
 */
export class Rv32StubBuilder {
  private readonly displaced = new Rv32DisplacedCode();

  constructor(
    private readonly counter: CounterSource,
    private readonly csr: number,
    private readonly inhibitBit: number,
  ) {}

  softwareFunctionStubs(
    req: Extract<StubRequest, { kind: 'function' | 'callSite' }>,
    runtime: RuntimeImage,
    layout: RuntimeLayout,
  ): StubImage {
    const a = new Rv32Assembler(req.at);
    const site = req.kind === 'function' ? req.entry : undefined;
    const resume = req.kind === 'function' ? req.entry.resume : req.target;
    // A patch jump is payload; a rewritten call replaces the program's own call one for one.
    const patchInsns = site ? (site.shape.kind === 'rvAuipc' ? 2 : 1) : 0;
    // t0-t3 carry mstatus, the record, the depth and the counter value; t4-t6 can hold exits.
    const plan = this.displaced.planExits(req.at, site, resume, entryExitCandidates(site));
    if (site) this.displaced.hoistAuipcs(site, plan);
    // Registers callers keep across the call are given back (trampolineRv32Kept.ts); the exit
    // stubs of a group serve every member, so they save for the union (exitKeeps).
    const frame = new EntryFrame(site);
    // Millicode (trampolineRv32Millicode.ts): linked through t0, or loading ra from a stack slot.
    const t0Link = site?.link === T0;
    const exitSaves = req.kind === 'function' && (t0Link || exitKeeps(req.exitKeeps ?? site?.keptRegisters ?? 0));
    a.label('S');
    const linkSaves = linkEntrySave(a, site);
    const saves = frame.save(a);
    a.i(rvAddi(T3, X0, patchInsns + linkSaves + saves + 1));
    a.label('S_d');
    loadAddress(a, T1, req.record, layout);
    const slot = site?.returnSlot !== undefined ? site.returnSlot + frame.size : undefined;
    if (slot !== undefined) a.i(rvLw(RA, SP, slot)); // the return address the epilogue will load
    a.jal(T6, 'CE_ext');
    if (slot !== undefined) a.i(rvSw(RA, SP, slot)); // ... is now the exit stub
    // A jump into the body (millicode aliases) opens a pass but is no call: take the call back.
    if (site?.bodyEntry)
      a.i(rvLw(T5, T1, Rec.calls))
        .i(rvAddi(T5, T5, -1))
        .i(rvSw(T5, T1, Rec.calls));
    frame.restoreEarly(a);
    this.displaced.loadExits(a, plan);
    // Group members pad to one shape (see StubPadding); a 4-byte NOP keeps every alignment.
    const padding = req.kind === 'function' ? (req.padding ?? { outside: 0, inside: 0 }) : { outside: 0, inside: 0 };
    for (let k = 0; k < padding.outside; k++) a.i(rvAddi(X0, X0, 0));
    a.label('S_br').b('bne', T2, X0, 'S_skip');
    a.label('S_snap')
      .i(rvCsrr(T3, this.csr))
      .i(rvSw(T3, T1, Rec.start));
    a.label('S_skip').i(rvCsrw(MSTATUS, T0));
    const restored = frame.restoreInWindow(a) + linkEntryRestore(a, site);
    for (let k = 0; k < padding.inside; k++) a.i(rvAddi(X0, X0, 0));
    let d = { extra: 0, falls: true, notes: [] as string[], exits: [] as Array<{ label: string; target: number }> };
    // A diverted epilogue runs its folded copy through the return (trampolineRv32Millicode.ts): one
    // program instruction fewer than the original, made up in the counted overhead and the payload.
    const divert = site?.divert ? foldedInstructions(site.divert) : 0;
    if (site?.divert) {
      a.code(site.divert, divert);
      d = { extra: -1, falls: false, notes: [], exits: [] };
    } else if (site) d = this.displaced.emitDisplaced(a, site, plan);
    // When the displaced code ends in a jump or return (a tiny function), it leaves on its own.
    if (d.falls) this.displaced.jumpTo(a, resume, plan);
    a.label('S_end');
    this.displaced.emitExits(a, d.exits, plan);
    a.align(4);
    a.label('X');
    if (t0Link) linkExitStub(a, (rd) => rvCsrr(rd, this.csr));
    else if (exitSaves) exitStubSave(a, (rd) => rvCsrr(rd, this.csr));
    else a.i(rvCsrr(T3, this.csr));
    loadAddress(a, T1, req.record, layout);
    a.jal(X0, 'CX_ext');
    a.label('X_end');
    const bypass = req.kind === 'function' ? req.bypass : undefined;
    if (bypass) a.align(4).label('B').code(bypass, foldedInstructions(bypass));
    const cx = t0Link ? 'CXT' : exitSaves ? 'CXK' : 'CX';
    a.defineExternal('CE_ext', runtime.labels.CE!);
    a.defineExternal('CX_ext', runtime.labels[cx]!);
    const P = runtime.paths;
    // Payload instructions = instructions run - displaced program instructions (the program's own).
    const stubPath =
      a.between('S_d', 'S_end') - (divert ? divert + 1 : site ? reachableDisplaced(site.displaced).length : 0);
    const costs: PathCosts = {
      entryOuter: stubPath + P.CE_outer!,
      entryNested: stubPath - 2 + P.CE_nested!, // the nested path skips the csrr and sw
      exitOuter: a.between('X', 'X_end') + P[`${cx}_outer`]! + P.ACC!,
      exitNested: a.between('X', 'X_end') + P[`${cx}_nested`]!,
    };
    const leaves = d.falls || d.exits.length > 0 ? 1 : 0;
    // The displaced code of a body entry is the jumping label's, not this function's.
    const foreign = site?.bodyEntry ? reachableDisplaced(site.displaced).length : 0;
    const givenBack = [frame.describe(), t0Link ? 'ra and t0 (the millicode link, now the exit stub)' : '']
      .filter(Boolean)
      .join(' (kept by callers across the call), ');
    const restoredNote = restored ? `, ${restored} instruction(s) giving back ${givenBack} and the stack` : '';
    const paddingNote = padding.inside ? `, ${padding.inside} nop(s) padding the group's stubs to one cost` : '';
    const relocationNote = d.extra ? `, ${d.extra} extra instruction(s) from relocating the displaced code` : '';
    const foreignNote = foreign ? `, ${foreign} instruction(s) of the code that jumps into the body` : '';
    const counted: CountedOverhead = {
      outer: 3 + restored + padding.inside + d.extra + leaves + foreign,
      nested: 0,
      explanation:
        `per pass: sw of the start value, csrw mstatus${restoredNote}${paddingNote}` +
        `${leaves ? ', the jump back (or the exit of a displaced branch)' : ''}${relocationNote}${foreignNote}` +
        `, and one of the two csrr ${this.counter.name}`,
    };
    return {
      address: req.at,
      bytes: a.bytes(),
      entry: a.address('S'),
      dispatchEntry: a.address('S_d'),
      exit: a.address('X'),
      ...(bypass ? { bypass: a.address('B') } : {}),
      costs,
      counted,
      notes: d.notes,
    };
  }

  hardwareFunctionStubs(
    req: Extract<StubRequest, { kind: 'function' }>,
    runtime: RuntimeImage,
    layout: RuntimeLayout,
  ): StubImage {
    const site = req.entry;
    if (site.link !== undefined || site.returnSlot !== undefined || site.divert || req.bypass)
      throw new InjectionRefusedError(
        refusal(
          'alternateLink',
          'This is -msave-restore millicode, whose return is hooked by the software-accumulation ' +
            'stubs only. Measure it with software accumulation (the default payload).',
          site.address,
        ),
      );
    const keptHere = (site.keptRegisters ?? 0) & EXIT_USES;
    if (keptHere) {
      throw new InjectionRefusedError(
        refusal(
          'noFreeRegister',
          `Callers keep values in ${regNames(keptHere)} across their calls of this function ` +
            `(-fipa-ra), and the hardware-gating stubs do not give registers back. Measure it with ` +
            `software accumulation (the default payload).`,
          site.address,
        ),
      );
    }
    const a = new Rv32Assembler(req.at);
    const bit = 1 << this.inhibitBit;
    const patchInsns = site.shape.kind === 'rvAuipc' ? 2 : 1;
    const plan = this.displaced.planExits(req.at, site, site.resume, [T4, T5, T6]);
    this.displaced.hoistAuipcs(site, plan);
    // Stop first: a recursive entry must not count this payload in the open pass.
    a.label('S')
      .i(rvCsrrsi(X0, MCOUNTINHIBIT, bit))
      .i(rvAddi(T3, X0, patchInsns + 2));
    loadAddress(a, T1, req.record, layout);
    // The value now; QEMU 7.2 keeps counting while inhibited, so the stub re-bases to it below.
    a.i(rvCsrr(T2, this.csr)).i(rvSw(T2, T1, Rec.scratch));
    a.jal(T6, 'CE_ext');
    this.displaced.loadExits(a, plan);
    a.b('bne', T2, X0, 'S_nested');
    a.label('S_outer')
      .i(rvLw(T3, T1, Rec.held))
      .i(rvSw(T3, T1, Rec.start))
      .jal(X0, 'S_run');
    a.label('S_nested').i(rvLw(T3, T1, Rec.scratch));
    a.label('S_run')
      .i(rvCsrw(this.csr, T3))
      .i(rvCsrrci(X0, MCOUNTINHIBIT, bit))
      .i(rvCsrw(MSTATUS, T0));
    const d = this.displaced.emitDisplaced(a, site, plan);
    if (d.falls) this.displaced.jumpTo(a, site.resume, plan);
    a.label('S_end');
    this.displaced.emitExits(a, d.exits, plan);
    a.align(4);
    a.label('X')
      .i(rvCsrrsi(X0, MCOUNTINHIBIT, bit))
      .i(rvCsrr(T3, this.csr));
    loadAddress(a, T1, req.record, layout);
    a.jal(X0, 'HX_ext');
    a.label('X_end');
    a.defineExternal('CE_ext', runtime.labels.CE!);
    a.defineExternal('HX_ext', runtime.labels.HX!);
    const P = runtime.paths;
    // csrsi and li travel in t3 (with the patch); the record holds the rest of each path.
    const prefix = a.between('S', 'S_outer') - 2;
    const run = a.between('S_run', 'S_end') - reachableDisplaced(site.displaced).length;
    const costs: PathCosts = {
      entryOuter: prefix + 3 + run + P.CE_outer!,
      entryNested: prefix + 1 + run + P.CE_nested!,
      exitOuter: a.between('X', 'X_end') + P.HX_outer! + P.ACC!,
      exitNested: a.between('X', 'X_end') + P.HX_nested!,
    };
    const leaves = d.falls || d.exits.length > 0 ? 1 : 0;
    return {
      address: req.at,
      bytes: a.bytes(),
      entry: a.address('S'),
      exit: a.address('X'),
      costs,
      counted: {
        // Measured on QEMU 7.2, where mcountinhibit does not stop minstret and the stubs' csrw
        // re-base makes it look stopped; on hardware the instructions between csrsi and the re-base
        // do not count either: calibrate('hardware') there.
        outer: 4 + leaves + d.extra,
        nested: 11 + leaves + d.extra,
        nestedPayload: patchInsns + 2 + costs.entryNested + costs.exitNested,
        explanation:
          `outer pass: the csrw re-base, csrci mcountinhibit, csrw mstatus and the jump back at ` +
          `entry${d.extra ? ` (+${d.extra} from relocation)` : ''}, csrsi at exit; a recursive call ` +
          `adds its entry stub up to the counter read and after the re-base, and csrsi, re-base, ` +
          `csrci and ret at its exit (QEMU 7.2 semantics)`,
      },
      notes: [
        ...d.notes,
        'QEMU 7.2 does not stop its counters on mcountinhibit: the stubs re-base the counter with ' +
          'csrw at every start, which is a no-op on hardware.',
      ],
    };
  }

  /**
   * Region stubs: nothing is free in the middle of a function, so the stubs use the registers the
   * planner found dead (liveness over the function's CFG) and save the others below sp (the
   * stack below sp is dead at every instruction: interrupt handlers push there too).
   */
  regionStubs(req: Extract<StubRequest, { kind: 'region' }>, runtime: RuntimeImage, layout: RuntimeLayout): StubImage {
    if (req.payload === 'hardware')
      throw new InjectionRefusedError(
        refusal('unrelocatable', 'Regions use software accumulation; hardware gating measures whole functions.'),
      );
    const a = new Rv32Assembler(req.at);
    const P = runtime.paths;
    const patchInsns = (s: PatchSite): number => (s.shape.kind === 'rvAuipc' ? 2 : 1);
    // ---- start: m = mstatus, b = record, v = value, q = temp, c = control base (when not tp)
    const start = req.start;
    const startPlan = this.displaced.planExits(
      req.at,
      start,
      start.resume,
      this.deadCandidates(start),
      this.fixedExits(start),
      this.lateExits(start),
    );
    const busy = new Set(startPlan.regs.values());
    const startRegs = this.pickRegisters([T0, T1, T3, T4, T5], start.freeRegisters, busy);
    const [m, b, v, q, cb] = startRegs.regs as [number, number, number, number, number];
    a.label('RS');
    const startSaved = this.save(a, startRegs.saved);
    a.i(rvCsrrci(m, MSTATUS, MSTATUS_MIE));
    loadAddress(a, b, req.record, layout);
    a.i(rvLw(v, b, Rec.calls))
      .i(rvAddi(v, v, 1))
      .i(rvSw(v, b, Rec.calls));
    a.i(rvAddi(v, X0, 1)).i(rvSw(v, b, Rec.depth));
    const c = ctrlBase(a, cb, layout);
    a.i(rvLw(v, c.reg, c.off + Ctrl.pay))
      .i(rvLw(q, b, Rec.costEntryOuter))
      .i(rvAdd(v, v, q))
      .i(rvSw(v, c.reg, c.off + Ctrl.pay))
      .i(rvSw(v, b, Rec.payStart));
    this.displaced.loadExits(a, startPlan);
    a.label('RS_snap')
      .i(rvCsrr(v, this.csr))
      .i(rvSw(v, b, Rec.start))
      .i(rvCsrw(MSTATUS, m));
    this.restore(a, startRegs.saved, startSaved);
    const ds = this.displaced.emitDisplaced(a, start, startPlan);
    if (ds.falls) this.displaced.jumpTo(a, start.resume, startPlan);
    a.label('RS_end');
    this.displaced.emitExits(a, ds.exits, startPlan);
    a.align(4);
    // ---- end: the window closes at the csrr; ACC's registers are fixed
    const end = req.end;
    const t3Live = (end.freeRegisters & (1 << T3)) === 0;
    const frame = 48;
    a.label('RE');
    if (t3Live) a.i(rvAddi(SP, SP, -frame)).i(rvSw(T3, SP, 0));
    a.label('RE_snap').i(rvCsrr(T3, this.csr));
    if (!t3Live) a.i(rvAddi(SP, SP, -frame));
    const accRegs: number[] = [T0, T1, T2, T4, T5, T6, A2, A3, A4, A5];
    const slot = (r: number): number => (r === T3 ? 0 : 4 * (1 + accRegs.indexOf(r)));
    const endSaved = accRegs.filter((r) => (end.freeRegisters & (1 << r)) === 0);
    for (const r of endSaved) a.i(rvSw(r, SP, slot(r)));
    a.i(rvCsrrci(T0, MSTATUS, MSTATUS_MIE));
    loadAddress(a, T1, req.record, layout);
    const ce = ctrlBase(a, T4, layout);
    a.i(rvLw(T5, ce.reg, ce.off + Ctrl.pay)).i(rvLw(T2, T1, Rec.depth));
    a.label('RE_br').b('beq', T2, X0, 'RE_unmatched');
    a.i(rvSw(X0, T1, Rec.depth))
      .jal(T6, 'ACC_ext')
      .i(rvLw(A3, T1, Rec.costExitOuter))
      .jal(X0, 'RE_pay');
    a.label('RE_unmatched')
      .i(rvLw(A3, T1, Rec.untracked))
      .i(rvAddi(A3, A3, 1))
      .i(rvSw(A3, T1, Rec.untracked))
      .i(rvLw(A3, T1, Rec.costExitNested));
    a.label('RE_pay')
      .i(rvAdd(T5, T5, A3))
      .i(rvSw(T5, ce.reg, ce.off + Ctrl.pay))
      .i(rvCsrw(MSTATUS, T0));
    for (const r of endSaved) a.i(rvLw(r, SP, slot(r)));
    if (t3Live) a.i(rvLw(T3, SP, 0));
    a.i(rvAddi(SP, SP, frame));
    const endPlan = this.displaced.planExits(
      a.pc,
      end,
      end.resume,
      this.deadCandidates(end),
      this.fixedExits(end),
      this.lateExits(end),
    );
    this.displaced.loadExits(a, endPlan);
    const de = this.displaced.emitDisplaced(a, end, endPlan);
    if (de.falls) this.displaced.jumpTo(a, end.resume, endPlan);
    a.label('RE_end');
    this.displaced.emitExits(a, de.exits, endPlan);
    a.defineExternal('ACC_ext', runtime.labels.ACC!);
    const startPath = patchInsns(start) + a.between('RS', 'RS_end') - reachableDisplaced(start.displaced).length;
    const endCommon = patchInsns(end) + a.between('RE', 'RE_br') + 1;
    const endTail = a.between('RE_pay', 'RE_end') - reachableDisplaced(end.displaced).length;
    const costs: PathCosts = {
      entryOuter: startPath,
      entryNested: startPath,
      exitOuter: endCommon + a.between('RE_br', 'RE_unmatched') - 1 + P.ACC! + endTail,
      exitNested: endCommon + a.between('RE_unmatched', 'RE_pay') + endTail,
    };
    const afterStartSnap = a.between('RS_snap', 'RS_end') - 1 - reachableDisplaced(start.displaced).length;
    // The end patch's own jump runs inside the window: it replaced the end instruction's place.
    const beforeEndSnap = patchInsns(end) + a.between('RE', 'RE_snap');
    return {
      address: req.at,
      bytes: a.bytes(),
      entry: a.address('RS'),
      regionEnd: a.address('RE'),
      costs,
      counted: {
        outer: afterStartSnap + beforeEndSnap + 1,
        nested: 0,
        explanation:
          `per pass: ${afterStartSnap} instruction(s) after the start's csrr (store, unmask, ` +
          `register restores, the jump back), ${beforeEndSnap} before the end's csrr (the end patch's ` +
          `jump, register saves), and one csrr`,
      },
      notes: [...ds.notes, ...de.notes],
    };
  }

  /** Registers dead at a mid-function site that the displaced code leaves alone (t-registers first). */
  private deadCandidates(site: PatchSite): number[] {
    const order = [T4, T5, T6, T2, T3, T1, T0, Reg.a7, Reg.a6, A5, A4, A3, A2];
    return order.filter(
      (r) => (site.freeRegisters & (1 << r)) !== 0 && !(this.displaced.touched(site.displaced) & (1 << r)),
    );
  }

  /** The planner's register for the resume point (dead there, not written by the displaced code). */
  private fixedExits(site: PatchSite): Record<number, number> {
    return site.resumeRegister !== undefined ? { [site.resume]: site.resumeRegister } : {};
  }

  private lateExits(site: PatchSite): Set<number> {
    return site.resumeRegisterLate && site.resumeRegister !== undefined ? new Set([site.resumeRegister]) : new Set();
  }

  /** Registers for a stub: dead ones first (no save), then the preferred ones (saved below sp). */
  private pickRegisters(
    preferred: number[],
    free: number,
    avoid: ReadonlySet<number>,
  ): { regs: number[]; saved: number[] } {
    const usable = (r: number): boolean => r !== X0 && r !== SP && r !== Reg.gp && r !== TP && !avoid.has(r);
    const dead: number[] = [];
    for (let r = 1; r < 32; r++) if ((free & (1 << r)) !== 0 && usable(r)) dead.push(r);
    const regs: number[] = [];
    const saved: number[] = [];
    for (const p of preferred) {
      const d = dead.shift();
      if (d !== undefined) regs.push(d);
      else {
        const candidate = preferred
          .concat([T2, T6, A2, A3, A4, A5])
          .find((r) => usable(r) && !regs.includes(r) && !saved.includes(r) && (free & (1 << r)) === 0);
        if (candidate === undefined) throw new Error(`no register for ${p}`);
        regs.push(candidate);
        saved.push(candidate);
      }
    }
    return { regs, saved };
  }

  private save(a: Rv32Assembler, regs: number[]): number {
    if (regs.length === 0) return 0;
    const frame = (4 * regs.length + 15) & ~15;
    a.i(rvAddi(SP, SP, -frame));
    regs.forEach((r, i) => a.i(rvSw(r, SP, 4 * i)));
    return frame;
  }

  private restore(a: Rv32Assembler, regs: number[], frame: number): void {
    if (regs.length === 0) return;
    regs.forEach((r, i) => a.i(rvLw(r, SP, 4 * i)));
    a.i(rvAddi(SP, SP, frame));
  }
}
