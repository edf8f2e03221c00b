import type { InjectionWarning } from '../../../common/dapCustom';
import type { ElfImage } from '../../elf';
import { CycleLensError, ErrorCode } from '../../errors';
import type { TargetAccess } from '../targetAccess';
import { CaveAllocator, type Block } from './caveAllocator';
import { InjectionRefusedError, hex, refusal, warning } from './errors';
import { buildGroupStubs, memberRefusal } from './groupStubs';
import { PatchJournal } from './journal';
import { memoryKindAt, type MemoryRegion } from './memoryMap';
import type { CountedOverhead, DispatchEntry, PayloadGenerator, RuntimeImage, RuntimeLayout, StubImage, StubRequest } from './payload';
import { InjectionPlanner, reachableDisplaced } from './planner';
import { ProgramModel } from './programModel';
import { Ctrl, RECORD_SIZE, Rec, decodeRecord, initialControl, initialRecord } from './recordLayout';
import type { CaveReach, CounterSource, FunctionPlan, InjectionArch, InjectionPlan, InjectionRefusal, PatchSite, PayloadKind, ReservedMemory } from './types';

/** Run control for calibration: resume until `address` executes (true), or give up after `timeoutMs`. */
export interface TargetRunner {
  runTo(address: number, timeoutMs: number): Promise<boolean>;
}

/** The per-family parts the service needs (built by adapter/arch/<family>/). */
export interface InjectionFamilySupport {
  arch: InjectionArch;
  generator: PayloadGenerator;
  /** Register names to save and restore around calibration runs. */
  registers: readonly string[];
  /** Thumb: entry and exit addresses carry bit 0. */
  codeAddressBit: number;
  /**
   * Programs the counter if it needs it (SysTick, DWT). Returns code to run on the target instead
   * when the debugger cannot reach the registers (QEMU's gdbstub does not reach the M-profile SCS).
   */
  prepareCounter?(access: TargetAccess): Promise<TargetCode | undefined>;
  /** Where the halted program will resume besides the PC (RV32 mepc, Cortex-M stacked PC). */
  resumePoints?(access: TargetAccess): Promise<Array<{ what: string; address: number }>>;
}

/** A routine the service runs on the halted target (registers saved and restored around it). */
export interface TargetCode {
  build(at: number): { bytes: Uint8Array; entry: number; done: number };
  what: string;
}

export interface InjectionServiceOptions {
  access: TargetAccess;
  elf: ElfImage;
  support: InjectionFamilySupport;
  /** The service injects and removes only while this says the target is halted. */
  isHalted: () => boolean;
  /** Directory of patch journals, e.g. `<workspace>/.cyclelens/journal`. */
  journalDir: string;
  reserved: ReservedMemory;
  /** The target's memory map (`info mem`, QEMU_MEMORY_MAPS); patches into flash/ROM are refused. */
  memoryMap?: readonly MemoryRegion[];
  allowFlashWrites?: boolean;
  /** RV32: keep the cave's base in tp when no instruction of the program names tp (default true). */
  useThreadPointer?: boolean;
  shadowSlots?: number;
  /** Counter units per payload instruction (1 for instruction counters; 1/40 for SysTick at 25 MHz under -icount shift=0). */
  counterUnitsPerInstruction?: number;
  runner?: TargetRunner;
  log?: (line: string) => void;
}

export interface MeasureOptions {
  payload?: PayloadKind;
  /** When the entry cannot be patched (too short, a branch into the patch, an IT block …), measure at the call sites instead of refusing. */
  callSitesIfTooShort?: boolean;
}

export interface GroupOptions {
  /** Software accumulation only: `hardware` is refused. */
  payload?: PayloadKind;
  /** Defaults to the members' names joined with " + ". */
  name?: string;
}

/** `group`: one record shared by the entry patches of several functions (measureGroup). */
export type MeasurementKind = InjectionPlan['kind'] | 'group';

export interface MeasurementInfo {
  id: number;
  name: string;
  kind: MeasurementKind;
  /** A group's functions, in the order given. */
  members?: string[];
  payload: PayloadKind;
  counter: string;
  patches: Array<{ address: number; length: number }>;
  stub: { address: number; size: number };
  record: number;
  counted: CountedOverhead;
  warnings: InjectionWarning[];
  notes: string[];
}

export interface PassValues {
  raw: number[];
  compensated: number[];
}

export interface MeasurementResults {
  id: number;
  name: string;
  kind: MeasurementKind;
  payload: PayloadKind;
  counter: string;
  /** Entries through the patch (every recursive call included). */
  calls: number;
  /** Completed outermost passes: what total, min, max and mean describe. */
  passes: number;
  /** Entries not redirected (FNC_RETURN in LR, full shadow stack) or region ends with no open pass. */
  untracked: number;
  /** Calls in flight when read (depth). */
  open: number;
  /** Counter units inside all passes, as counted. */
  total: number;
  /** Payload instructions of other measurements inside the passes, in counter units. */
  nested: number;
  /** total - nested - own payload per pass: the program's own cost. */
  compensatedTotal: number;
  ownOverheadPerPass: number;
  min: number | null;
  max: number | null;
  mean: number | null;
  meanCompensated: number | null;
  /** The last up to eight passes (each without nested payloads; compensated also without the own). */
  last: PassValues;
}

