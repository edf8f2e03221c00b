/**
 * Counter shapes that cross the DAP boundary, declared once: the adapter's counter units produce
 * them, the extension's views show them.
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
  /** Why the unit is absent or limited, in words for the user (e.g. "DWT reads as zero (QEMU does not model it)"). */
  note?: string;
  slots: CounterSlotInfo[];
  /** Smallest count the unit resolves (1 for a cycle counter; SysTick resolution is 1 tick of its clock). */
  resolution: number;
  /** Events this unit can count (all programmable slots share the list). */
  events?: CounterEvent[];
}

/** One counter value on the wire: 64-bit counts travel as decimal strings. */
export interface CounterValue {
  unit: string;
  slot: number;
  event: string | undefined;
  value: string;
  reliable: boolean;
  note?: string;
}
