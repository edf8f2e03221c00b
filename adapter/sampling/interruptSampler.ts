import type { ElfImage } from '../elf';
import { errorMessage } from '../errors';
import { PatchJournal } from '../probe/injection/journal';
import type { TargetAccess } from '../probe/targetAccess';
import { HmpMonitor } from './hmpMonitor';
import type { InterruptSamplerPlan, SavedState } from './interruptTypes';
import type { PcSampler, SamplerIdentity } from './sampler';

/** Journal entries of the sampler's device words carry this measurement number. */
const SAMPLER_JOURNAL_ID = -1;
/** The smallest reservation the sampler shares: below it the injector keeps everything. */
const SHARED_FROM = 32 * 1024;
const SAMPLER_AT_MOST = 64 * 1024;

/**
 * The part of the reserved RAM the interrupt sampler owns: the upper half of a reservation of at
 * least 32 KiB (at most 64 KiB), nothing of a smaller one. The injector is given the rest
 * (adapter/session/injectionRequests.ts), so both can run at once.
 */
export function interruptSamplerShare(reserved: {
  start: number;
  size: number;
}): { start: number; size: number } | undefined {
  if (reserved.size < SHARED_FROM) return undefined;
  const size = Math.min(Math.floor(reserved.size / 2), SAMPLER_AT_MOST) & ~15;
  return { start: reserved.start + reserved.size - size, size };
}

/** The code the buckets cover: every executable section of the ELF, lowest start to highest end. */
export function textRange(image: ElfImage): { start: number; end: number } {
  const exec = image.sections.filter((s) => (s.flags & 0x4) !== 0 && (s.flags & 0x2) !== 0 && s.size > 0);
  return { start: Math.min(...exec.map((s) => s.addr)), end: Math.max(...exec.map((s) => s.addr + s.size)) };
}

export const INTERRUPT_IDENTITY: SamplerIdentity = {
  id: 'target-interrupt',
  label: 'On-target timer interrupt (interrupted PC into buckets)',
  attribution: 'next-committing',
  halting: false,
  unit: 'samples',
};

export interface InterruptSamplerOptions {
  plan: InterruptSamplerPlan;
  area: { start: number; size: number };
  access: TargetAccess;
  /** Runs `fn` with the target halted, hidden from the user, and resumes it if it ran. */
  withHalted: <T>(fn: () => Promise<T>) => Promise<T>;
  isRunning: () => boolean;
  isEnded: () => boolean;
  stepInstruction: () => Promise<void>;
  /** QEMU's monitor: the buckets are read there while the guest runs, without halting it. */
  monitorSocket?: string;
  journal: { dir: string; elf: ElfImage };
  log: (text: string) => void;
}

/**
 * The kernel profiler's method on the target (docs/design.md, "The interrupt sampler"): a timer
 * interrupt handler the family writes into reserved RAM counts the interrupted PC into 2^N
 * buckets; this side journals what it changes, installs it, reads the buckets (through QEMU's
 * monitor while the guest runs, or with the target halted) and takes everything out again.
 */
export class InterruptSampler implements PcSampler {
  readonly identity = INTERRUPT_IDENTITY;
  private saved: SavedState | undefined;
  private journal: PatchJournal | undefined;
  private monitor: HmpMonitor | undefined;
  private last: Uint32Array;
  private final: Uint32Array | undefined;
  private reading: Promise<unknown> = Promise.resolve();
  /** Samples the handler took inside another interrupt handler, as last read. */
  nestedSamples = 0;
  /** What a stop could not put back (empty when everything reads as before). */
  restoreProblems: string[] = [];

  constructor(private readonly o: InterruptSamplerOptions) {
    this.last = new Uint32Array(o.plan.buckets + 1);
  }

