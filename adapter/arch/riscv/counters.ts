import type { CounterEvent, CounterReading, CounterSlotInfo, CounterUnit, CounterUnitInfo } from '../../probe/counters';
import type { TargetAccess } from '../../probe/targetAccess';
import { CycleLensError, ErrorCode } from '../../errors';

/**
 * RISC-V machine counters (privileged spec, "Machine Counter/Timers" and "Machine Counter-Inhibit
 * CSR (mcountinhibit)"): `mcycle` (CSR 0xB00), `minstret` (0xB02), `mhpmcounter3..31`
 * (0xB03..0xB1F) with event selectors `mhpmevent3..31` (0x323..0x33F); on RV32 the upper halves are
 * `mcycleh`, `minstreth`, `mhpmcounterNh` (0xB80..). Slot numbers are the counter numbers, which are
 * also the bit numbers in `mcountinhibit` (bit 0 CY, bit 2 IR, bit n HPMn); 1 (`time`) is not a slot.
 * CSRs are reached as debugger registers of the same name (QEMU's gdbstub and OpenOCD both use them).
 *
 * QEMU 7.2 `virt` (measured): the gdbstub describes mcycle(h), minstret(h), mhpmcounter3..18(h)
 * (its default 16 programmable counters), mhpmevent3..31 and mcountinhibit. Its counters count
 * virtual time: under `-icount shift=0` that is the instruction count, until a debugger stop lets
 * QEMU move the clock to the next armed device-timer deadline; counts across such a stop include
 * the jump.
 */

const unitName = 'RISC-V counters';
const mask32 = 0xffff_ffffn;

/** A programmable event whose `mhpmevent` selector value is known for a given implementation. */
export interface RiscvHpmEvent {
  /** The value written to `mhpmeventN`. */
  selector: bigint;
  name: string;
  description: string;
  /** Lets `configure(3, 'cycles')` pick this selector, so several slots can count the same event. */
  alias?: 'cycles' | 'instructions';
}

/**
 * QEMU's event selectors (QEMU 7.1+ reuses the SBI PMU encoding: 0x1 HW_CPU_CYCLES, 0x2 HW_INSTRUCTIONS).
 * Measured on QEMU 7.2 `virt` rv32: with `mhpmevent3 = 2`, `mhpmcounter3` counts exactly what `minstret`
 * counts. QEMU counts each event on one mhpmcounter only: the first counter programmed with it.
 */
export const qemuHpmEvents: readonly RiscvHpmEvent[] = [
  {
    selector: 1n,
    name: 'cycles (QEMU)',
    description: 'Core cycles; under -icount equal to instructions.',
    alias: 'cycles',
  },
  { selector: 2n, name: 'instructions retired (QEMU)', description: 'Instructions retired.', alias: 'instructions' },
];

export interface RiscvCountersOptions {
  /** Named `mhpmevent` selectors for this implementation (selectors are implementation-defined). */
  hpmEvents?: readonly RiscvHpmEvent[];
  /**
   * The counters are an emulator's virtual clock (QEMU under -icount): while the machine timer
   * interrupt is enabled, every debugger stop lets that clock jump to the next timer deadline.
   */
  virtualClock?: boolean;
}

/** mie.MTIE (privileged spec, "Machine Interrupt Registers"): the machine timer interrupt is enabled. */
const MIE_MTIE = 1n << 7n;
const virtualClockNote =
  'On QEMU these counters are its virtual clock, and with the timer interrupt enabled every ' +
  'debugger stop lets it jump to the next timer deadline: counts across stops include those ' +
  'jumps. Injected measurements never stop the target and are exact.';

interface Slot {
  index: number;
  name: string;
  width: number;
  fixedEvent?: string;
  event?: string;
  configured: boolean;
  running: boolean;
  /** Raw value the counter holds while stopped (what start() writes back). */
  held: bigint;
  /** Raw value that reads as zero since the last reset (non-zero only if the counter ignored the write of 0). */
  base: bigint;
  /** Why the current accumulation cannot be trusted; cleared by reset. */
  unreliable?: string;
}

function counterCsr(index: number): string {
  if (index === 0) return 'mcycle';
  if (index === 2) return 'minstret';
  return `mhpmcounter${index}`;
}

function widthMask(width: number): bigint {
  return (1n << BigInt(width)) - 1n;
}

