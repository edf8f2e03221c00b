import type { CounterEvent, CounterReading, CounterSlotInfo, CounterUnit, CounterUnitInfo } from '../../probe/counters';
import type { TargetAccess } from '../../probe/targetAccess';
import { CycleLensError, ErrorCode } from '../../errors';
import { TraceEnable } from './traceEnable';

/**
 * The Armv8.1-M Performance Monitoring Unit (Cortex-M55/M85), Armv8-M ARM (DDI 0553) "Performance
 * Monitoring Extension", memory-mapped at 0xE0003000:
 *   EVCNTR<n> +0x000 + 4n: event counter n (16-bit: TYPE.SIZE = 15)
 *   CCNTR     +0x07C: 32-bit cycle counter (present when TYPE.CC, bit 14)
 *   EVTYPER<n> +0x400 + 4n: event number in [15:0]; CCFILTR +0x47C
 *   CNTENSET/CNTENCLR +0xC00/+0xC20, OVSCLR +0xC80, OVSSET +0xCC0: bit n = counter n, bit 31 = CCNTR
 *   TYPE +0xE00: N [7:0] event counters, SIZE [13:8] = counter width - 1, CC bit 14
 *   CTRL +0xE04: E bit 0 enables all counters
 * Counting also needs DEMCR.TRCENA (0xE000EDFC bit 24). Two 16-bit counters make one 32-bit counter:
 * the odd counter 2k+1 programmed with CHAIN (0x001E) counts the overflows of the even counter 2k.
 * configure() of an even slot chains its odd partner when that one is free.
 *
 * Counters are never written: values accumulate from differences between reads, and OVSSET says
 * whether a counter passed its top since the last read (see countUp).
 * QEMU 7.2 does not model this PMU: on mps3-an547 (Cortex-M55) the whole block reads as zero.
 */

const BASE = 0xe0003000;
const CCNTR = BASE + 0x07c;
const CNTENSET = BASE + 0xc00;
const CNTENCLR = BASE + 0xc20;
const OVSCLR = BASE + 0xc80;
const OVSSET = BASE + 0xcc0;
const TYPE = BASE + 0xe00;
const CTRL = BASE + 0xe04;
const CTRL_E = 1 << 0;
const CYCLE_SLOT = 31;
const CHAIN = 0x001e;
const unitName = 'PMU';

const evcntr = (n: number): number => BASE + 4 * n;
const evtyper = (n: number): number => BASE + 0x400 + 4 * n;

/** Architectural events (DDI 0553, "PMU events"; Arm's Armv8.1-M Performance Monitoring User Guide). */
export const pmuEventCatalogue: ReadonlyArray<{ number: number; name: string; description: string }> = [
  { number: 0x0000, name: 'SW_INCR', description: 'Software increment (writes to PMU_SWINC).' },
  { number: 0x0001, name: 'L1I_CACHE_REFILL', description: 'Level 1 instruction cache refill.' },
  { number: 0x0003, name: 'L1D_CACHE_REFILL', description: 'Level 1 data cache refill.' },
  { number: 0x0004, name: 'L1D_CACHE', description: 'Level 1 data cache access.' },
  { number: 0x0006, name: 'LD_RETIRED', description: 'Load instructions retired.' },
  { number: 0x0007, name: 'ST_RETIRED', description: 'Store instructions retired.' },
  { number: 0x0008, name: 'INST_RETIRED', description: 'Instructions retired.' },
  { number: 0x0009, name: 'EXC_TAKEN', description: 'Exceptions taken.' },
  { number: 0x0010, name: 'BR_MIS_PRED', description: 'Mispredicted or not predicted branches.' },
  { number: 0x0011, name: 'CPU_CYCLES', description: 'Processor cycles.' },
  { number: 0x0013, name: 'MEM_ACCESS', description: 'Data memory accesses.' },
  { number: 0x0014, name: 'L1I_CACHE', description: 'Level 1 instruction cache access.' },
  { number: 0x0021, name: 'BR_RETIRED', description: 'Branch instructions retired.' },
  { number: 0x0023, name: 'STALL_FRONTEND', description: 'Cycles with no operation issued: frontend.' },
  { number: 0x0024, name: 'STALL_BACKEND', description: 'Cycles with no operation issued: backend.' },
  { number: 0x0037, name: 'LL_CACHE_MISS_RD', description: 'Last level cache miss, read.' },
  { number: 0x0039, name: 'L1D_CACHE_MISS_RD', description: 'Level 1 data cache miss, read.' },
  { number: 0x0200, name: 'MVE_INST_RETIRED', description: 'MVE instructions retired.' },
];

