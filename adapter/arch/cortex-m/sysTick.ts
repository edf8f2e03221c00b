import type { CounterEvent, CounterReading, CounterSlotInfo, CounterUnit, CounterUnitInfo } from '../../probe/counters';
import type { TargetAccess } from '../../probe/targetAccess';
import { CycleLensError, ErrorCode } from '../../errors';
import { DebuggerStore, type PeripheralStore } from './sysTickCoreStore';

/**
 * SysTick as a cycle source, for cores without DWT CYCCNT (Cortex-M0/M0+) and for QEMU, whose DWT
 * reads as zero. ARMv7-M ARM (DDI 0403) B3.3: a 24-bit down counter.
 *   SYST_CSR 0xE000E010: bit 0 ENABLE, bit 1 TICKINT, bit 2 CLKSOURCE (1 = processor clock),
 *            bit 16 COUNTFLAG (1 if the counter reached 0 since SYST_CSR was last read; a read clears it).
 *   SYST_RVR 0xE000E014: RELOAD [23:0]; the counter reloads from it on the tick after reaching 0,
 *            so one period is RELOAD + 1 ticks.
 *   SYST_CVR 0xE000E018: CURRENT [23:0]; any write clears it to 0 and clears COUNTFLAG.
 *   SYST_CALIB 0xE000E01C.
 * The counter does not move while the core is halted in Debug state, so reads at a breakpoint agree.
 *
 * Two modes, chosen at discover():
 * - owned: the firmware has not enabled SysTick. configure() takes it (RELOAD 0xFFFFFF, CLKSOURCE = 1,
 *   TICKINT = 0 so no exception is ever raised) and release() puts CSR and RVR back.
 * - shared: the firmware runs SysTick (ENABLE = 1). CycleLens never writes it and uses its reload.
 *
 * On QEMU mps2-an386 SysTick's processor clock is the 25 MHz board clock in virtual time; with
 * `-icount shift=S` an instruction takes 2^S ns, so SysTick ticks 2^S/40 times per instruction (at
 * shift 0 once per 40 instructions, 25 per 1000, measured; TargetFacts.coreClockTicksPerInstruction).
 * Resolution is one tick. QEMU 7.2 ignores the debugger's writes to SysTick (see sysTickCoreStore.ts),
 * and a continue lets its virtual clock jump to the next timer deadline before a breakpoint stop, so
 * on QEMU a region is timed exactly only when its end is reached by single steps or read by code on
 * the target.
 */

const SYST_CSR = 0xe000e010;
const SYST_RVR = 0xe000e014;
const SYST_CVR = 0xe000e018;
const SYST_CALIB = 0xe000e01c;
const ENABLE = 1 << 0;
const TICKINT = 1 << 1;
const CLKSOURCE = 1 << 2;
const COUNTFLAG = 1 << 16;
const MAX_RELOAD = 0xff_ffff;
const unitName = 'SysTick';

export interface SysTickOptions {
  /**
   * How to write SysTick when the debugger's memory writes are ignored (QEMU): a CoreExecutedStore.
   * Without it, writes that do not stick make the unit unavailable.
   */
  coreStore?: PeripheralStore;
  /**
   * SysTick runs on an emulator's virtual clock (QEMU under -icount): a resumed target lets that
   * clock jump to the next timer deadline — SysTick's own, at the least — so intervals that span a
   * continue are not the work done. Readings say so.
   */
  virtualClock?: boolean;
}

const virtualClockNote =
  'On QEMU, SysTick follows its virtual clock, which jumps to the next timer deadline ' +
  'whenever the debugger resumes the target: intervals across a continue or a step over a ' +
  'call include that jump. Injected measurements never stop the target and are exact within ' +
  'one tick.';

/** Elapsed processor cycles, for units that bound their own counters by a clock (DWT's 8-bit counters). */
export interface CycleClockSample {
  /** Processor cycles counted since this unit started its clock. */
  cycles: bigint;
  /** Bumped whenever an interval's count was not exact: a difference across a change is not a bound. */
  inexactIntervals: number;
}

