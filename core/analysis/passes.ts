import type { InjectedResult } from '../../common/dapCustom';
import { formatCount } from './statistics';

/**
 * One definition of a pass (docs/design.md, "Measurement semantics"). An injected measurement's
 * record holds the counts of its completed outermost passes: their sum as counted, the payload
 * instructions of other measurements inside them, and per pass (smallest, largest, the last few)
 * the count without those nested payloads. A pass's cost is that per-pass count minus the
 * measurement's own payload, never below zero. Total, mean, minimum, maximum, the last passes and
 * the share are all formed here from those compensated values, and every view (the inline result,
 * the code lens, the hover, the Measurements view, a profile's rows) reads them from here, so they
 * agree wherever they are shown. The raw figures are the same passes with the own payload still in.
 * Pure: the CLI and the adapter use it too.
 */

export interface PassCounts {
  /** Completed outermost passes. */
  passes: number;
  /** Counter units inside all passes, as counted. */
  total: number;
  /** Counter units of other measurements' payloads inside the passes (nesting, recursion). */
  nested: number;
  /** The measurement's own payload in one pass, in counter units: what compensation removes per pass. */
  ownPerPass: number;
  /** Smallest and largest pass without the nested payloads, own payload included (null before a pass). */
  min: number | null;
  max: number | null;
  /** The last few passes, as min and max are. */
  last?: readonly number[];
}

export interface PassFigures {
  passes: number;
  /** Compensated: the program's own cost. */
  total: number;
  mean: number;
  min: number;
  max: number;
  last: number[];
  ownPerPass: number;
  /** The same passes with the own payload still in (nested payloads of other measurements out). */
  raw: { total: number; mean: number; min: number; max: number; last: number[] };
  /**
   * Compensation removed more than a pass counted (a near-empty pass read by a coarse counter):
   * such a value is 0, and `by` is how far below zero the subtraction went, the bound of its error.
   */
  clamped?: { by: number };
  /**
   * The per-pass values are whole counter units rounded on the target, the total is exact: where
   * the mean fell outside [min, max] by that rounding, the range was widened by `by` to hold it.
   */
  widened?: { by: number };
}

/** Mean, min and max over no pass do not exist: undefined then. */
export function passFigures(c: PassCounts): PassFigures | undefined {
  if (c.passes <= 0 || c.min === null || c.max === null) return undefined;
  const own = c.ownPerPass;
  let deficit = 0;
  const cost = (v: number): number => {
    const x = v - own;
    if (x < 0) deficit = Math.max(deficit, -x);
    return Math.max(0, x);
  };
  const rawTotal = c.total - c.nested;
  const compensated = rawTotal - own * c.passes;
  if (compensated < 0) deficit = Math.max(deficit, -compensated / c.passes);
  const total = Math.max(0, compensated);
  const mean = total / c.passes;
  let min = cost(c.min);
  let max = cost(c.max);
  const last = (c.last ?? []).map(cost);
  let widen = 0;
  if (mean < min) {
    widen = min - mean;
    min = mean;
  }
  if (mean > max) {
    widen = Math.max(widen, mean - max);
    max = mean;
  }
  const rawMean = rawTotal / c.passes;
  return {
    passes: c.passes,
    total,
    mean,
    min,
    max,
    last,
    ownPerPass: own,
    raw: {
      total: rawTotal,
      mean: rawMean,
      min: Math.min(c.min, rawMean),
      max: Math.max(c.max, rawMean),
      last: [...(c.last ?? [])],
    },
    ...(deficit > 0 ? { clamped: { by: deficit } } : {}),
    ...(widen > 0 ? { widened: { by: widen } } : {}),
  };
}

/**
 * A part of a whole as a fraction: the program's own cost over the program's own run (both with
 * the payloads out), so the share is the same wherever it is shown. Undefined without a whole.
 */
export function passShare(part: number, whole: number | undefined): number | undefined {
  if (whole === undefined || !(whole > 0)) return undefined;
  return Math.max(0, part) / whole;
}

/** The unit a counter's values are in, in words: SysTick counts ticks whatever its event id says. */
export interface PassUnit {
  /** Plural noun after a number: "SysTick ticks", "cycles", "instructions". */
  label: string;
  /** True for a clock of its own (SysTick): never shown as cycles. */
  ticks: boolean;
  /** Instructions (or cycles) per tick, when the target fixes it. */
  perTick?: { count: number; kind: 'instructions' | 'cycles' };
}

export function passUnit(
  counter: string,
  event?: string,
  perTick?: { count: number; kind: 'instructions' | 'cycles' },
): PassUnit {
  if (/systick/i.test(counter) || /systick|^ticks$/i.test(event ?? '')) {
    return { label: 'SysTick ticks', ticks: true, ...(perTick ? { perTick } : {}) };
  }
  if (/instret|instruction|iall/i.test(`${counter} ${event ?? ''}`)) return { label: 'instructions', ticks: false };
  if (/cyc|mcycle|crun/i.test(`${counter} ${event ?? ''}`)) return { label: 'cycles', ticks: false };
  return { label: event && event !== '?' ? `${event} counts` : `${counter} counts`, ticks: false };
}