interface Measurement {
  info: MeasurementInfo;
  stub: StubImage;
  blocks: Block[];
  patches: Array<{ address: number; original: Uint8Array; patched: Uint8Array; stopAt?: number }>;
  dispatch: DispatchEntry[];
  heldBase?: number;
  /** A displaced call runs from the stub, so its memory is never reused in this session. */
  pinned: boolean;
}

/**
 * Where a stop at the first byte of a patch is taken: a jump to a trampoline moves the code it
 * displaced into the trampoline, so the stop moves to `resume`, reached once those instructions
 * fall through to it. Undefined where the stop stays on the patch itself: a rewritten call still
 * runs in place, and displaced code that branches away never comes back (the stop is then taken
 * before the payload).
 */
function stopAfter(site: PatchSite): number | undefined {
  const live = reachableDisplaced(site.displaced);
  return live.length === site.displaced.length && live.every((x) => x.kind === 'plain' || x.kind === 'call' || x.kind === 'it') ? site.resume : undefined;
}

/** Where a stop asked for at some address is taken while measurements are patched in. */
export type StopPoint = { ok: true; address: number; moved?: { from: number; measurement: string } } | { ok: false; reason: string };

const SHADOW_SLOTS = 64;
/** Stack for the calibration driver (the Cortex-M stubs push four registers). */
const CALIBRATION_STACK = 128;
const DISPATCH_CAPACITY = 24;

/**
 * Function and region measurement by code injection (docs/design.md, "Measurement semantics"):
 * plans with InjectionPlanner, builds payloads with the family's generator in the reserved RAM,
 * journals original bytes before writing, verifies every write, and restores (checked against the
 * ELF) on removal. Every method requires a halted target.
 */
export class InjectionService {
  readonly model: ProgramModel;
  readonly planner: InjectionPlanner;
  readonly layout: RuntimeLayout;
  readonly cave: CaveReach;
  private allocator: CaveAllocator;
  /** The reserved memory left for stubs and records once the runtime's place is set aside. */
  private readonly stubRanges: Block[];
  private readonly journal: PatchJournal;
  private readonly measurements = new Map<number, Measurement>();
  private runtime: RuntimeImage | undefined;
  private nextId = 1;
  private unitsPerInstruction: number;

  /** Instructions per counter unit where the target facts fix it (40 for QEMU's SysTick under -icount shift=0), else undefined. */
  get instructionsPerCounterUnit(): number | undefined {
    return this.unitsPerInstruction === 1 ? undefined : 1 / this.unitsPerInstruction;
  }
  private hardwareSlotInUse = false;
  /** Outer-pass overhead of hardware gating measured on this target (calibrate('hardware')). */
  private calibratedHardwareOverhead: number | undefined;
  private savedThreadPointer: bigint | undefined;

  constructor(private readonly o: InjectionServiceOptions) {
    this.model = new ProgramModel(o.elf, o.support.arch);
    this.unitsPerInstruction = o.counterUnitsPerInstruction ?? 1;
    const r = o.reserved;
    const slots = o.shadowSlots ?? SHADOW_SLOTS;
    const ctrlSize = Ctrl.shadow + 4 * slots;
    const tableAt = align(r.start + ctrlSize, 4);
    const tableEnd = tableAt + 12 * (DISPATCH_CAPACITY + 1);
    const runtimeSize = o.support.generator.runtimeSize({ ctrl: r.start, shadowSlots: slots, runtime: 0, dispatchTable: tableAt, dispatchCapacity: DISPATCH_CAPACITY });
    const end = r.start + r.size;
    const tpFree = o.support.arch.threadPointer !== undefined && o.useThreadPointer !== false && !this.model.referencesRegister(o.support.arch.threadPointer);
    if (tpFree) {
      // tp in the middle: `jalr x0, off(tp)` and `addi rd, tp, off` reach +/-2 KiB around it.
      const tp = align(r.start + Math.min(2048, Math.floor(r.size / 2)), 4);
      const windowEnd = Math.min(end, tp + 2048);
      if (tp < tableEnd || tp + runtimeSize > windowEnd) throw new CycleLensError(ErrorCode.InvalidRequest, `The reserved memory at ${hex(r.start)} (${r.size} bytes) is too small for the injector's runtime.`);
      this.layout = { ctrl: r.start, shadowSlots: slots, runtime: tp, dispatchTable: tableAt, dispatchCapacity: DISPATCH_CAPACITY, threadPointer: tp };
      this.stubRanges = [{ start: tableEnd, size: tp - tableEnd }, { start: tp + runtimeSize, size: windowEnd - tp - runtimeSize }];
      this.cave = { start: Math.max(r.start, tp - 2048), size: windowEnd - Math.max(r.start, tp - 2048), threadPointerBase: tp };
    } else {
      const runtime = align(tableEnd, 4);
      if (runtime + runtimeSize > end) throw new CycleLensError(ErrorCode.InvalidRequest, `The reserved memory at ${hex(r.start)} (${r.size} bytes) is too small for the injector's runtime.`);
      this.layout = { ctrl: r.start, shadowSlots: slots, runtime, dispatchTable: tableAt, dispatchCapacity: DISPATCH_CAPACITY };
      this.stubRanges = [{ start: runtime + runtimeSize, size: end - runtime - runtimeSize }];
      this.cave = { start: r.start, size: r.size };
    }
    this.allocator = new CaveAllocator(this.stubRanges);
    this.planner = new InjectionPlanner(this.model, o.support.arch, this.cave);
    this.journal = new PatchJournal(o.journalDir, o.elf, { start: r.start, size: r.size });
    if (r.warning) o.log?.(`${r.warning}\n`);
  }

