import type { Profile, ProfileFunction } from '../profile/model';

/** Helpers every exporter shares: names, unit ids, and integer rounding that keeps totals. */

/** A function's name as a tool shows it; names are unique in a profile, so no disambiguation. */
export function frameName(f: ProfileFunction): string {
  return f.name;
}

/**
 * Rounds each value to an integer so that the rounded values sum to the rounded sum (largest
 * remainder): a split callee's shares add up to its total in integer formats.
 */
export function roundKeepingSum(values: readonly number[]): number[] {
  const floors = values.map((v) => Math.floor(v));
  const target = Math.round(values.reduce((s, v) => s + v, 0));
  let missing = target - floors.reduce((s, v) => s + v, 0);
  const order = values.map((v, i) => ({ i, r: v - Math.floor(v) })).sort((a, b) => b.r - a.r || a.i - b.i);
  const out = [...floors];
  for (const { i } of order) {
    if (missing <= 0) break;
    out[i]!++;
    missing--;
  }
  return out;
}

/** A profile's name for titles: the executable's file name. */
export function programName(p: Profile): string {
  return p.program.executable.split(/[\\/]/).pop() || p.program.executable;
}