/** What one read of SysTick tells about the interval since the previous read. */
export interface SysTickInterval {
  /** The fewest ticks consistent with the registers. */
  ticks: number;
  /** false when more whole periods may have passed unseen. */
  exact: boolean;
}

/**
 * Ticks between two reads of a down counter with period `period` (= RELOAD + 1).
 * `countFlag` is COUNTFLAG from the second read (the first read cleared it), or undefined when it was
 * not read. The rule: COUNTFLAG is one sticky bit. It says the counter passed 0 at least once, never
 * how often, so once it is set the registers only give the count modulo the period: one wrap and
 * three wraps leave the same CVR and the same flag. The fewest ticks consistent with the registers is
 * reported, and the interval is exact only when the flag is clear (the counter cannot have passed 0
 * without setting it, so no period was skipped). A reload from exactly 0 sets no flag, which the
 * modulo arithmetic covers.
 */
export function sysTickInterval(
  previous: number,
  current: number,
  period: number,
  countFlag: boolean | undefined,
): SysTickInterval {
  const d = (((previous - current) % period) + period) % period;
  if (countFlag === undefined) return { ticks: d, exact: false };
  if (!countFlag) {
    // Without a pass through 0 the counter can only have gone down, or have reloaded from 0.
    return { ticks: d, exact: current <= previous || previous === 0 };
  }
  // Setting the flag takes `previous` ticks (down to 0), or a whole period when it started at 0.
  const toFlag = previous === 0 ? period : previous;
  return { ticks: d >= toFlag ? d : d + period, exact: false };
}

export class SysTickCounters implements CounterUnit {
  readonly unit = unitName;
  private readonly debuggerStore: PeripheralStore;
  private useCoreStore = false;
  private present = false;
  private note: string | undefined;
  private shared = false;
  private originalCsr = 0;
  private originalRvr = 0;
  private taken = false;
  private configured = false;
  private running = false;
  /** CVR after the last sample. */
  private last = 0;
  private acc = 0n;
  private unreliable: string | undefined;
  /** Free-running total of exact-or-not ticks, for the cycle-clock interface. */
  private total = 0n;
  private inexactIntervals = 0;
  private discovered = false;

  constructor(
    private readonly access: TargetAccess,
    private readonly options: SysTickOptions = {},
  ) {
    this.debuggerStore = new DebuggerStore(access);
  }

  async discover(): Promise<CounterUnitInfo> {
    this.discovered = true;
    // One read of SYST_CSR is unavoidable; in shared mode it may clear a COUNTFLAG the firmware polls.
    const csr = await this.access.readU32(BigInt(SYST_CSR));
    const rvr = (await this.access.readU32(BigInt(SYST_RVR))) & MAX_RELOAD;
    const calib = await this.access.readU32(BigInt(SYST_CALIB));
    this.originalCsr = csr;
    this.originalRvr = rvr;
    this.shared = (csr & ENABLE) !== 0;
    this.present = true;
    this.note = undefined;
    if (this.shared) {
      const polls = (csr & TICKINT) === 0;
      const clock = (csr & CLKSOURCE) !== 0 ? 'processor clock' : 'reference clock';
      this.note =
        `The firmware runs SysTick (reload ${rvr}, ${clock}): ` +
        `CycleLens only reads it. ` +
        `A reading spanning a wrap (more than ${rvr + 1} ticks) is unreliable.` +
        (polls
          ? ' The firmware polls COUNTFLAG (TICKINT = 0), so CycleLens does not read it and cannot see ' +
            'wraps: every reading is marked unreliable.'
          : '');
      return this.info();
    }
    // Owned mode needs writes: check that RVR accepts one from the debugger, and put it back. Where
    // the debugger's writes are dropped (QEMU) and the core can store instead, that store is not
    // tried here: it runs code on the target, and a session that never counts should not pay for it.
    // The first configure() makes it, checking every write.
    try {
      await this.debuggerStore.store32(SYST_RVR, MAX_RELOAD);
      if (((await this.access.readU32(BigInt(SYST_RVR))) & MAX_RELOAD) === MAX_RELOAD) {
        await this.write(SYST_RVR, rvr, (v) => (v & MAX_RELOAD) === rvr);
      } else if (this.options.coreStore) {
        this.useCoreStore = true;
      } else {
        await this.write(SYST_RVR, MAX_RELOAD, (v) => (v & MAX_RELOAD) === MAX_RELOAD);
      }
    } catch (err) {
      this.present = false;
      const allZero = csr === 0 && rvr === 0 && calib === 0;
      this.note =
        allZero && !this.options.coreStore
          ? 'SysTick reads as zero and ignores writes: this core has no SysTick.'
          : err instanceof Error
            ? err.message
            : String(err);
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
      slots: this.present ? [this.slotInfo()] : [],
      resolution: 1,
    };
  }

