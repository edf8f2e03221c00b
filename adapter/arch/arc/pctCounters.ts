import { CycleLensError, ErrorCode, errorMessage } from '../../errors';
import type { CounterEvent, CounterReading, CounterSlotInfo, CounterUnit, CounterUnitInfo } from '../../probe/counters';
import { AuxRegisterAccess, PctAux } from './auxAccess';

/**
 * The Synopsys ARCv2 (EM/HS) performance-counter block, PCT.
 *
 * Hardware facts, all from the Linux ARC perf driver (no public ARCv2 PRM describes the block):
 * arch/arc/include/asm/perf_event.h (ARC maintainer's tree, kernel.org mirror
 * linux_kernel_git_vgupta_arc @8b85a6b4) and arch/arc/kernel/perf_event.c (torvalds/linux @2555693d):
 *  - PCT_BUILD: version [7:0] (0 = no PCT), size s [9:8] with width = 32 + (s << 4) bits,
 *    overflow-interrupt support bit 10, number of counters [23:16].
 *  - CC_BUILD: number of countable conditions [31:16].
 *  - Condition j's name: CC_INDEX = j, then CC_NAME0 and CC_NAME1 hold 8 NUL-padded ASCII
 *    characters, read little-endian (the driver's le32_to_cpu into a char[8]).
 *  - Condition indices differ between core builds, so events are enumerated, never assumed.
 *  - Condition 0 is always "never". There is no per-counter enable: a counter is stopped by
 *    programming condition 0 and started by programming its condition (arc_pmu_stop/arc_pmu_start).
 *  - Programming (arc_pmu_add): PCT_INDEX = n; PCT_CONFIG = 0; COUNTL = 0; COUNTH = 0.
 *  - PCT_CONTROL: bit 0 enables all counting (arc_pmu_enable writes (old & 0xffff0000) | 1),
 *    bit 16 clears all counts, bit 17 snapshots. Reading (arc_pmu_read_counter): PCT_INDEX = n,
 *    PCT_CONTROL |= bit 17, then SNAPH:SNAPL hold the counter, consistent across the two halves.
 *  - PCT_CONFIG bits 18 (user only) / 19 (kernel only); neither counts in both modes. Bare-metal
 *    firmware runs in kernel mode, so CycleLens programs neither.
 */

const CONTROL_ENABLE = 1 << 0;
const CONTROL_CLEAR = 1 << 16;
const CONTROL_SNAPSHOT = 1 << 17;

/** What the known condition names count (Linux arc_pmu_ev_hw_map and its comments). */
const knownConditions: Readonly<Record<string, string>> = {
  crun: 'Cycles the core is running (not halted or sleeping)',
  iall: 'Instructions committed (all)',
  ijmp: 'Jump and branch instructions committed (zero-overhead-loop jumps excluded)',
  ijmptak: 'Jump and branch instructions taken',
  bpok: 'Branches predicted correctly',
  bpfail: 'Branches mispredicted (ARCompact cores)',
  bpmp: 'Branches mispredicted (ARCv2 cores)',
  bflush: 'Pipeline flushes (cycles lost to mispredictions and the like)',
  bstall: 'Pipeline stall cycles',
  imemrdc: 'Cached memory reads by instructions (loads)',
  imemwrc: 'Cached memory writes by instructions (stores)',
  dclm: 'Data-cache load misses',
  dcsm: 'Data-cache store misses',
  icm: 'Instruction-cache misses',
  edtlb: 'Data TLB misses',
  eitlb: 'Instruction TLB misses',
};

/** Generic ids other units use, mapped to the ARC condition that means the same. */
const genericAliases: Readonly<Record<string, string>> = {
  cycles: 'crun',
  instructions: 'iall',
};

export interface PctBuildInfo {
  version: number;
  counters: number;
  width: number;
  interrupts: boolean;
  conditions: number;
}

/** Decodes PCT_BUILD and CC_BUILD. */
export function decodePctBuild(pctBuild: number, ccBuild: number): PctBuildInfo {
  return {
    version: pctBuild & 0xff,
    counters: (pctBuild >>> 16) & 0xff,
    width: 32 + (((pctBuild >>> 8) & 0x3) << 4),
    interrupts: ((pctBuild >>> 10) & 1) === 1,
    conditions: ccBuild >>> 16,
  };
}

