/**
 * A Cortex-M core as DWT_PCSR shows it, for the OpenOCD Tcl RPC double. The program it "runs" is a
 * real exact instruction trace (QEMU `-icount shift=0 -singlestep -d exec,nochain`, test/oracle/):
 * under `shift=0` one instruction is one nanosecond of virtual time, so an instruction index is a
 * point in time. Each PCSR read picks a uniformly random point of the run's time line and answers
 * the instruction executing then; the time line also holds sleep (WFI) windows, where the core
 * executes nothing.
 *
 * PCSR semantics (ARMv7-M ARM C1.8, ARMv6-M ARM C1.7.2): the address of a recently executed
 * instruction; 0xFFFFFFFF while the core is halted (Debug state) or asleep. With DEMCR.TRCENA
 * clear the DWT is off; what PCSR reads then is the implementation's choice, and this double
 * answers 0xFFFFFFFF, as some cores do. The double answers the exact instruction, the ideal a real
 * core's "recently executed" only approaches: it checks how the sampler reads and counts, not a
 * core's skid.
 *
 * Memory map it answers (anything else is a bus fault, so the read or write fails):
 *   DEMCR 0xE000EDFC read/write; DHCSR 0xE000EDF0 reads S_HALT (bit 17) and S_SLEEP (bit 18);
 *   DWT 0xE0001000-0xE0001FFF: DWT_CTRL reads NUMCOMP=4 with whatever was written to its low bits,
 *   DWT_PCSR as above, every other DWT word reads 0 (so a `read_memory 0xE000101C 32 N` that
 *   forgets the address increments gets PCSR then zeros, as on silicon).
 */

export const DEMCR = 0xe000edfc;
export const DHCSR = 0xe000edf0;
export const TRCENA = 1 << 24;
const DWT_BASE = 0xe0001000;
const DWT_CTRL = 0xe0001000;
const DWT_PCSR = 0xe000101c;
const NUMCOMP_4 = 4 << 28;
export const NO_SAMPLE = 0xffffffff;

/** The core sleeps for `lengthNs` after executing instruction number `afterInstruction`. */
export interface SleepWindow {
  afterInstruction: number;
  lengthNs: number;
}

/** Sleep windows of `lengthNs` after every `every` instructions of a trace of `instructions`. */
export function periodicSleep(instructions: number, every: number, lengthNs: number): SleepWindow[] {
  const out: SleepWindow[] = [];
  for (let at = every; at < instructions; at += every) out.push({ afterInstruction: at, lengthNs });
  return out;
}

/** What the double served, by kind: the ground truth a test compares a sampler's tallies with. */
export interface PcsrServed {
  code: number;
  halted: number;
  asleep: number;
  traceDisabled: number;
}

export class PcsrCoreModel {
  halted = false;
  demcr = 0;
  private dwtCtrlLow = 0;
  readonly served: PcsrServed = { code: 0, halted: 0, asleep: 0, traceDisabled: 0 };
  private readonly windowStart: Float64Array;
  private readonly windowLength: Float64Array;
  /** Sleep time before window k (sum of the lengths of windows 0..k-1). */
  private readonly sleptBefore: Float64Array;
  private readonly totalNs: number;

  constructor(
    private readonly trace: Uint32Array,
    sleep: readonly SleepWindow[] = [],
    private readonly random: () => number = Math.random,
  ) {
    if (trace.length === 0) throw new Error('the PCSR double needs a trace of at least one instruction');
    const windows = [...sleep].sort((a, b) => a.afterInstruction - b.afterInstruction);
    this.windowStart = new Float64Array(windows.length);
    this.windowLength = new Float64Array(windows.length);
    this.sleptBefore = new Float64Array(windows.length);
    let slept = 0;
    windows.forEach((w, k) => {
      this.sleptBefore[k] = slept;
      this.windowStart[k] = w.afterInstruction + slept;
      this.windowLength[k] = w.lengthNs;
      slept += w.lengthNs;
    });
    this.totalNs = trace.length + slept;
  }

  /** Share of the time line spent asleep: what a sampler's asleep count should approach. */
  get sleepShare(): number {
    return (this.totalNs - this.trace.length) / this.totalNs;
  }

  /** A 32-bit read through the debug port; undefined when the access faults. */
  read(address: number): number | undefined {
    if (address === DEMCR) return this.demcr >>> 0;
    if (address === DHCSR) return ((this.halted ? 1 << 17 : 0) | 1) >>> 0;
    if (address === DWT_PCSR) return this.pcsr();
    if (address === DWT_CTRL) return (NUMCOMP_4 | this.dwtCtrlLow) >>> 0;
    if (address >= DWT_BASE && address < DWT_BASE + 0x1000 && address % 4 === 0) return 0;
    return undefined;
  }

  /** A 32-bit write; false when the access faults. */
  write(address: number, value: number): boolean {
    if (address === DEMCR) {
      this.demcr = value >>> 0;
      return true;
    }
    if (address === DWT_CTRL) {
      this.dwtCtrlLow = value & 0x0fffffff;
      return true;
    }
    return address === DHCSR || (address >= DWT_BASE && address < DWT_BASE + 0x1000 && address % 4 === 0);
  }

  private pcsr(): number {
    if ((this.demcr & TRCENA) === 0) {
      this.served.traceDisabled++;
      return NO_SAMPLE;
    }
    if (this.halted) {
      this.served.halted++;
      return NO_SAMPLE;
    }
    const t = Math.min(this.totalNs - 1, Math.floor(this.random() * this.totalNs));
    const k = lastAtOrBefore(this.windowStart, t);
    if (k >= 0 && t < this.windowStart[k]! + this.windowLength[k]!) {
      this.served.asleep++;
      return NO_SAMPLE;
    }
    const index = k >= 0 ? t - this.sleptBefore[k]! - this.windowLength[k]! : t;
    this.served.code++;
    return this.trace[index]!;
  }
}

/** Index of the last element ≤ t in an ascending array, or -1. */
function lastAtOrBefore(sorted: Float64Array, t: number): number {
  let lo = 0;
  let hi = sorted.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! <= t) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}
