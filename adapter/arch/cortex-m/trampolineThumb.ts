import { ThumbCodec } from './thumbDecoder';
import { decodeAllCode, emitBypass, entryParts, relocateParts } from './thumbFallThrough';
import { ThumbRelocator, itPredicatedAddresses, type ThumbProfile } from './thumbRelocator';
import {
  Cond,
  encodeAddImmediate,
  encodeAddRegister,
  encodeBl,
  encodeBWide,
  encodeBx,
  encodeLdrLiteralWide,
  encodeLdrImmediate,
  encodeMovRegister,
  encodePop,
  encodePush,
  encodeStrImmediate,
  encodeSubImmediate,
  halfwords,
  word,
} from './thumbEncoder';
import {
  R,
  SYSM_APSR,
  SYSM_PRIMASK,
  ThumbAssembler,
  reachesBW,
  resolveThumbTable,
  thBkpt,
  thCmpImmW,
  thCpsidI,
  thMovImmW,
  thMrs,
  thMsr,
  thNop,
  thNopW,
  thOrrImm,
} from './trampolineThumbIsa';
import { ThumbRuntime } from './trampolineThumbRuntime';
import type {
  CountedOverhead,
  PayloadGenerator,
  RuntimeImage,
  RuntimeLayout,
  StubImage,
  StubRequest,
} from '../../probe/injection/payload';
import { Ctrl, Rec, type PathCosts } from '../../probe/injection/recordLayout';
import type {
  CallSite,
  CaveReach,
  CounterSource,
  FunctionCode,
  InjectionArch,
  PatchShape,
  PatchSite,
} from '../../probe/injection/types';
import { SYSTICK_CVR } from '../../probe/injection/types';
import { InjectionRefusedError, hex, refusal } from '../../probe/injection/errors';
import { reachableDisplaced } from '../../probe/injection/planner';
import type { InjectionFamilySupport, TargetCode } from '../../probe/injection/injectionService';
import type { TargetAccess } from '../../probe/targetAccess';

/**
 * Cortex-M (ARMv7-M/v7E-M) payloads for function and region measurement. AAPCS facts used:
 * r0-r3 carry arguments into a function and results out of it, r12 (IP) is free at a function's
 * entry, r2/r3/r12 and LR are free after a return, the flags are not preserved across calls
 * (AAPCS 5.1.1). The entry stub pushes r0-r3 below SP for the few instructions it needs them;
 * interrupts are masked with PRIMASK (MRS/CPSID/MSR, B5.2) around shared state. An interrupt
 * handler enters with EXC_RETURN (0xFFxxxxxx) in LR (B1.5.8): it is redirected like a return
 * address, and the exit's closing BX, executed in Handler mode, performs the exception return, so
 * handlers are measured like functions. FNC_RETURN (0xFExxxxxx, Security Extension) entries are
 * counted as untracked and never redirected. Every return address keeps bit 0 set (interworking, A2.3.2).
 */

const { r0: R0, r1: R1, r2: R2, r3: R3, r12: R12, lr: LR } = R;
const SYST_CSR = 0xe000e010;
const SYST_RVR = 0xe000e014;
const SYST_CVR = 0xe000e018;
const DEMCR = 0xe000edfc;
const DWT_CTRL = 0xe0001000;

export function thumbInjectionArch(profile: ThumbProfile = 'armv7e-m'): InjectionArch {
  return {
    family: 'cortex-m',
    codec: new ThumbCodec(),
    relocator: new ThumbRelocator(profile),
    mappingKind: (name) =>
      name === '$d' || name.startsWith('$d.')
        ? 'data'
        : name === '$t' || name.startsWith('$t.') || name === '$a'
          ? 'code'
          : undefined,
    resolveTable: (fn: FunctionCode, index: number, read) => resolveThumbTable(fn.instructions, index, read),
    linkRegister: (insn) => (insn.kind === 'call' || insn.kind === 'indirectCall' ? LR : undefined),
    choosePatch: thumbChoosePatch,
    callSiteRefusal: thumbCallSiteRefusal,
    freeAtEntry: 1 << R12,
    returnAddressRegister: LR,
    // Literal pools hold every address a function takes (bit 0 set), ADR forms the rest (a
    // PC-relative load's literal address comes along: one more word that is no function).
    addressTaking: {
      modeBit: true,
      formed: (fn) => fn.instructions.filter((i) => i.kind === 'plain' && i.target !== undefined).map((i) => i.target!),
    },
    predicated: (fn) => itPredicatedAddresses(fn.instructions),
    // Code that runs on into a patched entry is relocated into that entry's stub (thumbFallThrough.ts).
    relocatesFallThrough: true,
    farBypass: thumbFarBypass,
  };
}

