import type { CounterEvent, CounterReading, CounterSlotInfo, CounterUnit, CounterUnitInfo } from '../../probe/counters';
import type { TargetAccess } from '../../probe/targetAccess';
import { CycleLensError, ErrorCode } from '../../errors';
import { TraceEnable } from './traceEnable';
import type { CycleClockSample } from './sysTick';

/**
 * The DWT's profiling counters, ARMv7-M ARM (DDI 0403) C1.8 "Data Watchpoint and Trace unit":
 *   DEMCR 0xE000EDFC bit 24 TRCENA enables the DWT (C1.6.5).
 *   DWT_CTRL 0xE0001000: bit 0 CYCCNTENA, bit 17 CPIEVTENA, 18 EXCEVTENA, 19 SLEEPEVTENA,
 *     20 LSUEVTENA, 21 FOLDEVTENA; bit 24 NOPRFCNT and bit 25 NOCYCCNT say a counter is absent.
 *   DWT_CYCCNT 0x004 (32-bit), DWT_CPICNT 0x008, EXCCNT 0x00C, SLEEPCNT 0x010, LSUCNT 0x014,
 *     FOLDCNT 0x018 (8-bit, wrapping; each increments at most once per cycle).
 *   DWT_LAR 0xFB0 / DWT_LSR 0xFB4: the CoreSight software lock of the Cortex-M7; LSR bit 0 = lock
 *     implemented, bit 1 = locked; writing 0xC5ACCE55 to LAR unlocks.
 * None of these counts while the core is halted, so values read at a stop are consistent.
 *
 * The counters are never written. A slot's value is accumulated from the difference between reads
 * (modulo its width): reset and configure are free, and a firmware that uses CYCCNT itself sees it
 * run on undisturbed. Enable bits the firmware had set are left set.
 */

const DWT_CTRL = 0xe0001000;
const DWT_LAR = 0xe0001fb0;
const DWT_LSR = 0xe0001fb4;
const LAR_KEY = 0xc5acce55;
const CYCCNTENA = 1 << 0;
const NOPRFCNT = 1 << 24;
const NOCYCCNT = 1 << 25;
const unitName = 'DWT';

interface DwtCounterDef {
  index: number;
  name: string;
  address: number;
  width: 8 | 32;
  enable: number;
  event: CounterEvent;
}

const counterDefs: readonly DwtCounterDef[] = [
  {
    index: 0,
    name: 'CYCCNT',
    address: 0xe0001004,
    width: 32,
    enable: CYCCNTENA,
    event: { id: 'cycles', name: 'cycles', description: 'Processor clock cycles (DWT_CYCCNT).' },
  },
  {
    index: 1,
    name: 'CPICNT',
    address: 0xe0001008,
    width: 8,
    enable: 1 << 17,
    event: {
      id: 'dwt.cpi',
      name: 'CPI cycles',
      description: 'Extra cycles of multi-cycle instructions beyond the first, excluding load/store (DWT_CPICNT).',
    },
  },
  {
    index: 2,
    name: 'EXCCNT',
    address: 0xe000100c,
    width: 8,
    enable: 1 << 18,
    event: {
      id: 'dwt.exc',
      name: 'exception overhead cycles',
      description: 'Cycles spent in exception entry and return (DWT_EXCCNT).',
    },
  },
  {
    index: 3,
    name: 'SLEEPCNT',
    address: 0xe0001010,
    width: 8,
    enable: 1 << 19,
    event: { id: 'dwt.sleep', name: 'sleep cycles', description: 'Cycles the processor was sleeping (DWT_SLEEPCNT).' },
  },
  {
    index: 4,
    name: 'LSUCNT',
    address: 0xe0001014,
    width: 8,
    enable: 1 << 20,
    event: {
      id: 'dwt.lsu',
      name: 'load/store cycles',
      description: 'Extra cycles of load/store instructions beyond the first (DWT_LSUCNT).',
    },
  },
  {
    index: 5,
    name: 'FOLDCNT',
    address: 0xe0001018,
    width: 8,
    enable: 1 << 21,
    event: {
      id: 'dwt.fold',
      name: 'folded instructions',
      description: 'Instructions that executed in zero cycles (DWT_FOLDCNT).',
    },
  },
];

