import { CycleLensError, ErrorCode } from '../../errors';
import type { Block } from './caveAllocator';
import { hex } from './errors';
import { PatchJournal } from './journal';
import { LiveMeasurements } from './liveMeasurements';
import { MeasurementBuilder } from './measurementBuilder';
import type { RuntimeLayout } from './payload';
import { PatchWriter } from './patchWriter';
import { InjectionPlanner } from './planner';
import { ProgramModel } from './programModel';
import { Ctrl, Rec } from './recordLayout';
import { MeasurementReadout } from './readout';
import type {
  Calibration,
  GroupOptions,
  InjectionServiceOptions,
  MeasureOptions,
  MeasurementInfo,
  MeasurementResults,
  StopPoint,
} from './serviceTypes';
import type { CaveReach, CounterSource, InjectionPlan, InjectionRefusal, PayloadKind } from './types';

export type {
  Calibration,
  GroupOptions,
  InjectionFamilySupport,
  InjectionServiceOptions,
  MeasureOptions,
  MeasurementInfo,
  MeasurementKind,
  MeasurementResults,
  PassValues,
  StopPoint,
  TargetCode,
  TargetRunner,
} from './serviceTypes';

const SHADOW_SLOTS = 64;
const DISPATCH_CAPACITY = 24;

/**
 * Function and region measurement by code injection (docs/design.md, "Measurement semantics"):
 * plans with InjectionPlanner, builds payloads with the family's generator in the reserved RAM,
 * journals original bytes before writing, verifies every write, and restores (checked against the
 * ELF) on removal. Every method requires a halted target.
 *
 * The one entry point of the injector. It lays out the reserved memory and hands the work to its
 * parts: MeasurementBuilder (plans into stubs and patches), LiveMeasurements (what is patched in,
 * the memory and counter slot it holds), PatchWriter (journaled, verified writes) and
 * MeasurementReadout (records into counts, calibration).
 */
export class InjectionService {
  readonly model: ProgramModel;
  readonly planner: InjectionPlanner;
  readonly layout: RuntimeLayout;
  readonly cave: CaveReach;
  /** The reserved memory left for stubs and records once the runtime's place is set aside. */
  private readonly stubRanges: Block[];
  private readonly live: LiveMeasurements;
  private readonly builder: MeasurementBuilder;
  private readonly readout: MeasurementReadout;
  private unitsPerInstruction: number;

  /**
   * Instructions per counter unit where the target facts fix it (40 for QEMU's SysTick under
   * -icount shift=0), else undefined.
   */
  get instructionsPerCounterUnit(): number | undefined {
    return this.unitsPerInstruction === 1 ? undefined : 1 / this.unitsPerInstruction;
  }

  constructor(private readonly o: InjectionServiceOptions) {
    this.model = new ProgramModel(o.elf, o.support.arch);
    this.unitsPerInstruction = o.counterUnitsPerInstruction ?? 1;
    const r = o.reserved;
    const slots = o.shadowSlots ?? SHADOW_SLOTS;
    const ctrlSize = Ctrl.shadow + 4 * slots;
    const tableAt = align(r.start + ctrlSize, 4);
    const tableEnd = tableAt + 12 * (DISPATCH_CAPACITY + 1);
    const runtimeSize = o.support.generator.runtimeSize({
      ctrl: r.start,
      shadowSlots: slots,
      runtime: 0,
      dispatchTable: tableAt,
      dispatchCapacity: DISPATCH_CAPACITY,
    });
    const end = r.start + r.size;
    const tpFree =
      o.support.arch.threadPointer !== undefined &&
      o.useThreadPointer !== false &&
      !this.model.referencesRegister(o.support.arch.threadPointer);
    if (tpFree) {
      // tp in the middle: `jalr x0, off(tp)` and `addi rd, tp, off` reach +/-2 KiB around it.
      const tp = align(r.start + Math.min(2048, Math.floor(r.size / 2)), 4);
      const windowEnd = Math.min(end, tp + 2048);
      if (tp < tableEnd || tp + runtimeSize > windowEnd)
        throw new CycleLensError(
          ErrorCode.InvalidRequest,
          `The reserved memory at ${hex(r.start)} (${r.size} bytes) is too small for the injector's runtime.`,
        );
      this.layout = {
        ctrl: r.start,
        shadowSlots: slots,
        runtime: tp,
        dispatchTable: tableAt,
        dispatchCapacity: DISPATCH_CAPACITY,
        threadPointer: tp,
      };
      this.stubRanges = [
        { start: tableEnd, size: tp - tableEnd },
        { start: tp + runtimeSize, size: windowEnd - tp - runtimeSize },
      ];
      this.cave = {
        start: Math.max(r.start, tp - 2048),
        size: windowEnd - Math.max(r.start, tp - 2048),
        threadPointerBase: tp,
      };
    } else {
      const runtime = align(tableEnd, 4);
      if (runtime + runtimeSize > end)
        throw new CycleLensError(
          ErrorCode.InvalidRequest,
          `The reserved memory at ${hex(r.start)} (${r.size} bytes) is too small for the injector's runtime.`,
        );
      this.layout = {
        ctrl: r.start,
        shadowSlots: slots,
        runtime,
        dispatchTable: tableAt,
        dispatchCapacity: DISPATCH_CAPACITY,
      };
      this.stubRanges = [{ start: runtime + runtimeSize, size: end - runtime - runtimeSize }];
      this.cave = { start: r.start, size: r.size };
    }
    const journal = new PatchJournal(o.journalDir, o.elf, { start: r.start, size: r.size });
    this.planner = new InjectionPlanner(this.model, o.support.arch, this.cave);
    this.live = new LiveMeasurements(o, this.layout, this.stubRanges, new PatchWriter(o.access, this.model, journal));
    this.builder = new MeasurementBuilder(o, this.planner, this.layout, this.cave, this.live);
    this.readout = new MeasurementReadout(o, this.unitsPerInstruction, this.cave, this.live, this.builder);
    if (r.warning) o.log?.(`${r.warning}\n`);
  }

