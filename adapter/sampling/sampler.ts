import type { CountedApart, SampleAttributionKind, SamplerDescription, SamplerId } from '../../common/dapCustom';

/** What a sampler is, as shown to the user (availability is decided per target by the catalog). */
export type SamplerIdentity = Omit<SamplerDescription, 'available' | 'needs' | 'accuracy'> & {
  id: SamplerId;
  attribution: SampleAttributionKind;
};

/**
 * One way of finding where the target spends its time. A sampler counts per address; the sampling
 * service takes the counts out at its own pace (`drain`) and turns them into events.
 */
export interface PcSampler {
  readonly identity: SamplerIdentity;
  start(): Promise<void>;
  /** Stops taking samples; counts taken so far stay drainable. Idempotent. */
  stop(): Promise<void>;
  /** Counts since the previous drain, taken out of the sampler. */
  drain(): Promise<Map<number, number>>;
  /**
   * Reads since the previous drain that found no code address, by reason, taken out of the sampler:
   * the core asleep or halted (DWT_PCSR's 0xFFFFFFFF; a sampler that can tell always gives this
   * count, 0 included), or completing an exception return (a Cortex-M PC holding an EXC_RETURN
   * token, as QEMU's monitor shows it; given when there were some). Samplers whose reads are always
   * code have none.
   */
  drainCountedApart?(): CountedApart;
  /**
   * Resolves once no sample is being taken, and takes none until `resume`: a halting sampler must
   * not resume a target the user is about to pause.
   */
  hold(): Promise<void>;
  resume(): void;
}

/** Per-address counts, drained in one piece. */
export class AddressCounter {
  private counts = new Map<number, number>();

  add(address: number, n = 1): void {
    this.counts.set(address, (this.counts.get(address) ?? 0) + n);
  }

  drain(): Map<number, number> {
    const out = this.counts;
    this.counts = new Map();
    return out;
  }
}

/**
 * Waits until `at` (performance.now() time). Timers only resolve whole milliseconds, so the last
 * millisecond is waited out with setImmediate turns: periodic samplers take each sample at a
 * random offset inside its interval (TIP, MICRO 2021: random offsets avoid aliasing with loops
 * whose period divides the interval), and that offset is sub-millisecond at kilohertz rates.
 */
export async function waitUntil(at: number): Promise<void> {
  for (;;) {
    const left = at - performance.now();
    if (left <= 0) return;
    if (left > 2) await new Promise((r) => setTimeout(r, Math.floor(left - 1)));
    else await new Promise((r) => setImmediate(r));
  }
}

/**
 * The time of the next sample: a uniformly random point inside the next interval. A sampler that
 * fell behind starts afresh from now rather than bursting to catch up.
 */
export class RandomOffsetSchedule {
  private periodStart: number;

  constructor(
    private readonly intervalMs: number,
    now = performance.now(),
    private readonly random: () => number = Math.random,
  ) {
    this.periodStart = now;
  }

  next(now = performance.now()): number {
    if (now > this.periodStart + this.intervalMs) this.periodStart = now;
    const at = this.periodStart + this.random() * this.intervalMs;
    this.periodStart += this.intervalMs;
    return at;
  }
}