const ownedBits = counterDefs.reduce((m, d) => m | d.enable, 0);

/** Where the unit learns how many cycles passed, when CYCCNT is absent (SysTickCounters.cycleClock). */
export type CycleClock = () => Promise<CycleClockSample | undefined>;

export interface DwtOptions {
  /** A cycle clock for bounding the 8-bit counters on cores without CYCCNT (SysTick on the processor clock). */
  cycleClock?: CycleClock;
  /** The target facts say this DWT answers zeros (QEMU): one read of DWT_CTRL confirms it. */
  readsAsZero?: boolean;
}

interface Slot {
  def: DwtCounterDef;
  configured: boolean;
  running: boolean;
  /** Raw hardware value at the last sample. */
  last: number;
  acc: bigint;
  unreliable?: string;
}

/** Adds the difference between two raw values of a `width`-bit counter that wraps. */
export function wrapDelta(previous: number, current: number, width: number): number {
  const modulus = 2 ** width;
  return (((current - previous) % modulus) + modulus) % modulus;
}

export class DwtCounters implements CounterUnit {
  readonly unit = unitName;
  private readonly slots = new Map<number, Slot>();
  private present = false;
  private note: string | undefined;
  private discovered = false;
  private unlocked = false;
  /** DWT_CTRL's enable bits as found: the firmware's choice, restored on release. */
  private originalEnables = 0;
  /** CYCCNT at the last sample, when it ran: the clock that bounds the 8-bit counters. */
  private cycAtLastSample: number | undefined;
  /** The external clock at the last sample (no CYCCNT). */
  private clockAtLastSample: CycleClockSample | undefined;

  /** DEMCR.TRCENA, and the DWT's registers. */
  private readonly trace: TraceEnable;

  constructor(
    access: TargetAccess,
    private readonly options: DwtOptions = {},
  ) {
    this.trace = new TraceEnable(access);
  }

  async discover(): Promise<CounterUnitInfo> {
    this.discovered = true;
    this.slots.clear();
    this.present = false;
    this.note = undefined;
    // A real DWT_CTRL names its comparators (NUMCOMP) whatever TRCENA says; zero there is QEMU's DWT.
    if (this.options.readsAsZero && (await this.trace.read(DWT_CTRL)) === 0) {
      this.note = 'DWT reads as zero (QEMU does not model it)';
      return this.info();
    }
    const trcenaTook = await this.trace.enable();
    const lsr = await this.trace.read(DWT_LSR);
    if ((lsr & 0b11) === 0b11) {
      await this.trace.write(DWT_LAR, LAR_KEY);
      this.unlocked = true;
    }
    const ctrl = await this.trace.read(DWT_CTRL);
    this.originalEnables = ctrl & ownedBits;
    // Which enable bits stick: bit 25/24 say "absent" on v7-M, but they are reserved (zero) on v6-M,
    // whose DWT has no counters, so only a bit that takes a write proves a counter.
    const wanted = (ctrl & NOCYCCNT ? 0 : CYCCNTENA) | (ctrl & NOPRFCNT ? 0 : ownedBits & ~CYCCNTENA);
    let sticks = ctrl & wanted;
    if ((sticks & wanted) !== wanted) {
      await this.trace.write(DWT_CTRL, ctrl | wanted);
      sticks = (await this.trace.read(DWT_CTRL)) & wanted;
      await this.trace.write(DWT_CTRL, ctrl);
    }
    if (ctrl === 0 && sticks === 0) {
      // QEMU 7.2 answers the whole DWT with zeros, and drops the debugger's writes to DEMCR too.
      this.note = trcenaTook
        ? 'DWT reads as zero and ignores writes: this core has no DWT counters. Use SysTick as the cycle source.'
        : 'DWT reads as zero (QEMU does not model it)';
      await this.trace.restore();
      return this.info();
    }
    for (const def of counterDefs) {
      if (sticks & def.enable) this.slots.set(def.index, { def, configured: false, running: false, last: 0, acc: 0n });
    }
    this.present = this.slots.size > 0;
    if (!this.present) {
      this.note =
        'This DWT has no cycle or profiling counters (NOCYCCNT/NOPRFCNT, or an ARMv6-M DWT). Use ' +
        'SysTick as the cycle source.';
      await this.trace.restore();
    } else if (!this.slots.has(0)) {
      this.note =
        'No CYCCNT: the 8-bit counters are bounded by SysTick when it runs, else every reading of them is unreliable.';
    }
    return this.info();
  }