/** B.W when the whole cave is within +/-16 MiB, else LDR.W pc, [pc, #k] with a word-aligned literal. */
function thumbChoosePatch(site: number, cave: CaveReach): PatchShape {
  if (reachesBW(site, cave.start) && reachesBW(site, cave.start + cave.size)) return { kind: 'thumbBW', length: 4 };
  return { kind: 'thumbLdrPc', length: site % 4 === 0 ? 8 : 10 };
}

/**
 * Where fewer than 8 bytes precede an entry that code falls through into: the entry patch gets a
 * second literal word after its own, and a 4-byte `LDR.W pc, [pc, #k]` at `at` jumps through it.
 */
function thumbFarBypass(
  entry: PatchShape,
  entryAddress: number,
  at: number,
): { entry: PatchShape; bypass: PatchShape } | string {
  if (entry.kind !== 'thumbLdrPc') return `the entry patch is a ${entry.kind}, which holds no literal`;
  const literal = ((entryAddress + 4 + 3) & ~3) + 4;
  const offset = literal - ((at + 4) & ~3);
  if (offset < 0 || offset > 4095) return `a literal at ${hex(literal)} is out of LDR.W's reach from ${hex(at)}`;
  const length = literal + 4 - entryAddress;
  if (length !== 12 && length !== 14) throw new Error(`a widened entry patch of ${length} bytes`);
  return {
    entry: { kind: 'thumbLdrPc', length, bypassLiteral: literal },
    bypass: { kind: 'thumbLdrPcFar', length: 4, literal },
  };
}

function thumbCallSiteRefusal(site: CallSite, cave: CaveReach): string | undefined {
  if (site.length !== 4 || (site.mnemonic !== 'bl' && site.mnemonic !== 'b'))
    return `${site.mnemonic} (${site.length} bytes) cannot be re-encoded to reach a stub`;
  if (reachesBW(site.address, cave.start) && reachesBW(site.address, cave.start + cave.size)) return undefined;
  return (
    `${site.mnemonic} reaches +/-16 MiB and the cave at ${hex(cave.start)} is farther (reserve ` +
    `RAM within 16 MiB of the code for call-site stubs)`
  );
}

/** Everything the injection service needs for Cortex-M. */
export function thumbInjectionSupport(
  counter: CounterSource = SYSTICK_CVR,
  options: { profile?: ThumbProfile; counterUnitsPerInstruction?: number } = {},
): InjectionFamilySupport {
  return {
    arch: thumbInjectionArch(options.profile),
    generator: new ThumbPayloadGenerator(counter, options.counterUnitsPerInstruction ?? 1, options.profile),
    // QEMU 7.2's M-profile gdbstub has no PRIMASK: the calibration driver saves and restores it itself.
    registers: [
      'r0',
      'r1',
      'r2',
      'r3',
      'r4',
      'r5',
      'r6',
      'r7',
      'r8',
      'r9',
      'r10',
      'r11',
      'r12',
      'sp',
      'lr',
      'pc',
      'xpsr',
    ],
    codeAddressBit: 1,
    prepareCounter: (access) => prepareCounter(access, counter),
    resumePoints: async (access: TargetAccess) => {
      // In handler mode (IPSR != 0) the interrupted code resumes at the stacked PC (B1.5.6: frame + 24).
      const xpsr = Number(await access.readRegister('xpsr'));
      if ((xpsr & 0x1ff) === 0) return [];
      const sp = await access.readRegister('sp');
      return [{ what: 'The interrupted code (stacked PC)', address: await access.readU32(sp + 24n) }];
    },
  };
}

