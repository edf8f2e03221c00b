import type { ErrorBound, Measure, Provenance, Unit } from './model';

/**
 * Units and provenance in words, one place for every view and export. A tick is labelled as a tick
 * with what it stands for ("SysTick ticks (×40 instructions)"), never as a cycle.
 */

/** The unit's name in the plural, as a column header or after a number. */
export function unitLabel(u: Unit): string {
  switch (u.kind) {
    case 'cycles':
      return 'cycles';
    case 'instructions':
      return 'instructions';
    case 'samples':
      return 'samples';
    case 'events':
      return u.event ? `${u.event} events` : 'events';
    case 'ticks':
      return u.perTick ? `SysTick ticks (×${formatNumber(u.perTick.count)} ${u.perTick.kind})` : 'SysTick ticks';
  }
}

/**
 * The unit as one word, for formats whose event or sample-type names cannot hold spaces
 * (callgrind `events:`, pprof sample types). Ticks stay ticks.
 */
export function unitId(u: Unit): string {
  switch (u.kind) {
    case 'cycles':
      return 'cycles';
    case 'instructions':
      return 'instructions';
    case 'samples':
      return 'samples';
    case 'ticks':
      return 'systick_ticks';
    case 'events':
      return (u.event ?? 'events').replace(/[^A-Za-z0-9_.]/g, '_');
  }
}

/** A short unit for tight places (flame-graph tooltips, inlay hints). */
export function unitShort(u: Unit): string {
  switch (u.kind) {
    case 'cycles':
      return 'cyc';
    case 'instructions':
      return 'insn';
    case 'samples':
      return 'samples';
    case 'events':
      return u.event ?? 'events';
    case 'ticks':
      return 'ticks';
  }
}

/**
 * The counter event id a result set uses (`instructions`, `cycles`, `ticks`, `dwt.lsu` …) as a unit.
 * `method` is the run's description; a SysTick-based run is in ticks whatever its event id says,
 * because older result sets filed SysTick counts under `cycles`.
 */
export function unitOfEvent(event: string, method = '', perTick?: Unit['perTick']): Unit {
  if (/systick/i.test(method) || event === 'ticks' || /systick/i.test(event))
    return { kind: 'ticks', ...(perTick ? { perTick } : {}) };
  if (event === 'instructions' || /instret|iall/i.test(event)) return { kind: 'instructions' };
  if (event === 'cycles' || /cycle|crun/i.test(event)) return { kind: 'cycles' };
  if (event === 'samples') return { kind: 'samples' };
  return { kind: 'events', event };
}

/** Converts a value to cycles or instructions when the unit says how; undefined otherwise. */
export function converted(value: number, u: Unit): { value: number; kind: 'cycles' | 'instructions' } | undefined {
  if (u.kind === 'cycles' || u.kind === 'instructions') return { value, kind: u.kind };
  if (u.kind === 'ticks' && u.perTick) return { value: value * u.perTick.count, kind: u.perTick.kind };
  return undefined;
}

// Number.prototype.toLocaleString builds a formatter on every call (~0.1 ms each): a language
// server labelling thousands of lines would spend its time there, so the two formatters are made once.
const wholeNumbers = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0, minimumFractionDigits: 0 });
const twoDecimals = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2, minimumFractionDigits: 0 });

/** 1234567 → "1,234,567"; fractions keep up to two decimals. */
export function formatNumber(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  const text = (Number.isInteger(n) || Math.abs(n) >= 100 ? wholeNumbers : twoDecimals).format(n);
  // A value that rounds to zero reads "0", never "-0".
  return text === '-0' ? '0' : text;
}

/** "12.4 %" from 0.124. */
export function formatShare(share: number, digits = 1): string {
  const text = (share * 100).toFixed(digits);
  return `${/^-0(\.0+)?$/.test(text) ? text.slice(1) : text} %`;
}

/** "±12 ticks", or "" without a bound. Asymmetric bounds show both sides. */
export function formatBound(m: Measure, u: Unit): string {
  const b = m.bound;
  if (!b) return '';
  const below = m.value - b.low;
  const above = b.high - m.value;
  const unit = unitShort(u);
  if (Math.abs(below - above) <= Math.max(1e-9, 1e-6 * Math.abs(m.value))) return `±${formatNumber(above)} ${unit}`;
  return `−${formatNumber(below)}/+${formatNumber(above)} ${unit}`;
}

export function boundKindLabel(b: ErrorBound): string {
  switch (b.kind) {
    case 'quantisation':
      return 'counter quantisation';
    case 'confidence95':
      return '95 % confidence interval';
    case 'compensation':
      return 'payload compensation residue';
    case 'estimate':
      return "estimated split of a shared callee (the interval its callers' measured values allow)";
  }
}

/** "1,234 instructions ±3 insn" */
export function formatMeasure(m: Measure, u: Unit): string {
  const bound = formatBound(m, u);
  return `${formatNumber(m.value)} ${unitLabel(u)}${bound ? ` ${bound}` : ''}`;
}

export function provenanceLabel(p: Provenance): string {
  switch (p.kind) {
    case 'exact':
      return `exact counter reads (${p.counter})`;
    case 'injected':
      return (
        `injected ${p.payload === 'gated' ? 'counter gating' : 'software accumulation'} (${p.counter}` +
        `${p.compensation !== undefined ? `, ${formatNumber(p.compensation)} per call compensated` : ''})`
      );
    case 'sampled':
      return (
        `${p.halting ? 'halting' : 'non-halting'} PC sampling ` +
        `(${p.sampler}; a sample's PC is the ${attributionLabel(p.attribution)})`
      );
    case 'oracle':
      return `exact instruction trace (${p.source})`;
  }
}

function attributionLabel(a: Extract<Provenance, { kind: 'sampled' }>['attribution']): string {
  switch (a) {
    case 'time-proportional':
      return 'instruction that held the core';
    case 'next-committing':
      return 'next instruction to commit';
    case 'translation-block-start':
      return 'start of the running translation block';
    case 'recently-executed':
      return 'address of a recently executed instruction (DWT_PCSR)';
    case 'halting':
      return 'instruction where the halt landed';
    case 'exact-count':
      return 'executed instruction (every one counted)';
  }
}