  events(): CounterEvent[] {
    if (!this.present) return [];
    return [this.event()];
  }

  async configure(slot: number, eventId: string): Promise<void> {
    this.requireSlot(slot);
    const ev = this.event();
    if (eventId !== ev.id) {
      throw new CycleLensError(
        ErrorCode.UnknownEvent,
        `SysTick counts only '${ev.id}' (${ev.name}), not '${eventId}'. Count other events with the ` +
          `DWT or PMU units where the core has them.`,
      );
    }
    if (this.running) await this.stop([0]);
    if (!this.shared) {
      // Take SysTick, stopped: TICKINT = 0 so it never raises an exception the firmware did not ask for.
      const csr = await this.access.readU32(BigInt(SYST_CSR));
      await this.write(SYST_CSR, (csr & ~(ENABLE | TICKINT)) | CLKSOURCE, (v) => (v & 7) === CLKSOURCE);
      await this.write(SYST_RVR, MAX_RELOAD, (v) => (v & MAX_RELOAD) === MAX_RELOAD);
      await this.rewind();
      this.taken = true;
    } else {
      await this.resync();
    }
    this.acc = 0n;
    this.unreliable = undefined;
    this.configured = true;
  }

  async start(slots: number[]): Promise<void> {
    this.requireConfigured(slots, 'start');
    if (this.running) return;
    if (this.shared) {
      await this.resync();
    } else {
      await this.rewind();
      await this.write(SYST_CSR, CLKSOURCE | ENABLE, (v) => (v & 7) === (CLKSOURCE | ENABLE));
    }
    this.running = true;
  }

  async stop(slots: number[]): Promise<void> {
    this.requireConfigured(slots, 'stop');
    if (!this.running) return;
    // No rewind: start() rewinds anyway, and on QEMU every write is two single steps.
    await this.sample(false);
    if (!this.shared) await this.write(SYST_CSR, CLKSOURCE, (v) => (v & 7) === CLKSOURCE);
    this.running = false;
  }

  /** Without an event the slot is skipped: "reset everything" is a normal request. */
  async reset(slots: number[]): Promise<void> {
    for (const slot of slots) this.requireSlot(slot);
    if (!this.configured || slots.length === 0) return;
    if (this.running) {
      if (this.shared) await this.resync();
      else await this.rewind();
    }
    this.acc = 0n;
    this.unreliable = undefined;
  }

  async read(): Promise<CounterReading[]> {
    if (!this.configured) return [];
    if (this.running) await this.sample();
    const note = this.unreliable ?? (this.options.virtualClock && this.acc > 0n ? virtualClockNote : undefined);
    return [{ unit: unitName, slot: 0, event: this.event().id, value: this.acc, reliable: note === undefined, note }];
  }

  /** The cycle clock other units bound their counts with; undefined unless SysTick runs on the processor clock. */
  async cycleClock(): Promise<CycleClockSample | undefined> {
    if (!this.running || this.event().id !== 'cycles') return undefined;
    await this.sample();
    return { cycles: this.total, inexactIntervals: this.inexactIntervals };
  }

