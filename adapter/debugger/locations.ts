import type { CodeLocation } from '../../common/dapCustom';
import type { BreakpointLocation } from './types';

/** A location from a custom request as a breakpoint location; `atEntry` puts a function's at its first instruction. */
export function breakpointLocation(loc: CodeLocation, options: { atEntry?: boolean } = {}): BreakpointLocation {
  if ('path' in loc) return { kind: 'line', path: loc.path, line: loc.line };
  if ('address' in loc) return { kind: 'address', address: BigInt(loc.address) };
  return { kind: 'function', name: loc.function, ...(options.atEntry ? { atEntry: true } : {}) };
}

/** How the user sees a location in messages: `file:line`, `0xADDR`, or the function's name. */
export function describeBreakpointLocation(loc: BreakpointLocation): string {
  if (loc.kind === 'line') return `${loc.path}:${loc.line}`;
  if (loc.kind === 'address') return `0x${loc.address.toString(16)}`;
  return loc.name;
}

/**
 * A location written the short way: `file:line`, `*0xADDR`, `*function` (its first instruction) or
 * `function` (after its prologue).
 */
export function parseLocationSpec(spec: string): BreakpointLocation {
  const address = /^\*\s*(0x[0-9a-f]+|\d+)$/i.exec(spec);
  if (address) return { kind: 'address', address: BigInt(address[1]!) };
  if (spec.startsWith('*')) return { kind: 'function', name: spec.slice(1).trim(), atEntry: true };
  const line = /^(.*):(\d+)$/.exec(spec);
  if (line) return { kind: 'line', path: line[1]!, line: Number(line[2]) };
  return { kind: 'function', name: spec };
}
