import type { MiTuple, MiValue } from './types';

/**
 * Typed reads of MI results by name. A missing or mistyped field is a protocol surprise: it throws
 * with the field's name and the record, instead of yielding `undefined` somewhere far away.
 */
export class MiShapeError extends Error {}

function describe(t: MiTuple): string {
  const s = JSON.stringify(t);
  return s.length > 200 ? `${s.slice(0, 200)}…` : s;
}

export function miString(t: MiTuple, key: string): string {
  const v = t[key];
  if (typeof v !== 'string') throw new MiShapeError(`MI field '${key}' is not a string in ${describe(t)}`);
  return v;
}

export function miOptString(t: MiTuple, key: string): string | undefined {
  const v = t[key];
  return typeof v === 'string' ? v : undefined;
}

export function miInt(t: MiTuple, key: string): number {
  const n = Number(miString(t, key));
  if (!Number.isFinite(n)) throw new MiShapeError(`MI field '${key}' is not a number in ${describe(t)}`);
  return n;
}

export function miOptInt(t: MiTuple, key: string): number | undefined {
  const v = miOptString(t, key);
  if (v === undefined) return undefined;
  const n = Number(v);
  return Number.isFinite(n) ? n : undefined;
}

export function isTuple(v: MiValue | undefined): v is MiTuple {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function miTuple(t: MiTuple, key: string): MiTuple {
  const v = t[key];
  if (!isTuple(v)) throw new MiShapeError(`MI field '${key}' is not a tuple in ${describe(t)}`);
  return v;
}

export function miOptTuple(t: MiTuple, key: string): MiTuple | undefined {
  const v = t[key];
  return isTuple(v) ? v : undefined;
}

export function miList(t: MiTuple, key: string): MiValue[] {
  const v = t[key];
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw new MiShapeError(`MI field '${key}' is not a list in ${describe(t)}`);
  return v;
}

/** A list whose items are all tuples (frames, variables, registers …). */
export function miTupleList(t: MiTuple, key: string): MiTuple[] {
  return miList(t, key).map((item, i) => {
    if (!isTuple(item)) throw new MiShapeError(`item ${i} of MI list '${key}' is not a tuple in ${describe(t)}`);
    return item;
  });
}

export function miStringList(t: MiTuple, key: string): string[] {
  return miList(t, key).map((item, i) => {
    if (typeof item !== 'string')
      throw new MiShapeError(`item ${i} of MI list '${key}' is not a string in ${describe(t)}`);
    return item;
  });
}

/** Quotes a command argument for MI (a C string) when it needs quoting. */
export function miQuote(arg: string): string {
  if (arg !== '' && /^[A-Za-z0-9_./:*$+\-@#]+$/.test(arg) && !arg.startsWith('-')) return arg;
  return `"${arg.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}