function hex(v: bigint): string {
  return `0x${v.toString(16)}`;
}

export class RiscvCounters implements CounterUnit {
  readonly unit = unitName;
  private slots = new Map<number, Slot>();
  /** RV32: every counter is two 32-bit CSRs (`mcycle` + `mcycleh`). */
  private split = true;
  private inhibitPresent = false;
  /** mcountinhibit bits that accept a write (WARL: bits of absent counters read 0). */
  private inhibitWritable = 0n;
  private originalInhibit = 0n;
  private readonly originalEvents = new Map<number, bigint>();
  private discovered: CounterUnitInfo | undefined;
  private readonly hpmEvents: readonly RiscvHpmEvent[];

  constructor(
    private readonly access: TargetAccess,
    private readonly options: RiscvCountersOptions = {},
  ) {
    this.hpmEvents = options.hpmEvents ?? [];
  }

  /**
   * Which counters exist is decided by writing and reading back, never by letting the program run.
   * The privileged spec allows an unimplemented mhpmcounter to be read-only zero (together with its
   * mhpmevent), so "accepts a non-zero value" is exactly "implemented". The other test that comes to
   * mind, "reads zero and does not move across a short run", is unsound: an implemented counter whose
   * mhpmevent is 0 ("no event", the reset value) never moves either. Each probe restores the value it
   * found. A counter the debugger does not describe at all (QEMU lists mhpmcounter3..18 for its
   * default 16 programmable counters) is absent without a probe.
   */
  async discover(): Promise<CounterUnitInfo> {
    this.slots.clear();
    this.split = await this.access.hasRegister('mcycleh');
    const notes: string[] = [];
    for (const index of [0, 2, ...Array.from({ length: 29 }, (_, i) => i + 3)]) {
      const csr = counterCsr(index);
      if (!(await this.access.hasRegister(csr))) continue;
      if (this.split && !(await this.access.hasRegister(`${csr}h`))) continue;
      const programmable = index >= 3;
      if (programmable && !(await this.access.hasRegister(`mhpmevent${index}`))) continue;
      const width = await this.probeWidth(index).catch(() => 0);
      if (width === 0) continue;
      this.slots.set(index, {
        index,
        name: csr,
        width,
        fixedEvent: index === 0 ? 'cycles' : index === 2 ? 'instructions' : undefined,
        configured: false,
        running: false,
        held: 0n,
        base: 0n,
      });
    }
    await this.probeInhibit();
    if (!this.inhibitPresent) {
      notes.push(
        'This core has no mcountinhibit: its counters cannot be stopped, so CycleLens holds a ' +
          "stopped counter's value itself (exact for start/stop at breakpoints, not for code that " +
          'gates counters on the target).',
      );
    }
    if (this.slots.size === 0)
      notes.push(
        'No machine counter CSR is visible to the debugger (mcycle, minstret, mhpmcounterN): check ' +
          'that the gdbserver exposes CSRs.',
      );
    this.discovered = {
      unit: unitName,
      present: this.slots.size > 0,
      note: notes.length ? notes.join(' ') : undefined,
      slots: [],
      resolution: 1,
    };
    return this.info();
  }

  info(): CounterUnitInfo {
    const base = this.discovered ?? {
      unit: unitName,
      present: false,
      note: 'Not discovered yet.',
      slots: [],
      resolution: 1,
    };
    return { ...base, slots: [...this.slots.values()].map((s) => this.slotInfo(s)) };
  }

  events(): CounterEvent[] {
    const list: CounterEvent[] = [];
    if (this.slots.has(0)) list.push({ id: 'cycles', name: 'cycles', description: 'Core clock cycles (mcycle).' });
    if (this.slots.has(2))
      list.push({ id: 'instructions', name: 'instructions retired', description: 'Instructions retired (minstret).' });
    if ([...this.slots.keys()].some((i) => i >= 3)) {
      for (const e of this.hpmEvents)
        list.push({
          id: `hpm.${e.selector}`,
          name: e.name,
          description: `${e.description} (mhpmevent = ${e.selector})`,
        });
    }
    return list;
  }

