import { decodeAll, fitsSigned, type DecodedInstruction } from '../codec';
import { Rv32Codec, cbRegister, rvWord } from './rvDecoder';
import { Rv32Relocator } from './rvRelocator';
import { encodeJal, half16 } from './rvEncoder';
import type { CountedOverhead, DispatchEntry, PayloadGenerator, RuntimeImage, RuntimeLayout, StubImage, StubRequest } from '../../probe/injection/payload';
import { Ctrl, Rec, type PathCosts } from '../../probe/injection/recordLayout';
import type { CallSite, CaveReach, CounterSource, FunctionCode, InjectionArch, PatchShape, PatchSite } from '../../probe/injection/types';
import { InjectionRefusedError, hex, refusal } from '../../probe/injection/errors';
import { reachableDisplaced } from '../../probe/injection/planner';
import type { InjectionFamilySupport } from '../../probe/injection/injectionService';
import { MINSTRET } from '../../probe/injection/types';
import type { TargetAccess } from '../../probe/targetAccess';
import {
  ALL_REGISTERS,
  ARGUMENTS,
  CALLER_SAVED,
  GLOBALS,
  LIVE_AT_CALL,
  LIVE_AT_RETURN,
  Reg,
  Rv32Assembler,
  TEMPORARIES,
  mask,
  resolveRv32JumpTable,
  rvAdd,
  rvAddi,
  rvAndi,
  rvAuipc,
  rvCJalr,
  rvCsrr,
  rvCsrrci,
  rvCsrrsi,
  rvCsrw,
  rvEbreak,
  rvJalr,
  rvLinkRegister,
  rvLoadAddress,
  rvLui,
  rvLw,
  rvRegisterEffects,
  rvSlli,
  rvSltu,
  rvSub,
  rvSw,
  rvAnd,
} from './trampolineRv32Isa';
import { splitHiLo } from './rvEncoder';
import { EXIT_USES, EntryFrame, entryExitCandidates, exitKeeps, exitRoutineRestore, exitRoutineSave, exitStubSave, regNames } from './trampolineRv32Kept';

/**
 * RV32 payloads for function and region measurement (docs/design.md, "Measurement semantics").
 * Machine mode, ILP32:
 * - at a function's entry t0-t6 carry nothing (psABI), so the entry stub uses them freely; after
 *   the return a0/a1 hold the result and t0-t6, a2-a7 are again the callee's to clobber;
 * - interrupts are masked with `csrrci t0, mstatus, MIE` and restored with `csrw mstatus, t0`
 *   around every read-modify-write of shared state (Privileged ISA 3.1.6.1);
 * - the counter is read with one `csrr` as late as possible at entry and as early as possible at
 *   exit, so the window holds four payload instructions: the `sw` of the start value, the `csrw`
 *   that unmasks, the jump back, and one of the two counter reads (which one depends on whether a
 *   read counts itself).
 */

const MSTATUS = 0x300;
const MSTATUS_MIE = 8;
const MCOUNTINHIBIT = 0x320;
const { zero: X0, ra: RA, sp: SP, tp: TP, t0: T0, t1: T1, t2: T2, t3: T3, t4: T4, t5: T5, t6: T6, a2: A2, a3: A3, a4: A4, a5: A5 } = Reg;

export function rv32InjectionArch(): InjectionArch {
  return {
    family: 'riscv',
    codec: new Rv32Codec(),
    relocator: new Rv32Relocator(),
    mappingKind: (name) => (name === '$d' || name.startsWith('$d.') ? 'data' : name.startsWith('$x') ? 'code' : undefined),
    resolveTable: (fn: FunctionCode, index: number, readWord) => {
      const addresses = new Set(fn.instructions.map((i) => i.address));
      const r = resolveRv32JumpTable(fn.instructions, index, (a) => readWord(a, 4), (a) => addresses.has(a));
      return r.ok ? { ok: true, table: r.table, targets: r.targets } : r;
    },
    linkRegister: rvLinkRegister,
    referencesRegister: (insn, reg) => {
      const e = rvRegisterEffects(insn);
      return ((e.uses | e.defs) & (1 << reg)) !== 0;
    },
    choosePatch: rv32ChoosePatch,
    callSiteRefusal: rv32CallSiteRefusal,
    freeAtEntry: TEMPORARIES,
    liveness: {
      effects: rvRegisterEffects,
      callUses: (ARGUMENTS | GLOBALS | mask(SP)) >>> 0,
      callDefs: CALLER_SAVED,
      liveAtReturn: LIVE_AT_RETURN,
      liveAtTail: LIVE_AT_CALL,
      all: ALL_REGISTERS,
      reserved: mask(X0, SP, Reg.gp, TP),
      // Entry: t0-t6; exit: t0-t6 and a2-a5 (ACC's scratch).
      stubClobbers: (TEMPORARIES | mask(A2, A3, A4, A5)) >>> 0,
    },
  };
}

