import type { TargetFamily } from '../../common/launchArgs';
import { pcFromMonitorRegisters } from '../arch/monitorRegisters';
import { errorMessage } from '../errors';
import { QmpMonitor } from './qmpMonitor';
import { AddressCounter, PcSampler, RandomOffsetSchedule, SamplerIdentity, waitUntil } from './sampler';

/**
 * Reads kept in flight when sampling back to back: while QEMU answers one, the next is already
 * queued, so QEMU's main loop never idles waiting for this process to be scheduled (on a loaded
 * host that wake-up, not the read, is most of a round trip). Two suffice; more only queue up.
 */
const BACK_TO_BACK_DEPTH = 2;

export interface MonitorSamplerOptions {
  /** QEMU's QMP socket (see qmpMonitor.ts for why not HMP). */
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
  private monitor: QmpMonitor | undefined;
  private loops: Promise<void>[] = [];
  private running = false;

  constructor(private readonly options: MonitorSamplerOptions) {
    this.identity = {
      id: 'qemu-monitor',
      label: options.singlestep ? 'QEMU monitor (exact PC, -singlestep)' : 'QEMU monitor (translation-block start)',
      attribution: options.singlestep ? 'time-proportional' : 'translation-block-start',
      halting: false,
      unit: 'samples',
    };
  }

  async start(): Promise<void> {
    this.monitor = await QmpMonitor.connect(this.options.socketPath);
    this.running = true;
    const depth = this.options.rateHz ? 1 : BACK_TO_BACK_DEPTH;
    for (let i = 0; i < depth; i++) this.loops.push(this.run(this.monitor));
  }

  private async run(monitor: QmpMonitor): Promise<void> {
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
        text = await monitor.human('info registers');
      } catch (err) {
        if (this.running) this.options.log(`PC sampling stopped: ${errorMessage(err)}\n`);
        this.running = false;
        break;
      }
      const pc = pcFromMonitorRegisters(this.options.family, text);
      // A reply that arrives after a halt describes the halted core, not the running program.
      if (pc !== undefined && this.options.isRunning()) this.counter.add(pc);
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    this.loops = [];
    this.monitor?.close();
    this.monitor = undefined;
  }

  async drain(): Promise<Map<number, number>> {
    return this.counter.drain();
  }

  async hold(): Promise<void> {}
  resume(): void {}
}