  /** Fixed slots count their own event; mhpmcounters take any non-zero raw selector (`hpm.<n>`). */
  canCount(slot: number, eventId: string): boolean {
    const s = this.slots.get(slot);
    if (!s) return false;
    if (s.fixedEvent !== undefined) return s.fixedEvent === eventId;
    const m = /^hpm\.(0x[0-9a-f]+|\d+)$/i.exec(eventId);
    return m !== null && BigInt(m[1]!) !== 0n;
  }

  async configure(slot: number, eventId: string): Promise<void> {
    const s = this.requireSlot(slot);
    if (s.running) await this.stop([slot]);
    if (s.fixedEvent !== undefined) {
      if (eventId !== s.fixedEvent) {
        throw new CycleLensError(
          ErrorCode.UnknownEvent,
          `${s.name} (slot ${slot}) counts only '${s.fixedEvent}'. ${this.programmableHint(eventId)}`,
        );
      }
    } else {
      const selector = this.resolveSelector(s, eventId);
      const csr = `mhpmevent${slot}`;
      if (!this.originalEvents.has(slot)) this.originalEvents.set(slot, await this.access.readRegister(csr));
      // Writing 0 first unbinds the old event: QEMU keeps one counter per event and drops a second binding.
      await this.access.writeRegister(csr, 0n);
      await this.access.writeRegister(csr, selector);
      const back = await this.access.readRegister(csr);
      if (back !== selector) {
        await this.access.writeRegister(csr, this.originalEvents.get(slot)!);
        throw new CycleLensError(
          ErrorCode.UnknownEvent,
          `${csr} did not accept event ${hex(selector)} (it reads back ${hex(back)}): this core ` +
            `cannot count that event on ${s.name}. Check the event number in the core's manual.`,
        );
      }
    }
    // The event is selected before the counter is zeroed: QEMU starts counting from the write of the counter.
    await this.zero(s);
    s.event = eventId;
    s.configured = true;
  }

  /** start() writes the held value back before clearing the inhibit bit; see stop() for why. */
  async start(slots: number[]): Promise<void> {
    const todo = this.configuredSlots(slots, 'start').filter((s) => !s.running);
    for (const s of todo) await this.write64(s.index, s.held);
    if (this.inhibitPresent) {
      const bits = this.inhibitBits(todo);
      if (bits !== 0n) await this.writeInhibit((await this.readInhibit()) & ~bits);
    }
    for (const s of todo) s.running = true;
  }

  /**
   * Stops through mcountinhibit, then writes the value read just before back into the counter and
   * reads it once more. On hardware the write-back is a no-op (an inhibited counter holds its value).
   * It is needed on QEMU 7.2, measured: setting an inhibit bit does not stop QEMU's counter; reads
   * return the value last *written* to the counter (after one more live read), and clearing the bit
   * shows the count as if it never stopped. Writing the stopped value back makes reads hold it, and
   * start() writing it back again makes QEMU count on from there. The extra read is that "one more
   * live read", and also checks that the counter held.
   */
  async stop(slots: number[]): Promise<void> {
    const todo = this.configuredSlots(slots, 'stop').filter((s) => s.running);
    const values = new Map<Slot, bigint>();
    for (const s of todo) values.set(s, await this.read64(s.index));
    if (this.inhibitPresent) {
      const bits = this.inhibitBits(todo);
      if (bits !== 0n) await this.writeInhibit((await this.readInhibit()) | bits);
    }
    for (const s of todo) {
      const v = values.get(s)!;
      s.held = v;
      s.running = false;
      if (!this.canInhibit(s)) continue;
      await this.write64(s.index, v);
      const again = await this.read64(s.index);
      if (again !== v)
        s.unreliable = `${s.name} kept counting after mcountinhibit bit ${s.index} was set (${v} → ${again}).`;
    }
  }

  /** Slots without an event are skipped: "reset everything" is a normal request. */
  async reset(slots: number[]): Promise<void> {
    for (const s of slots.map((n) => this.requireSlot(n)).filter((x) => x.configured)) {
      await this.zero(s);
      s.unreliable = undefined;
    }
  }