export function pmuEventId(number: number): string {
  return `pmu.0x${number.toString(16).padStart(4, '0')}`;
}

/** What one read of an up-counter of `modulus` values tells, given its overflow flag. */
export interface CountUpInterval {
  /** The fewest events consistent with the registers. */
  count: number;
  exact: boolean;
}

/**
 * Events between two reads of an up-counter that wraps at `modulus`. The overflow flag (OVSSET bit,
 * cleared at each read) says it passed its top at least once, never how often; so once it is set the
 * registers give the count only modulo `modulus`: the fewest consistent count is reported, inexact.
 * Without the flag the counter cannot have wrapped, and a smaller value than before means someone
 * else cleared the flag or wrote the counter: inexact too.
 */
export function countUp(previous: number, current: number, modulus: number, overflowed: boolean): CountUpInterval {
  const d = (((current - previous) % modulus) + modulus) % modulus;
  if (!overflowed) return { count: d, exact: current >= previous };
  // Reaching the top from `previous` takes modulus - previous events.
  return { count: d >= modulus - previous ? d : d + modulus, exact: false };
}

interface Slot {
  index: number;
  name: string;
  /** Hardware width: 16 (event counter) or 32 (CCNTR). */
  width: number;
  configured: boolean;
  running: boolean;
  event?: string;
  /** For an even counter chained to its odd partner. */
  chainedWith?: number;
  /** For an odd counter serving as the upper half of `chainOf`. */
  chainOf?: number;
  last: number;
  acc: bigint;
  unreliable?: string;
}

export class PmuCounters implements CounterUnit {
  readonly unit = unitName;
  private readonly slots = new Map<number, Slot>();
  private present = false;
  private note: string | undefined;
  private discovered = false;
  private originalCtrl = 0;
  private originalEnables = 0;
  private readonly originalTypes = new Map<number, number>();
  private eventCounters = 0;

  /** DEMCR.TRCENA, and the PMU's registers. */
  private readonly trace: TraceEnable;

  constructor(
    access: TargetAccess,
    private readonly options: { readsAsZero?: boolean } = {},
  ) {
    this.trace = new TraceEnable(access);
  }

  async discover(): Promise<CounterUnitInfo> {
    this.discovered = true;
    this.slots.clear();
    this.present = false;
    this.note = undefined;
    // The target facts say the PMU answers zeros (QEMU); a PMU_TYPE of zero confirms it (a PMU has
    // N >= 1 or a cycle counter).
    if (this.options.readsAsZero && (await this.trace.read(TYPE).catch(() => 0)) === 0) {
      this.note = 'PMU reads as zero (QEMU does not model it)';
      return this.info();
    }
    const trcenaTook = await this.trace.enable();
    let type: number;
    try {
      type = await this.trace.read(TYPE);
    } catch {
      // Before Armv8.1-M, 0xE0003000 is reserved: a probe may answer with a bus error.
      this.note = 'The PMU registers cannot be read: this core has no Armv8.1-M PMU.';
      await this.trace.restore();
      return this.info();
    }
    if (type === 0) {
      // A PMU always reports N >= 1 or a cycle counter; QEMU 7.2 (mps3-an547) answers zeros.
      this.note = trcenaTook
        ? 'The PMU registers read as zero: this core has no Armv8.1-M PMU.'
        : 'PMU reads as zero (QEMU does not model it)';
      await this.trace.restore();
      return this.info();
    }
    this.eventCounters = Math.min(type & 0xff, 31);
    const width = ((type >> 8) & 0x3f) + 1;
    this.originalCtrl = await this.trace.read(CTRL);
    this.originalEnables = await this.trace.read(CNTENSET);
    for (let n = 0; n < this.eventCounters; n++) {
      this.slots.set(n, { index: n, name: `EVCNTR${n}`, width, configured: false, running: false, last: 0, acc: 0n });
    }
    if (type & (1 << 14))
      this.slots.set(CYCLE_SLOT, {
        index: CYCLE_SLOT,
        name: 'CCNTR',
        width: 32,
        configured: false,
        running: false,
        last: 0,
        acc: 0n,
      });
    this.present = this.slots.size > 0;
    if (this.originalEnables !== 0) {
      this.note =
        `The firmware already counts with PMU counters (CNTENSET = 0x${this.originalEnables.toString(16)}): ` +
        `configuring those changes its results.`;
    }
    return this.info();
  }