  get counter(): CounterSource {
    return this.o.support.generator.counter;
  }

  // ---- measurements ----------------------------------------------------------------------------

  async measureFunction(target: string | number, options: MeasureOptions = {}): Promise<MeasurementInfo> {
    this.expectHalted('inject a measurement');
    const plan = this.planner.planFunction(target);
    if (!plan.ok) {
      if (plan.callSites?.usable.length && options.callSitesIfTooShort) return this.measureCallSites(target, options);
      throw new InjectionRefusedError(withOffer(plan));
    }
    const payload = options.payload ?? 'software';
    if (payload === 'hardware') this.claimHardwareSlot();
    try {
      return await this.install(plan.function.name, 'function', payload, plan.warnings, [plan.entry], (record, at) => ({ kind: 'function', payload, record, at, entry: plan.entry }));
    } catch (err) {
      if (payload === 'hardware') this.hardwareSlotInUse = false;
      throw err;
    }
  }

  /** Rewrites the function's direct calls to go through a stub (for functions too short to patch). */
  async measureCallSites(target: string | number, options: MeasureOptions = {}): Promise<MeasurementInfo> {
    this.expectHalted('inject a measurement');
    const plan = this.planner.planCallSites(target);
    if (!plan.ok) throw new InjectionRefusedError(plan);
    const fn = plan.function;
    return this.install(fn.name, 'callSites', options.payload ?? 'software', plan.warnings, [], (record, at) => ({ kind: 'callSite', payload: 'software', record, at, target: fn.start }), plan.sites);
  }

  async measureRegion(start: number, end: number): Promise<MeasurementInfo> {
    this.expectHalted('inject a measurement');
    const plan = this.planner.planRegion(start, end);
    if (!plan.ok) throw new InjectionRefusedError(plan);
    const name = `${plan.function.name} ${hex(start)}..${hex(end)}`;
    return this.install(name, 'region', 'software', plan.warnings, [plan.start, plan.end], (record, at) => ({ kind: 'region', payload: 'software', record, at, start: plan.start, end: plan.end }));
  }

  /**
   * One measurement over the entries of several functions: every member is entry-patched with a
   * stub of its own, and all stubs share one record, so it counts the union of their activations
   * (the record's depth counter makes a member called inside another count once) and every entry
   * through any member. All or nothing: if any member cannot be entry-patched the group is refused
   * with that member named, before anything is written or allocated. Members are never measured at
   * their call sites (those stubs link differently); hardware gating is refused.
   */
  async measureGroup(members: readonly string[], options: GroupOptions = {}): Promise<MeasurementInfo> {
    this.expectHalted('inject a measurement');
    if (options.payload === 'hardware') {
      throw new InjectionRefusedError(refusal('unrelocatable', 'Groups are measured with software accumulation only: hardware gating gives one counter slot to one function. Inject the group with the software payload.'));
    }
    const plans = this.planGroup(members);
    const sites = plans.map((p) => p.entry);
    const names = plans.map((p) => p.function.name);
    const name = options.name ?? names.join(' + ');
    const ranges = sites.map((st) => [st.address, st.address + st.original.length] as [number, number]);
    await forMembers(names, async (i) => {
      this.checkOverlap(sites[i]!.address, sites[i]!.original.length);
      await this.checkResumePoints([ranges[i]!]);
      this.checkMemory([ranges[i]!]);
    });
    if (this.hardwareSlotInUse) {
      throw new InjectionRefusedError(refusal('unrelocatable', `${this.counter.name} is gated by a hardware-gating measurement; software accumulation reads the same counter. Remove that measurement first.`));
    }
    const g = this.o.support.generator;
    // A trial at the cave's start refuses what cannot be relocated before anything is written.
    const trialRuntime = this.runtime ?? g.buildRuntime(this.layout);
    const trial = buildGroupStubs(g, sites.map((entry, i) => ({ name: names[i]!, entry, at: this.cave.start })), this.cave.start, trialRuntime, this.layout);
    await this.ensureRuntime();
    const runtime = this.runtime!;
    const blocks: Block[] = [];
    try {
      const recordBlock = this.allocOrThrow(RECORD_SIZE);
      blocks.push(recordBlock);
      // Room for the padding the final addresses may add over the trial's.
      for (const t of trial) blocks.push(this.allocOrThrow(t.bytes.length + 64));
      const stubBlocks = blocks.slice(1);
      const stubs = buildGroupStubs(g, sites.map((entry, i) => ({ name: names[i]!, entry, at: stubBlocks[i]!.start })), recordBlock.start, runtime, this.layout);
      stubs.forEach((st, i) => {
        if (st.bytes.length > stubBlocks[i]!.size) throw new Error(`the stub of ${names[i]} grew past its allocation`);
      });
      const first = stubs[0]!;
      // Every member's exit stub is the same code on the same record: the record names the first one.
      await this.o.access.writeMemory(BigInt(recordBlock.start), initialRecord((first.exit! | this.o.support.codeAddressBit) >>> 0, first.costs));
      for (const [i, st] of stubs.entries()) await this.o.access.writeMemory(BigInt(stubBlocks[i]!.start), st.bytes);
      const patches: Measurement['patches'] = sites.map((st, i) => ({ address: st.address, original: st.original, patched: g.encodePatch(st, stubs[i]!.entry, this.layout), stopAt: stopAfter(st) }));
      const warnings = plans.flatMap((p) => p.warnings.map((w) => ({ ...w, member: p.function.name, message: `${p.function.name}: ${w.message}` })));
      const info: MeasurementInfo = {
        id: this.nextId++,
        name,
        kind: 'group',
        members: names,
        payload: 'software',
        counter: this.counter.name,
        patches: patches.map((p) => ({ address: p.address, length: p.patched.length })),
        stub: { address: stubBlocks[0]!.start, size: first.bytes.length },
        record: recordBlock.start,
        counted: first.counted,
        warnings,
        notes: [...new Set(stubs.flatMap((st) => st.notes))],
      };
      const pinned = pinsMemory(sites, name, warnings);
      await this.commit({ info, stub: first, blocks, patches, dispatch: [], pinned }, true);
      return info;
    } catch (err) {
      for (const b of blocks) this.allocator.release(b);
      await this.reclaimIfIdle();
      throw err;
    }
  }

