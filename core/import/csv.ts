import { FUNCTION_COLUMNS, LINE_COLUMNS, textOfCell } from '../export/csv';
import type { FunctionStatus, Measure, Profile, Unit } from '../profile/model';
import { MAX_ADDRESS, MAX_COUNT, MAX_LINE, ProfileError } from '../profile/profileError';
import { MAX_IMPORT_BYTES, ProfileBuilder, malformed } from './common';

/**
 * The CSV tables core/export/csv.ts writes, read back: the per-function table (and optionally the
 * per-line one) as a profile. Columns are found by their header names, so a spreadsheet that
 * reordered them still reads.
 */
export function importCsv(functionsText: string, options: { file?: string; linesText?: string } = {}): Profile {
  const file = options.file ?? 'the CSV file';
  const rows = parseCsv(functionsText, file);
  const header = rows.shift() ?? [];
  const col = columnsOf(header, FUNCTION_COLUMNS, file);
  const unitText = rows[0]?.[col('unit')] ?? 'samples';
  const b = new ProfileBuilder('CSV import', file, unitOfLabel(unitText), { kind: 'exact', counter: unitText }, file);
  const statuses: readonly FunctionStatus[] = ['measured', 'pruned', 'unmeasurable', 'pending', 'unreached', 'sampled'];
  rows.forEach((r, i) => {
    const where = `row ${i + 2}`;
    const cell = (name: (typeof FUNCTION_COLUMNS)[number]): string => r[col(name)] ?? '';
    const num = (name: (typeof FUNCTION_COLUMNS)[number], max = MAX_COUNT): number | undefined => {
      const t = cell(name);
      if (t === '') return undefined;
      const n = name === 'address' ? parseInt(t, 16) : Number(t);
      if (!Number.isFinite(n) || Math.abs(n) > max || (name === 'address' && !/^0x[0-9a-f]+$/i.test(t)))
        malformed(file, where, `${name} "${t}" is not a number in range`, 'Correct the cell or export again.');
      return n;
    };
    const measure = (v: number | undefined, low: number | undefined, high: number | undefined): Measure | undefined =>
      v === undefined
        ? undefined
        : {
            value: v,
            ...(low !== undefined && high !== undefined ? { bound: { low, high, kind: 'quantisation' as const } } : {}),
          };
    const name = textOfCell(cell('function'));
    if (!name) malformed(file, where, 'has no function name', 'Fill in the function column.');
    const f = b.fn(name);
    const status = cell('status') as FunctionStatus;
    if (!statuses.includes(status))
      malformed(file, where, `status "${status}" is not one of ${statuses.join(', ')}`, 'Correct the cell.');
    f.status = status;
    const line = num('line', MAX_LINE);
    const path = textOfCell(cell('file'));
    if (path && line !== undefined) f.location = { path, line };
    const address = num('address', MAX_ADDRESS);
    if (address !== undefined) f.address = address;
    const inclusive = measure(num('inclusive'), num('inclusive_low'), num('inclusive_high'));
    if (inclusive) f.inclusive = inclusive;
    const self = measure(num('self'), num('self_low'), num('self_high'));
    if (self) f.self = self;
    for (const k of ['calls', 'min', 'max', 'mean'] as const) {
      const v = num(k);
      if (v !== undefined) f[k] = v;
    }
  });
  if (options.linesText !== undefined) {
    const lineRows = parseCsv(options.linesText, file);
    const lineCol = columnsOf(lineRows.shift() ?? [], LINE_COLUMNS, file);
    lineRows.forEach((r, i) => {
      const value = Number(r[lineCol('self')]);
      const line = Number(r[lineCol('line')]);
      if (
        !Number.isFinite(value) ||
        value < 0 ||
        value > MAX_COUNT ||
        !Number.isInteger(line) ||
        line < 0 ||
        line > MAX_LINE
      )
        malformed(
          file,
          `lines row ${i + 2}`,
          'line or self is not a number in range',
          'Correct the cell or export again.',
        );
      const fn = textOfCell(r[lineCol('function')] ?? '');
      b.profile.lines.push({
        path: textOfCell(r[lineCol('file')] ?? ''),
        line,
        ...(fn ? { function: b.fn(fn).id } : {}),
        self: { value },
      });
    });
  }
  return b.profile;
}

function columnsOf<T extends string>(header: string[], wanted: readonly T[], file: string): (name: T) => number {
  const index = new Map(header.map((h, i) => [h.trim(), i]));
  const missing = wanted.filter((w) => !index.has(w));
  if (missing.length)
    throw new ProfileError(
      'malformed',
      `${file} lacks the column(s) ${missing.join(', ')}: give a CSV that CycleLens exported.`,
    );
  return (name) => index.get(name)!;
}

function unitOfLabel(label: string): Unit {
  if (label === 'cycles' || label === 'instructions' || label === 'samples') return { kind: label };
  if (label.startsWith('SysTick ticks')) return { kind: 'ticks' };
  return { kind: 'events', event: label.replace(/ events$/, '') };
}

/** RFC 4180: fields separated by commas, optionally quoted with doubled quotes; CRLF or LF rows. */
export function parseCsv(text: string, file = 'the CSV file'): string[][] {
  if (text.length > MAX_IMPORT_BYTES)
    throw new ProfileError('unsupported', `${file} is larger than ${MAX_IMPORT_BYTES} bytes.`);
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i += 2;
        continue;
      }
      if (c === '"') quoted = false;
      else field += c;
      i++;
      continue;
    }
    if (c === '"' && field === '') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += c;
    i++;
  }
  if (quoted) malformed(file, '', 'ends inside a quoted field', 'The file is truncated: export it again.');
  if (field !== '' || row.length) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}
