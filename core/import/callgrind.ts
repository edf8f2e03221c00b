import type { Profile } from '../profile/model';
import { MAX_COUNT, ProfileError } from '../profile/profileError';
import { unitOfEvent } from '../profile/units';
import { MAX_IMPORT_BYTES, ProfileBuilder, malformed } from './common';

/**
 * The callgrind format (valgrind docs/cl-format.html) as a profile: per function the self cost (the
 * cost lines under `fn=`), the inclusive cost (self plus the cost line after each `calls=`), calls
 * (the sum of `calls=` counts into it) and edges; per line where `positions` include `line`. Name
 * compression (`(id) name`, then `(id)`), relative positions (`+n`, `-n`, `*`) and `fi=`/`fe=`
 * inline files are understood. The first event is imported; its name gives the unit.
 */
export interface CallgrindImportOptions {
  file?: string;
  /** Which event to import (default: the first of `events:`). */
  event?: string;
}

export function importCallgrind(text: string, options: CallgrindImportOptions = {}): Profile {
  const file = options.file ?? 'the callgrind file';
  const fix = 'Give a file written by valgrind --tool=callgrind or by CycleLens.';
  if (text.length > MAX_IMPORT_BYTES)
    throw new ProfileError('unsupported', `${file} is larger than ${MAX_IMPORT_BYTES} bytes.`);
  let events: string[] | undefined;
  let positions = ['line'];
  let cmd = file;
  const names = { fl: new Map<string, string>(), fn: new Map<string, string>() };
  let fileName = '???';
  let fnName: string | undefined;
  let cfnName: string | undefined;
  let pendingCalls: number | undefined;
  let last: number[] = [];
  const self = new Map<string, number>();
  const callCost = new Map<string, number>();
  const callCount = new Map<string, Map<string, number>>();
  const fnFile = new Map<string, string>();
  const lineCost = new Map<string, number>();
  let eventIndex = 0;

  const compressed = (kind: 'fl' | 'fn', value: string, where: string): string => {
    const m = /^\((\d+)\)(?:\s+(.*))?$/.exec(value);
    if (!m) return value;
    if (m[2] !== undefined) {
      names[kind].set(m[1]!, m[2]);
      return m[2];
    }
    const known = names[kind].get(m[1]!);
    if (known === undefined) malformed(file, where, `refers to ${kind} (${m[1]}) before naming it`, fix);
    return known;
  };

  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!.trim();
    const where = `line ${i + 1}`;
    if (!raw || raw.startsWith('#')) continue;
    const spec = /^([a-z]+)[=:]\s*(.*)$/.exec(raw);
    if (spec && !/^[+\-*\d]/.test(raw)) {
      const [, key, value] = spec as unknown as [string, string, string];
      switch (key) {
        case 'events':
          events = value.split(/\s+/).filter(Boolean);
          eventIndex = options.event ? events.indexOf(options.event) : 0;
          if (eventIndex < 0)
            throw new ProfileError(
              'unsupported',
              `${file} has no event "${options.event}" (it records ${events.join(', ')}).`,
            );
          break;
        case 'positions':
          positions = value.split(/\s+/).filter(Boolean);
          break;
        case 'cmd':
          cmd = value;
          break;
        case 'fl':
        case 'fi':
        case 'fe':
          fileName = compressed('fl', value, where);
          break;
        case 'fn':
          fnName = compressed('fn', value, where);
          if (!fnFile.has(fnName)) fnFile.set(fnName, fileName);
          break;
        case 'cfl':
        case 'cfi':
        case 'cob':
        case 'ob':
          if (key === 'cfl' || key === 'cfi') compressed('fl', value, where);
          break;
        case 'cfn':
          cfnName = compressed('fn', value, where);
          break;
        case 'calls': {
          const m = /^(\d+)/.exec(value);
          if (!m) malformed(file, where, `"calls=${value}" has no count`, fix);
          pendingCalls = Number(m[1]);
          break;
        }
        default:
          // version, creator, pid, cmd, part, desc, summary, totals, thread, event: header lines we do not need.
          break;
      }
      continue;
    }
    if (!/^[+\-*\d]|^0x/.test(raw))
      malformed(
        file,
        where,
        `"${raw.length > 60 ? `${raw.slice(0, 60)}…` : raw}" is neither a specification nor a cost line`,
        fix,
      );
    if (fnName === undefined) malformed(file, where, 'a cost line comes before any fn=', fix);
    const fields = raw.split(/\s+/);
    const pos = fields.slice(0, positions.length).map((t, k) => position(t, last[k] ?? 0, file, where));
    last = pos;
    const costText = fields[positions.length + eventIndex];
    const cost = costText === undefined ? 0 : Number(costText.startsWith('0x') ? parseInt(costText, 16) : costText);
    if (!Number.isFinite(cost) || cost < 0 || cost > MAX_COUNT)
      malformed(file, where, `the cost "${costText}" is not a count`, fix);
    if (pendingCalls !== undefined) {
      if (cfnName === undefined) malformed(file, where, 'calls= without a cfn= before it', fix);
      const key = `${fnName}\u0000${cfnName}`;
      if (cfnName !== fnName) callCost.set(key, (callCost.get(key) ?? 0) + cost);
      const into = callCount.get(cfnName) ?? new Map<string, number>();
      into.set(fnName, (into.get(fnName) ?? 0) + pendingCalls);
      callCount.set(cfnName, into);
      pendingCalls = undefined;
      continue;
    }
    self.set(fnName, (self.get(fnName) ?? 0) + cost);
    const lineAt = positions.indexOf('line');
    if (lineAt >= 0 && cost > 0) {
      const key = `${fnFile.get(fnName) ?? fileName}\u0000${pos[lineAt]}\u0000${fnName}`;
      lineCost.set(key, (lineCost.get(key) ?? 0) + cost);
    }
  }
  if (!events) malformed(file, '', 'has no "events:" line', fix);
  const event = events[eventIndex] ?? events[0]!;
  const b = new ProfileBuilder(
    'callgrind import',
    cmd,
    unitOfEvent(/^ir$/i.test(event) ? 'instructions' : event),
    { kind: 'exact', counter: event },
    file,
  );
  const p = b.profile;
  const touch = (name: string) => {
    const f = b.fn(name);
    const path = fnFile.get(name);
    if (path && path !== '???' && !f.location) f.location = { path, line: 0 };
    return f;
  };
  for (const name of new Set([...self.keys(), ...callCount.keys()])) touch(name);
  for (const [key, cost] of callCost) {
    const [caller] = key.split('\u0000') as [string];
    const f = touch(caller);
    f.inclusive = { value: (f.inclusive?.value ?? 0) + cost };
  }
  for (const f of p.functions) {
    const s = self.get(f.name) ?? 0;
    f.self = { value: s };
    f.inclusive = { value: (f.inclusive?.value ?? 0) + s };
  }
  for (const [callee, into] of callCount) {
    const c = touch(callee);
    for (const [caller, n] of into) {
      c.calls = (c.calls ?? 0) + n;
      if (caller !== callee) b.edge(touch(caller).id, c.id, n);
    }
  }
  for (const [key, cost] of lineCost) {
    const [path, line, fn] = key.split('\u0000') as [string, string, string];
    p.lines.push({ path, line: Number(line), function: b.fn(fn).id, self: { value: cost } });
  }
  const total = p.functions.reduce((s, f) => s + (f.self?.value ?? 0), 0);
  p.total = { value: total };
  p.runs = [{ role: 'batch', method: `callgrind file ${file}`, total, measured: p.functions.map((f) => f.name) }];
  return p;
}

function position(token: string, previous: number, file: string, where: string): number {
  const fix = 'Positions are numbers, 0x addresses, or +n, -n and * relative to the previous line.';
  if (token === '*') return previous;
  const rel = /^([+-])(\d+|0x[0-9a-f]+)$/i.exec(token);
  const value = (t: string): number => (t.toLowerCase().startsWith('0x') ? parseInt(t, 16) : Number(t));
  const n = rel
    ? previous + (rel[1] === '+' ? 1 : -1) * value(rel[2]!)
    : /^(\d+|0x[0-9a-f]+)$/i.test(token)
      ? value(token)
      : NaN;
  if (!Number.isFinite(n) || n < 0 || n > MAX_COUNT)
    malformed(file, where, `the position "${token}" is not a position`, fix);
  return n;
}