  /** Every member's entry plan, or the refusal of the first member that has none. */
  private planGroup(members: readonly string[]): FunctionPlan[] {
    if (members.length === 0) throw new InjectionRefusedError(refusal('notFound', 'The group has no members: name the functions it measures together.'));
    const plans: FunctionPlan[] = [];
    const seen = new Map<number, string>();
    for (const member of members) {
      const plan = this.planner.planFunction(member);
      if (!plan.ok) {
        const instead = plan.callSites?.usable.length ? ` Measure ${member} on its own (at its call sites), or leave it out of the group.` : ` Leave ${member} out of the group.`;
        throw memberRefusal(member, new InjectionRefusedError({ ...plan, reason: `${plan.reason}${instead}` }));
      }
      const before = seen.get(plan.function.start);
      if (before !== undefined) {
        const same = before === member ? `${member} is listed twice` : `${member} and ${before} are the same function`;
        throw new InjectionRefusedError(refusal('branchIntoPatch', `${same} in the group; a function's entry can carry one patch. List each function once.`, plan.function.start));
      }
      seen.set(plan.function.start, member);
      plans.push(plan);
    }
    return plans;
  }

  /** A dry run for the editor (CodeLens): the plan or the refusal, nothing written. */
  plan(target: string | number): InjectionPlan | InjectionRefusal {
    return this.planner.planFunction(target);
  }

  async remove(id: number): Promise<void> {
    this.expectHalted('remove a measurement');
    const m = this.measurements.get(id);
    if (!m) throw new CycleLensError(ErrorCode.InvalidRequest, `There is no measurement #${id}.`);
    const problems: string[] = [];
    for (const p of m.patches) {
      const now = await this.o.access.readMemory(BigInt(p.address), p.patched.length);
      if (!now.equals(Buffer.from(p.patched))) problems.push(`the code at ${hex(p.address)} changed after injection (reads ${now.toString('hex')})`);
      await this.o.access.writeMemory(BigInt(p.address), p.original);
      const check = await this.o.access.readMemory(BigInt(p.address), p.original.length);
      const image = this.model.imageBytes(p.address, p.original.length);
      if (!check.equals(Buffer.from(p.original))) problems.push(`restoring ${hex(p.address)} did not stick (reads ${check.toString('hex')})`);
      else if (image && !check.equals(Buffer.from(image))) problems.push(`${hex(p.address)} now holds ${check.toString('hex')}, but the ELF has ${Buffer.from(image).toString('hex')}`);
    }
    this.measurements.delete(id);
    if (m.dispatch.length) await this.writeDispatchTable();
    if (m.info.payload === 'hardware') await this.releaseHardwareSlot();
    // A call displaced into the stub returns into it: that memory stays reserved for the session.
    if (!m.pinned) for (const b of m.blocks) this.allocator.release(b);
    this.journal.removeMeasurement(id);
    await this.reclaimIfIdle();
    if (problems.length) throw new CycleLensError(ErrorCode.CommandFailed, `Measurement #${id} was removed, but ${problems.join('; ')}.`);
  }

  /**
   * The target is being reset, every measurement already removed. Nothing can run from the
   * reserved memory afterwards (a call in flight or one returning into a pinned stub is gone with
   * the reset), and the reset undoes the counter set-up and the thread pointer: all of the memory
   * comes back and the next injection installs the runtime anew.
   */
  targetReset(): void {
    if (this.measurements.size > 0) throw new CycleLensError(ErrorCode.CommandFailed, 'Remove the injected measurements before the target is reset.');
    this.allocator = new CaveAllocator(this.stubRanges);
    this.runtime = undefined;
    this.savedThreadPointer = undefined;
    this.journal.clear();
  }

  async removeAll(): Promise<void> {
    const errors: string[] = [];
    for (const id of [...this.measurements.keys()]) {
      try {
        await this.remove(id);
      } catch (err) {
        errors.push(err instanceof Error ? err.message : String(err));
      }
    }
    if (errors.length) throw new CycleLensError(ErrorCode.CommandFailed, errors.join(' '));
  }

