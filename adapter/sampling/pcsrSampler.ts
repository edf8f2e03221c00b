import type { CountedApart } from '../../common/dapCustom';
import { CycleLensError, ErrorCode, errorMessage } from '../errors';
import { TclRpcClient } from '../servers/tclRpc';
import { DEMCR, hex, parseBurstReply, planBurst, tallyBurst, TRCENA } from './pcsrBurst';
import { AddressCounter, PcSampler, RandomOffsetSchedule, SamplerIdentity, waitUntil } from './sampler';

export interface PcsrSamplerOptions {
  /**
   * OpenOCD's Tcl RPC port. The sampler opens its own connection: the session's requests (counters,
   * resets) then never wait in the client's queue behind a burst.
   */
  tclPort: number;
  host?: string;
  /** Reads are only taken while this says the target runs (a halted core answers 0xFFFFFFFF only). */
  isRunning: () => boolean;
  /** Target rate (reads/s); undefined: bursts back to back, as fast as OpenOCD answers. */
  rateHz?: number;
  /**
   * PCSR reads per round trip. OpenOCD runs one command at a time, so a burst also delays GDB by
   * its length (about a millisecond per read through a USB probe): 128 keeps that near 0.1 s.
   */
  burstSize?: number;
  /** Most DWT_CTRL spacer reads before a PCSR read (pcsrBurst.ts); 0 reads back to back. */
  maxSpacers?: number;
  log: (text: string) => void;
  random?: () => number;
}

export const PCSR_IDENTITY: SamplerIdentity = {
  id: 'openocd-pcsr',
  label: 'OpenOCD DWT_PCSR (Cortex-M, non-halting)',
  attribution: 'recently-executed',
  halting: false,
  unit: 'samples',
};

const DEFAULT_BURST = 128;
const DEFAULT_MAX_SPACERS = 1;
/** Failed bursts in a row before sampling gives up (a reset or a probe hiccup fails one or two). */
const MAX_FAILED_BURSTS = 5;

/**
 * Non-halting PC sampling on a Cortex-M served by OpenOCD: DWT_PCSR read in bursts, one Tcl RPC
 * round trip per burst. A PCSR value is the address of a recently executed instruction (ARMv7-M
 * C1.8); 0xFFFFFFFF means the core was halted or asleep at that read, and is counted apart as
 * "core asleep or halted", never as code. Sets DEMCR.TRCENA if it is clear, and clears it again at
 * stop only if it set it.
 */
export class PcsrSampler implements PcSampler {
  readonly identity = PCSR_IDENTITY;
  private readonly counter = new AddressCounter();
  private asleepOrHalted = 0;
  private tcl: TclRpcClient | undefined;
  private trcenaSetHere = false;
  private loop: Promise<void> | undefined;
  private running = false;
  private readonly burstSize: number;

  constructor(private readonly options: PcsrSamplerOptions) {
    this.burstSize = options.burstSize ?? DEFAULT_BURST;
    planBurst(this.burstSize, options.maxSpacers ?? DEFAULT_MAX_SPACERS); // validates both now, not in the loop
  }

  async start(): Promise<void> {
    const tcl = await TclRpcClient.connect(this.options.tclPort, this.options.host ?? '127.0.0.1');
    try {
      await this.enableTrace(tcl);
    } catch (err) {
      await tcl.close();
      throw err;
    }
    this.tcl = tcl;
    this.running = true;
    this.loop = this.run(tcl);
  }

  /** TRCENA powers the DWT; a memory access through the debug port, allowed while the core runs. */
  private async enableTrace(tcl: TclRpcClient): Promise<void> {
    const [demcr] = await tcl.readMemory(DEMCR, 32, 1);
    if ((demcr! & TRCENA) !== 0) return;
    await tcl.writeMemory(DEMCR, 32, [(demcr! | TRCENA) >>> 0]);
    const [after] = await tcl.readMemory(DEMCR, 32, 1);
    if ((after! & TRCENA) === 0) {
      throw new CycleLensError(
        ErrorCode.Unsupported,
        `DEMCR (${hex(DEMCR)}) kept TRCENA clear after OpenOCD set it (read ${hex(after!)}): this ` +
          `core's DWT cannot be enabled from the debugger, so DWT_PCSR cannot be sampled. Use the ` +
          `\`gdb-halting\` sampler.`,
      );
    }
    this.trcenaSetHere = true;
  }

  private async run(tcl: TclRpcClient): Promise<void> {
    const random = this.options.random ?? Math.random;
    const maxSpacers = this.options.maxSpacers ?? DEFAULT_MAX_SPACERS;
    // Each burst starts at a random point of its interval; the spacers randomise inside it.
    const schedule = this.options.rateHz
      ? new RandomOffsetSchedule((1000 * this.burstSize) / this.options.rateHz, performance.now(), random)
      : undefined;
    let failed = 0;
    while (this.running) {
      if (schedule) await waitUntil(schedule.next());
      if (!this.running) break;
      if (!this.options.isRunning()) {
        await new Promise((r) => setTimeout(r, 10));
        continue;
      }
      const plan = planBurst(this.burstSize, maxSpacers, random);
      try {
        const { addresses, asleepOrHalted } = tallyBurst(parseBurstReply(await tcl.command(plan.script), plan.reads));
        for (const a of addresses) this.counter.add(a);
        this.asleepOrHalted += asleepOrHalted;
        failed = 0;
      } catch (err) {
        if (!this.running) break;
        failed++;
        if (!tcl.isOpen || failed >= MAX_FAILED_BURSTS) {
          this.options.log(`DWT_PCSR sampling stopped: ${errorMessage(err)}\n`);
          this.running = false;
          break;
        }
        if (failed === 1) this.options.log(`A DWT_PCSR burst failed, retrying: ${errorMessage(err)}\n`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    const tcl = this.tcl;
    this.tcl = undefined;
    if (!tcl) return;
    if (this.trcenaSetHere && tcl.isOpen) {
      this.trcenaSetHere = false;
      // Left set by a firmware or probe, TRCENA stays; set by us, it goes (the target may be gone).
      await tcl
        .readMemory(DEMCR, 32, 1)
        .then(([demcr]) => tcl.writeMemory(DEMCR, 32, [(demcr! & ~TRCENA) >>> 0]))
        .catch(() => undefined);
    }
    await tcl.close();
  }

  async drain(): Promise<Map<number, number>> {
    return this.counter.drain();
  }

  drainCountedApart(): CountedApart {
    const n = this.asleepOrHalted;
    this.asleepOrHalted = 0;
    return { asleepOrHalted: n };
  }

  async hold(): Promise<void> {}
  resume(): void {}
}