/** Everything the injection service needs for RV32 (machine mode, ILP32). */
export function rv32InjectionSupport(counter: CounterSource = MINSTRET): InjectionFamilySupport {
  return {
    arch: rv32InjectionArch(),
    generator: new Rv32PayloadGenerator(counter),
    registers: ['ra', 'sp', 'gp', 'tp', 't0', 't1', 't2', 'fp', 's1', 'a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7',
      's2', 's3', 's4', 's5', 's6', 's7', 's8', 's9', 's10', 's11', 't3', 't4', 't5', 't6', 'mstatus', 'pc'],
    codeAddressBit: 0,
    resumePoints: async (access: TargetAccess) => {
      // Inside a trap handler (MIE clear) the program resumes at mepc after MRET.
      const mstatus = await access.readRegister('mstatus');
      if ((mstatus & BigInt(MSTATUS_MIE)) !== 0n) return [];
      return [{ what: 'The interrupted program (mepc)', address: Number(await access.readRegister('mepc')) }];
    },
  };
}

/** Whether a PC-relative reach of `bits` (signed) from `from` covers the whole cave. */
function reachesCave(from: number, cave: CaveReach, bits: number): boolean {
  return fitsSigned(cave.start - from, bits) && fitsSigned(cave.start + cave.size - from, bits);
}

/**
 * RV32 patch shapes, shortest first: `jalr x0, off(tp)` when tp is the cave's base (4 bytes, no
 * register), `jal x0` within +/-1 MiB (4 bytes), else `auipc r + jalr x0` through a dead register.
 */
function rv32ChoosePatch(site: number, cave: CaveReach, free: number): PatchShape | string {
  if (cave.threadPointerBase !== undefined) return { kind: 'rvTp', length: 4 };
  if (reachesCave(site, cave, 21)) return { kind: 'rvJal', length: 4 };
  const scratch = [Reg.t0, Reg.t1, Reg.t2, Reg.t3, Reg.t4, Reg.t5, Reg.t6].find((r) => (free & (1 << r)) !== 0)
    ?? Array.from({ length: 31 }, (_, k) => k + 1).find((r) => (free & (1 << r)) !== 0 && r !== SP && r !== Reg.gp && r !== TP);
  if (scratch === undefined) return `no register is dead at ${hex(site)} for the 8-byte auipc + jalr patch, and the cave at ${hex(cave.start)} is beyond JAL's +/-1 MiB.`;
  return { kind: 'rvAuipc', length: 8, scratch };
}

/** RV32 direct call sites that can be re-encoded, same length, to reach a stub. */
function rv32CallSiteRefusal(site: CallSite, cave: CaveReach): string | undefined {
  const tpMode = cave.threadPointerBase !== undefined;
  if (site.mnemonic !== 'jal' && site.mnemonic !== 'c.jal' && site.mnemonic !== 'c.j') return `${site.mnemonic} is a conditional jump; only jal, c.jal and c.j are rewritten`;
  if (site.length === 2) {
    if (site.kind === 'tail') return 'a 2-byte c.j links nothing, so the dispatcher could not tell which site jumped';
    if (!tpMode) return 'a 2-byte c.jal reaches only +/-2 KiB; it needs tp free for the dispatcher';
    return undefined;
  }
  if (tpMode || reachesCave(site.address, cave, 21)) return undefined;
  return `jal reaches +/-1 MiB and the cave at ${hex(cave.start)} is farther`;
}

/** Far exits of a stub: the register holding each target's upper bits. */
interface ExitPlan {
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

/** A conditional branch's condition and registers (C.BEQZ/C.BNEZ compare rs1' with x0). */
function branchOperands(insn: DecodedInstruction): { cond: 'beq' | 'bne' | 'blt' | 'bge' | 'bltu' | 'bgeu'; rs1: number; rs2: number } {
  if (insn.length === 2) {
    const hw = insn.bytes[0]! | (insn.bytes[1]! << 8);
    return { cond: insn.mnemonic === 'c.beqz' ? 'beq' : 'bne', rs1: cbRegister(hw), rs2: X0 };
  }
  const w = rvWord(insn.bytes);
  return { cond: insn.mnemonic as 'beq', rs1: (w >> 15) & 0x1f, rs2: (w >> 20) & 0x1f };
}

/** Base register + offset through which the control block's fields are reached. */
interface Base {
  reg: number;
  off: number;
}

export class Rv32PayloadGenerator implements PayloadGenerator {
  readonly family = 'riscv' as const;
  private readonly codec = new Rv32Codec();
  private readonly relocator = new Rv32Relocator();
  private readonly csr: number;
  private readonly inhibitBit: number;

  constructor(readonly counter: CounterSource) {
    if (counter.kind !== 'csr') throw new Error(`RV32 payloads read counters with csrr; ${counter.name} is memory mapped`);
    this.csr = counter.csr;
    this.inhibitBit = counter.inhibitBit;
  }

  runtimeSize(): number {
    return 1024;
  }

  // ---- addressing ------------------------------------------------------------------------------