/** The 8 characters CC_NAME0/CC_NAME1 hold, first character in the low byte of CC_NAME0; NULs end the name. */
export function decodeConditionName(name0: number, name1: number): string {
  const bytes = Buffer.alloc(8);
  bytes.writeUInt32LE(name0 >>> 0, 0);
  bytes.writeUInt32LE(name1 >>> 0, 4);
  const end = bytes.indexOf(0);
  return bytes.subarray(0, end < 0 ? 8 : end).toString('latin1');
}

interface Condition {
  index: number;
  name: string;
  event: CounterEvent;
}

interface SlotState {
  condition: Condition;
  running: boolean;
  /** Raw value at the previous read, to notice a wrap. */
  lastRaw: bigint;
  /** Wraps seen since the last reset, times 2^width. */
  extension: bigint;
  wrapped: boolean;
}

/** What this unit found in a slot before touching it, restored by release(). */
interface SavedSlot {
  config: number;
  count: bigint;
}

export class ArcPctUnit implements CounterUnit {
  readonly unit = 'ARC PCT';
  private build: PctBuildInfo | undefined;
  private conditions: Condition[] = [];
  private byId = new Map<string, Condition>();
  private present = false;
  private note: string | undefined;
  private readonly slots = new Map<number, SlotState>();
  private readonly saved = new Map<number, SavedSlot>();
  private savedControl: number | undefined;
  private savedIndex: number | undefined;

  constructor(private readonly aux: AuxRegisterAccess) {}

  async discover(): Promise<CounterUnitInfo> {
    this.forget();
    let pctBuild: number;
    try {
      pctBuild = await this.aux.read(PctAux.PCT_BUILD);
    } catch (err) {
      if (err instanceof CycleLensError && err.code === ErrorCode.NotStopped) throw err;
      return this.absent(`Could not read PCT_BUILD: ${errorMessage(err)}`);
    }
    if ((pctBuild & 0xff) === 0) {
      return this.absent(
        'This ARC core has no performance counters (PCT_BUILD reads version 0). Use a core built ' +
          'with the PCT option (nSIM: -prop=nsim_isa_pct_counters=N).',
      );
    }
    const ccBuild = await this.aux.read(PctAux.CC_BUILD);
    const build = decodePctBuild(pctBuild, ccBuild);
    if (build.counters === 0) return this.absent('PCT_BUILD reports a PCT with 0 counters.');
    if (build.conditions === 0)
      return this.absent('The PCT has counters but CC_BUILD reports no countable conditions.');
    this.build = build;

    const savedCcIndex = await this.aux.read(PctAux.CC_INDEX);
    this.savedIndex = await this.aux.read(PctAux.PCT_INDEX);
    for (let j = 0; j < build.conditions; j++) {
      await this.aux.write(PctAux.CC_INDEX, j);
      const name = decodeConditionName(await this.aux.read(PctAux.CC_NAME0), await this.aux.read(PctAux.CC_NAME1));
      // #0 is "never": it exists to stop a counter and is not offered as an event.
      if (j === 0 || name === '') continue;
      const id = this.byId.has(`arc.${name}`) ? `arc.${name}.${j}` : `arc.${name}`;
      const condition: Condition = {
        index: j,
        name,
        event: { id, name, description: knownConditions[name] ?? `ARC countable condition '${name}' (index ${j})` },
      };
      this.conditions.push(condition);
      this.byId.set(id, condition);
    }
    await this.aux.write(PctAux.CC_INDEX, savedCcIndex);
    this.present = true;
    return this.info();
  }

  info(): CounterUnitInfo {
    const slots: CounterSlotInfo[] = [];
    if (this.build && this.present) {
      for (let n = 0; n < this.build.counters; n++) {
        const s = this.slots.get(n);
        slots.push({
          index: n,
          name: `PCT[${n}]`,
          width: this.build.width,
          ...(s ? { event: s.condition.event.id } : {}),
          running: s?.running ?? false,
        });
      }
    }
    return {
      unit: this.unit,
      present: this.present,
      ...(this.note !== undefined ? { note: this.note } : {}),
      slots,
      resolution: 1,
    };
  }