  info(): CounterUnitInfo {
    if (!this.discovered)
      return { unit: unitName, present: false, note: 'Not discovered yet.', slots: [], resolution: 1 };
    return {
      unit: unitName,
      present: this.present,
      note: this.note,
      slots: [...this.slots.values()].map((s) => this.slotInfo(s)),
      resolution: 1,
    };
  }

  events(): CounterEvent[] {
    return [...this.slots.values()].map((s) => s.def.event);
  }

  async configure(slot: number, eventId: string): Promise<void> {
    const s = this.requireSlot(slot);
    if (eventId !== s.def.event.id) {
      const owner = [...this.slots.values()].find((o) => o.def.event.id === eventId);
      const where = owner
        ? `'${eventId}' is counted by ${owner.def.name} (slot ${owner.def.index}).`
        : `The DWT counts only ${this.events()
            .map((e) => `'${e.id}'`)
            .join(', ')}.`;
      throw new CycleLensError(
        ErrorCode.UnknownEvent,
        `DWT slot ${slot} (${s.def.name}) counts only '${s.def.event.id}'. ${where}`,
      );
    }
    if (s.running) await this.stop([slot]);
    s.configured = true;
    s.acc = 0n;
    s.unreliable = undefined;
    await this.sample();
  }

  async start(slots: number[]): Promise<void> {
    const todo = this.configuredSlots(slots, 'start');
    await this.sample();
    for (const s of todo) s.running = true;
    await this.applyEnables();
    // Counters that were off have not moved, but take their current value as the start anyway.
    for (const s of todo) s.last = await this.readRaw(s.def);
    await this.markClock();
  }

  async stop(slots: number[]): Promise<void> {
    const todo = this.configuredSlots(slots, 'stop');
    await this.sample();
    for (const s of todo) s.running = false;
    await this.applyEnables();
  }

  /** Slots without an event are skipped: "reset everything" is a normal request. */
  async reset(slots: number[]): Promise<void> {
    const todo = slots.map((n) => this.requireSlot(n)).filter((s) => s.configured);
    await this.sample();
    for (const s of todo) {
      s.acc = 0n;
      s.unreliable = undefined;
    }
  }

  async read(): Promise<CounterReading[]> {
    await this.sample();
    return [...this.slots.values()]
      .filter((s) => s.configured)
      .map((s) => ({
        unit: unitName,
        slot: s.def.index,
        event: s.def.event.id,
        value: s.acc,
        reliable: s.unreliable === undefined,
        note: s.unreliable,
      }));
  }

  async release(): Promise<void> {
    for (const s of this.slots.values()) {
      s.running = false;
      s.configured = false;
    }
    if (this.present) {
      const ctrl = await this.trace.read(DWT_CTRL);
      await this.trace.write(DWT_CTRL, (ctrl & ~ownedBits) | this.originalEnables);
    }
    if (this.unlocked) {
      await this.trace.write(DWT_LAR, 0); // any value other than the key locks again
      this.unlocked = false;
    }
    await this.trace.restore();
  }

  // ---- helpers ---------------------------------------------------------------------------------

  private slotInfo(s: Slot): CounterSlotInfo {
    return {
      index: s.def.index,
      name: s.def.name,
      width: s.def.width,
      fixedEvent: s.def.event.id,
      event: s.configured ? s.def.event.id : undefined,
      running: s.running,
    };
  }

  private requireSlot(slot: number): Slot {
    const s = this.slots.get(slot);
    if (s) return s;
    if (!this.present)
      throw new CycleLensError(
        ErrorCode.CounterUnavailable,
        `The DWT is not available: ${this.note ?? 'run discover() first.'}`,
      );
    const list = [...this.slots.values()].map((o) => `${o.def.index} (${o.def.name})`).join(', ');
    throw new CycleLensError(
      ErrorCode.CounterUnavailable,
      `DWT slot ${slot} does not exist on this core. Its slots are ${list}: use one of those.`,
    );
  }

