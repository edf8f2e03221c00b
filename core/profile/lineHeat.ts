import type { Profile } from './model';
import { wilsonInterval } from './wilson';

/** Heat levels of the overlay: 0 is the coolest visible level, HEAT_LEVELS - 1 the hottest. */
export const HEAT_LEVELS = 8;

export interface LineHeat {
  line: number;
  /** 0 .. HEAT_LEVELS - 1. */
  level: number;
  count: number;
  /** Share of the whole profile (0..1) with its 95 % interval when sampled. */
  share: number;
  low?: number;
  high?: number;
  function?: string;
}

/**
 * Lines of one source file with their heat. The level is the line's count relative to the hottest
 * line of the whole profile on a square-root scale, so a line at a quarter of the peak is still
 * half-way up the palette: the eye finds the second hot spot, not only the first.
 */
export function heatByFile(profile: Profile): Map<string, LineHeat[]> {
  const total = profile.total?.value ?? 0;
  let peak = 0;
  for (const l of profile.lines) peak = Math.max(peak, l.self.value);
  const out = new Map<string, LineHeat[]>();
  if (total <= 0 || peak <= 0) return out;
  for (const l of profile.lines) {
    const relative = Math.sqrt(l.self.value / peak);
    const level = Math.min(HEAT_LEVELS - 1, Math.floor(relative * HEAT_LEVELS));
    const heat: LineHeat = {
      line: l.line,
      level,
      count: l.self.value,
      share: l.self.value / total,
      ...(l.self.bound ? { low: l.self.bound.low / total, high: l.self.bound.high / total } : {}),
      ...(l.function !== undefined ? { function: profile.functions[l.function]?.name ?? '' } : {}),
    };
    let list = out.get(l.path);
    if (!list) out.set(l.path, (list = []));
    list.push(heat);
  }
  return out;
}

/** Lines of one file grouped by level: what one decoration type per level needs. */
export function linesByLevel(lines: readonly LineHeat[]): number[][] {
  const levels: number[][] = Array.from({ length: HEAT_LEVELS }, () => []);
  for (const l of lines) levels[l.level]!.push(l.line);
  return levels;
}

/**
 * A launch configuration's `sourceMap` ({ "/build/path": "/local/path" }) applied to a path as the
 * compiler wrote it: the longest matching prefix wins, at a path-separator boundary.
 */
export function remapSourcePath(path: string, sourceMap: Readonly<Record<string, string>> | undefined): string {
  if (!sourceMap) return path;
  let best: string | undefined;
  for (const from of Object.keys(sourceMap)) {
    const prefix = from.replace(/[\\/]+$/, '');
    if (
      (path === prefix || path.startsWith(`${prefix}/`) || path.startsWith(`${prefix}\\`)) &&
      (best === undefined || prefix.length > best.length)
    )
      best = from;
  }
  if (best === undefined) return path;
  const prefix = best.replace(/[\\/]+$/, '');
  return sourceMap[best]!.replace(/[\\/]+$/, '') + path.slice(prefix.length);
}

/**
 * Heat straight from per-address counts, for the repaint path: each address is mapped to its line
 * once, when its location first arrives, so a repaint is one pass over the counts into a typed
 * array and one pass over the lines; no profile, no strings. (Building a whole profile per repaint
 * cost 10–20 times the 16 ms frame budget on a 5,000-line file.)
 */
export class LineHeatIndex {
  private readonly slotOf = new Map<number, number>();
  private readonly slots: Array<{ path: string; line: number; function?: string }> = [];
  private readonly slotByKey = new Map<string, number>();
  private sums = new Float64Array(0);
  /** Slots of each file, in registration order: a repaint walks only the visible files' slots. */
  private readonly slotsByPath = new Map<string, number[]>();
  /** The last `tally`: per-slot sums stay in `sums`. */
  private tallied = { total: 0, peak: 0, slots: 0 };

  /** Registers where an address is; addresses without a line are ignored by the heat. */
  locate(address: number, loc: { path?: string; line?: number; function?: string }): void {
    if (this.slotOf.has(address) || loc.path === undefined || loc.line === undefined) return;
    const key = `${loc.path}\n${loc.line}`;
    let slot = this.slotByKey.get(key);
    if (slot === undefined) {
      slot = this.slots.length;
      this.slots.push({
        path: loc.path,
        line: loc.line,
        ...(loc.function !== undefined ? { function: loc.function } : {}),
      });
      this.slotByKey.set(key, slot);
      let list = this.slotsByPath.get(loc.path);
      if (!list) this.slotsByPath.set(loc.path, (list = []));
      list.push(slot);
    }
    this.slotOf.set(address, slot);
  }