/** "2,499 SysTick ticks (×40 instructions)": the unit, with the tick's ratio when known. */
export function unitText(u: PassUnit): string {
  return u.perTick ? `${u.label} (×${formatCount(u.perTick.count)} ${u.perTick.kind} each)` : u.label;
}

/** A count with its unit, never "-0": `12.3 k SysTick ticks`. */
export function formatCost(v: number, u: PassUnit): string {
  return `${formatCount(v)} ${u.label}`;
}

/** A share as "13.5 %", never "-0.0 %". */
export function formatPassShare(share: number, digits = 1): string {
  const text = (share * 100).toFixed(digits);
  return `${/^-0(\.0*)?$/.test(text) ? text.slice(1) : text} %`;
}

/** The line under a clamped or widened figure: what happened, and the bound. */
export function passNotes(f: PassFigures, u: PassUnit): string[] {
  const notes: string[] = [];
  if (f.clamped)
    notes.push(
      `the payload compensation (${formatCount(f.ownPerPass)} ${u.label} per pass) exceeded a ` +
        `pass by up to ${formatCount(f.clamped.by)}: that pass is shown as 0, within ±${formatCount(f.clamped.by)}`,
    );
  if (f.widened)
    notes.push(
      `min … max widened by ${formatCount(f.widened.by)} to hold the exact mean (the per-pass ` +
        `values are rounded to whole counter units)`,
    );
  return notes;
}

/** The one-line result beside a measured function or region. */
export function passSummary(calls: number, f: PassFigures | undefined, u: PassUnit, share: number | undefined): string {
  if (!f) return `${calls} calls, no complete pass yet`;
  const s = share !== undefined ? ` · ${formatPassShare(share)} of the run` : '';
  return (
    `${calls} calls · ${f.passes} pass${f.passes === 1 ? '' : 'es'} · total ${formatCost(f.total, u)} ` +
    `· per pass ${formatCount(f.mean)} (${formatCount(f.min)}–${formatCount(f.max)})${s}` +
    `${f.clamped ? ' · ≥0 clamped' : ''}`
  );
}

/** The counts of an injected measurement's result as the adapter sends it. */
export function passCountsOf(r: InjectedResult): PassCounts {
  const own = r.overheadPerPass;
  return {
    passes: r.passes,
    total: r.total,
    // Older adapters did not send `nested`: it is what the compensated total leaves unexplained.
    nested: r.nested ?? r.total - r.compensatedTotal - own * r.passes,
    ownPerPass: own,
    min: r.min,
    max: r.max,
    last: r.lastPasses.map((x) => x + own),
  };
}

/**
 * The program's own run while measurements counted: the counter units that elapsed, less what the
 * compensation took out of every measurement (their payloads). The denominator of every share of
 * an injected measurement, in the editor as in a profile's run total.
 */
export function programTotal(
  elapsed: number | undefined,
  results: ReadonlyArray<{ total: number; compensatedTotal: number }>,
): number | undefined {
  if (elapsed === undefined) return undefined;
  const payload = results.reduce((s, r) => s + Math.max(0, r.total - r.compensatedTotal), 0);
  return Math.max(0, elapsed - payload);
}

/**
 * A measurement's figures as labelled values, in the order every view lists them: the compensated
 * ones first, then the raw ones beside them, labelled as raw, then what the compensation did.
 */
export function passStats(
  f: PassFigures | undefined,
  u: PassUnit,
  share: number | undefined,
): Array<{ label: string; value: string }> {
  if (!f) return [{ label: 'passes', value: '0 (no complete pass yet)' }];
  const n = (v: number): string => `${formatCount(v)} ${u.label}`;
  const out = [
    { label: 'passes', value: String(f.passes) },
    { label: 'total', value: n(f.total) },
    { label: 'mean per pass', value: n(f.mean) },
    { label: 'min … max per pass', value: `${formatCount(f.min)} … ${formatCount(f.max)} ${u.label}` },
  ];
  if (share !== undefined) out.push({ label: 'share of the run', value: formatPassShare(share) });
  out.push(
    { label: 'raw total (own payload in)', value: n(f.raw.total) },
    {
      label: 'raw per pass (own payload in)',
      value: `mean ${formatCount(f.raw.mean)}, ${formatCount(f.raw.min)} … ${formatCount(f.raw.max)} ${u.label}`,
    },
    { label: 'payload removed per pass', value: n(f.ownPerPass) },
  );
  if (u.perTick) out.push({ label: 'unit', value: unitText(u) });
  for (const note of passNotes(f, u)) out.push({ label: 'note', value: note });
  return out;
}

/** passStats as lines of text (hovers, the CLI). */
export function passLines(f: PassFigures | undefined, u: PassUnit, share: number | undefined): string[] {
  return passStats(f, u, share).map((s) => `${s.label}: ${s.value}`);
}