  private configuredSlots(slots: number[], what: string): Slot[] {
    return slots.map((n) => {
      const s = this.requireSlot(n);
      if (!s.configured)
        throw new CycleLensError(
          ErrorCode.CounterUnavailable,
          `Cannot ${what} DWT ${s.def.name} (slot ${n}): configure it with '${s.def.event.id}' first.`,
        );
      return s;
    });
  }

  private eightBitRunning(): boolean {
    return [...this.slots.values()].some((s) => s.running && s.def.width === 8);
  }

  /**
   * Enable bits: the firmware's, plus every running slot's. CYCCNT also runs while an 8-bit counter
   * runs: it is the clock that tells whether those could have wrapped more than once.
   */
  private async applyEnables(): Promise<void> {
    let bits = this.originalEnables;
    for (const s of this.slots.values()) if (s.running) bits |= s.def.enable;
    if (this.slots.has(0) && this.eightBitRunning()) bits |= CYCCNTENA;
    const ctrl = await this.trace.read(DWT_CTRL);
    const next = (ctrl & ~ownedBits) | bits;
    if (next !== ctrl) await this.trace.write(DWT_CTRL, next);
    if (!(next & CYCCNTENA)) this.cycAtLastSample = undefined;
  }

  private async markClock(): Promise<void> {
    const ctrl = await this.trace.read(DWT_CTRL);
    this.cycAtLastSample = this.slots.has(0) && ctrl & CYCCNTENA ? await this.readRaw(counterDefs[0]!) : undefined;
    this.clockAtLastSample =
      this.slots.has(0) || !this.options.cycleClock ? undefined : await this.options.cycleClock();
  }

  /**
   * Adds what each running counter counted since the last sample. An 8-bit counter is extended by its
   * difference modulo 256, which is right only if it moved fewer than 256 times. These events happen at
   * most once per cycle, so with at most 255 cycles since the last sample the difference is exact;
   * with more (or an unknown number) the counter may have wrapped more than once and the value is
   * only a lower bound: marked unreliable.
   */
  private async sample(): Promise<void> {
    if (!this.present) return;
    const elapsed = await this.elapsedCycles();
    for (const s of this.slots.values()) {
      if (!s.running) {
        continue;
      }
      const raw = await this.readRaw(s.def);
      s.acc += BigInt(wrapDelta(s.last, raw, s.def.width));
      s.last = raw;
      if (s.def.width === 8 && (elapsed === undefined || elapsed > 255)) {
        s.unreliable ??=
          elapsed === undefined
            ? `DWT_${s.def.name} is 8 bits wide and CycleLens has no cycle clock to tell whether it ` +
              `wrapped between reads (no CYCCNT, and SysTick not running): the value is a lower bound.`
            : `DWT_${s.def.name} is 8 bits wide and ${elapsed} cycles passed between two reads (more than ` +
              `255): it may have wrapped more than once, so the value is a lower bound. Read it within ` +
              `255 cycles, e.g. from code injected around a short region.`;
      }
    }
    await this.markClock();
  }

  /** Cycles since the last sample from CYCCNT (mod 2^32), or from the external clock; undefined if unknown. */
  private async elapsedCycles(): Promise<number | undefined> {
    if (this.cycAtLastSample !== undefined) {
      return wrapDelta(this.cycAtLastSample, await this.readRaw(counterDefs[0]!), 32);
    }
    if (this.clockAtLastSample && this.options.cycleClock) {
      const now = await this.options.cycleClock();
      if (!now || now.inexactIntervals !== this.clockAtLastSample.inexactIntervals) return undefined;
      return Number(now.cycles - this.clockAtLastSample.cycles);
    }
    return undefined;
  }

  private async readRaw(def: DwtCounterDef): Promise<number> {
    const v = await this.trace.read(def.address);
    return def.width === 8 ? v & 0xff : v >>> 0;
  }
}