/**
 * SysTick as a free-running 24-bit down counter (B3.3): reload 0xFFFFFF, processor clock, no
 * interrupt; refused when the program runs SysTick with another reload. DWT CYCCNT (C1.8): TRCENA
 * in DEMCR, then CYCCNTENA. QEMU's gdbstub does not reach the System Control Space (reads zero,
 * ignores writes), so the registers are written by a few instructions run on the target.
 */
async function prepareCounter(access: TargetAccess, counter: CounterSource): Promise<TargetCode | undefined> {
  if (counter.kind !== 'mmio') return undefined;
  if (counter.address === SYST_CVR) {
    const csr = await access.readU32(BigInt(SYST_CSR));
    const rvr = await access.readU32(BigInt(SYST_RVR));
    if ((csr & 1) !== 0 && rvr !== 0xffffff) {
      throw new InjectionRefusedError(
        refusal(
          'memory',
          `The program runs SysTick with reload ${hex(rvr)}; CycleLens needs it free-running (reload ` +
            `0xFFFFFF). Use DWT CYCCNT, or let the profiler own SysTick.`,
        ),
      );
    }
    if ((csr & 1) !== 0) return undefined;
    return {
      what: 'Starting SysTick',
      build: (at) => {
        const a = new ThumbAssembler(at);
        a.label('E');
        a.ldrLiteral(R0, 'syst', SYST_CSR).ldrLiteral(R1, 'reload', 0xffffff);
        a.i(encodeStrImmediate(R1, R0, 4))
          .i(thMovImmW(R1, 0))
          .i(encodeStrImmediate(R1, R0, 8));
        a.i(thMovImmW(R1, 5)).i(encodeStrImmediate(R1, R0, 0)); // ENABLE | CLKSOURCE (processor clock)
        a.label('D').i(thBkpt(0));
        return { bytes: a.bytes(), entry: a.address('E'), done: a.address('D') };
      },
    };
  }
  return {
    what: 'Starting DWT CYCCNT',
    build: (at) => {
      const a = new ThumbAssembler(at);
      a.label('E');
      a.ldrLiteral(R0, 'demcr', DEMCR)
        .i(encodeLdrImmediate(R1, R0, 0))
        .i(thOrrImm(R1, R1, 1 << 24))
        .i(encodeStrImmediate(R1, R0, 0));
      a.ldrLiteral(R0, 'dwt', DWT_CTRL)
        .i(encodeLdrImmediate(R1, R0, 0))
        .i(thOrrImm(R1, R1, 1))
        .i(encodeStrImmediate(R1, R0, 0));
      a.label('D').i(thBkpt(0));
      return { bytes: a.bytes(), entry: a.address('E'), done: a.address('D') };
    },
  };
}

/**
 * `ratio` as multiplier / 2^shift with the multiplier below 2^11 and at most 16 fraction bits: the
 * relative rounding error stays under 1/2048 for every ratio from 1/64 to 1024 (1/40 becomes
 * 1638 / 2^16, 2^10/40 becomes 1638 / 2^6).
 */
export function fixedPointRatio(ratio: number): { multiplier: number; shift: number } {
  if (!(ratio > 0) || ratio >= 2048) throw new Error(`counter units per instruction must be in (0, 2048): ${ratio}`);
  let shift = 16;
  while (shift > 0 && Math.round(ratio * 2 ** shift) >= 2048) shift--;
  return { multiplier: Math.round(ratio * 2 ** shift), shift };
}

export class ThumbPayloadGenerator implements PayloadGenerator {
  readonly family = 'cortex-m' as const;
  private readonly codec = new ThumbCodec();
  private readonly relocator: ThumbRelocator;
  private readonly counterAddress: number;
  /**
   * Counter units per payload instruction (nested payloads are instructions) as multiplier >> shift:
   * the multiplier stays below 2^11 so that a pass's nested payload instructions (up to 2^21) never
   * overflow the 32-bit product, whatever the ratio (1/40 SysTick ticks per instruction under
   * `-icount shift=0`, 2^10/40 under shift 10).
   */
  private readonly ratio: { multiplier: number; shift: number };
  /** MSR APSR_nzcvqg (GE bits) exists with the DSP extension (ARMv7E-M, v8-M Mainline). */
  private readonly ge: boolean;
  private readonly runtime: ThumbRuntime;

