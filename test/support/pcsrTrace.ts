import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ElfImage } from '../../adapter/elf';
import { resolveSampleLocation } from '../../adapter/sampling/samplingService';
import { runOracle, type OracleSummary } from '../oracle/oracle';
import { parseTraceFile } from '../oracle/traceLog';

/**
 * An exact instruction trace of a fixture and the oracle's counts from the same QEMU run: the
 * trace feeds the PCSR double's core, the counts are the truth a sampler is judged against.
 */
export interface TracedFixture {
  oracle: OracleSummary;
  /** Executed PCs in order (Thumb bit clear), one per virtual nanosecond under `-icount shift=0`. */
  trace: Uint32Array;
  image: ElfImage;
  /** The oracle's exact instruction counts per function, grouped by the ELF symbol lookup a sample's address gets. */
  functionCounts: Map<string, number>;
}

export async function traceFixture(elf: string, maxInstructions: number): Promise<TracedFixture> {
  const dir = mkdtempSync(join(tmpdir(), 'cyclelens-pcsr-'));
  try {
    const log = join(dir, 'trace.log');
    const oracle = await runOracle({ elf, keepLog: log, maxInstructions });
    const trace = new Uint32Array(oracle.totals.instructions);
    let n = 0;
    await parseTraceFile(
      log,
      (pcs, count) => {
        const take = Math.min(count, trace.length - n);
        trace.set(pcs.subarray(0, take), n);
        n += take;
      },
      maxInstructions,
    );
    if (n !== trace.length) throw new Error(`the trace holds ${n} instructions, the oracle counted ${trace.length}`);
    const image = ElfImage.loadSync(elf);
    const functionCounts = new Map<string, number>();
    for (const a of oracle.addresses) {
      const name = functionOf(image, a.address);
      functionCounts.set(name, (functionCounts.get(name) ?? 0) + a.count);
    }
    return { oracle, trace, image, functionCounts };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function functionOf(image: ElfImage, address: number): string {
  return resolveSampleLocation(image, address).function ?? '[outside program]';
}

export function countsByFunction(image: ElfImage, counts: ReadonlyMap<number, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [address, n] of counts) {
    const name = functionOf(image, address);
    out.set(name, (out.get(name) ?? 0) + n);
  }
  return out;
}

/**
 * Functions whose sampled count is outside the binomial bound around the oracle's share: with n
 * samples and true share p, |k − np| ≤ z·sqrt(np(1−p)) + 1 (the +1 for the integer count). A
 * function the oracle never saw but the samples did (p = 0) is always outside.
 */
export function outsideBinomialBound(sampled: ReadonlyMap<string, number>, truth: ReadonlyMap<string, number>, z = 4): string[] {
  const n = [...sampled.values()].reduce((a, b) => a + b, 0);
  const total = [...truth.values()].reduce((a, b) => a + b, 0);
  const out: string[] = [];
  for (const name of new Set([...sampled.keys(), ...truth.keys()])) {
    const k = sampled.get(name) ?? 0;
    const p = (truth.get(name) ?? 0) / total;
    const bound = z * Math.sqrt(n * p * (1 - p)) + 1;
    if (Math.abs(k - n * p) > bound)
      out.push(`${name}: sampled ${k} of ${n}, oracle share ${(p * 100).toFixed(3)} % (expected ${(n * p).toFixed(0)} ± ${bound.toFixed(0)})`);
  }
  return out;
}