  /**
   * Where a stop wanted at `address` has to be taken while the measurements are in. Outside every
   * patch it is the address itself. At the first byte of a jump to a trampoline the program never
   * executes the original instructions there: it runs them relocated and comes back at the resume
   * point, so the stop moves there, after the payload (a window closing at `address` is closed
   * when it is taken). Where the displaced code branches away (a tiny function's return) the stop
   * stays on the jump, before the payload. Inside patched bytes no stop can be taken, and the
   * reason names the measurement in the way.
   */
  stopPointFor(address: number): StopPoint {
    const a = (address & ~1) >>> 0;
    for (const m of this.measurements.values()) {
      for (const p of m.patches) {
        if (a < p.address || a >= p.address + p.patched.length) continue;
        const who = `measurement #${m.info.id} (${m.info.name})`;
        if (a !== p.address) return { ok: false, reason: `${hex(a)} is inside the bytes patched by ${who}, so the program never executes it there. Remove that measurement, or stop elsewhere.` };
        // Where the displaced code branches away it never comes back: stop on the jump itself.
        return p.stopAt !== undefined ? { ok: true, address: p.stopAt, moved: { from: a, measurement: who } } : { ok: true, address };
      }
    }
    return { ok: true, address };
  }

  list(): MeasurementInfo[] {
    return [...this.measurements.values()].map((m) => m.info);
  }

  async read(): Promise<MeasurementResults[]> {
    const out: MeasurementResults[] = [];
    for (const m of this.measurements.values()) out.push(await this.readOne(m));
    return out;
  }

  // ---- calibration -----------------------------------------------------------------------------

  /**
   * Runs an empty function `calls` times on the target with its measurement injected (interrupts
   * masked) and compares the per-pass count with the payload's stated counted instructions. The
   * target's registers are saved and restored; the program does not notice.
   */
  async calibrate(calls = 200, payload: PayloadKind = 'software'): Promise<Calibration> {
    this.expectHalted('calibrate');
    const runner = this.o.runner;
    if (!runner) throw new CycleLensError(ErrorCode.Unsupported, 'Calibration needs run control (a TargetRunner).');
    await this.ensureRuntime();
    const g = this.o.support.generator;
    const probe = g.calibrationCode(0, calls);
    const block = this.allocOrThrow(probe.bytes.length + 16 + CALIBRATION_STACK);
    const code = g.calibrationCode(block.start, calls);
    await this.o.access.writeMemory(BigInt(block.start), code.bytes);
    const fnBytes = code.bytes.subarray(code.fn - block.start, code.driver - block.start);
    const insns = decodeAllSafe(this.o.support.arch, fnBytes, code.fn);
    const shape = this.o.support.arch.choosePatch(code.fn, { start: block.start, size: block.size, ...(this.cave.threadPointerBase !== undefined ? { threadPointerBase: this.cave.threadPointerBase } : {}) }, this.o.support.arch.freeAtEntry);
    if (typeof shape === 'string') throw new CycleLensError(ErrorCode.CommandFailed, shape);
    const displaced = [];
    let covered = 0;
    for (const i of insns) {
      if (covered >= shape.length) break;
      displaced.push(i);
      covered += i.length;
    }
    const site: PatchSite = { address: code.fn, shape, displaced, resume: code.fn + covered, freeRegisters: this.o.support.arch.freeAtEntry, original: fnBytes.slice(0, covered) };
    const saved = new Map<string, bigint>();
    for (const r of this.o.support.registers) saved.set(r, await this.o.access.readRegister(r));
    let info: MeasurementInfo | undefined;
    try {
      if (payload === 'hardware') this.claimHardwareSlot();
      info = await this.install('[calibration]', 'function', payload, [], [site], (record, at) => ({ kind: 'function', payload, record, at, entry: site }), undefined, false);
      // A stack of its own at the top of the block: the program's SP may not be set up yet (at reset).
      await this.o.access.writeRegister('pc', BigInt((code.driver | this.o.support.codeAddressBit) >>> 0));
      await this.o.access.writeRegister('sp', BigInt(((block.start + block.size) & ~7) >>> 0));
      const halted = await runner.runTo(code.done, 20_000);
      const pc = Number(await this.o.access.readRegister('pc'));
      if (!halted || pc !== code.done) throw new CycleLensError(ErrorCode.CommandFailed, `The calibration run did not reach its end (pc ${hex(pc)}, expected ${hex(code.done)}).`);
      const result = (await this.read()).find((r) => r.id === info!.id)!;
      const perPass = result.passes ? (result.total - result.nested) / result.passes : 0;
      if (payload === 'hardware') this.calibratedHardwareOverhead = perPass - code.functionInstructions * this.unitsPerInstruction;
      return {
        calls,
        passes: result.passes,
        counter: this.counter.name,
        perPassRaw: perPass,
        functionInstructions: code.functionInstructions,
        measuredOverhead: perPass - code.functionInstructions * this.unitsPerInstruction,
        statedOverhead: info.counted.outer * this.unitsPerInstruction,
        explanation: info.counted.explanation,
        lastPasses: result.last.raw,
      };
    } finally {
      if (info) await this.removeSilently(info.id);
      if (payload === 'hardware') await this.releaseHardwareSlot();
      for (const [r, v] of saved) await this.o.access.writeRegister(r, v);
      this.allocator.release(block);
      await this.reclaimIfIdle();
    }
  }

  // ---- internals -------------------------------------------------------------------------------

