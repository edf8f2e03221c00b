import type { SampleLocation } from '../../common/dapCustom';
import { emptyProfile, Measure, Profile, ProfileFunction, SampleAttribution } from './model';
import { wilsonInterval } from './wilson';

/** Counts taken by one sampler, with where each address is in the source (resolved by the adapter). */
export interface SampleSet {
  executable: string;
  family?: string;
  sampler: string;
  attribution: SampleAttribution;
  halting: boolean;
  /** `samples` for PC reads; `instructions` when every execution was counted (exact). */
  unit: 'samples' | 'instructions';
  counts: Iterable<readonly [number, number]>;
  locations: ReadonlyMap<number, SampleLocation>;
  /** How long the counts were gathered, for the run's description. */
  elapsedMs?: number;
}

/** Addresses no symbol covers are summed under this name. */
export const UNKNOWN_FUNCTION = '[no symbol]';

/**
 * Per-address counts → a profile per address, per source line and per function (self values: a
 * PC sample is the function that was running). Samples are a binomial draw from the true time
 * distribution, so every figure of a sampled profile carries a 95 % Wilson interval on its share,
 * expressed in samples; exact instruction counts carry none.
 */
export function profileFromSamples(set: SampleSet): Profile {
  const exact = set.attribution === 'exact-count';
  const profile = emptyProfile({
    generator: 'cyclelens-sampling',
    program: { executable: set.executable, ...(set.family ? { family: set.family } : {}) },
    unit: { kind: set.unit },
    provenance: { kind: 'sampled', sampler: set.sampler, halting: set.halting, attribution: set.attribution },
    analysis: { scenario: 'sampling' },
  });
  const addresses = [...set.counts].filter(([, n]) => n > 0).sort((a, b) => a[0] - b[0]);
  let total = 0;
  for (const [, n] of addresses) total += n;
  const measure = (k: number): Measure => {
    if (exact) return { value: k };
    const { low, high } = wilsonInterval(k, total);
    return { value: k, bound: { low: low * total, high: high * total, kind: 'confidence95' } };
  };

  const functions = new Map<string, { fn: ProfileFunction; count: number }>();
  const functionOf = (loc: SampleLocation | undefined): { fn: ProfileFunction; count: number } => {
    const name = loc?.function ?? UNKNOWN_FUNCTION;
    let entry = functions.get(name);
    if (!entry) {
      const fn: ProfileFunction = {
        id: profile.functions.length,
        name,
        status: 'sampled',
        ...(loc?.functionAddress !== undefined ? { address: loc.functionAddress } : {}),
      };
      profile.functions.push(fn);
      entry = { fn, count: 0 };
      functions.set(name, entry);
    }
    return entry;
  };
  const lines = new Map<string, { path: string; line: number; function: number; count: number }>();
  for (const [address, n] of addresses) {
    const loc = set.locations.get(address);
    const entry = functionOf(loc);
    entry.count += n;
    profile.addresses.push({ address, function: entry.fn.id, self: measure(n) });
    if (loc?.path !== undefined && loc.line !== undefined) {
      const key = `${loc.path}\n${loc.line}`;
      const l = lines.get(key) ?? { path: loc.path, line: loc.line, function: entry.fn.id, count: 0 };
      l.count += n;
      lines.set(key, l);
      // The function's location: its lowest sampled line in its own file is a fair anchor.
      if (!entry.fn.location || (entry.fn.location.path === loc.path && loc.line < entry.fn.location.line))
        entry.fn.location = { path: loc.path, line: loc.line };
    }
  }
  for (const { fn, count } of functions.values()) fn.self = measure(count);
  for (const l of [...lines.values()].sort((a, b) => b.count - a.count))
    profile.lines.push({ path: l.path, line: l.line, function: l.function, self: measure(l.count) });
  profile.total = { value: total };
  profile.runs.push({
    role: 'sampling',
    method:
      `${set.sampler}` +
      (exact ? ' (every instruction counted)' : ` (${set.halting ? 'halting' : 'non-halting'}, ${set.attribution})`) +
      (set.elapsedMs !== undefined ? `, ${(set.elapsedMs / 1000).toFixed(1)} s` : ''),
    total,
    measured: profile.functions.map((f) => f.name),
  });
  return profile;
}

/** Self counts by function name (for error figures and views). */
export function selfByFunction(p: Profile): Map<string, number> {
  return new Map(p.functions.map((f) => [f.name, f.self?.value ?? 0]));
}

/** Self counts by `path:line`. */
export function selfByLine(p: Profile): Map<string, number> {
  return new Map(p.lines.map((l) => [`${l.path}:${l.line}`, l.self.value]));
}
