import type { CounterEvent, CounterSlotInfo, CounterUnitInfo } from '../../common/counters';

/**
 * The hardware-counter model every core family implements (adapter/arch/<family>/): discover what
 * the chip has, list its events, program a slot, start/stop/reset, read with width and wrap
 * handled, release. Values are raw counts; the session and the extension derive the rest.
 */
export type { CounterEvent, CounterSlotInfo, CounterUnitInfo };

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
  /**
   * Whether `slot` can count `eventId`, including events outside the catalogue (raw RISC-V
   * `hpm.<n>` selectors). Default: a fixed slot its own event, a programmable one any listed event.
   */
  canCount?(slot: number, eventId: string): boolean;
  /** Programs `slot` to count `eventId` (stopped and zeroed). Throws UnknownEvent / CounterUnavailable. */
  configure(slot: number, eventId: string): Promise<void>;
  start(slots: number[]): Promise<void>;
  stop(slots: number[]): Promise<void>;
  reset(slots: number[]): Promise<void>;
  /** Reads every configured slot. */
  read(): Promise<CounterReading[]>;
  /**
   * The core was reset by CycleLens (halted at the reset vector): registers the reset cleared are
   * programmed again as configured, so the reset is never mistaken for the firmware's doing.
   */
  afterReset?(): Promise<void>;
  /** Stops everything this unit started and restores what it changed. */
  release(): Promise<void>;
}