  info(): CounterUnitInfo {
    if (!this.discovered)
      return { unit: unitName, present: false, note: 'Not discovered yet.', slots: [], resolution: 1 };
    // Even counters first: a planner that takes free slots in order gets 32-bit chained pairs while
    // there are at most N/2 events, and only then splits pairs.
    const order = (s: Slot): number => (s.index === CYCLE_SLOT ? 64 : s.index % 2 === 0 ? s.index : 32 + s.index);
    const slots = [...this.slots.values()].sort((a, b) => order(a) - order(b));
    return {
      unit: unitName,
      present: this.present,
      note: this.note,
      slots: slots.map((s) => this.slotInfo(s)),
      resolution: 1,
    };
  }

  events(): CounterEvent[] {
    if (!this.present) return [];
    const list: CounterEvent[] = [];
    if (this.slots.has(CYCLE_SLOT))
      list.push({
        id: 'cycles',
        name: 'cycles',
        description: 'Processor cycles (PMU_CCNTR, or CPU_CYCLES on an event counter).',
      });
    if (this.eventCounters > 0) {
      list.push({
        id: 'instructions',
        name: 'instructions retired',
        description: 'INST_RETIRED (0x0008) on an event counter.',
      });
      for (const e of pmuEventCatalogue)
        list.push({ id: pmuEventId(e.number), name: e.name, description: e.description });
    }
    return list;
  }

  async configure(slot: number, eventId: string): Promise<void> {
    const s = this.requireSlot(slot);
    if (s.running) await this.stop([slot]);
    if (s.index === CYCLE_SLOT) {
      if (eventId !== 'cycles')
        throw new CycleLensError(
          ErrorCode.UnknownEvent,
          `PMU slot 31 is CCNTR and counts only 'cycles'. Count '${eventId}' on an event counter ` +
            `(slots 0–${this.eventCounters - 1}).`,
        );
    } else {
      const number = this.resolveEvent(eventId);
      if (s.chainOf !== undefined) await this.unchain(this.slots.get(s.chainOf)!);
      if (s.chainedWith !== undefined) await this.unchain(s);
      await this.program(s.index, number);
      const partner = this.slots.get(s.index + 1);
      if (s.index % 2 === 0 && partner && !partner.configured && partner.chainOf === undefined) {
        // Chaining is what makes a 16-bit event counter usable beyond 65535 events.
        await this.program(partner.index, CHAIN);
        s.chainedWith = partner.index;
        partner.chainOf = s.index;
      }
    }
    s.event = eventId;
    s.configured = true;
    s.acc = 0n;
    s.unreliable = undefined;
  }

  async start(slots: number[]): Promise<void> {
    const todo = this.configuredSlots(slots, 'start').filter((s) => !s.running);
    await this.sample();
    const bits = this.enableBits(todo);
    if (bits === 0) return;
    await this.trace.write(OVSCLR, bits);
    for (const s of todo) {
      s.last = await this.readRaw(s);
      s.running = true;
    }
    // One write enables both halves of a pair, so the upper half never misses a carry.
    await this.trace.write(CNTENSET, bits);
    const ctrl = await this.trace.read(CTRL);
    if (!(ctrl & CTRL_E)) await this.trace.write(CTRL, ctrl | CTRL_E);
  }

  async stop(slots: number[]): Promise<void> {
    const todo = this.configuredSlots(slots, 'stop').filter((s) => s.running);
    await this.sample();
    const bits = this.enableBits(todo);
    if (bits !== 0) await this.trace.write(CNTENCLR, bits);
    for (const s of todo) s.running = false;
  }

