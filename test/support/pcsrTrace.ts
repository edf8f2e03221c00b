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
 * samples and true share p, the count k is outside when the binomial tail beyond it, P(X ≥ k) above
 * the mean or P(X ≤ k) below it, is under `alpha`. The default is the one-sided tail of a normal
 * variable beyond 4 σ; the tail is computed exactly, because the normal approximation is too narrow
 * on the high side for functions expected a few times (a share of 0.027 % at 16,227 samples:
 * expected 4.4, and 14 has a tail of 2e-4, well inside 4 σ, though the approximation put it
 * outside). A function the oracle never saw but the samples did (p = 0) is always outside.
 */
export function outsideBinomialBound(
  sampled: ReadonlyMap<string, number>,
  truth: ReadonlyMap<string, number>,
  alpha = 3.17e-5,
): string[] {
  const n = [...sampled.values()].reduce((a, b) => a + b, 0);
  const total = [...truth.values()].reduce((a, b) => a + b, 0);
  const out: string[] = [];
  for (const name of new Set([...sampled.keys(), ...truth.keys()])) {
    const k = sampled.get(name) ?? 0;
    const p = (truth.get(name) ?? 0) / total;
    const tail = binomialTail(n, p, k);
    if (tail < alpha)
      out.push(
        `${name}: sampled ${k} of ${n}, oracle share ${(p * 100).toFixed(3)} % (expected ${(n * p).toFixed(1)}, ` +
          `tail ${tail.toExponential(1)})`,
      );
  }
  return out;
}

/** P(X ≥ k) when k is above the mean n·p, else P(X ≤ k), for X ~ Binomial(n, p). */
export function binomialTail(n: number, p: number, k: number): number {
  if (p <= 0) return k === 0 ? 1 : 0;
  if (p >= 1) return k === n ? 1 : 0;
  const up = k > n * p;
  // log P(X = k) = log C(n, k) + k·log p + (n − k)·log(1 − p), C(n, k) as a sum of logs (exact enough
  // for n in the tens of thousands).
  let logC = 0;
  for (let i = 1; i <= Math.min(k, n - k); i++) logC += Math.log((n - i + 1) / i);
  let term = Math.exp(logC + k * Math.log(p) + (n - k) * Math.log1p(-p));
  let sum = 0;
  const ratio = p / (1 - p);
  // Walk away from the mean: each term is the one before times the pmf ratio, until they stop counting.
  for (let j = k; j >= 0 && j <= n; j += up ? 1 : -1) {
    sum += term;
    if (term < sum * 1e-16) break;
    term *= up ? ((n - j) / (j + 1)) * ratio : j / (n - j + 1) / ratio;
  }
  return Math.min(1, sum);
}
