import type { Measure, Profile } from '../profile/model';
import { inclusiveShare, selfShare } from '../profile/model';
import { provenanceLabel, unitLabel } from '../profile/units';

/**
 * CSV (RFC 4180: comma separated, CRLF, quotes doubled) for spreadsheets: one row per function, or
 * one per source line. Every row names the unit and the provenance, so a column of numbers never
 * travels without saying what it counts; bounds get their own columns. core/import/csv.ts reads
 * both tables back. A text cell that a spreadsheet would take for a formula (it starts with `=`,
 * `+`, `-` or `@`; C++ operators and assembler labels do) is written with a leading apostrophe,
 * the spreadsheet's own "this is text" mark, and quoted (textCell); the importer removes it.
 */

export const FUNCTION_COLUMNS = [
  'function',
  'status',
  'file',
  'line',
  'address',
  'inclusive',
  'inclusive_low',
  'inclusive_high',
  'self',
  'self_low',
  'self_high',
  'calls',
  'min',
  'max',
  'mean',
  'inclusive_share',
  'self_share',
  'unit',
  'provenance',
  'note',
] as const;
export const LINE_COLUMNS = [
  'file',
  'line',
  'function',
  'self',
  'self_low',
  'self_high',
  'unit',
  'provenance',
] as const;

export function functionsCsv(p: Profile): string {
  const unit = unitLabel(p.unit);
  const provenance = provenanceLabel(p.provenance);
  const rows: string[][] = [[...FUNCTION_COLUMNS]];
  for (const f of p.functions) {
    rows.push([
      textCell(f.name),
      f.status,
      textCell(f.location?.path ?? ''),
      num(f.location?.line),
      f.address !== undefined ? `0x${f.address.toString(16)}` : '',
      ...measure(f.inclusive),
      ...measure(f.self),
      num(f.calls),
      num(f.min),
      num(f.max),
      num(f.mean),
      num(inclusiveShare(p, f)),
      num(selfShare(p, f)),
      unit,
      provenance,
      textCell(f.selfNote ?? f.reason ?? ''),
    ]);
  }
  return table(rows);
}

export function linesCsv(p: Profile): string {
  const unit = unitLabel(p.unit);
  const provenance = provenanceLabel(p.provenance);
  const rows: string[][] = [[...LINE_COLUMNS]];
  for (const l of p.lines)
    rows.push([
      textCell(l.path),
      String(l.line),
      textCell(l.function !== undefined ? (p.functions[l.function]?.name ?? '') : ''),
      ...measure(l.self),
      unit,
      provenance,
    ]);
  return table(rows);
}

function measure(m: Measure | undefined): [string, string, string] {
  return [num(m?.value), num(m?.bound?.low), num(m?.bound?.high)];
}

/** Full precision: a round trip must give back the same numbers. */
function num(n: number | undefined): string {
  return n === undefined ? '' : String(n);
}

/**
 * A text cell as written: one that starts with a formula character (or with the apostrophe that
 * marks text, so that a name that really starts with one reads back whole) gets an apostrophe.
 */
export function textCell(s: string): string {
  return /^[=+\-@'\t\r]/.test(s) ? `'${s}` : s;
}

/** A text cell as read back: textCell undone. */
export function textOfCell(s: string): string {
  return s.startsWith("'") ? s.slice(1) : s;
}

export function csvField(s: string): string {
  return /[",\r\n]/.test(s) || /^[\s'=+\-@]|\s$/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

function table(rows: string[][]): string {
  return rows.map((r) => r.map(csvField).join(',')).join('\r\n') + '\r\n';
}