  constructor(
    readonly counter: CounterSource,
    counterUnitsPerInstruction = 1,
    profile: ThumbProfile = 'armv7e-m',
  ) {
    if (counter.kind !== 'mmio')
      throw new Error(`Cortex-M payloads read memory-mapped counters; ${counter.name} is a CSR`);
    this.counterAddress = counter.address;
    this.ratio = fixedPointRatio(counterUnitsPerInstruction);
    this.relocator = new ThumbRelocator(profile);
    this.ge = profile === 'armv7e-m' || profile === 'armv8-m.main' || profile === 'armv8.1-m.main';
    this.runtime = new ThumbRuntime(counter, this.ratio, this.ge);
  }

  runtimeSize(): number {
    return 1024;
  }

  buildRuntime(layout: RuntimeLayout): RuntimeImage {
    return this.runtime.build(layout);
  }

  // ---- stubs -------------------------------------------------------------------------------------

  buildStubs(req: StubRequest, runtime: RuntimeImage, layout: RuntimeLayout): StubImage {
    if (req.payload === 'hardware')
      throw new InjectionRefusedError(
        refusal(
          'unrelocatable',
          'Hardware gating is implemented for RV32 (mcountinhibit); on Cortex-M use software accumulation.',
        ),
      );
    if (req.kind === 'region') return this.regionStubs(req, runtime, layout);
    return this.functionStubs(req, runtime, layout);
  }

  /** The displaced instructions for `at`, with the number of instructions they became. */
  private relocate(
    site: PatchSite,
    at: number,
  ): { bytes: Uint8Array; count: number; extra: number; falls: boolean; notes: string[] } {
    const live = reachableDisplaced(site.displaced);
    const r = this.relocator.relocate(live, at, {
      patched: { start: site.address, end: site.address + site.shape.length },
    });
    if (!r.ok) throw new InjectionRefusedError(refusal('unrelocatable', `Cannot move ${r.reason}.`, r.address));
    const count = decodeAllCode(this.codec, r.bytes, at);
    return { bytes: r.bytes, count, extra: count - live.length, falls: r.fallsThrough, notes: r.notes };
  }

  /** Back to the program: B.W when in reach, else LDR.W pc, =target|1 (no register). */
  private jumpTo(a: ThumbAssembler, target: number, name: string): void {
    if (reachesBW(a.pc, target)) {
      a.i(encodeBWide(a.pc, target));
      return;
    }
    a.ldrLiteral(15, name, (target | 1) >>> 0);
  }

