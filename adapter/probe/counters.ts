/**
 * The hardware-counter model every core family implements (adapter/arch/<family>/counters*.ts):
 * discover what the chip has, list its events, program a slot, start/stop/reset, read with width
 * and wrap handled, release. Values are raw counts; the session and the extension derive the rest.
 */

/** A countable condition. `id` is stable for the target (e.g. `cycles`, `dwt.lsu`, `pmu.0x0008`, `arc.crun`). */
export interface CounterEvent {
  id: string;
  name: string;
  description: string;
}

export interface CounterSlotInfo {
  /** Index in the unit's own numbering (DWT counter, mhpmcounter N, PCT index, PMU counter). */
  index: number;
  /** Display name, e.g. `CYCCNT`, `mhpmcounter3`, `PCT[2]`. */
  name: string;
  /** Counter width in bits (8 for DWT event counters, 24 for SysTick, 32/48/64 …). */
  width: number;
  /** For slots wired to one event (CYCCNT, mcycle): that event; otherwise undefined (programmable). */
  fixedEvent?: string;
  /** Event currently programmed, if any. */
  event?: string;
  running: boolean;
}

export interface CounterUnitInfo {
  /** e.g. `DWT`, `SysTick`, `PMU`, `RISC-V counters`, `ARC PCT`. */
  unit: string;
  present: boolean;
  /** Why the unit is absent or limited, in words for the user (e.g. "DWT reads as zero: QEMU does not model it"). */
  note?: string;
  slots: CounterSlotInfo[];
  /** Smallest count the unit resolves (1 for a cycle counter; SysTick resolution is 1 tick of its clock). */
  resolution: number;
}

export interface CounterReading {
  unit: string;
  slot: number;
  event: string | undefined;
  /** Accumulated count since the last reset, extended past the hardware width where wraps were seen. */
  value: bigint;
  /**
   * false when the value cannot be trusted: an 8-bit DWT counter read after more than one possible
   * wrap, a SysTick interval longer than its reload. `note` says why.
   */
  reliable: boolean;
  note?: string;
}

export interface CounterUnit {
  readonly unit: string;
  /** Probes the hardware. Called once per session, with the target halted. */
  discover(): Promise<CounterUnitInfo>;
  info(): CounterUnitInfo;
  events(): CounterEvent[];
  /** Programs `slot` to count `eventId` (stopped and zeroed). Throws UnknownEvent / CounterUnavailable. */
  configure(slot: number, eventId: string): Promise<void>;
  start(slots: number[]): Promise<void>;
  stop(slots: number[]): Promise<void>;
  reset(slots: number[]): Promise<void>;
  /** Reads every configured slot. */
  read(): Promise<CounterReading[]>;
  /** Stops everything this unit started and restores what it changed. */
  release(): Promise<void>;
}