  private async install(
    name: string,
    kind: InjectionPlan['kind'],
    payload: PayloadKind,
    warnings: InjectionWarning[],
    sites: PatchSite[],
    request: (record: number, at: number) => StubRequest,
    callSites?: Array<import('./types').CallSite & { original: Uint8Array }>,
    checkProgram = true,
  ): Promise<MeasurementInfo> {
    for (const s of sites) this.checkOverlap(s.address, s.original.length);
    for (const c of callSites ?? []) this.checkOverlap(c.address, c.length);
    const ranges = [...sites.map((s) => [s.address, s.address + s.original.length] as [number, number]), ...(callSites ?? []).map((c) => [c.address, c.address + c.length] as [number, number])];
    if (checkProgram) {
      await this.checkResumePoints(ranges);
      this.checkMemory(ranges);
    }
    await this.ensureRuntime();
    if (payload === 'software' && this.hardwareSlotInUse) {
      throw new InjectionRefusedError(refusal('unrelocatable', `${this.counter.name} is gated by a hardware-gating measurement; software accumulation reads the same counter. Remove that measurement first.`));
    }
    const g = this.o.support.generator;
    const runtime = this.runtime!;
    const recordBlock = this.allocOrThrow(RECORD_SIZE);
    const trial = g.buildStubs(request(recordBlock.start, this.cave.start), runtime, this.layout);
    const stubBlock = this.allocOrThrow(trial.bytes.length + 32);
    const blocks = [recordBlock, stubBlock];
    try {
      const stub = g.buildStubs(request(recordBlock.start, stubBlock.start), runtime, this.layout);
      if (stub.bytes.length > stubBlock.size) throw new Error('stub grew past its allocation');
      const id = this.nextId++;
      let heldBase: number | undefined;
      if (payload === 'hardware') heldBase = await this.stopHardwareCounter();
      const exitAddress = stub.exit !== undefined ? (stub.exit | this.o.support.codeAddressBit) >>> 0 : 0;
      await this.o.access.writeMemory(BigInt(recordBlock.start), initialRecord(exitAddress, stub.costs, heldBase ?? 0));
      await this.o.access.writeMemory(BigInt(stubBlock.start), stub.bytes);
      const patches: Measurement['patches'] = [];
      if (kind === 'region') {
        patches.push({ address: sites[0]!.address, original: sites[0]!.original, patched: g.encodePatch(sites[0]!, stub.entry, this.layout), stopAt: stopAfter(sites[0]!) });
        patches.push({ address: sites[1]!.address, original: sites[1]!.original, patched: g.encodePatch(sites[1]!, stub.regionEnd!, this.layout), stopAt: stopAfter(sites[1]!) });
      } else {
        for (const s of sites) patches.push({ address: s.address, original: s.original, patched: g.encodePatch(s, stub.entry, this.layout), stopAt: stopAfter(s) });
      }
      const dispatch: DispatchEntry[] = [];
      for (const c of callSites ?? []) {
        if (c.length === 2) dispatch.push({ returnAddress: c.address + 2, stub: stub.dispatchEntry! });
        patches.push({ address: c.address, original: c.original, patched: g.encodeCallSite(c, stub, this.layout) });
      }
      const info: MeasurementInfo = {
        id,
        name,
        kind,
        payload,
        counter: this.counter.name,
        patches: patches.map((p) => ({ address: p.address, length: p.patched.length })),
        stub: { address: stubBlock.start, size: stub.bytes.length },
        record: recordBlock.start,
        counted: stub.counted,
        warnings,
        notes: stub.notes,
      };
      const pinned = pinsMemory(sites, name, warnings);
      await this.commit({ info, stub, blocks, patches, dispatch, pinned, ...(heldBase !== undefined ? { heldBase } : {}) }, checkProgram);
      return info;
    } catch (err) {
      for (const b of blocks) this.allocator.release(b);
      await this.reclaimIfIdle();
      throw err;
    }
  }

  /**
   * Makes a built measurement live: journal first (if anything dies from here on, the next launch
   * can put the bytes back), then every patch written and read back. A patch that does not stick
   * undoes the ones written before it and the journal entries.
   */
  private async commit(m: Measurement, checkProgram: boolean): Promise<void> {
    const { id } = m.info;
    const { patches, dispatch } = m;
    this.measurements.set(id, m);
    if (dispatch.length) await this.writeDispatchTable();
    if (checkProgram) this.journal.add(patches.map((p) => ({ measurement: id, address: p.address, original: Buffer.from(p.original).toString('hex'), patched: Buffer.from(p.patched).toString('hex') })));
    const written: typeof patches = [];
    try {
      for (const p of patches) {
        await this.o.access.writeMemory(BigInt(p.address), p.patched);
        written.push(p);
        const check = await this.o.access.readMemory(BigInt(p.address), p.patched.length);
        if (!check.equals(Buffer.from(p.patched))) {
          throw new InjectionRefusedError(refusal('memory', `The patch at ${hex(p.address)} did not stick (reads ${check.toString('hex')}); the code is probably in flash. Allow flash writes or reserve RAM for the code.`, p.address));
        }
      }
    } catch (err) {
      for (const p of written) await this.o.access.writeMemory(BigInt(p.address), p.original);
      this.measurements.delete(id);
      if (checkProgram) this.journal.removeMeasurement(id);
      if (dispatch.length) await this.writeDispatchTable();
      throw err;
    }
    for (const w of m.info.warnings) this.o.log?.(`${w.message}\n`);
  }

