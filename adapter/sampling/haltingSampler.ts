import { errorMessage } from '../errors';
import { AddressCounter, PcSampler, RandomOffsetSchedule, SamplerIdentity, waitUntil } from './sampler';

export interface HaltingSamplerOptions {
  /** True while the user's program runs (not halted by the user or by the session). */
  isRunning: () => boolean;
  /** Interrupts the target, runs `fn`, resumes it, all hidden from the user. */
  withHalted: <T>(fn: () => Promise<T>) => Promise<T>;
  readPc: () => Promise<number>;
  rateHz: number;
  log: (text: string) => void;
}

/**
 * The fallback for any gdbserver: interrupt, read the PC, continue, at a bounded rate with a random
 * offset inside each interval. Biased: a halt lands where the core can stop (not inside a
 * multi-cycle instruction, not with interrupts masked on some stubs), and every halt costs the
 * target time. The bias is measured against the oracle in bench/sampling.ts.
 */
export class HaltingSampler implements PcSampler {
  readonly identity: SamplerIdentity = {
    id: 'gdb-halting',
    label: 'GDB halting (interrupt, read PC, continue)',
    attribution: 'halting',
    halting: true,
    unit: 'samples',
  };
  private readonly counter = new AddressCounter();
  private running = false;
  private held = 0;
  private loop: Promise<void> | undefined;
  private inFlight: Promise<unknown> | undefined;

  constructor(private readonly options: HaltingSamplerOptions) {}

  async start(): Promise<void> {
    this.running = true;
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    const schedule = new RandomOffsetSchedule(1000 / this.options.rateHz);
    while (this.running) {
      await waitUntil(schedule.next());
      if (!this.running || this.held > 0 || !this.options.isRunning()) continue;
      const sample = this.options.withHalted(() => this.options.readPc());
      this.inFlight = sample;
      try {
        this.counter.add(await sample);
      } catch (err) {
        // The target stopped for the user or ended between the check and the halt: skip this one.
        if (this.options.isRunning()) this.options.log(`A halting PC sample failed: ${errorMessage(err)}\n`);
      } finally {
        this.inFlight = undefined;
      }
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  async drain(): Promise<Map<number, number>> {
    return this.counter.drain();
  }

  async hold(): Promise<void> {
    this.held++;
    await this.inFlight?.catch(() => undefined);
  }

  resume(): void {
    if (this.held > 0) this.held--;
  }
}