  events(): CounterEvent[] {
    return this.conditions.map((c) => c.event);
  }

  async configure(slot: number, eventId: string): Promise<void> {
    const build = this.requirePresent();
    this.requireSlot(slot, build);
    const condition = this.lookup(eventId);
    await this.aux.write(PctAux.PCT_INDEX, slot);
    if (!this.saved.has(slot))
      this.saved.set(slot, { config: await this.aux.read(PctAux.PCT_CONFIG), count: await this.snapshot() });
    await this.aux.write(PctAux.PCT_CONFIG, 0);
    await this.aux.write(PctAux.PCT_COUNTL, 0);
    await this.aux.write(PctAux.PCT_COUNTH, 0);
    this.slots.set(slot, { condition, running: false, lastRaw: 0n, extension: 0n, wrapped: false });
  }

  async start(slots: number[]): Promise<void> {
    const states = this.configured(slots);
    await this.ensureEnabled();
    for (const [n, s] of states) {
      await this.aux.write(PctAux.PCT_INDEX, n);
      await this.aux.write(PctAux.PCT_CONFIG, s.condition.index);
      s.running = true;
    }
  }

  async stop(slots: number[]): Promise<void> {
    for (const [n, s] of this.configured(slots)) {
      await this.aux.write(PctAux.PCT_INDEX, n);
      await this.aux.write(PctAux.PCT_CONFIG, 0);
      s.running = false;
    }
  }

  async reset(slots: number[]): Promise<void> {
    // PCT_CONTROL bit 16 would clear every counter, including ones this unit does not own.
    for (const [n, s] of this.configured(slots)) {
      await this.aux.write(PctAux.PCT_INDEX, n);
      await this.aux.write(PctAux.PCT_COUNTL, 0);
      await this.aux.write(PctAux.PCT_COUNTH, 0);
      s.lastRaw = 0n;
      s.extension = 0n;
      s.wrapped = false;
    }
  }

  async read(): Promise<CounterReading[]> {
    if (this.slots.size === 0) return [];
    const build = this.requirePresent();
    const readings: CounterReading[] = [];
    const modulus = 1n << BigInt(build.width);
    for (const [n, s] of [...this.slots].sort((a, b) => a[0] - b[0])) {
      await this.aux.write(PctAux.PCT_INDEX, n);
      const raw = await this.snapshot();
      if (raw < s.lastRaw) {
        s.extension += modulus;
        s.wrapped = true;
      }
      s.lastRaw = raw;
      const reading: CounterReading = {
        unit: this.unit,
        slot: n,
        event: s.condition.event.id,
        value: s.extension + raw,
        reliable: true,
      };
      // A 48-bit counter needs days at GHz rates to wrap; a 32-bit one wraps in seconds, and two
      // wraps between reads look like one.
      if (s.wrapped && build.width < 48) {
        reading.reliable = false;
        reading.note =
          `PCT[${n}] is ${build.width} bits wide and wrapped since it was reset; if it wrapped ` +
          `more than once between two reads the value is too small. Read more often or measure ` +
          `shorter regions.`;
      }
      readings.push(reading);
    }
    return readings;
  }