  private functionStubs(
    req: Extract<StubRequest, { kind: 'function' | 'callSite' }>,
    runtime: RuntimeImage,
    layout: RuntimeLayout,
  ): StubImage {
    const a = new ThumbAssembler(req.at);
    const site = req.kind === 'function' ? req.entry : undefined;
    const resume = req.kind === 'function' ? req.entry.resume : req.target;
    // Everything the payload touches is given back: a caller compiled with -fipa-ra may keep
    // values in r0-r3/r12 (or the flags) across a call to a callee known not to write them.
    a.label('S')
      .i(encodePush([R0, R1, R2, R3, R12]))
      .i(thMrs(R0, SYSM_APSR))
      .i(encodePush([R0]))
      .i(encodeMovRegister(R1, LR));
    a.ldrLiteral(R0, 'rec', req.record);
    a.bl('CE_ext').i(encodeMovRegister(LR, R1));
    a.i(encodePop([R1])).i(thMsr(SYSM_APSR, R1, this.ge)); // the flags CE compared with, restored before the window
    // Group members pad to one shape (see StubPadding). NOP.W keeps the relocated code's
    // alignment mod 4, so padding never changes what relocating it costs.
    const padding = req.kind === 'function' ? (req.padding ?? { outside: 0, inside: 0 }) : { outside: 0, inside: 0 };
    for (let k = 0; k < padding.outside; k++) a.i(thNopW());
    a.label('S_br').cbz(true, R3, 'S_skip');
    a.ldrLiteral(R3, 'counter', this.counterAddress);
    a.i(encodeLdrImmediate(R3, R3, 0)).i(encodeStrImmediate(R3, R0, Rec.start));
    a.label('S_skip')
      .i(thMsr(SYSM_PRIMASK, R12))
      .i(encodePop([R0, R1, R2, R3, R12]));
    for (let k = 0; k < padding.inside; k++) a.i(thNopW());
    let r = { count: 0, extra: 0, falls: true, notes: [] as string[] };
    // Displaced code that resumes at an entry it falls through into runs that entry's displaced
    // instructions too, and resumes past its patch (thumbFallThrough.ts).
    let program = 0;
    // Displaced code that can leave by a conditional branch and also falls through to the jump
    // back: each branch leaves by a jump of its own, so every path runs one jump (that one or the
    // jump back) and the stub costs the same whichever way the branch goes (`if (n < 2) return`
    // at a function's entry, taken by every leaf of a recursion).
    let exitJumps = 0;
    if (site) {
      const even = relocateParts(this.relocator, this.codec, entryParts(site), a.pc, true);
      const x = even.falls ? even : relocateParts(this.relocator, this.codec, entryParts(site), a.pc);
      a.code(x.bytes, x.count);
      exitJumps = x.falls ? x.exitJumps : 0;
      r = { count: x.count, extra: x.count - x.program - exitJumps, falls: x.falls, notes: x.notes };
      program = x.program;
    }
    if (r.falls) this.jumpTo(a, site?.divertResume ?? resume, 'resume');
    a.label('S_end');
    a.label('X').i(encodePush([R2, R3, R12]));
    a.ldrLiteral(R12, 'counter', this.counterAddress);
    a.i(encodeLdrImmediate(R12, R12, 0));
    a.i(thMrs(R3, SYSM_APSR)).i(encodePush([R3]));
    a.ldrLiteral(R2, 'rec', req.record);
    a.b('CX_ext').label('X_end');
    const bypassCode = req.kind === 'function' ? req.bypassCode : undefined;
    if (site && bypassCode)
      emitBypass(
        a,
        this.relocator,
        this.codec,
        site,
        bypassCode,
        req.kind === 'function' ? (req.bypassLength ?? 4) : 4,
        layout.ctrl,
        (b, t, n) => this.jumpTo(b, t, n),
      );
    a.defineExternal('CE_ext', runtime.labels.CE!);
    a.defineExternal('CX_ext', runtime.labels.CX!);
    const P = runtime.paths;
    // The patch jump is payload; a rewritten call replaces the program's own call one for one.
    const patch = site ? 1 : 0;
    const stubPath = patch + a.between('S', 'S_end') - program - exitJumps;
    const costs: PathCosts = {
      entryOuter: stubPath + P.CE_outer!,
      entryNested: stubPath - 3 + P.CE_nested!, // skips the counter address load, the read and the store
      exitOuter: a.between('X', 'X_end') + P.CX_outer! + P.ACC!,
      exitNested: a.between('X', 'X_end') + P.CX_nested!,
    };
    const leaves = r.falls ? 1 : 0;
    const paddingNote = padding.inside ? `, ${padding.inside} nop.w padding the group's stubs to one cost` : '';
    const relocationNote = r.extra ? `, ${r.extra} extra from relocation` : '';
    const counted: CountedOverhead = {
      outer: 3 + padding.inside + leaves + r.extra + 3,
      nested: 0,
      explanation:
        `per pass: str of the start value, msr PRIMASK, pop {r0-r3, r12}${paddingNote}` +
        `${leaves ? ', the jump back' : ''}${relocationNote}, the exit stub's push {r2, r3, r12} and literal load ` +
        `of the counter address, and one of the two counter loads (${this.counter.name})`,
    };
    return {
      address: req.at,
      bytes: a.bytes(),
      entry: a.address('S'),
      exit: a.address('X'),
      ...(bypassCode ? { bypass: a.address('B') } : {}),
      costs,
      counted,
      notes: r.notes,
    };
  }

