import {
  addCountedApart,
  type AddressCounts,
  type CountedApart,
  type SampleLocation,
  type SamplerDescription,
  type SamplesEventBody,
  type SamplingSnapshotResponse,
  type StartSamplingArguments,
  type StopSamplingResponse,
} from '../../common/dapCustom';
import { CycleLensError, ErrorCode, errorMessage } from '../errors';
import type { ElfImage } from '../elf';
import type { DebugTarget } from '../target/debugTarget';
import { createSampler, describeSamplers } from './catalog';
import type { PcSampler } from './sampler';
import type { RunState } from '../session/runState';

const DEFAULT_EVENT_INTERVAL_MS = 250;

/** Function and source line of an address, from the ELF's symbols and DWARF line table. */
export function resolveSampleLocation(image: ElfImage, address: number): SampleLocation {
  const fn = image.functionContaining(address);
  const line = image.lineTable.lookup(address);
  return {
    address,
    ...(fn ? { function: fn.name, functionAddress: fn.address } : {}),
    ...(line ? { path: line.file, line: line.line } : {}),
  };
}

/**
 * One sampling run per session: starts the chosen sampler, drains it every event interval into a
 * `cyclelens/samples` event (the counts since the last one, with the source location of every new
 * address), keeps the cumulative counts for snapshots, and stops cleanly at disconnect.
 */
export class SamplingService {
  private sampler: PcSampler | undefined;
  /** Kept from the start: the last flush may run after the target has ended. */
  private image: ElfImage | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly cumulative = new Map<number, number>();
  private readonly located = new Map<number, SampleLocation>();
  private total = 0;
  /** Reads counted apart from code since the start, by reason (only the reasons the sampler gives). */
  private apart: CountedApart = {};
  private startedAt = 0;
  private lastFlushAt = 0;
  private seq = 0;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly target: () => DebugTarget,
    /** Whether the target runs the user's program (samples count only then), and runs it freely. */
    private readonly runState: RunState,
    private readonly emit: (body: SamplesEventBody) => void,
    private readonly log: (text: string) => void,
  ) {}

  get isSampling(): boolean {
    return this.sampler !== undefined;
  }

  samplers(): SamplerDescription[] {
    return describeSamplers(this.target());
  }

  async start(args: StartSamplingArguments): Promise<SamplerDescription> {
    if (this.sampler)
      throw new CycleLensError(
        ErrorCode.InvalidRequest,
        `Sampling is already running (${this.sampler.identity.id}). Stop it first.`,
        false,
      );
    const target = this.target();
    const sampler = createSampler(target, args, this.log, this.runState);
    await sampler.start();
    this.sampler = sampler;
    this.image = target.config.image;
    this.cumulative.clear();
    this.located.clear();
    this.total = 0;
    // Nothing can have been read yet (the first read waits on I/O): this only gives the reasons the
    // sampler always reports, at 0.
    this.apart = sampler.drainCountedApart?.() ?? {};
    this.seq = 0;
    this.startedAt = this.lastFlushAt = performance.now();
    const interval = Math.max(50, args.eventIntervalMs ?? DEFAULT_EVENT_INTERVAL_MS);
    this.timer = setInterval(() => void this.flush(false), interval);
    return describeSamplers(target).find((d) => d.id === sampler.identity.id)!;
  }

  /** Stops sampling and sends the last counts as a final event. Safe to call when not sampling. */
  async stop(): Promise<StopSamplingResponse> {
    const sampler = this.sampler;
    if (!sampler) return { totalSamples: this.total, elapsedMs: 0 };
    clearInterval(this.timer);
    this.timer = undefined;
    // The final event goes out even when the sampler could not stop cleanly (its error still
    // reaches the caller): the client learns that sampling ended either way.
    try {
      await sampler.stop();
    } finally {
      await this.flush(true);
      this.sampler = undefined;
    }
    return { totalSamples: this.total, elapsedMs: Math.round(performance.now() - this.startedAt) };
  }

  /**
   * Before a user-requested halt: no halting sample may be in flight or start, and the samples taken
   * so far go out now, so every sample the client receives after the stop was taken after it.
   */
  async hold(): Promise<void> {
    if (!this.sampler) return;
    await this.sampler.hold();
    await this.flush(false);
  }

  resume(): void {
    this.sampler?.resume();
  }

  snapshot(): SamplingSnapshotResponse {
    return {
      sampler: this.sampler?.identity.id,
      running: this.sampler !== undefined,
      counts: [...this.cumulative],
      locations: [...this.located.values()],
      totalSamples: this.total,
      ...this.apart,
      elapsedMs: this.sampler ? Math.round(performance.now() - this.startedAt) : 0,
    };
  }

  private flush(final: boolean): Promise<void> {
    this.flushing = this.flushing
      .then(() => this.flushNow(final))
      .catch((err: unknown) => this.log(`Could not read the samples: ${errorMessage(err)}\n`));
    return this.flushing;
  }

  private async flushNow(final: boolean): Promise<void> {
    const sampler = this.sampler;
    if (!sampler) return;
    const delta = await sampler.drain();
    const apart = sampler.drainCountedApart?.() ?? {};
    addCountedApart(this.apart, apart);
    const image = this.image!;
    const pairs: AddressCounts = [];
    const locations: SampleLocation[] = [];
    let added = 0;
    for (const [address, n] of delta) {
      pairs.push([address, n]);
      added += n;
      this.cumulative.set(address, (this.cumulative.get(address) ?? 0) + n);
      if (!this.located.has(address)) {
        const loc = resolveSampleLocation(image, address);
        this.located.set(address, loc);
        locations.push(loc);
      }
    }
    this.total += added;
    const now = performance.now();
    const seconds = Math.max(1e-3, (now - this.lastFlushAt) / 1000);
    this.lastFlushAt = now;
    this.emit({
      sampler: sampler.identity.id,
      seq: this.seq++,
      elapsedMs: Math.round(now - this.startedAt),
      delta: pairs,
      locations,
      totalSamples: this.total,
      samplesPerSecond: Math.round(added / seconds),
      ...apart,
      ...(final ? { final: true } : {}),
    });
  }
}