  async read(): Promise<CounterReading[]> {
    const out: CounterReading[] = [];
    const clockJumps =
      this.options.virtualClock === true &&
      [...this.slots.values()].some((s) => s.configured) &&
      ((await this.access.readRegister('mie')) & MIE_MTIE) !== 0n;
    for (const s of this.slots.values()) {
      if (!s.configured) continue;
      let raw = s.held;
      let note = s.unreliable ?? (clockJumps ? virtualClockNote : undefined);
      if (s.running) {
        raw = await this.read64(s.index);
      } else if (this.canInhibit(s)) {
        // The hardware holds the value: read it, so a counter that ignores the inhibit is caught.
        raw = await this.read64(s.index);
        if (raw !== s.held) note ??= `${s.name} moved while stopped (held ${s.held}, reads ${raw}).`;
      }
      const value = (raw - s.base) & widthMask(s.width);
      out.push({ unit: unitName, slot: s.index, event: s.event, value, reliable: note === undefined, note });
    }
    return out;
  }

  /**
   * Restores mcountinhibit and every mhpmevent this unit wrote. Counter values are not restored: a
   * count from before the session means nothing after the time spent halted and measuring.
   */
  async release(): Promise<void> {
    for (const [index, value] of this.originalEvents) await this.access.writeRegister(`mhpmevent${index}`, value);
    this.originalEvents.clear();
    if (this.inhibitPresent) await this.writeInhibit(this.originalInhibit);
    for (const s of this.slots.values()) {
      s.configured = false;
      s.running = false;
      s.event = undefined;
      s.unreliable = undefined;
    }
  }

  // ---- helpers ---------------------------------------------------------------------------------

  private slotInfo(s: Slot): CounterSlotInfo {
    return {
      index: s.index,
      name: s.name,
      width: s.width,
      fixedEvent: s.fixedEvent,
      event: s.event,
      running: s.running,
    };
  }

  private describeSlots(): string {
    const list = [...this.slots.values()];
    if (list.length === 0) return 'This core has no counters CycleLens can reach.';
    const fixed = list.filter((s) => s.index < 3).map((s) => `${s.name} (${s.index})`);
    const hpm = list.filter((s) => s.index >= 3).map((s) => s.index);
    const parts = [...fixed];
    if (hpm.length > 0)
      parts.push(
        hpm.length === 1
          ? `mhpmcounter${hpm[0]} (${hpm[0]})`
          : `mhpmcounter${hpm[0]}–${hpm[hpm.length - 1]} (${hpm[0]}–${hpm[hpm.length - 1]})`,
      );
    return `This core has ${parts.join(', ')}.`;
  }

  private requireSlot(slot: number): Slot {
    const s = this.slots.get(slot);
    if (!s) {
      throw new CycleLensError(
        ErrorCode.CounterUnavailable,
        `RISC-V counter slot ${slot} does not exist on this core${this.discovered ? '' : ' (run discover() first)'}. ` +
          `${this.describeSlots()} Pick one of those slots.`,
      );
    }
    return s;
  }

  private configuredSlots(slots: number[], what: string): Slot[] {
    return slots.map((n) => {
      const s = this.requireSlot(n);
      if (!s.configured)
        throw new CycleLensError(
          ErrorCode.CounterUnavailable,
          `Cannot ${what} ${s.name} (slot ${n}): it has no event yet. Configure it first.`,
        );
      return s;
    });
  }

  private programmableHint(eventId: string): string {
    const hpm = [...this.slots.keys()].filter((i) => i >= 3);
    if (hpm.length === 0) return `This core has no programmable counters (mhpmcounter3..31) for '${eventId}'.`;
    return `Count '${eventId}' on a programmable slot (${hpm[0]}–${hpm[hpm.length - 1]}).`;
  }

  /** `hpm.<n>` (decimal or 0x hex) is any selector; `cycles`/`instructions` work where a named event has that alias. */
  private resolveSelector(s: Slot, eventId: string): bigint {
    const m = /^hpm\.(0x[0-9a-f]+|\d+)$/i.exec(eventId);
    if (m) {
      const selector = BigInt(m[1]!);
      if (selector === 0n)
        throw new CycleLensError(
          ErrorCode.UnknownEvent,
          `hpm.0 is "no event": ${s.name} would never count. Use the event number from the core's manual.`,
        );
      if (selector > mask32 && this.split)
        throw new CycleLensError(
          ErrorCode.UnknownEvent,
          `${eventId} does not fit the 32-bit mhpmevent${s.index} of this RV32 core.`,
        );
      return selector;
    }
    const named = this.hpmEvents.find((e) => e.alias === eventId);
    if (named) return named.selector;
    const known = this.hpmEvents.map((e) => `hpm.${e.selector} (${e.name})`);
    throw new CycleLensError(
      ErrorCode.UnknownEvent,
      `Unknown event '${eventId}' for ${s.name}: programmable RISC-V events are ` +
        `implementation-defined numbers. Use hpm.<n> with the mhpmevent value from the core's ` +
        `manual${known.length ? `, or one of ${known.join(', ')}` : ''}.`,
    );
  }