  async release(): Promise<void> {
    if (!this.present) return;
    const errors: unknown[] = [];
    const attempt = async (body: () => Promise<void>): Promise<void> => {
      try {
        await body();
      } catch (err) {
        errors.push(err);
      }
    };
    for (const [n, saved] of this.saved) {
      await attempt(async () => {
        await this.aux.write(PctAux.PCT_INDEX, n);
        await this.aux.write(PctAux.PCT_CONFIG, 0);
        await this.aux.write(PctAux.PCT_COUNTL, Number(saved.count & 0xffffffffn));
        await this.aux.write(PctAux.PCT_COUNTH, Number((saved.count >> 32n) & 0xffffffffn));
        await this.aux.write(PctAux.PCT_CONFIG, saved.config);
      });
    }
    if (this.savedControl !== undefined) {
      const control = this.savedControl;
      await attempt(async () => {
        const now = await this.aux.read(PctAux.PCT_CONTROL);
        await this.aux.write(
          PctAux.PCT_CONTROL,
          ((now & ~(CONTROL_ENABLE | CONTROL_CLEAR | CONTROL_SNAPSHOT)) | (control & CONTROL_ENABLE)) >>> 0,
        );
      });
    }
    if (this.savedIndex !== undefined) {
      const index = this.savedIndex;
      await attempt(() => this.aux.write(PctAux.PCT_INDEX, index));
    }
    this.slots.clear();
    this.saved.clear();
    this.savedControl = undefined;
    if (errors.length > 0) {
      throw new CycleLensError(
        ErrorCode.CounterUnavailable,
        `Could not restore the ARC PCT completely: ${errors.map(errorMessage).join('; ')}`,
      );
    }
  }

  // ---- internals --------------------------------------------------------------------------------

  /** Snapshots the counter PCT_INDEX selects and returns it; SNAPH:SNAPL are consistent by design. */
  private async snapshot(): Promise<bigint> {
    const width = this.build!.width;
    const control = await this.aux.read(PctAux.PCT_CONTROL);
    // Keep the enable bit as it is; never write the clear bit back.
    await this.aux.write(PctAux.PCT_CONTROL, ((control & ~CONTROL_CLEAR) | CONTROL_SNAPSHOT) >>> 0);
    const high = BigInt(await this.aux.read(PctAux.PCT_SNAPH));
    const low = BigInt(await this.aux.read(PctAux.PCT_SNAPL));
    return ((high << 32n) | low) & ((1n << BigInt(width)) - 1n);
  }

  private async ensureEnabled(): Promise<void> {
    const control = await this.aux.read(PctAux.PCT_CONTROL);
    if (this.savedControl === undefined) this.savedControl = control;
    if ((control & CONTROL_ENABLE) === 0) {
      await this.aux.write(
        PctAux.PCT_CONTROL,
        ((control & ~(CONTROL_CLEAR | CONTROL_SNAPSHOT)) | CONTROL_ENABLE) >>> 0,
      );
    }
  }

  private absent(note: string): CounterUnitInfo {
    this.present = false;
    this.note = note;
    return this.info();
  }

  private forget(): void {
    this.build = undefined;
    this.conditions = [];
    this.byId = new Map();
    this.present = false;
    this.note = undefined;
  }

  private requirePresent(): PctBuildInfo {
    if (!this.build || !this.present) {
      throw new CycleLensError(
        ErrorCode.CounterUnavailable,
        this.note ?? 'The ARC PCT has not been probed yet: discover() must run first, with the target halted.',
      );
    }
    return this.build;
  }

  private requireSlot(slot: number, build: PctBuildInfo): void {
    if (!Number.isInteger(slot) || slot < 0 || slot >= build.counters) {
      throw new CycleLensError(
        ErrorCode.CounterUnavailable,
        `ARC PCT slot ${slot} does not exist: ` +
          `this core has ${build.counters} counter${build.counters === 1 ? '' : 's'} ` +
          `(slots 0–${build.counters - 1}).`,
      );
    }
  }

  private lookup(eventId: string): Condition {
    const alias = genericAliases[eventId];
    const found =
      this.byId.get(eventId) ??
      this.byId.get(`arc.${eventId}`) ??
      (alias !== undefined ? this.byId.get(`arc.${alias}`) : undefined);
    if (found) return found;
    const available = this.conditions.map((c) => c.event.id).join(', ');
    throw new CycleLensError(
      ErrorCode.UnknownEvent,
      `This ARC core cannot count '${eventId}'. Its countable conditions are: ${available}.`,
    );
  }

  private configured(slots: number[]): Array<[number, SlotState]> {
    const build = this.requirePresent();
    return slots.map((n) => {
      this.requireSlot(n, build);
      const s = this.slots.get(n);
      if (!s)
        throw new CycleLensError(ErrorCode.CounterUnavailable, `ARC PCT slot ${n} has no event: configure it first.`);
      return [n, s];
    });
  }
}