  private async ensureRuntime(): Promise<void> {
    if (this.runtime) return;
    const g = this.o.support.generator;
    const runtime = g.buildRuntime(this.layout);
    const setup = await this.o.support.prepareCounter?.(this.o.access);
    if (setup) await this.runOnTarget(setup);
    await this.o.access.writeMemory(BigInt(this.layout.ctrl), initialControl(this.layout.ctrl, this.layout.shadowSlots));
    if (g.dispatchTable) await this.o.access.writeMemory(BigInt(this.layout.dispatchTable), g.dispatchTable([], this.layout));
    await this.o.access.writeMemory(BigInt(runtime.address), runtime.bytes);
    if (this.layout.threadPointer !== undefined) {
      const original = await this.o.access.readRegister('tp');
      this.savedThreadPointer = original;
      this.journal.setThreadPointer(original);
      await this.o.access.writeRegister('tp', BigInt(this.layout.threadPointer));
    }
    this.runtime = runtime;
  }

  /** Runs `code` in the cave with the program's registers saved and restored around it. */
  private async runOnTarget(code: TargetCode): Promise<void> {
    const runner = this.o.runner;
    if (!runner) throw new CycleLensError(ErrorCode.Unsupported, `${code.what} needs code run on the target, and no run control was given to the injector.`);
    const probe = code.build(0);
    const block = this.allocOrThrow(probe.bytes.length + 16);
    const built = code.build(block.start);
    const saved = new Map<string, bigint>();
    try {
      await this.o.access.writeMemory(BigInt(block.start), built.bytes);
      for (const r of this.o.support.registers) saved.set(r, await this.o.access.readRegister(r));
      await this.o.access.writeRegister('pc', BigInt((built.entry | this.o.support.codeAddressBit) >>> 0));
      if (!(await runner.runTo(built.done, 10_000))) throw new CycleLensError(ErrorCode.CommandFailed, `${code.what} did not finish on the target.`);
    } finally {
      for (const [r, v] of saved) await this.o.access.writeRegister(r, v);
      this.allocator.release(block);
    }
  }

  private async writeDispatchTable(): Promise<void> {
    const g = this.o.support.generator;
    if (!g.dispatchTable) return;
    const entries = [...this.measurements.values()].flatMap((m) => m.dispatch);
    await this.o.access.writeMemory(BigInt(this.layout.dispatchTable), g.dispatchTable(entries, this.layout));
  }

  private async readOne(m: Measurement): Promise<MeasurementResults> {
    const v = decodeRecord(await this.o.access.readMemory(BigInt(m.info.record), RECORD_SIZE));
    const u = this.unitsPerInstruction;
    const own = m.info.counted.outer * u;
    let total = Number(v.total);
    let nested = Number(v.nested) * u;
    let compensated = total - nested - own * v.passes;
    if (m.info.payload === 'hardware' && m.heldBase !== undefined) {
      const outer = this.calibratedHardwareOverhead ?? own;
      // The gated counter itself holds the total; recursive entries of this same measurement are
      // in `nested` at their full cost but the counter skipped all but `counted.nested` of them.
      total = (v.held - m.heldBase) >>> 0;
      const recursive = v.calls - v.passes;
      nested -= recursive * (m.info.counted.nestedPayload ?? 0) * u;
      compensated = total - nested - outer * v.passes - m.info.counted.nested * u * recursive;
    }
    const raw = v.lastPasses;
    return {
      id: m.info.id,
      name: m.info.name,
      kind: m.info.kind,
      payload: m.info.payload,
      counter: m.info.counter,
      calls: v.calls,
      passes: v.passes,
      untracked: v.untracked,
      open: v.depth,
      total,
      nested,
      compensatedTotal: compensated,
      ownOverheadPerPass: own,
      min: v.passes ? v.min : null,
      max: v.passes ? v.max : null,
      mean: v.passes ? total / v.passes : null,
      meanCompensated: v.passes ? compensated / v.passes : null,
      last: { raw, compensated: raw.map((x) => x - own) },
    };
  }

  private async releaseHardwareSlot(): Promise<void> {
    this.hardwareSlotInUse = false;
    const c = this.counter;
    if (c.kind === 'csr') await this.o.access.writeRegister('mcountinhibit', (await this.o.access.readRegister('mcountinhibit')) & ~(1n << BigInt(c.inhibitBit)));
  }

  private claimHardwareSlot(): void {
    const c = this.counter;
    if (c.kind !== 'csr') throw new InjectionRefusedError(refusal('unrelocatable', `Hardware gating needs a counter with an inhibit bit; ${c.name} has none. Use software accumulation.`));
    if (this.hardwareSlotInUse) throw new InjectionRefusedError(refusal('unrelocatable', `${c.name} already gates another measurement; hardware gating takes one counter slot per measurement. Use software accumulation for more.`));
    if ([...this.measurements.values()].some((m) => m.info.payload === 'software')) {
      throw new InjectionRefusedError(refusal('unrelocatable', `Software measurements read ${c.name} as a free-running counter; gating it would break them. Remove them first, or use software accumulation.`));
    }
    this.hardwareSlotInUse = true;
  }

  /** Stops the gated counter and returns the value it holds (the measurement's zero). */
  private async stopHardwareCounter(): Promise<number> {
    const c = this.counter;
    if (c.kind !== 'csr') throw new Error('not a CSR counter');
    const inhibit = await this.o.access.readRegister('mcountinhibit');
    await this.o.access.writeRegister('mcountinhibit', inhibit | (1n << BigInt(c.inhibitBit)));
    const value = await this.o.access.readRegister(c.name);
    // QEMU 7.2 keeps counting while inhibited: writing the value back makes it hold (a no-op on hardware).
    await this.o.access.writeRegister(c.name, value);
    return Number(value & 0xffffffffn);
  }