  get counter(): CounterSource {
    return this.live.counter;
  }

  // ---- measurements ----------------------------------------------------------------------------

  async measureFunction(target: string | number, options: MeasureOptions = {}): Promise<MeasurementInfo> {
    this.expectHalted('inject a measurement');
    return this.builder.measureFunction(target, options);
  }

  /** Rewrites the function's direct calls to go through a stub (for functions too short to patch). */
  async measureCallSites(target: string | number, options: MeasureOptions = {}): Promise<MeasurementInfo> {
    this.expectHalted('inject a measurement');
    return this.builder.measureCallSites(target, options);
  }

  async measureRegion(start: number, end: number): Promise<MeasurementInfo> {
    this.expectHalted('inject a measurement');
    return this.builder.measureRegion(start, end);
  }

  /** One measurement over the entries of several functions, all or nothing (MeasurementBuilder.measureGroup). */
  async measureGroup(members: readonly string[], options: GroupOptions = {}): Promise<MeasurementInfo> {
    this.expectHalted('inject a measurement');
    return this.builder.measureGroup(members, options);
  }

  /** A dry run for the editor (CodeLens): the plan or the refusal, nothing written. */
  plan(target: string | number): InjectionPlan | InjectionRefusal {
    return this.planner.planFunction(target);
  }

  async remove(id: number): Promise<void> {
    this.expectHalted('remove a measurement');
    return this.live.remove(id);
  }

  /**
   * The target is being reset, every measurement already removed: the reserved memory is free
   * again (LiveMeasurements.targetReset).
   */
  targetReset(): void {
    this.live.targetReset();
  }

  /** The target ended and took the patched memory with it: nothing to restore (LiveMeasurements.targetGone). */
  targetGone(): void {
    this.live.targetGone();
  }

  async removeAll(): Promise<void> {
    const errors: string[] = [];
    for (const id of this.live.ids()) {
      try {
        await this.remove(id);
      } catch (err) {
        errors.push(err instanceof Error ? err.message : String(err));
      }
    }
    if (errors.length) throw new CycleLensError(ErrorCode.CommandFailed, errors.join(' '));
  }

  /** Where a stop wanted at `address` has to be taken while the measurements are in (LiveMeasurements.stopPointFor). */
  stopPointFor(address: number): StopPoint {
    return this.live.stopPointFor(address);
  }

  list(): MeasurementInfo[] {
    return this.live.list();
  }

  async read(): Promise<MeasurementResults[]> {
    return this.readout.read(this.live.all());
  }

  // ---- calibration -----------------------------------------------------------------------------

  /**
   * Runs an empty function `calls` times on the target with its measurement injected (interrupts
   * masked) and compares the per-pass count with the payload's stated counted instructions. The
   * target's registers are saved and restored; the program does not notice.
   */
  async calibrate(calls = 200, payload: PayloadKind = 'software'): Promise<Calibration> {
    this.expectHalted('calibrate');
    return this.readout.calibrate(calls, payload);
  }

  private expectHalted(what: string): void {
    if (!this.o.isHalted())
      throw new CycleLensError(
        ErrorCode.NotStopped,
        `Pause the target to ${what}: code is only patched while the core is halted.`,
      );
  }
}

function align(x: number, a: number): number {
  return ((x + a - 1) & ~(a - 1)) >>> 0;
}

export { Rec };