  /**
   * A reset (B3.3.1: SYST_CSR resets to 0, RVR and CVR are UNKNOWN, 0 on QEMU) stops a SysTick
   * CycleLens owns. Without this, the next sample would read CSR = 0 and take the reset for the
   * firmware reconfiguring SysTick. Owned mode programs it again as it was; the interval across
   * the reset starts afresh. Shared mode: the firmware has not run yet, so nothing is ours to put back.
   */
  async afterReset(): Promise<void> {
    if (!this.present || !this.configured) return;
    if (this.shared) {
      if (this.running) await this.resync();
      return;
    }
    const wasRunning = this.running;
    this.running = false;
    await this.write(SYST_CSR, CLKSOURCE, (v) => (v & 7) === CLKSOURCE);
    await this.write(SYST_RVR, MAX_RELOAD, (v) => (v & MAX_RELOAD) === MAX_RELOAD);
    await this.rewind();
    this.taken = true;
    if (wasRunning) {
      await this.write(SYST_CSR, CLKSOURCE | ENABLE, (v) => (v & 7) === (CLKSOURCE | ENABLE));
      this.running = true;
    }
  }

  async release(): Promise<void> {
    if (this.taken) {
      // Disable first so the restored reload does not start a period the firmware did not ask for.
      const csr = this.originalCsr & 7 & ~ENABLE;
      await this.write(SYST_CSR, csr, (v) => (v & 7) === csr);
      await this.write(SYST_RVR, this.originalRvr, (v) => (v & MAX_RELOAD) === this.originalRvr);
    }
    this.taken = false;
    this.configured = false;
    this.running = false;
  }

  // ---- helpers ---------------------------------------------------------------------------------

  private event(): CounterEvent {
    const processorClock = !this.shared || (this.originalCsr & CLKSOURCE) !== 0;
    return processorClock
      ? {
          id: 'cycles',
          name: 'cycles (SysTick)',
          description: 'Processor clock cycles counted by SysTick: resolution one tick, 24-bit, wraps tracked.',
        }
      : {
          id: 'systick.ref',
          name: 'SysTick reference clock ticks',
          description:
            'Ticks of the implementation-defined SysTick reference clock (the firmware chose CLKSOURCE = 0).',
        };
  }

  private slotInfo(): CounterSlotInfo {
    return {
      index: 0,
      name: 'SYST_CVR',
      width: 24,
      fixedEvent: this.event().id,
      event: this.configured ? this.event().id : undefined,
      running: this.running,
    };
  }

  private requireSlot(slot: number): void {
    if (!this.present) {
      throw new CycleLensError(
        ErrorCode.CounterUnavailable,
        `SysTick is not available: ${this.note ?? 'run discover() first.'}`,
      );
    }
    if (slot !== 0)
      throw new CycleLensError(
        ErrorCode.CounterUnavailable,
        `SysTick has one slot, 0; there is no slot ${slot}. Use slot 0.`,
      );
  }

  private requireConfigured(slots: number[], what: string): void {
    for (const slot of slots) this.requireSlot(slot);
    if (slots.length > 0 && !this.configured) {
      throw new CycleLensError(
        ErrorCode.CounterUnavailable,
        `Cannot ${what} SysTick: configure slot 0 with '${this.event().id}' first.`,
      );
    }
  }

  /**
   * Owned mode: clears CVR (and COUNTFLAG), so the next interval starts a full period of 2^24 ticks
   * from the top. Each interval shorter than that is then exact, whatever its start phase. A running
   * SysTick is disabled around the write: QEMU 7.2 leaves a running SysTick stuck at 0 after CVR is
   * written (measured), and on hardware the halted counter loses nothing by it.
   */
  private async rewind(): Promise<void> {
    const enabled = this.running && !this.shared;
    if (enabled) await this.write(SYST_CSR, CLKSOURCE, (v) => (v & 7) === CLKSOURCE);
    await this.write(SYST_CVR, 0, (v) => (v & MAX_RELOAD) === 0);
    if (enabled) await this.write(SYST_CSR, CLKSOURCE | ENABLE, (v) => (v & 7) === (CLKSOURCE | ENABLE));
    this.last = 0;
  }

