import type { TargetFamily } from '../../common/launchArgs';
import type { CountedApart } from '../../common/dapCustom';
import { monitorSampleReader } from '../arch/monitorRegisters';
import { errorMessage } from '../errors';
import { HmpMonitor } from './hmpMonitor';
import { AddressCounter, PcSampler, RandomOffsetSchedule, SamplerIdentity, waitUntil } from './sampler';

export interface MonitorSamplerOptions {
  /**
   * QEMU's HMP socket. One read in flight, through HMP: measured against QMP and against two reads
   * in flight (bench/samplingTransport.ts), this gave the most reads per second of wall time and
   * the least bias on a loaded host; QMP costs QEMU less CPU per read but more main-loop wake-ups,
   * and reads queued back to back land at correlated moments.
   */
  socketPath: string;
  family: TargetFamily;
  /** Whether QEMU runs one instruction per translation block (`-singlestep`): then the PC is exact. */
  singlestep: boolean;
  /** Samples only count while this says the target runs (a halted target would pile up on one PC). */
  isRunning: () => boolean;
  /** Target rate; undefined: back to back, as fast as the monitor answers. */
  rateHz?: number;
  log: (text: string) => void;
}

/**
 * Non-halting PC sampling through QEMU's HMP monitor: `info registers` while the vCPU runs. TCG
 * writes the guest PC back to the CPU state only at translation-block boundaries, so the PC read
 * is the start of the block running at that moment (exact under `-singlestep`, where every block is
 * one instruction). A second connection to the monitor: GDB is never involved, nothing halts.
 * Counts stay in this process; the sampling service sends them to the client in batches.
 */
export class MonitorSampler implements PcSampler {
  readonly identity: SamplerIdentity;
  private readonly counter = new AddressCounter();
  private monitor: HmpMonitor | undefined;
  private loop: Promise<void> | undefined;
  private running = false;
  private inExceptionReturn = 0;
  private readonly read: ReturnType<typeof monitorSampleReader>;

  constructor(private readonly options: MonitorSamplerOptions) {
    this.read = monitorSampleReader(options.family);
    this.identity = {
      id: 'qemu-monitor',
      label: options.singlestep ? 'QEMU monitor (exact PC, -singlestep)' : 'QEMU monitor (translation-block start)',
      attribution: options.singlestep ? 'time-proportional' : 'translation-block-start',
      halting: false,
      unit: 'samples',
    };
  }

  async start(): Promise<void> {
    this.monitor = await HmpMonitor.connect({ path: this.options.socketPath });
    this.running = true;
    this.loop = this.run(this.monitor);
  }

  private async run(monitor: HmpMonitor): Promise<void> {
    const schedule = this.options.rateHz ? new RandomOffsetSchedule(1000 / this.options.rateHz) : undefined;
    while (this.running) {
      if (schedule) await waitUntil(schedule.next());
      if (!this.running) break;
      if (!this.options.isRunning()) {
        await new Promise((r) => setTimeout(r, 10));
        continue;
      }
      let text: string;
      try {
        text = await monitor.command('info registers');
      } catch (err) {
        if (this.running) this.options.log(`PC sampling stopped: ${errorMessage(err)}\n`);
        this.running = false;
        break;
      }
      const sample = this.read(text);
      // A reply that arrives after a halt describes the halted core, not the running program.
      if (sample === undefined || !this.options.isRunning()) continue;
      if (sample === 'return-token') this.inExceptionReturn++;
      else this.counter.add(sample.pc);
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    this.monitor?.close();
    this.monitor = undefined;
  }

  async drain(): Promise<Map<number, number>> {
    return this.counter.drain();
  }

  drainCountedApart(): CountedApart {
    const n = this.inExceptionReturn;
    this.inExceptionReturn = 0;
    return n > 0 ? { inExceptionReturn: n } : {};
  }

  async hold(): Promise<void> {}
  resume(): void {}
}