  private canInhibit(s: Slot): boolean {
    return this.inhibitPresent && (this.inhibitWritable & (1n << BigInt(s.index))) !== 0n;
  }

  private inhibitBits(slots: Slot[]): bigint {
    return slots.filter((s) => this.canInhibit(s)).reduce((bits, s) => bits | (1n << BigInt(s.index)), 0n);
  }

  private readInhibit(): Promise<bigint> {
    return this.access.readRegister('mcountinhibit');
  }

  private writeInhibit(value: bigint): Promise<void> {
    return this.access.writeRegister('mcountinhibit', value & mask32);
  }

  /** mcountinhibit is optional; when present, its bits for absent counters are read-only zero (WARL). */
  private async probeInhibit(): Promise<void> {
    this.inhibitPresent = false;
    this.inhibitWritable = 0n;
    if (!(await this.access.hasRegister('mcountinhibit'))) return;
    try {
      this.originalInhibit = await this.readInhibit();
    } catch {
      return;
    }
    const wanted = [...this.slots.keys()].reduce((bits, i) => bits | (1n << BigInt(i)), 0n);
    await this.writeInhibit(this.originalInhibit | wanted);
    this.inhibitWritable = (await this.readInhibit()) & wanted;
    await this.writeInhibit(this.originalInhibit);
    this.inhibitPresent = this.inhibitWritable !== 0n || this.originalInhibit !== 0n;
  }

  /**
   * Returns the counter's width in bits, or 0 when it is read-only zero (not implemented). Writes all
   * ones and counts the bits that stick; mcycle and minstret are 64 bits by the spec. Restores the value.
   */
  private async probeWidth(index: number): Promise<number> {
    const original = await this.read64(index);
    const probe = index < 3 ? 0x5a5a_5a5a_5a5a_5a5an : widthMask(64);
    await this.write64(index, probe);
    const back = await this.read64(index);
    await this.write64(index, original);
    if (back === 0n && original === 0n) return 0;
    if (index < 3) return 64;
    return back === 0n ? 64 : back.toString(2).length;
  }

  /** Zeroes a counter; if it ignores the write (read-only on some cores), what it reads becomes the base. */
  private async zero(s: Slot): Promise<void> {
    await this.write64(s.index, 0n);
    const now = await this.read64(s.index);
    s.base = now;
    s.held = now;
  }

  /**
   * Race-free 64-bit read on RV32: high, low, high again; a carry between the two halves shows as a
   * changed high half, and the pair is read again (the privileged spec's rdcycleh loop).
   */
  private async read64(index: number): Promise<bigint> {
    const csr = counterCsr(index);
    if (!this.split) return (await this.access.readRegister(csr)) & widthMask(64);
    for (let attempt = 0; attempt < 4; attempt++) {
      const hi = (await this.access.readRegister(`${csr}h`)) & mask32;
      const lo = (await this.access.readRegister(csr)) & mask32;
      const hi2 = (await this.access.readRegister(`${csr}h`)) & mask32;
      if (hi === hi2) return (hi << 32n) | lo;
    }
    throw new CycleLensError(
      ErrorCode.CounterUnreliable,
      `${csr} carried into ${csr}h on every one of 4 reads: the core seems to be running. Halt it ` +
        `before reading counters.`,
    );
  }

  /** Low half to 0 first, then high, then low: no carry from the old low half can reach the new high half. */
  private async write64(index: number, value: bigint): Promise<void> {
    const csr = counterCsr(index);
    if (!this.split) {
      await this.access.writeRegister(csr, value & widthMask(64));
      return;
    }
    await this.access.writeRegister(csr, 0n);
    await this.access.writeRegister(`${csr}h`, (value >> 32n) & mask32);
    await this.access.writeRegister(csr, value & mask32);
  }
}