  /** Shared mode: takes the current CVR as the start of the next interval (and clears COUNTFLAG). */
  private async resync(): Promise<void> {
    if (this.readsCountFlag()) await this.access.readU32(BigInt(SYST_CSR));
    this.last = (await this.access.readU32(BigInt(SYST_CVR))) & MAX_RELOAD;
  }

  /** In shared mode with TICKINT = 0 the firmware polls COUNTFLAG: reading SYST_CSR would steal it. */
  private readsCountFlag(): boolean {
    return !this.shared || (this.originalCsr & TICKINT) !== 0;
  }

  /** Adds the ticks since the previous sample to the count; in owned mode, then rewinds. */
  private async sample(rewind = true): Promise<void> {
    let csr: number | undefined;
    if (this.readsCountFlag()) csr = await this.access.readU32(BigInt(SYST_CSR));
    const current = (await this.access.readU32(BigInt(SYST_CVR))) & MAX_RELOAD;
    let period = MAX_RELOAD + 1;
    if (this.shared) {
      period = ((await this.access.readU32(BigInt(SYST_RVR))) & MAX_RELOAD) + 1;
    } else if (csr !== undefined && (csr & 7) !== (CLKSOURCE | ENABLE)) {
      this.unreliable ??=
        `The firmware reconfigured SysTick while CycleLens was using it (SYST_CSR = 0x${csr.toString(16)}). ` +
        `CycleLens now only reads it.`;
      this.shared = true;
      this.taken = false;
      this.originalCsr = csr;
      period = ((await this.access.readU32(BigInt(SYST_RVR))) & MAX_RELOAD) + 1;
    }
    const flag = csr === undefined ? undefined : (csr & COUNTFLAG) !== 0;
    const interval = sysTickInterval(this.last, current, period, flag);
    this.acc += BigInt(interval.ticks);
    this.total += BigInt(interval.ticks);
    if (!interval.exact) {
      this.inexactIntervals++;
      this.unreliable ??=
        flag === undefined
          ? 'SysTick wraps cannot be seen (the firmware polls COUNTFLAG, which a read would clear): the ' +
            "value counts each interval modulo the firmware's reload and may be short by whole periods."
          : `SysTick wrapped since the last read, so whole periods of ${period} ticks may be missing: ` +
            `the value is a lower bound. Measure shorter intervals` +
            `${this.shared ? " (the firmware's reload sets the limit)" : ` (under ${period} ticks)`}.`;
    }
    if (this.shared || !rewind) this.last = current;
    else await this.rewind();
  }

  /**
   * Writes a SysTick register and checks that it took. When the debugger's write is ignored (QEMU),
   * retries with a store executed by the core and uses that from then on.
   */
  private async write(address: number, value: number, took: (readBack: number) => boolean): Promise<void> {
    const check = async (): Promise<boolean> => took(await this.access.readU32(BigInt(address)));
    if (!this.useCoreStore) {
      await this.debuggerStore.store32(address, value);
      if (await check()) return;
      if (!this.options.coreStore) {
        throw new CycleLensError(
          ErrorCode.CounterUnavailable,
          `SysTick ignored the debugger's write of 0x${value.toString(16)} to 0x${address.toString(16)} ` +
            `(QEMU drops debugger writes to device registers). CycleLens can write it by stepping one ` +
            `store instruction on the core: give the unit a core store (single-step support).`,
        );
      }
      this.useCoreStore = true;
    }
    await this.options.coreStore!.store32(address, value);
    if (!(await check())) {
      throw new CycleLensError(
        ErrorCode.CounterUnavailable,
        `SysTick ignored a write of 0x${value.toString(16)} to 0x${address.toString(16)}, even from ` +
          `the core: it cannot be used as a cycle source here.`,
      );
    }
  }
}