  /** Slots without an event (and upper halves of pairs) are skipped: "reset everything" is a normal request. */
  async reset(slots: number[]): Promise<void> {
    const todo = slots.map((n) => this.requireSlot(n)).filter((s) => s.configured && s.chainOf === undefined);
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
        slot: s.index,
        event: s.event,
        value: s.acc,
        reliable: s.unreliable === undefined,
        note: s.unreliable,
      }));
  }

  async release(): Promise<void> {
    if (this.present) {
      const ours = [...this.slots.values()].reduce(
        (m, s) => (s.configured || s.chainOf !== undefined ? m | this.bit(s.index) : m),
        0,
      );
      const stop = ours & ~this.originalEnables;
      if (stop !== 0) await this.trace.write(CNTENCLR, stop);
      for (const [n, value] of this.originalTypes) await this.trace.write(evtyper(n), value);
      this.originalTypes.clear();
      const restart = ours & this.originalEnables;
      if (restart !== 0) await this.trace.write(CNTENSET, restart);
      await this.trace.write(CTRL, this.originalCtrl);
    }
    for (const s of this.slots.values()) {
      s.configured = false;
      s.running = false;
      s.event = undefined;
      s.chainOf = undefined;
      s.chainedWith = undefined;
    }
    await this.trace.restore();
  }

  // ---- helpers ---------------------------------------------------------------------------------

  private bit(index: number): number {
    return (1 << index) >>> 0;
  }

  private slotInfo(s: Slot): CounterSlotInfo {
    // The upper half of a pair has no event of its own; configuring it splits the pair.
    const name =
      s.chainedWith !== undefined
        ? `${s.name}+EVCNTR${s.chainedWith}`
        : s.chainOf !== undefined
          ? `${s.name} (upper half of EVCNTR${s.chainOf})`
          : s.name;
    return {
      index: s.index,
      name,
      width: s.chainedWith !== undefined ? 2 * s.width : s.width,
      fixedEvent: s.index === CYCLE_SLOT ? 'cycles' : undefined,
      event: s.chainOf !== undefined ? undefined : s.event,
      running: s.running,
    };
  }

  private requireSlot(slot: number): Slot {
    const s = this.slots.get(slot);
    if (s) return s;
    if (!this.present)
      throw new CycleLensError(
        ErrorCode.CounterUnavailable,
        `The PMU is not available: ${this.note ?? 'run discover() first.'}`,
      );
    const range = this.eventCounters > 0 ? `event counters 0–${this.eventCounters - 1}` : 'no event counters';
    const cyc = this.slots.has(CYCLE_SLOT) ? ' and CCNTR as slot 31' : '';
    throw new CycleLensError(
      ErrorCode.CounterUnavailable,
      `PMU slot ${slot} does not exist: this PMU has ${range}${cyc}. Use one of those.`,
    );
  }

  private configuredSlots(slots: number[], what: string): Slot[] {
    return slots.map((n) => {
      const s = this.requireSlot(n);
      if (s.chainOf !== undefined)
        throw new CycleLensError(
          ErrorCode.CounterUnavailable,
          `PMU slot ${n} is the upper half of slot ${s.chainOf} (chained to 32 bits): ${what} slot ${s.chainOf} ` +
            `instead, or configure slot ${n} with its own event.`,
        );
      if (!s.configured)
        throw new CycleLensError(
          ErrorCode.CounterUnavailable,
          `Cannot ${what} PMU slot ${n}: configure it with an event first.`,
        );
      return s;
    });
  }

  private resolveEvent(eventId: string): number {
    if (eventId === 'cycles') return 0x0011;
    if (eventId === 'instructions') return 0x0008;
    const m = /^pmu\.0x([0-9a-f]{1,4})$/i.exec(eventId);
    if (m) {
      const number = parseInt(m[1]!, 16);
      if (number === CHAIN)
        throw new CycleLensError(
          ErrorCode.UnknownEvent,
          'CHAIN (0x001E) is how CycleLens joins two counters: configure an even slot and its odd ' +
            'partner is chained to it.',
        );
      return number;
    }
    const byName = pmuEventCatalogue.find((e) => e.name === eventId.toUpperCase());
    if (byName) return byName.number;
    const architectural = pmuEventCatalogue.map((e) => `${pmuEventId(e.number)} ${e.name}`).join(', ');
    throw new CycleLensError(
      ErrorCode.UnknownEvent,
      `Unknown PMU event '${eventId}'. Use 'cycles', 'instructions', an architectural event (${architectural}), ` +
        "or pmu.0xNNNN with an IMPLEMENTATION DEFINED number from the core's manual.",
    );
  }

  private async program(index: number, number: number): Promise<void> {
    if (!this.originalTypes.has(index)) this.originalTypes.set(index, await this.trace.read(evtyper(index)));
    await this.trace.write(CNTENCLR, this.bit(index));
    await this.trace.write(evtyper(index), number);
    const back = (await this.trace.read(evtyper(index))) & 0xffff;
    if (back !== number) {
      throw new CycleLensError(
        ErrorCode.UnknownEvent,
        `PMU EVTYPER${index} did not accept event 0x${number.toString(16)} (it reads back 0x${back.toString(16)}): ` +
          `this core does not count it.`,
      );
    }
  }

  /** Splits a chained pair: the even counter goes on as a 16-bit counter; its count so far is kept. */
  private async unchain(even: Slot): Promise<void> {
    await this.sample();
    const odd = this.slots.get(even.chainedWith!)!;
    if (even.running) await this.trace.write(CNTENCLR, this.bit(odd.index));
    even.chainedWith = undefined;
    odd.chainOf = undefined;
    even.last = await this.readRaw(even);
  }

  private enableBits(slots: Slot[]): number {
    return (
      slots.reduce((m, s) => m | this.bit(s.index) | (s.chainedWith !== undefined ? this.bit(s.chainedWith) : 0), 0) >>>
      0
    );
  }

  /**
   * A chained pair read race-free: upper, lower, upper again; a carry between them shows as a
   * changed upper half and the pair is read again.
   */
  private async readRaw(s: Slot): Promise<number> {
    if (s.index === CYCLE_SLOT) return (await this.trace.read(CCNTR)) >>> 0;
    const mask = s.width >= 32 ? 0xffffffff : 2 ** s.width - 1;
    const lo = async (): Promise<number> => ((await this.trace.read(evcntr(s.index))) & mask) >>> 0;
    if (s.chainedWith === undefined) return lo();
    for (let attempt = 0; attempt < 4; attempt++) {
      const hi = (await this.trace.read(evcntr(s.chainedWith))) & mask;
      const low = await lo();
      const hi2 = (await this.trace.read(evcntr(s.chainedWith))) & mask;
      if (hi === hi2) return hi * 2 ** s.width + low;
    }
    throw new CycleLensError(
      ErrorCode.CounterUnreliable,
      `PMU counters ${s.index}/${s.chainedWith} carried on every one of 4 reads: the core seems ` +
        `to be running. Halt it before reading counters.`,
    );
  }

  /** Modulus of what readRaw returns for a slot. */
  private modulus(s: Slot): number {
    return 2 ** (s.chainedWith !== undefined ? 2 * s.width : s.width);
  }

  /** Adds each running counter's events since the last sample, and clears the overflow flags it consumed. */
  private async sample(): Promise<void> {
    const running = [...this.slots.values()].filter((s) => s.running);
    if (running.length === 0) return;
    const ovs = (await this.trace.read(OVSSET)) >>> 0;
    let consumed = 0;
    for (const s of running) {
      // A pair wraps when its upper half does; the lower half's own flag is routine.
      const flagBit = this.bit(s.chainedWith ?? s.index);
      consumed |= this.bit(s.index) | flagBit;
      const raw = await this.readRaw(s);
      const interval = countUp(s.last, raw, this.modulus(s), (ovs & flagBit) !== 0);
      s.acc += BigInt(interval.count);
      s.last = raw;
      if (!interval.exact) {
        const remedy =
          s.chainedWith === undefined && s.index !== CYCLE_SLOT
            ? 'Configure an even slot with a free odd partner to get a 32-bit counter, or read'
            : 'Read';
        s.unreliable ??=
          `${s.name}${s.chainedWith !== undefined ? ` (chained, 32-bit)` : ` (${s.width}-bit)`} ` +
          `overflowed since the last read: whole turns of ${this.modulus(s)} may be missing, so the ` +
          `value is a lower bound. ${remedy} more often.`;
      }
    }
    if (consumed !== 0) await this.trace.write(OVSCLR, consumed >>> 0);
  }
}