  /**
   * The repaint path, step 1: sums the counts per line once (no objects). Steps 2 and 3 read the
   * result: `levels` for the files on screen, `lineHeat` for the one line a hover asks about.
   */
  tally(counts: ReadonlyMap<number, number>): void {
    if (this.sums.length < this.slots.length) this.sums = new Float64Array(this.slots.length * 2);
    const sums = this.sums;
    sums.fill(0, 0, this.slots.length);
    let total = 0;
    for (const [address, n] of counts) {
      total += n;
      const slot = this.slotOf.get(address);
      if (slot !== undefined) sums[slot]! += n;
    }
    let peak = 0;
    for (let i = 0; i < this.slots.length; i++) if (sums[i]! > peak) peak = sums[i]!;
    this.tallied = { total, peak, slots: this.slots.length };
  }

  /** Source files with at least one located address (as the compiler named them). */
  get paths(): IterableIterator<string> {
    return this.slotsByPath.keys();
  }

  /** Lines of `path` per heat level at the last tally (levels[level] = ascending line numbers). */
  levels(path: string): number[][] {
    const levels: number[][] = Array.from({ length: HEAT_LEVELS }, () => []);
    const slots = this.slotsByPath.get(path);
    const { peak, slots: known } = this.tallied;
    if (!slots || peak <= 0) return levels;
    for (const slot of slots) {
      if (slot >= known) continue;
      const count = this.sums[slot]!;
      if (count <= 0) continue;
      levels[Math.min(HEAT_LEVELS - 1, Math.floor(Math.sqrt(count / peak) * HEAT_LEVELS))]!.push(
        this.slots[slot]!.line,
      );
    }
    for (const l of levels) l.sort((a, b) => a - b);
    return levels;
  }

  /** One line's heat at the last tally (what a hover shows), or undefined when it has no samples. */
  lineHeat(path: string, line: number, withInterval: boolean): LineHeat | undefined {
    const slot = this.slotByKey.get(`${path}\n${line}`);
    const { total, peak, slots: known } = this.tallied;
    if (slot === undefined || slot >= known || total <= 0) return undefined;
    const count = this.sums[slot]!;
    if (count <= 0) return undefined;
    const s = this.slots[slot]!;
    const ci = withInterval ? wilsonInterval(count, total) : undefined;
    return {
      line,
      level: Math.min(HEAT_LEVELS - 1, Math.floor(Math.sqrt(count / peak) * HEAT_LEVELS)),
      count,
      share: count / total,
      ...(ci ? { low: ci.low, high: ci.high } : {}),
      ...(s.function !== undefined ? { function: s.function } : {}),
    };
  }

  /** Heat per file; `withInterval` adds the 95 % Wilson interval of each line's share. */
  heat(counts: ReadonlyMap<number, number>, withInterval: boolean): Map<string, LineHeat[]> {
    this.tally(counts);
    const sums = this.sums;
    const { total, peak } = this.tallied;
    const out = new Map<string, LineHeat[]>();
    if (total <= 0 || peak <= 0) return out;
    for (let i = 0; i < this.slots.length; i++) {
      const count = sums[i]!;
      if (count <= 0) continue;
      const s = this.slots[i]!;
      const heat: LineHeat = {
        line: s.line,
        level: Math.min(HEAT_LEVELS - 1, Math.floor(Math.sqrt(count / peak) * HEAT_LEVELS)),
        count,
        share: count / total,
        ...(s.function !== undefined ? { function: s.function } : {}),
      };
      if (withInterval) {
        const ci = wilsonInterval(count, total);
        heat.low = ci.low;
        heat.high = ci.high;
      }
      let list = out.get(s.path);
      if (!list) out.set(s.path, (list = []));
      list.push(heat);
    }
    return out;
  }
}

/**
 * Levels whose line lists differ between two repaints (all of them when there was none before):
 * a repaint hands VS Code only those, so a steady profile costs no decoration calls at all.
 */
export function changedLevels(
  previous: readonly (readonly number[])[] | undefined,
  next: readonly (readonly number[])[],
): number[] {
  const out: number[] = [];
  for (let level = 0; level < next.length; level++) {
    const a = previous?.[level];
    const b = next[level]!;
    if (!a || a.length !== b.length || a.some((line, i) => line !== b[i])) out.push(level);
  }
  return out;
}
