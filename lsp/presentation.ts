import {
  inclusiveShare,
  selfShare,
  type Measure,
  type Profile,
  type ProfileFunction,
  type ProfileLine,
} from '../core/profile/model';
import {
  boundKindLabel,
  converted,
  formatBound,
  formatMeasure,
  formatNumber,
  provenanceLabel,
  unitLabel,
  unitShort,
} from '../core/profile/units';

/**
 * What the profile language server writes: CodeLens titles, hovers, line hints and diagnostics, as
 * text built from the profile model alone. Shares are of the profile's window total; values keep
 * the profile's unit (SysTick ticks are labelled as ticks, with what a tick stands for when known).
 */

/** A share as a percentage: one decimal, two below 1 % (a 0.04 % function is not "0.0 %"). */
export function shareText(share: number): string {
  const percent = share * 100;
  return `${percent.toFixed(Math.abs(percent) < 1 && percent !== 0 ? 2 : 1)} %`;
}

/** An error bound's half-width as a share: enough digits to say something, "<0.001 %" below that. */
export function shareBoundText(share: number): string {
  const percent = share * 100;
  if (percent === 0) return '0 %';
  if (percent < 0.001) return '<0.001 %';
  return `${percent.toFixed(percent >= 1 ? 1 : percent >= 0.1 ? 2 : 3)} %`;
}

/** The wider side of a value's bound (a bound clipped at zero is asymmetric), in the value's unit. */
export function boundHalfWidth(m: Measure): number | undefined {
  if (!m.bound) return undefined;
  return Math.max(m.value - m.bound.low, m.bound.high - m.value);
}

export interface LensStyle {
  /** Prefix titles with `$(flame)`-style codicons (VS Code draws them; other editors would print them). */
  codicons?: boolean;
}

/**
 * The CodeLens title of a function, e.g. "12.4 % incl · 3.1 % self · 1,204 calls · ±0.2 %", or
 * undefined when the profile says nothing worth a lens (not reached, still pending).
 */
export function lensTitle(p: Profile, f: ProfileFunction, style: LensStyle = {}): string | undefined {
  const icon = (name: string): string => (style.codicons ? `$(${name}) ` : '');
  switch (f.status) {
    case 'measured':
    case 'sampled': {
      if (!f.inclusive && !f.self) return undefined;
      return icon('flame') + figures(p, f).join(' · ');
    }
    case 'pruned':
      return (
        `${icon('filter')}pruned: ≤ ${f.boundShare !== undefined ? shareText(f.boundShare) : 'threshold'} ` +
        `(callers' bound)`
      );
    case 'unmeasurable':
      return `${icon('circle-slash')}not measured${f.reason ? ': see hover' : ''}`;
    case 'pending':
    case 'unreached':
      return undefined;
  }
}

function figures(p: Profile, f: ProfileFunction): string[] {
  const parts: string[] = [];
  const unit = unitShort(p.unit);
  const incl = inclusiveShare(p, f);
  if (incl !== undefined) parts.push(`${shareText(incl)} incl`);
  else if (f.inclusive) parts.push(`${formatNumber(f.inclusive.value)} ${unit} incl`);
  const self = selfShare(p, f);
  if (self !== undefined) parts.push(`${shareText(self)} self`);
  else if (f.self) parts.push(`${formatNumber(f.self.value)} ${unit} self`);
  if (f.calls !== undefined) parts.push(`${formatNumber(f.calls)} ${f.calls === 1 ? 'call' : 'calls'}`);
  const measure = f.inclusive ?? f.self;
  const half = measure ? boundHalfWidth(measure) : undefined;
  const total = p.total?.value;
  if (half !== undefined) parts.push(total ? `±${shareBoundText(half / total)}` : `±${formatNumber(half)} ${unit}`);
  return parts;
}