  /**
   * Region stubs save r0-r3, r12, LR and the flags (APSR with the GE bits: ARMv7E-M) below SP; in
   * the middle of a function every one of them may be live.
   */
  private regionStubs(
    req: Extract<StubRequest, { kind: 'region' }>,
    runtime: RuntimeImage,
    layout: RuntimeLayout,
  ): StubImage {
    const a = new ThumbAssembler(req.at);
    const saved = [R0, R1, R2, R3, R12, LR];
    // ---- start
    a.label('RS').i(encodePush(saved)).i(thMrs(R12, SYSM_APSR)).i(thMrs(R3, SYSM_PRIMASK)).i(thCpsidI());
    a.ldrLiteral(R0, 'rec', req.record);
    a.i(encodeLdrImmediate(R1, R0, Rec.calls))
      .i(encodeAddImmediate(R1, R1, 1))
      .i(encodeStrImmediate(R1, R0, Rec.calls));
    a.i(thMovImmW(R1, 1)).i(encodeStrImmediate(R1, R0, Rec.depth));
    a.ldrLiteral(R2, 'ctrl', layout.ctrl);
    a.i(encodeLdrImmediate(R1, R2, Ctrl.pay))
      .i(encodeLdrImmediate(LR, R0, Rec.costEntryOuter))
      .i(encodeAddRegister(R1, LR))
      .i(encodeStrImmediate(R1, R2, Ctrl.pay))
      .i(encodeStrImmediate(R1, R0, Rec.payStart));
    a.ldrLiteral(R1, 'counter', this.counterAddress);
    a.label('RS_snap')
      .i(encodeLdrImmediate(R1, R1, 0))
      .i(encodeStrImmediate(R1, R0, Rec.start));
    a.i(thMsr(SYSM_PRIMASK, R3))
      .i(thMsr(SYSM_APSR, R12, this.ge))
      .i(encodePop(saved));
    const rs = this.relocate(req.start, a.pc);
    a.code(rs.bytes, rs.count);
    if (rs.falls) this.jumpTo(a, req.start.resume, 'resumeStart');
    a.label('RS_end');
    // ---- end: the window closes at the counter load
    a.label('RE').i(encodePush(saved));
    a.ldrLiteral(R12, 'counter', this.counterAddress);
    a.label('RE_snap').i(encodeLdrImmediate(R12, R12, 0));
    a.i(thMrs(R0, SYSM_APSR))
      .i(encodePush([R0]))
      .i(thMrs(R3, SYSM_PRIMASK))
      .i(thCpsidI());
    a.ldrLiteral(R2, 'rec', req.record);
    a.i(encodeLdrImmediate(LR, R2, Rec.depth)).i(thCmpImmW(LR, 0));
    a.label('RE_br').bcond(Cond.eq, 'RE_unmatched');
    a.i(thMovImmW(LR, 0))
      .i(encodeStrImmediate(LR, R2, Rec.depth))
      .bl('ACC_ext');
    a.i(encodeLdrImmediate(R1, R2, Rec.costExitOuter)).b('RE_pay');
    a.label('RE_unmatched')
      .i(encodeLdrImmediate(R1, R2, Rec.untracked))
      .i(encodeAddImmediate(R1, R1, 1))
      .i(encodeStrImmediate(R1, R2, Rec.untracked))
      .i(encodeLdrImmediate(R1, R2, Rec.costExitNested));
    a.label('RE_pay').ldrLiteral(R0, 'ctrl', layout.ctrl);
    a.i(encodeLdrImmediate(LR, R0, Ctrl.pay))
      .i(encodeAddRegister(LR, R1))
      .i(encodeStrImmediate(LR, R0, Ctrl.pay));
    a.i(thMsr(SYSM_PRIMASK, R3))
      .i(encodePop([R0]))
      .i(thMsr(SYSM_APSR, R0, this.ge))
      .i(encodePop(saved));
    const re = this.relocate(req.end, a.pc);
    a.code(re.bytes, re.count);
    if (re.falls) this.jumpTo(a, req.end.resume, 'resumeEnd');
    a.label('RE_end');
    a.defineExternal('ACC_ext', runtime.labels.ACC!);
    const P = runtime.paths;
    const startPath = 1 + a.between('RS', 'RS_end') - reachableDisplaced(req.start.displaced).length;
    const endCommon = 1 + a.between('RE', 'RE_br') + 1;
    const endTail = a.between('RE_pay', 'RE_end') - reachableDisplaced(req.end.displaced).length;
    const costs: PathCosts = {
      entryOuter: startPath,
      entryNested: startPath,
      exitOuter: endCommon + a.between('RE_br', 'RE_unmatched') - 1 + P.ACC! + endTail,
      exitNested: endCommon + a.between('RE_unmatched', 'RE_pay') + endTail,
    };
    const after = a.between('RS_snap', 'RS_end') - 1 - reachableDisplaced(req.start.displaced).length;
    const before = 1 + a.between('RE', 'RE_snap'); // the end patch's jump runs inside the window
    return {
      address: req.at,
      bytes: a.bytes(),
      entry: a.address('RS'),
      regionEnd: a.address('RE'),
      costs,
      counted: {
        outer: after + before + 1,
        nested: 0,
        explanation:
          `per pass: ${after} instruction(s) after the start's counter load, ${before} before the ` +
          `end's, and one counter load`,
      },
      notes: [...rs.notes, ...re.notes],
    };
  }

