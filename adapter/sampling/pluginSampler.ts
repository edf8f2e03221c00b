import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { CycleLensError, ErrorCode } from '../errors';
import type { PcSampler, SamplerIdentity } from './sampler';

/** The plugin's snapshot: "cyclelens-insn-counts 1 <translated> <dropped>", then "<hex address> <count>" lines. */
export interface InstructionCountSnapshot {
  counts: Map<number, number>;
  /** Instructions the plugin could not give a slot (its table was full): counts are then incomplete. */
  dropped: number;
}

export function parseInstructionCounts(text: string): InstructionCountSnapshot {
  const lines = text.split('\n');
  const header = /^cyclelens-insn-counts 1 (\d+) (\d+)$/.exec(lines[0] ?? '');
  if (!header)
    throw new CycleLensError(
      ErrorCode.CommandFailed,
      `The instruction-count snapshot does not start with the plugin's header ` +
        `(got ${JSON.stringify((lines[0] ?? '').slice(0, 40))}).`,
    );
  const counts = new Map<number, number>();
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === '') continue;
    const space = line.indexOf(' ');
    const address = Number.parseInt(line.slice(0, space), 16);
    const count = Number(line.slice(space + 1));
    if (space < 0 || !Number.isFinite(address) || !Number.isInteger(count))
      throw new CycleLensError(
        ErrorCode.CommandFailed,
        `Malformed instruction-count line ${i + 1}: ${JSON.stringify(line.slice(0, 40))}.`,
      );
    counts.set(address, count);
  }
  return { counts, dropped: Number(header[2]) };
}

/**
 * The exact sampler: QEMU's TCG plugin (adapter/sampling/qemuInsnCount.c) counts every executed instruction
 * and rewrites a snapshot file every 100 ms and at exit. Draining reads the snapshot and returns
 * what grew since the last one. Every instruction counts once: a profile of instructions, not
 * of time samples; nothing halts.
 */
export class PluginSampler implements PcSampler {
  readonly identity: SamplerIdentity = {
    id: 'qemu-plugin',
    label: 'QEMU instruction counts (exact)',
    attribution: 'exact-count',
    halting: false,
    unit: 'instructions',
  };
  private previous = new Map<number, number>();
  private warnedDropped = false;
  /** The plugin's last snapshot (written at QEMU's exit), kept before the run directory goes. */
  private finalText: string | undefined;

  constructor(
    private readonly file: string,
    private readonly log: (text: string) => void,
  ) {}

  /** Called once QEMU has exited (the plugin wrote its final counts at exit) and before its run directory goes. */
  captureFinal(): void {
    try {
      this.finalText = readFileSync(this.file, 'utf8');
    } catch {
      // No snapshot was ever written: nothing ran.
    }
  }

  private async snapshot(): Promise<InstructionCountSnapshot> {
    let text: string;
    if (this.finalText !== undefined) return parseInstructionCounts(this.finalText);
    try {
      text = await readFile(this.file, 'utf8');
    } catch (err) {
      // QEMU started halted: until the first block runs and the first period passes there is no file.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { counts: new Map(), dropped: 0 };
      throw err;
    }
    return parseInstructionCounts(text);
  }

  async start(): Promise<void> {
    // Counting starts now: whatever ran before is the baseline.
    this.previous = (await this.snapshot()).counts;
  }

  async stop(): Promise<void> {}

  async drain(): Promise<Map<number, number>> {
    const { counts, dropped } = await this.snapshot();
    if (dropped > 0 && !this.warnedDropped) {
      this.warnedDropped = true;
      this.log(`The instruction-counting plugin ran out of slots: ${dropped} instructions are not counted.\n`);
    }
    const delta = new Map<number, number>();
    for (const [address, count] of counts) {
      const grew = count - (this.previous.get(address) ?? 0);
      if (grew > 0) delta.set(address, grew);
    }
    this.previous = counts;
    return delta;
  }

  async hold(): Promise<void> {}
  resume(): void {}
}
