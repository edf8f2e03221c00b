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
  // One value (a callee with one caller, most of a call graph) is its own rounding.
  if (values.length === 1) return [Math.round(values[0]!)];
  const out = new Array<number>(values.length);
  let sum = 0;
  let floorSum = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    sum += v;
    out[i] = Math.floor(v);
    floorSum += out[i]!;
  }
  let missing = Math.round(sum) - floorSum;
  if (missing <= 0) return out;
  const order = values.map((_, i) => i).sort((a, b) => values[b]! - out[b]! - (values[a]! - out[a]!) || a - b);
  for (const i of order) {
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
