import { basename } from 'node:path';
import { formatMetric, type MetricsEngine } from './metrics';
import type { ProfileRow } from './profileRows';
import type { Scenario } from './resultSet';

/**
 * The text report: a header saying what was measured and how, then one row per function with
 * inclusive, exclusive, calls and share, and a column for every other metric at least one row
 * could compute. Pruned rows show the bound that let descent skip them, refused rows the reason.
 */

export interface ReportHeader {
  scenario: Scenario;
  metric: string;
  threshold?: number;
  runs: number;
  /** Naive runs for comparison: ceil(F / k). */
  naiveRuns?: number;
  slots?: number;
  roots: readonly string[];
  cancelled: boolean;
  warnings: readonly string[];
  /** `program`, `method` of the first result set. */
  program?: string;
  method?: string;
  /** The counter the measurements read, from the first run that measured anything. */
  counter?: string;
  /** Descent: the counting run that bounded the functions (AnalysisResult.counted). */
  counted?: { method: string; ran: number; functions: number };
}

export interface ReportOptions {
  /** Leave out functions the roots cannot reach (default true). */
  hideUnreached?: boolean;
  /** Leave out metric columns (just the fixed ones). */
  compact?: boolean;
}

const SHOWN = /^(inclusive|share|exclusive)(\.(instructions|cycles))?$/;

export function textReport(
  header: ReportHeader,
  rows: readonly ProfileRow[],
  engine: MetricsEngine,
  options: ReportOptions = {},
): string {
  const metricDef = engine.definition(header.metric);
  const fmtMetric = (v: number): string => (metricDef ? formatMetric(metricDef.format, v) : String(v));
  const out: string[] = [];
  const title = {
    descent: 'Call-graph descent',
    'full-profile': 'Exact full profile',
    'round-robin': 'Cyclic round robin',
  }[header.scenario];
  out.push(
    `${title}${header.program ? ` of ${basename(header.program)}` : ''}${header.method ? ` (${header.method})` : ''}`,
  );
  const facts = [`metric ${header.metric}${metricDef ? ` (${metricDef.label})` : ''}`];
  if (header.threshold !== undefined) facts.push(`threshold ${fmtMetric(header.threshold)}`);
  facts.push(
    `${header.runs} run${header.runs === 1 ? '' : 's'}` +
      `${header.naiveRuns !== undefined ? ` (measuring everything: ${header.naiveRuns})` : ''}`,
  );
  if (header.slots !== undefined) facts.push(`${header.slots} per run`);
  facts.push(`roots ${header.roots.join(', ')}`);
  if (header.counter !== undefined) facts.push(`counter ${header.counter}`);
  out.push(facts.join('; '));
  if (header.counted)
    out.push(
      `bounded by instruction counts (${header.counted.method}): ` +
        `${header.counted.ran} of ${header.counted.functions} ` +
        `functions ran, the others are 0`,
    );
  if (header.cancelled)
    out.push('CANCELLED: the analysis stopped before every function was decided; pending rows are open.');
  for (const w of header.warnings) out.push(`warning: ${w}`);
  out.push('');

  const visible = rows.filter((r) => !(options.hideUnreached ?? true) || r.status !== 'unreached');
  const extra = options.compact
    ? []
    : engine.metrics.filter(
        (m) => !SHOWN.test(m.id) && m.id !== header.metric && visible.some((r) => r.metrics.has(m.id)),
      );
  const showValue = !SHOWN.test(header.metric);
  const headings = [
    'function',
    'status',
    'inclusive',
    'exclusive',
    'calls',
    'share',
    ...(showValue ? [metricDef?.short ?? header.metric] : []),
    ...extra.map((m) => m.short),
  ];
  const table: string[][] = visible.map((r) => [
    r.name,
    status(r, fmtMetric),
    r.inclusive !== undefined ? count(r.inclusive) : '',
    r.exclusive !== undefined ? count(r.exclusive) : '',
    r.calls !== undefined ? String(r.calls) : '',
    r.share !== undefined ? formatMetric('percent', r.share) : '',
    ...(showValue ? [r.value !== undefined ? fmtMetric(r.value) : ''] : []),
    ...extra.map((m) => {
      const v = r.metrics.get(m.id);
      return v !== undefined ? formatMetric(m.format, v) : '';
    }),
  ]);
  const numeric = headings.map((_, i) => i >= 2);
  const widths = headings.map((h, i) => Math.max(h.length, ...table.map((row) => row[i]!.length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  out.push(line(headings));
  out.push(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of table) out.push(line(row));
  const refused = visible.filter((r) => r.status === 'unmeasurable');
  if (refused.length > 0) {
    out.push('');
    out.push('Not measurable (their callees are bounded by their callers instead):');
    for (const r of refused) out.push(`  ${r.name}: ${r.reason ?? 'no reason given'}`);
  }
  const low = visible.filter((r) => r.status === 'measured' && r.reason !== undefined);
  if (low.length > 0) {
    out.push('');
    out.push('Measured, but possibly low (their callees are bounded by their callers instead):');
    for (const r of low) out.push(`  ${r.name}: ${r.reason}`);
  }
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(r.status, (counts.get(r.status) ?? 0) + 1);
  out.push('');
  out.push(`${[...counts.entries()].map(([s, n]) => `${n} ${s}`).join(', ')}`);
  return `${out.join('\n')}\n`;
}

function status(r: ProfileRow, fmt: (v: number) => string): string {
  switch (r.status) {
    case 'measured':
      if (r.spansWindow) return 'whole run';
      if (r.reason !== undefined) return 'measured, low?';
      return r.windows !== undefined && r.windows > 1 ? `measured x${r.windows}` : 'measured';
    case 'pruned':
      return `pruned <= ${r.bound !== undefined ? fmt(r.bound) : '?'}`;
    case 'unmeasurable':
      return `refused${r.bound !== undefined && Number.isFinite(r.bound) ? ` <= ${fmt(r.bound)}` : ''}`;
    case 'pending':
      return `open${r.bound !== undefined && Number.isFinite(r.bound) ? ` <= ${fmt(r.bound)}` : ''}`;
    case 'unreached':
      return 'unreached';
  }
}

function count(v: number): string {
  return Math.round(v).toLocaleString('en-US');
}