  // ---- patches -------------------------------------------------------------------------------

  encodePatch(site: PatchSite, target: number, _layout?: RuntimeLayout, bypass?: number): Uint8Array {
    const out = new Uint8Array(site.original.length);
    for (let k = 0; k + 1 < out.length; k += 2) out.set(thNop(), k);
    if (site.shape.kind === 'thumbBW') {
      out.set(encodeBWide(site.address, target), 0);
      return out;
    }
    if (site.shape.kind === 'thumbLdrPcFar') {
      // The literal is the second one of the entry patch it diverts around (written with that patch).
      out.set(encodeLdrLiteralWide(15, site.address, site.shape.literal), 0);
      return out;
    }
    if (site.shape.kind !== 'thumbLdrPc') throw new Error(`${site.shape.kind} is not a Thumb patch`);
    // LDR.W pc, [pc, #k]: the literal sits at the first word boundary after the instruction.
    const literal = (site.address + 4 + 3) & ~3;
    const k = literal - ((site.address + 4) & ~3);
    out.set(halfwords(0xf8df, 0xf000 | k), 0);
    out.set(word((target | 1) >>> 0), literal - site.address);
    // The literal a bypass patch jumps through; until one is written, the entry's own target.
    const second = site.shape.bypassLiteral;
    if (second !== undefined) out.set(word(((bypass ?? target) | 1) >>> 0), second - site.address);
    return out;
  }

  encodeCallSite(site: CallSite, stub: StubImage): Uint8Array {
    return site.kind === 'call' ? encodeBl(site.address, stub.entry) : encodeBWide(site.address, stub.entry);
  }

  calibrationCode(
    at: number,
    calls: number,
  ): { bytes: Uint8Array; fn: number; driver: number; done: number; functionInstructions: number } {
    const a = new ThumbAssembler(at);
    // The empty function: a 32-bit NOP the patch displaces, and the return.
    a.label('FN').i(thNopW()).i(encodeBx(LR));
    a.label('DRV').i(thMrs(5, SYSM_PRIMASK)).i(thCpsidI());
    a.ldrLiteral(4, 'n', calls); // r4, r5: callee-saved, so the measured call leaves them alone
    a.label('L')
      .bl('FN')
      .i(encodeSubImmediate(4, 4, 1, true))
      .bcond(Cond.ne, 'L');
    a.i(thMsr(SYSM_PRIMASK, 5));
    a.label('DONE').i(thBkpt(0));
    return {
      bytes: a.bytes(),
      fn: a.address('FN'),
      driver: a.address('DRV'),
      done: a.address('DONE'),
      functionInstructions: 2,
    };
  }
}