  async start(): Promise<void> {
    const { plan, access } = this.o;
    await this.o.withHalted(async () => {
      const saved = await plan.capture(access);
      const journal = new PatchJournal(this.o.journal.dir, this.o.journal.elf, this.o.area, 'sampler');
      journal.setRegisters(
        Object.fromEntries(
          Object.entries(saved.registers).map(([name, original]) => [
            name,
            { original, patched: saved.patchedRegisters[name]! },
          ]),
        ),
      );
      journal.add(
        saved.words.map((w) => ({
          measurement: SAMPLER_JOURNAL_ID,
          address: w.address,
          original: hexWord(w.original),
          patched: hexWord(w.patched),
        })),
      );
      this.journal = journal;
      try {
        await plan.install(access, saved, this.o.stepInstruction);
      } catch (err) {
        await plan.uninstall(access, saved, this.o.stepInstruction).catch(() => []);
        journal.clear();
        this.journal = undefined;
        throw err;
      }
      this.saved = saved;
    });
    if (this.o.monitorSocket) {
      try {
        this.monitor = await HmpMonitor.connect({ path: this.o.monitorSocket });
      } catch (err) {
        this.o.log(`The interrupt sampler reads its buckets with the target halted: ${errorMessage(err)}\n`);
      }
    }
  }

  async stop(): Promise<void> {
    const saved = this.saved;
    if (!saved) return;
    this.saved = undefined;
    await this.reading.catch(() => undefined);
    this.monitor?.close();
    this.monitor = undefined;
    if (this.o.isEnded()) {
      // The target is gone (QEMU exited with the program): nothing is left in it to restore.
      this.journal?.clear();
      return;
    }
    await this.o.withHalted(async () => {
      this.final = await this.readHalted();
      this.restoreProblems = await this.o.plan.uninstall(this.o.access, saved, this.o.stepInstruction);
    });
    if (this.restoreProblems.length)
      this.o.log(`The interrupt sampler could not restore everything: ${this.restoreProblems.join('; ')}.\n`);
    else this.journal?.clear();
  }

  async drain(): Promise<Map<number, number>> {
    let now: Uint32Array | undefined = this.final;
    if (!now && this.saved && !this.o.isEnded()) {
      const read = this.read();
      this.reading = read;
      now = await read;
    }
    const out = new Map<number, number>();
    if (!now) return out;
    const { plan } = this.o;
    for (let i = 0; i <= plan.buckets; i++) {
      const n = (now[i]! - this.last[i]!) >>> 0;
      if (n === 0) continue;
      // PCs outside the text are counted at the sampler's own area: no function, no line.
      const address = i < plan.buckets ? (plan.textBase + i * 2 ** plan.shift) >>> 0 : this.o.area.start;
      out.set(address, (out.get(address) ?? 0) + n);
    }
    this.last = now;
    return out;
  }

  async hold(): Promise<void> {
    await this.reading.catch(() => undefined);
  }

  resume(): void {}

  private async read(): Promise<Uint32Array> {
    if (this.monitor && this.o.isRunning()) {
      try {
        return await this.readMonitor(this.monitor);
      } catch (err) {
        this.o.log(
          `Reading the buckets through QEMU's monitor failed (${errorMessage(err)}); reading them ` +
            `with the target halted from now on.\n`,
        );
        this.monitor.close();
        this.monitor = undefined;
      }
    }
    return this.o.withHalted(() => this.readHalted());
  }

  private async readHalted(): Promise<Uint32Array> {
    const { plan } = this.o;
    const bytes = await this.o.access.readMemory(BigInt(plan.bucketsAt), 4 * (plan.buckets + 1));
    this.nestedSamples = await this.o.access.readU32(BigInt(plan.nestedAt));
    return new Uint32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  }

  /** HMP `xp` reads physical memory while the guest runs: lines of `address: 0x........ ...`. */
  private async readMonitor(monitor: HmpMonitor): Promise<Uint32Array> {
    const { plan } = this.o;
    const n = plan.buckets + 1;
    const text = await monitor.command(`xp /${n}wx 0x${plan.bucketsAt.toString(16)}`, 10_000);
    const out = new Uint32Array(n);
    let i = 0;
    for (const line of text.split('\n')) {
      const colon = line.indexOf(':');
      if (colon < 0) continue;
      for (const word of line
        .slice(colon + 1)
        .trim()
        .split(/\s+/))
        if (word && i < n) out[i++] = Number.parseInt(word, 16);
    }
    if (i !== n) throw new Error(`QEMU's monitor gave ${i} of ${n} bucket words`);
    const nested = await monitor.command(`xp /1wx 0x${plan.nestedAt.toString(16)}`);
    this.nestedSamples = Number.parseInt(nested.slice(nested.indexOf(':') + 1).trim(), 16) || 0;
    return out;
  }
}

function hexWord(v: number): string {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v >>> 0, 0);
  return b.toString('hex');
}