  private checkOverlap(address: number, length: number): void {
    for (const m of this.measurements.values()) {
      for (const p of m.patches) {
        if (address < p.address + p.patched.length && p.address < address + length) {
          throw new InjectionRefusedError(refusal('branchIntoPatch', `${hex(address)} is already patched by measurement #${m.info.id} (${m.info.name}); remove it first.`, address));
        }
      }
    }
  }

  private checkMemory(ranges: Array<[number, number]>): void {
    for (const [s, e] of ranges) {
      const kind = memoryKindAt(this.o.memoryMap, s, e - s, this.o.support.arch.family);
      if ((kind === 'flash' || kind === 'rom') && !this.o.allowFlashWrites) {
        throw new InjectionRefusedError(refusal('memory', `The code at ${hex(s)} is in ${kind}; a debugger write would not stick (or would need a flash erase). Run the code from RAM, or allow flash writes in the launch configuration.`, s));
      }
    }
  }

  private async checkResumePoints(ranges: Array<[number, number]>): Promise<void> {
    const pc = (Number(await this.o.access.readRegister('pc')) & ~1) >>> 0;
    const points = [{ what: 'The program counter', address: pc }, ...((await this.o.support.resumePoints?.(this.o.access)) ?? [])];
    for (const p of points) {
      for (const [s, e] of ranges) {
        if (p.address > s && p.address < e) {
          throw new InjectionRefusedError(refusal('branchIntoPatch', `${p.what} is at ${hex(p.address)}, inside the bytes a patch at ${hex(s)} would overwrite; step past ${hex(e)} first.`, p.address));
        }
      }
    }
  }

  private async reclaimIfIdle(): Promise<void> {
    if (!this.runtime) return;
    const ssp = await this.o.access.readU32(BigInt(this.layout.ctrl + Ctrl.ssp));
    const base = this.layout.ctrl + Ctrl.shadow;
    if (ssp !== base) return;
    this.allocator.reclaim();
    if (this.measurements.size === 0 && this.savedThreadPointer !== undefined) {
      // tp goes back only when no exit stub can run any more (they reach the runtime through it).
      await this.o.access.writeRegister('tp', this.savedThreadPointer);
      this.savedThreadPointer = undefined;
      this.runtime = undefined;
      this.journal.clear();
    }
  }

  private async removeSilently(id: number): Promise<void> {
    const m = this.measurements.get(id);
    if (!m) return;
    for (const p of m.patches) await this.o.access.writeMemory(BigInt(p.address), p.original);
    this.measurements.delete(id);
    for (const b of m.blocks) this.allocator.release(b);
  }

  private allocOrThrow(size: number): Block {
    const b = this.allocator.allocate(size, 4);
    if (!b) {
      throw new InjectionRefusedError(refusal('memory', `The reserved memory at ${hex(this.o.reserved.start)} is full (${this.allocator.freeBytes} bytes free, ${size} needed); remove measurements or reserve more RAM.`));
    }
    return b;
  }

  private expectHalted(what: string): void {
    if (!this.o.isHalted()) throw new CycleLensError(ErrorCode.NotStopped, `Pause the target to ${what}: code is only patched while the core is halted.`);
  }
}

export interface Calibration {
  calls: number;
  passes: number;
  counter: string;
  /** Counter units per pass of the empty function (nested payloads excluded). */
  perPassRaw: number;
  /** Instructions of the empty function itself (a NOP and the return). */
  functionInstructions: number;
  /** perPassRaw minus the function's own instructions: what the payload adds per call. */
  measuredOverhead: number;
  /** What the generator says the payload adds (counted instructions x units per instruction). */
  statedOverhead: number;
  explanation: string;
  lastPasses: number[];
}

/** A call displaced into a trampoline returns into it: that memory stays reserved for the session. */
function pinsMemory(sites: readonly PatchSite[], name: string, warnings: InjectionWarning[]): boolean {
  const pinned = sites.some((st) => st.displaced.some((x) => x.kind === 'call' || x.kind === 'indirectCall'));
  if (pinned) warnings.push(warning('memoryPinned', `A call is among the instructions moved into the trampoline of ${name}; its return lands there, so that memory stays reserved until the session ends.`));
  return pinned;
}

/** Runs a check per member; a refusal comes back with the member named. */
async function forMembers(names: readonly string[], check: (i: number) => Promise<void>): Promise<void> {
  for (let i = 0; i < names.length; i++) {
    try {
      await check(i);
    } catch (err) {
      if (err instanceof InjectionRefusedError) throw memberRefusal(names[i]!, err);
      throw err;
    }
  }
}

function withOffer(r: InjectionRefusal): InjectionRefusal {
  const offer = r.callSites;
  if (!offer || offer.usable.length === 0) return r;
  const missed = offer.missed.length + offer.indirectCalls.length;
  return { ...r, reason: `${r.reason} It can be measured at its ${offer.usable.length} direct call site(s) instead${missed ? ` (missing ${offer.missed.length} site(s) that cannot be rewritten and ${offer.indirectCalls.length} indirect call(s) in the program)` : ''}.` };
}

function align(x: number, a: number): number {
  return ((x + a - 1) & ~(a - 1)) >>> 0;
}

function decodeAllSafe(arch: InjectionArch, bytes: Uint8Array, address: number): import('../../arch/codec').DecodedInstruction[] {
  const out = [];
  let at = 0;
  while (at < bytes.length) {
    const i = arch.codec.decode(bytes.subarray(at), address + at);
    out.push(i);
    at += i.length;
  }
  return out;
}

export { Rec };