/** The hover of a function: every figure the profile holds, with unit, provenance and bounds (Markdown). */
export function functionHover(p: Profile, f: ProfileFunction): string {
  const out: string[] = [`**${escapeMarkdown(f.name)}** — ${statusText(f)}`, ''];
  const total = p.total?.value;
  const row = (label: string, m: Measure | undefined, share: number | undefined): void => {
    if (!m) return;
    out.push(
      `- ${label}: ${formatMeasure(m, p.unit)}` +
        `${share !== undefined ? ` (${shareText(share)} of the window)` : ''}${conversion(m.value, p)}`,
    );
  };
  row('inclusive', f.inclusive, inclusiveShare(p, f));
  row('self', f.self, selfShare(p, f));
  if (!f.self && f.selfNote) out.push(`- self: ${escapeMarkdown(f.selfNote)}`);
  if (f.calls !== undefined) out.push(`- calls: ${formatNumber(f.calls)}`);
  if (f.mean !== undefined || f.min !== undefined || f.max !== undefined) {
    const each = [
      f.mean !== undefined ? `mean ${formatNumber(f.mean)}` : '',
      f.min !== undefined ? `min ${formatNumber(f.min)}` : '',
      f.max !== undefined ? `max ${formatNumber(f.max)}` : '',
    ].filter(Boolean);
    out.push(`- per call: ${each.join(', ')} ${unitLabel(p.unit)}`);
  }
  if (f.status === 'pruned' && f.boundShare !== undefined)
    out.push(
      `- at most ${shareText(f.boundShare)} of the window: the sum of its callers' values bounds ` +
        `it below the threshold`,
    );
  if (f.reason) out.push(`- note: ${escapeMarkdown(f.reason)}`);
  out.push('');
  out.push(`Unit: ${unitLabel(p.unit)}. Provenance: ${escapeMarkdown(provenanceLabel(p.provenance))}.`);
  const bound = f.inclusive?.bound ?? f.self?.bound;
  if (bound)
    out.push(
      `Error bound: ${formatBound((f.inclusive?.bound ? f.inclusive : f.self)!, p.unit)} (${boundKindLabel(bound)}).`,
    );
  else out.push('Error bound: none known for this value.');
  if (total !== undefined && p.total) out.push(`Window: ${formatMeasure(p.total, p.unit)}${windowText(p)}.`);
  const run = f.run !== undefined ? p.runs[f.run] : undefined;
  if (run) out.push(`Measured in run ${f.run! + 1} of ${p.runs.length}: ${escapeMarkdown(run.method)}.`);
  if (f.location) out.push(`Source (DWARF): ${escapeMarkdown(f.location.path)}:${f.location.line}.`);
  return out.join('\n');
}

/** The hover of a source line with a per-line cost. */
export function lineHover(p: Profile, line: ProfileLine): string {
  const total = p.total?.value;
  const share = total ? ` (${shareText(line.self.value / total)} of the window)` : '';
  const owner = line.function !== undefined ? p.functions[line.function]?.name : undefined;
  return [
    `**line ${line.line}**${owner ? ` in ${escapeMarkdown(owner)}` : ''}: ` +
      `${formatMeasure(line.self, p.unit)}${share}${conversion(line.self.value, p)}`,
    '',
    `Self cost of the line's instructions. Unit: ${unitLabel(p.unit)}. ` +
      `Provenance: ${escapeMarkdown(provenanceLabel(p.provenance))}.`,
  ].join('\n');
}

/** The inlay hint at a line's end: "1,234 insn · 2.1 %". */
export function lineHintLabel(p: Profile, line: ProfileLine): string {
  const total = p.total?.value;
  return (
    `${formatNumber(line.self.value)} ${unitShort(p.unit)}` +
    `${total ? ` · ${shareText(line.self.value / total)}` : ''}`
  );
}

/** The Information diagnostic of a function at or above the hot threshold (percent), or undefined. */
export function hotMessage(p: Profile, f: ProfileFunction, thresholdPercent: number): string | undefined {
  if (f.status !== 'measured' && f.status !== 'sampled') return undefined;
  const share = inclusiveShare(p, f);
  if (share === undefined || share * 100 < thresholdPercent) return undefined;
  const self = selfShare(p, f);
  return (
    `${f.name} takes ${shareText(share)} of the window inclusive` +
    `${self !== undefined ? ` (${shareText(self)} self)` : ''}: ` +
    `at or above the hot threshold of ${formatNumber(thresholdPercent)} %.`
  );
}

function statusText(f: ProfileFunction): string {
  switch (f.status) {
    case 'measured':
      return 'measured';
    case 'sampled':
      return 'sampled';
    case 'pruned':
      return 'pruned (not measured)';
    case 'unmeasurable':
      return 'not measurable';
    case 'pending':
      return 'not measured yet';
    case 'unreached':
      return 'not reached in the window';
  }
}

/** Ticks with a known ratio also read in what they stand for; other units need no conversion. */
function conversion(value: number, p: Profile): string {
  if (p.unit.kind !== 'ticks') return '';
  const c = converted(value, p.unit);
  return c ? ` ≈ ${formatNumber(c.value)} ${c.kind}` : '';
}

function windowText(p: Profile): string {
  const r = p.runs.find((run) => run.from !== undefined || run.to !== undefined);
  return r ? ` (${escapeMarkdown(r.from ?? 'start')} to ${escapeMarkdown(r.to ?? 'end')})` : '';
}

/** Markdown's own characters in a name or message are text, not formatting. */
export function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_{}[\]#|<>]/g, '\\$&');
}