  /** rd = address: one ADDI from tp when it is in reach, else LUI (+ ADDI). */
  private loadAddress(a: Rv32Assembler, rd: number, address: number, layout: RuntimeLayout): void {
    const tp = layout.threadPointer;
    if (tp !== undefined && fitsSigned(address - tp, 12)) {
      a.i(rvAddi(rd, TP, address - tp));
      return;
    }
    const bytes = rvLoadAddress(rd, address);
    a.code(bytes, bytes.length / 4);
  }

  /** The control block through tp, or through `scratch` loaded with its address. */
  private ctrlBase(a: Rv32Assembler, scratch: number, layout: RuntimeLayout): Base {
    const tp = layout.threadPointer;
    if (tp !== undefined && fitsSigned(layout.ctrl - tp, 12) && fitsSigned(layout.ctrl + Ctrl.shadow - tp, 12)) {
      return { reg: TP, off: layout.ctrl - tp };
    }
    this.loadAddress(a, scratch, layout.ctrl, layout);
    return { reg: scratch, off: 0 };
  }

  // ---- shared routines -------------------------------------------------------------------------

  buildRuntime(layout: RuntimeLayout): RuntimeImage {
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
    this.accumulate(a, paths);
    const bytes = a.bytes();
    const labels: Record<string, number> = {};
    for (const name of ['CE', 'CX', 'HX', 'CXK', 'ACC', 'D']) {
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
    a.label('D_loop').i(rvLw(T2, T1, 0)).i(rvAddi(T1, T1, 12)).b('beq', T2, X0, 'D_miss').b('bne', T2, RA, 'D_loop');
    a.i(rvLw(T3, T1, -4)).i(rvLw(T2, T1, -8)).i(rvJalr(X0, T2, 0));
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
    const c = this.ctrlBase(a, T4, layout);
    a.i(rvLw(T2, c.reg, c.off + Ctrl.ssp)).i(rvLw(T5, c.reg, c.off + Ctrl.sslimit));
    a.label('CE_fullbr').b('bgeu', T2, T5, 'CE_full');
    a.i(rvSw(RA, T2, 0)).i(rvAddi(T2, T2, 4)).i(rvSw(T2, c.reg, c.off + Ctrl.ssp));
    a.i(rvLw(T5, T1, Rec.calls)).i(rvAddi(T5, T5, 1)).i(rvSw(T5, T1, Rec.calls));
    a.i(rvLw(RA, T1, Rec.exit)); // the function now returns into the exit stub
    a.i(rvLw(T2, T1, Rec.depth)).i(rvAddi(T5, T2, 1)).i(rvSw(T5, T1, Rec.depth));
    a.i(rvLw(T5, c.reg, c.off + Ctrl.pay)).i(rvAdd(T5, T5, T3));
    a.label('CE_br').b('bne', T2, X0, 'CE_nested');
    a.label('CE_outer').i(rvLw(T3, T1, Rec.costEntryOuter)).i(rvAdd(T5, T5, T3)).i(rvSw(T5, c.reg, c.off + Ctrl.pay));
    a.i(rvSw(T5, T1, Rec.payStart)).i(rvJalr(X0, T6, 0));
    a.label('CE_nested').i(rvLw(T3, T1, Rec.costEntryNested)).i(rvAdd(T5, T5, T3)).i(rvSw(T5, c.reg, c.off + Ctrl.pay)).i(rvJalr(X0, T6, 0));
    a.label('CE_full').i(rvLw(T5, T1, Rec.untracked)).i(rvAddi(T5, T5, 1)).i(rvSw(T5, T1, Rec.untracked));
    a.i(rvLw(T5, c.reg, c.off + Ctrl.pay)).i(rvAdd(T5, T5, T3));
    // An untracked entry runs the stub's nested path with this routine's full path instead.
    a.i(rvLw(T3, T1, Rec.costEntryNested)).late(() => rvAddi(T3, T3, paths.CE_full! - paths.CE_nested!));
    a.i(rvAdd(T5, T5, T3)).i(rvSw(T5, c.reg, c.off + Ctrl.pay)).i(rvAddi(T2, X0, 1)).i(rvJalr(X0, T6, 0));
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
  private commonExit(a: Rv32Assembler, layout: RuntimeLayout, paths: Record<string, number>, hardware: boolean, keeps = false): void {
    // `keeps` (CXK): the exit stub read the counter into ra and reserved a frame; the routine gives
    // back every register it uses, for callers that keep values across the call (trampolineRv32Kept.ts).
    const p = hardware ? 'HX' : keeps ? 'CXK' : 'CX';
    a.label(p);
    if (keeps) exitRoutineSave(a);
    a.i(rvCsrrci(T0, MSTATUS, MSTATUS_MIE));
    const c = this.ctrlBase(a, T4, layout);
    a.i(rvLw(T2, T1, Rec.depth)).i(rvAddi(T2, T2, -1)).i(rvSw(T2, T1, Rec.depth));
    a.i(rvLw(T5, c.reg, c.off + Ctrl.pay));
    a.label(`${p}_br`).b('bne', T2, X0, `${p}_nested`);
    if (hardware) a.i(rvSw(T3, T1, Rec.held)); // what the counter holds until the next pass
    a.jal(T6, 'ACC').i(rvLw(A3, T1, Rec.costExitOuter)).jal(X0, `${p}_pay`);
    a.label(`${p}_nested`).i(rvLw(A3, T1, Rec.costExitNested));
    a.label(`${p}_pay`).i(rvAdd(T5, T5, A3)).i(rvSw(T5, c.reg, c.off + Ctrl.pay));
    a.i(rvLw(T6, c.reg, c.off + Ctrl.ssp)).i(rvLw(A3, c.reg, c.off + Ctrl.ssbase)).b('beq', T6, A3, `${p}_under`);
    a.i(rvAddi(T6, T6, -4)).i(rvSw(T6, c.reg, c.off + Ctrl.ssp)).i(rvLw(RA, T6, 0));
    a.i(rvCsrw(MSTATUS, T0));
    if (hardware) {
      a.label(`${p}_rb`).b('beq', T2, X0, `${p}_ret`);
      a.i(rvCsrw(this.csr, T3)).i(rvCsrrci(X0, MCOUNTINHIBIT, 1 << this.inhibitBit));
    }
    a.label(`${p}_ret`);
    if (keeps) exitRoutineRestore(a);
    a.i(rvJalr(X0, RA, 0));
    a.label(`${p}_under`).i(rvEbreak()); // an exit with an empty shadow stack: trap rather than jump anywhere
    const head = a.between(p, `${p}_br`) + 1;
    const tail = a.between(`${p}_pay`, hardware ? `${p}_rb` : `${p}_ret`) + (hardware ? 1 : 0) + a.between(`${p}_ret`, `${p}_under`);
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
    a.label('ACC').i(rvLw(A2, T1, Rec.start)).i(rvSub(T3, T3, A2));
    a.i(rvLw(A2, T1, Rec.payStart)).i(rvSub(A2, T5, A2));
    this.add64(a, Rec.totalLo, T3);
    this.add64(a, Rec.nestedLo, A2);
    a.i(rvSub(T3, T3, A2));
    a.i(rvLw(A3, T1, Rec.passes)).i(rvAddi(A3, A3, 1)).i(rvSw(A3, T1, Rec.passes));
    // min = min + ((v - min) & -(v < min)); max likewise: no branch, so no path-dependent cost.
    a.i(rvLw(A3, T1, Rec.min)).i(rvSltu(A4, T3, A3)).i(rvSub(A5, T3, A3)).i(rvSub(A4, X0, A4)).i(rvAnd(A5, A5, A4)).i(rvAdd(A3, A3, A5)).i(rvSw(A3, T1, Rec.min));
    a.i(rvLw(A3, T1, Rec.max)).i(rvSltu(A4, A3, T3)).i(rvSub(A5, T3, A3)).i(rvSub(A4, X0, A4)).i(rvAnd(A5, A5, A4)).i(rvAdd(A3, A3, A5)).i(rvSw(A3, T1, Rec.max));
    a.i(rvLw(A3, T1, Rec.ringIndex)).i(rvAddi(A4, A3, 1)).i(rvSw(A4, T1, Rec.ringIndex));
    a.i(rvAndi(A3, A3, 7)).i(rvSlli(A3, A3, 2)).i(rvAdd(A3, A3, T1)).i(rvSw(T3, A3, Rec.ring));
    a.label('ACC_ret').i(rvJalr(X0, T6, 0));
    a.label('ACC_end');
    paths.ACC = a.between('ACC', 'ACC_end');
  }

  /** 64-bit add of `reg` into the record pair at `lo`/`lo + 4` (a3-a5 scratch). */
  private add64(a: Rv32Assembler, lo: number, reg: number): void {
    a.i(rvLw(A3, T1, lo)).i(rvAdd(A4, A3, reg)).i(rvSltu(A5, A4, A3)).i(rvSw(A4, T1, lo));
    a.i(rvLw(A3, T1, lo + 4)).i(rvAdd(A3, A3, A5)).i(rvSw(A3, T1, lo + 4));
  }

  // ---- per-measurement stubs -------------------------------------------------------------------

  buildStubs(req: StubRequest, runtime: RuntimeImage, layout: RuntimeLayout): StubImage {
    if (req.kind === 'region') return this.regionStubs(req, runtime, layout);
    if (req.payload === 'hardware') {
      if (req.kind !== 'function') throw new InjectionRefusedError(refusal('unrelocatable', 'Hardware gating measures whole functions through an entry patch; call-site measurement uses software accumulation.'));
      return this.hardwareFunctionStubs(req, runtime, layout);
    }
    return this.softwareFunctionStubs(req, runtime, layout);
  }

  /**
   * Where the displaced code can leave the stub: the resume point after it, and the targets of
   * conditional branches among it. Each far exit gets a register loaded (with `lui`, before the
   * counter is read) from `candidates`; near ones use `jal x0`.
   */
  private planExits(at: number, site: PatchSite | undefined, resume: number, candidates: number[], fixed: Record<number, number> = {}, late: Set<number> = new Set()): ExitPlan {
    const targets = [resume, ...(site?.displaced.filter((i) => i.kind === 'condBranch').map((i) => i.target!) ?? [])];
    const regs = new Map<number, number>();
    const byHi = new Map<number, number>();
    const free = candidates.filter((r) => !(this.touched(site?.displaced ?? []) & (1 << r)));
    for (const t of targets) {
      if (!this.mayBeFar(at, t) || regs.has(t)) continue;
      const hi = splitHiLo(t).hi;
      const reg = fixed[t] ?? byHi.get(hi) ?? free.shift();
      if (reg === undefined) {
        throw new InjectionRefusedError(refusal('noFreeRegister', `No register is free to leave the trampoline for ${hex(t)}${site ? ` (patch at ${hex(site.address)})` : ''}: the stub is beyond JAL's +/-1 MiB from the code and the displaced instructions use every candidate.`, site?.address ?? t));
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
  private hoistAuipcs(site: PatchSite, plan: ExitPlan): void {
    const live = reachableDisplaced(site.displaced);
    const stubRegs = mask(T0, T1, T2, T3, T4, T5, T6, RA);
    let seen = 0;
    live.forEach((insn, k) => {
      const e = rvRegisterEffects(insn);
      if (insn.mnemonic === 'auipc') {
        const rd = (rvWord(insn.bytes) >> 7) & 0x1f;
        const next = live[k + 1];
        const fused = next !== undefined && (rvRegisterEffects(next).uses & (1 << rd)) !== 0 && (rvRegisterEffects(next).defs & (1 << rd)) !== 0 && ['addi', 'lw', 'jalr'].includes(next.mnemonic);
        if (rd !== X0 && !(stubRegs & (1 << rd)) && !(seen & (1 << rd)) && !fused) {
          const { hi, lo } = splitHiLo(insn.target!);
          plan.hoisted.set(insn.address, { rd, hi, lo });
        }
      }
      seen |= e.uses | e.defs;
    });
  }

  /** The `lui` of every far exit (uncounted: emitted before the window opens). */
  private loadExits(a: Rv32Assembler, plan: ExitPlan): void {
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
  private emitDisplaced(a: Rv32Assembler, site: PatchSite, plan: ExitPlan): { extra: number; falls: boolean; notes: string[]; exits: Array<{ label: string; target: number }> } {
    const exits: Array<{ label: string; target: number }> = [];
    const notes: string[] = [];
    let extra = 0;
    let falls = true;
    let run: DecodedInstruction[] = [];
    const flush = (): void => {
      if (run.length === 0) return;
      const r = this.relocator.relocate(run, a.pc, { patched: { start: site.address, end: site.address + site.shape.length }, ...this.scratchFor(plan) });
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
  private jumpTo(a: Rv32Assembler, target: number, plan: ExitPlan): void {
    if (fitsSigned(target - a.pc, 21)) {
      a.i(encodeJal(X0, a.pc, target));
      return;
    }
    const reg = plan.regs.get(target);
    if (reg === undefined) throw new Error(`no exit register for ${hex(target)}`);
    if (plan.late.has(reg)) a.i(rvLui(reg, splitHiLo(target).hi));
    a.i(rvJalr(X0, reg, splitHiLo(target).lo));
  }

  private emitExits(a: Rv32Assembler, exits: Array<{ label: string; target: number }>, plan: ExitPlan): void {
    for (const e of exits) {
      a.label(e.label);
      this.jumpTo(a, e.target, plan);
    }
  }

  /** Whether a `jal` anywhere in a stub at `at` (stubs are < 1 KiB) might not reach `target`. */
  private mayBeFar(at: number, target: number): boolean {
    return !fitsSigned(target - at, 21) || !fitsSigned(target - (at + 1024), 21);
  }

  private touched(insns: readonly DecodedInstruction[]): number {
    return insns.reduce((m, x) => {
      const e = rvRegisterEffects(x);
      return (m | e.uses | e.defs) >>> 0;
    }, 0);
  }

  private softwareFunctionStubs(req: Extract<StubRequest, { kind: 'function' | 'callSite' }>, runtime: RuntimeImage, layout: RuntimeLayout): StubImage {
    const a = new Rv32Assembler(req.at);
    const site = req.kind === 'function' ? req.entry : undefined;
    const resume = req.kind === 'function' ? req.entry.resume : req.target;
    // A patch jump is payload; a rewritten call replaces the program's own call one for one.
    const patchInsns = site ? (site.shape.kind === 'rvAuipc' ? 2 : 1) : 0;
    // t0-t3 carry mstatus, the record, the depth and the counter value; t4-t6 can hold exits.
    const plan = this.planExits(req.at, site, resume, entryExitCandidates(site));
    if (site) this.hoistAuipcs(site, plan);
    // Registers callers keep across the call are given back (trampolineRv32Kept.ts); the exit
    // stubs of a group serve every member, so they save for the union (exitKeeps).
    const frame = new EntryFrame(site);
    const exitSaves = req.kind === 'function' && exitKeeps(req.exitKeeps ?? site?.keptRegisters ?? 0);
    a.label('S');
    const saves = frame.save(a);
    a.i(rvAddi(T3, X0, patchInsns + saves + 1));
    a.label('S_d');
    this.loadAddress(a, T1, req.record, layout);
    a.jal(T6, 'CE_ext');
    frame.restoreEarly(a);
    this.loadExits(a, plan);
    // Group members pad to one shape (see StubPadding); a 4-byte NOP keeps every alignment.
    const padding = req.kind === 'function' ? (req.padding ?? { outside: 0, inside: 0 }) : { outside: 0, inside: 0 };
    for (let k = 0; k < padding.outside; k++) a.i(rvAddi(X0, X0, 0));
    a.label('S_br').b('bne', T2, X0, 'S_skip');
    a.label('S_snap').i(rvCsrr(T3, this.csr)).i(rvSw(T3, T1, Rec.start));
    a.label('S_skip').i(rvCsrw(MSTATUS, T0));
    const restored = frame.restoreInWindow(a);
    for (let k = 0; k < padding.inside; k++) a.i(rvAddi(X0, X0, 0));
    let d = { extra: 0, falls: true, notes: [] as string[], exits: [] as Array<{ label: string; target: number }> };
    if (site) d = this.emitDisplaced(a, site, plan);
    // When the displaced code ends in a jump or return (a tiny function), it leaves on its own.
    if (d.falls) this.jumpTo(a, resume, plan);
    a.label('S_end');
    this.emitExits(a, d.exits, plan);
    a.align(4);
    a.label('X');
    if (exitSaves) exitStubSave(a, (rd) => rvCsrr(rd, this.csr));
    else a.i(rvCsrr(T3, this.csr));
    this.loadAddress(a, T1, req.record, layout);
    a.jal(X0, 'CX_ext');
    a.label('X_end');
    a.defineExternal('CE_ext', runtime.labels.CE!);
    a.defineExternal('CX_ext', exitSaves ? runtime.labels.CXK! : runtime.labels.CX!);
    const P = runtime.paths;
    const cx = exitSaves ? 'CXK' : 'CX';
    // Payload instructions = instructions run - displaced program instructions (the program's own).
    const stubPath = a.between('S_d', 'S_end') - (site ? reachableDisplaced(site.displaced).length : 0);
    const costs: PathCosts = {
      entryOuter: stubPath + P.CE_outer!,
      entryNested: stubPath - 2 + P.CE_nested!, // the nested path skips the csrr and sw
      exitOuter: a.between('X', 'X_end') + P[`${cx}_outer`]! + P.ACC!,
      exitNested: a.between('X', 'X_end') + P[`${cx}_nested`]!,
    };
    const leaves = d.falls || d.exits.length > 0 ? 1 : 0;
    const counted: CountedOverhead = {
      outer: 3 + restored + padding.inside + d.extra + leaves,
      nested: 0,
      explanation: `per pass: sw of the start value, csrw mstatus${restored ? `, ${restored} instruction(s) giving back ${frame.describe()} (kept by callers across the call) and the stack` : ''}${padding.inside ? `, ${padding.inside} nop(s) padding the group's stubs to one cost` : ''}${leaves ? ', the jump back (or the exit of a displaced branch)' : ''}${d.extra ? `, ${d.extra} extra instruction(s) from relocating the displaced code` : ''}, and one of the two csrr ${this.counter.name}`,
    };
    return { address: req.at, bytes: a.bytes(), entry: a.address('S'), dispatchEntry: a.address('S_d'), exit: a.address('X'), costs, counted, notes: d.notes };
  }

  private hardwareFunctionStubs(req: Extract<StubRequest, { kind: 'function' }>, runtime: RuntimeImage, layout: RuntimeLayout): StubImage {
    const site = req.entry;
    const keptHere = (site.keptRegisters ?? 0) & EXIT_USES;
    if (keptHere) {
      throw new InjectionRefusedError(refusal('noFreeRegister', `Callers keep values in ${regNames(keptHere)} across their calls of this function (-fipa-ra), and the hardware-gating stubs do not give registers back. Measure it with software accumulation (the default payload).`, site.address));
    }
    const a = new Rv32Assembler(req.at);
    const bit = 1 << this.inhibitBit;
    const patchInsns = site.shape.kind === 'rvAuipc' ? 2 : 1;
    const plan = this.planExits(req.at, site, site.resume, [T4, T5, T6]);
    this.hoistAuipcs(site, plan);
    // Stop first: a recursive entry must not count this payload in the open pass.
    a.label('S').i(rvCsrrsi(X0, MCOUNTINHIBIT, bit)).i(rvAddi(T3, X0, patchInsns + 2));
    this.loadAddress(a, T1, req.record, layout);
    // The value now; QEMU 7.2 keeps counting while inhibited, so the stub re-bases to it below.
    a.i(rvCsrr(T2, this.csr)).i(rvSw(T2, T1, Rec.scratch));
    a.jal(T6, 'CE_ext');
    this.loadExits(a, plan);
    a.b('bne', T2, X0, 'S_nested');
    a.label('S_outer').i(rvLw(T3, T1, Rec.held)).i(rvSw(T3, T1, Rec.start)).jal(X0, 'S_run');
    a.label('S_nested').i(rvLw(T3, T1, Rec.scratch));
    a.label('S_run').i(rvCsrw(this.csr, T3)).i(rvCsrrci(X0, MCOUNTINHIBIT, bit)).i(rvCsrw(MSTATUS, T0));
    const d = this.emitDisplaced(a, site, plan);
    if (d.falls) this.jumpTo(a, site.resume, plan);
    a.label('S_end');
    this.emitExits(a, d.exits, plan);
    a.align(4);
    a.label('X').i(rvCsrrsi(X0, MCOUNTINHIBIT, bit)).i(rvCsrr(T3, this.csr));
    this.loadAddress(a, T1, req.record, layout);
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
        explanation: `outer pass: the csrw re-base, csrci mcountinhibit, csrw mstatus and the jump back at entry${d.extra ? ` (+${d.extra} from relocation)` : ''}, csrsi at exit; a recursive call adds its entry stub up to the counter read and after the re-base, and csrsi, re-base, csrci and ret at its exit (QEMU 7.2 semantics)`,
      },
      notes: [...d.notes, 'QEMU 7.2 does not stop its counters on mcountinhibit: the stubs re-base the counter with csrw at every start, which is a no-op on hardware.'],
    };
  }

  /**
   * Region stubs: nothing is free in the middle of a function, so the stubs use the registers the
   * planner found dead (liveness over the function's CFG) and save the others below sp (the
   * stack below sp is dead at every instruction: interrupt handlers push there too).
   */
  private regionStubs(req: Extract<StubRequest, { kind: 'region' }>, runtime: RuntimeImage, layout: RuntimeLayout): StubImage {
    if (req.payload === 'hardware') throw new InjectionRefusedError(refusal('unrelocatable', 'Regions use software accumulation; hardware gating measures whole functions.'));
    const a = new Rv32Assembler(req.at);
    const P = runtime.paths;
    const patchInsns = (s: PatchSite): number => (s.shape.kind === 'rvAuipc' ? 2 : 1);
    // ---- start: m = mstatus, b = record, v = value, q = temp, c = control base (when not tp)
    const start = req.start;
    const startPlan = this.planExits(req.at, start, start.resume, this.deadCandidates(start), this.fixedExits(start), this.lateExits(start));
    const busy = new Set(startPlan.regs.values());
    const startRegs = this.pickRegisters([T0, T1, T3, T4, T5], start.freeRegisters, busy);
    const [m, b, v, q, cb] = startRegs.regs as [number, number, number, number, number];
    a.label('RS');
    const startSaved = this.save(a, startRegs.saved);
    a.i(rvCsrrci(m, MSTATUS, MSTATUS_MIE));
    this.loadAddress(a, b, req.record, layout);
    a.i(rvLw(v, b, Rec.calls)).i(rvAddi(v, v, 1)).i(rvSw(v, b, Rec.calls));
    a.i(rvAddi(v, X0, 1)).i(rvSw(v, b, Rec.depth));
    const c = this.ctrlBase(a, cb, layout);
    a.i(rvLw(v, c.reg, c.off + Ctrl.pay)).i(rvLw(q, b, Rec.costEntryOuter)).i(rvAdd(v, v, q)).i(rvSw(v, c.reg, c.off + Ctrl.pay)).i(rvSw(v, b, Rec.payStart));
    this.loadExits(a, startPlan);
    a.label('RS_snap').i(rvCsrr(v, this.csr)).i(rvSw(v, b, Rec.start)).i(rvCsrw(MSTATUS, m));
    this.restore(a, startRegs.saved, startSaved);
    const ds = this.emitDisplaced(a, start, startPlan);
    if (ds.falls) this.jumpTo(a, start.resume, startPlan);
    a.label('RS_end');
    this.emitExits(a, ds.exits, startPlan);
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
    this.loadAddress(a, T1, req.record, layout);
    const ce = this.ctrlBase(a, T4, layout);
    a.i(rvLw(T5, ce.reg, ce.off + Ctrl.pay)).i(rvLw(T2, T1, Rec.depth));
    a.label('RE_br').b('beq', T2, X0, 'RE_unmatched');
    a.i(rvSw(X0, T1, Rec.depth)).jal(T6, 'ACC_ext').i(rvLw(A3, T1, Rec.costExitOuter)).jal(X0, 'RE_pay');
    a.label('RE_unmatched').i(rvLw(A3, T1, Rec.untracked)).i(rvAddi(A3, A3, 1)).i(rvSw(A3, T1, Rec.untracked)).i(rvLw(A3, T1, Rec.costExitNested));
    a.label('RE_pay').i(rvAdd(T5, T5, A3)).i(rvSw(T5, ce.reg, ce.off + Ctrl.pay)).i(rvCsrw(MSTATUS, T0));
    for (const r of endSaved) a.i(rvLw(r, SP, slot(r)));
    if (t3Live) a.i(rvLw(T3, SP, 0));
    a.i(rvAddi(SP, SP, frame));
    const endPlan = this.planExits(a.pc, end, end.resume, this.deadCandidates(end), this.fixedExits(end), this.lateExits(end));
    this.loadExits(a, endPlan);
    const de = this.emitDisplaced(a, end, endPlan);
    if (de.falls) this.jumpTo(a, end.resume, endPlan);
    a.label('RE_end');
    this.emitExits(a, de.exits, endPlan);
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
        explanation: `per pass: ${afterStartSnap} instruction(s) after the start's csrr (store, unmask, register restores, the jump back), ${beforeEndSnap} before the end's csrr (the end patch's jump, register saves), and one csrr`,
      },
      notes: [...ds.notes, ...de.notes],
    };
  }

  /** Registers dead at a mid-function site that the displaced code leaves alone (t-registers first). */
  private deadCandidates(site: PatchSite): number[] {
    const order = [T4, T5, T6, T2, T3, T1, T0, Reg.a7, Reg.a6, A5, A4, A3, A2];
    return order.filter((r) => (site.freeRegisters & (1 << r)) !== 0 && !(this.touched(site.displaced) & (1 << r)));
  }

  /** The planner's register for the resume point (dead there, not written by the displaced code). */
  private fixedExits(site: PatchSite): Record<number, number> {
    return site.resumeRegister !== undefined ? { [site.resume]: site.resumeRegister } : {};
  }

  private lateExits(site: PatchSite): Set<number> {
    return site.resumeRegisterLate && site.resumeRegister !== undefined ? new Set([site.resumeRegister]) : new Set();
  }

  /** Registers for a stub: dead ones first (no save), then the preferred ones (saved below sp). */
  private pickRegisters(preferred: number[], free: number, avoid: ReadonlySet<number>): { regs: number[]; saved: number[] } {
    const usable = (r: number): boolean => r !== X0 && r !== SP && r !== Reg.gp && r !== TP && !avoid.has(r);
    const dead: number[] = [];
    for (let r = 1; r < 32; r++) if ((free & (1 << r)) !== 0 && usable(r)) dead.push(r);
    const regs: number[] = [];
    const saved: number[] = [];
    for (const p of preferred) {
      const d = dead.shift();
      if (d !== undefined) regs.push(d);
      else {
        const candidate = preferred.concat([T2, T6, A2, A3, A4, A5]).find((r) => usable(r) && !regs.includes(r) && !saved.includes(r) && (free & (1 << r)) === 0);
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

  // ---- patches ---------------------------------------------------------------------------------

  encodePatch(site: PatchSite, target: number, layout: RuntimeLayout): Uint8Array {
    const out = new Uint8Array(site.original.length);
    let jump: Uint8Array;
    switch (site.shape.kind) {
      case 'rvTp':
        jump = rvJalr(X0, TP, target - layout.threadPointer!);
        break;
      case 'rvJal':
        jump = encodeJal(X0, site.address, target);
        break;
      case 'rvAuipc': {
        const { hi, lo } = splitHiLo(target - site.address);
        jump = new Uint8Array([...rvAuipc(site.shape.scratch, hi), ...rvJalr(X0, site.shape.scratch, lo)]);
        break;
      }
      default:
        throw new Error(`${site.shape.kind} is not an RV32 patch`);
    }
    out.set(jump, 0);
    // Bytes past the jump up to the next instruction boundary are never executed; C.NOP keeps a
    // disassembly of the patched code readable.
    for (let k = jump.length; k + 1 < out.length; k += 2) out.set(half16(0x0001), k);
    return out;
  }

  encodeCallSite(site: CallSite, stub: StubImage, layout: RuntimeLayout): Uint8Array {
    const tp = layout.threadPointer;
    const link = site.kind === 'call' ? RA : X0;
    if (site.length === 2) {
      if (site.kind !== 'call' || tp === undefined) throw new Error('2-byte call sites need the tp dispatcher');
      return rvCJalr(TP); // -> dispatcher at tp, which finds this site by its return address
    }
    if (tp !== undefined && fitsSigned(stub.entry - tp, 12)) return rvJalr(link, TP, stub.entry - tp);
    return encodeJal(link, site.address, stub.entry);
  }

  calibrationCode(at: number, calls: number): { bytes: Uint8Array; fn: number; driver: number; done: number; functionInstructions: number } {
    const a = new Rv32Assembler(at);
    // The empty function: a 4-byte NOP the patch displaces, and the return.
    a.label('FN').i(rvAddi(X0, X0, 0)).i(rvJalr(X0, RA, 0));
    a.label('DRV').i(rvCsrrci(X0, MSTATUS, MSTATUS_MIE));
    // The loop counter lives in s1: callee-saved, so the measured call must leave it alone.
    const n = rvLoadAddress(Reg.s1, calls);
    a.code(n, n.length / 4);
    a.label('L').jal(RA, 'FN').i(rvAddi(Reg.s1, Reg.s1, -1)).b('bne', Reg.s1, X0, 'L');
    a.label('DONE').i(rvEbreak());
    return { bytes: a.bytes(), fn: a.address('FN'), driver: a.address('DRV'), done: a.address('DONE'), functionInstructions: 2 };
  }
}
