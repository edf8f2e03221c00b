import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import type { Profile } from '../profile/model';
import { MAX_COUNT, ProfileError } from '../profile/profileError';
import { unitOfEvent } from '../profile/units';
import { MAX_IMPORT_BYTES, ProfileBuilder, eachLine, malformed } from './common';

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
  const reader = new CallgrindReader(options);
  if (text.length > MAX_IMPORT_BYTES)
    throw new ProfileError('unsupported', `${reader.file} is larger than ${MAX_IMPORT_BYTES} bytes.`);
  eachLine(text, (line, number) => reader.line(line, number));
  return reader.finish();
}

/**
 * A callgrind file read as a stream, line by line (chunks may split a line or a UTF-8 character):
 * memory grows with the profile (its functions, edges and lines), not with the file.
 */
export async function importCallgrindStream(input: Readable, options: CallgrindImportOptions = {}): Promise<Profile> {
  const reader = new CallgrindReader(options);
  const lines = createInterface({ input, crlfDelay: Infinity });
  let number = 0;
  for await (const line of lines) reader.line(line, ++number);
  return reader.finish();
}

/** {@link importCallgrindStream} of the file at `path`. */
export function importCallgrindFile(path: string, options: CallgrindImportOptions = {}): Promise<Profile> {
  return importCallgrindStream(createReadStream(path), { file: path, ...options });
}

/** A callgrind file, one line at a time; costs are summed per function, call and line as they come. */
export class CallgrindReader {
  readonly file: string;
  private readonly fix = 'Give a file written by valgrind --tool=callgrind or by CycleLens.';
  private events: string[] | undefined;
  private positions = ['line'];
  private cmd: string;
  private readonly names = { fl: new Map<string, string>(), fn: new Map<string, string>() };
  private fileName = '???';
  private fnName: string | undefined;
  private cfnName: string | undefined;
  private pendingCalls: number | undefined;
  private last: number[] = [];
  private readonly self = new Map<string, number>();
  private readonly callCost = new Map<string, number>();
  private readonly callCount = new Map<string, Map<string, number>>();
  private readonly fnFile = new Map<string, string>();
  private readonly lineCost = new Map<string, number>();
  private eventIndex = 0;

  constructor(private readonly options: CallgrindImportOptions = {}) {
    this.file = options.file ?? 'the callgrind file';
    this.cmd = this.file;
  }

  private compressed(kind: 'fl' | 'fn', value: string, where: string): string {
    const m = /^\((\d+)\)(?:\s+(.*))?$/.exec(value);
    if (!m) return value;
    if (m[2] !== undefined) {
      this.names[kind].set(m[1]!, m[2]);
      return m[2];
    }
    const known = this.names[kind].get(m[1]!);
    if (known === undefined) malformed(this.file, where, `refers to ${kind} (${m[1]}) before naming it`, this.fix);
    return known;
  }

  line(text: string, number: number): void {
    const { file, fix, options } = this;
    const raw = text.trim();
    const where = `line ${number}`;
    if (!raw || raw.startsWith('#')) return;
    const spec = /^([a-z]+)[=:]\s*(.*)$/.exec(raw);
    if (spec && !/^[+\-*\d]/.test(raw)) {
      const [, key, value] = spec as unknown as [string, string, string];
      switch (key) {
        case 'events': {
          const events = value.split(/\s+/).filter(Boolean);
          this.events = events;
          this.eventIndex = options.event ? events.indexOf(options.event) : 0;
          if (this.eventIndex < 0)
            throw new ProfileError(
              'unsupported',
              `${file} has no event "${options.event}" (it records ${events.join(', ')}).`,
            );
          break;
        }
        case 'positions':
          this.positions = value.split(/\s+/).filter(Boolean);
          break;
        case 'cmd':
          this.cmd = value;
          break;
        case 'fl':
        case 'fi':
        case 'fe':
          this.fileName = this.compressed('fl', value, where);
          break;
        case 'fn':
          this.fnName = this.compressed('fn', value, where);
          if (!this.fnFile.has(this.fnName)) this.fnFile.set(this.fnName, this.fileName);
          break;
        case 'cfl':
        case 'cfi':
        case 'cob':
        case 'ob':
          if (key === 'cfl' || key === 'cfi') this.compressed('fl', value, where);
          break;
        case 'cfn':
          this.cfnName = this.compressed('fn', value, where);
          break;
        case 'calls': {
          const m = /^(\d+)/.exec(value);
          if (!m) malformed(file, where, `"calls=${value}" has no count`, fix);
          this.pendingCalls = Number(m[1]);
          break;
        }
        default:
          // version, creator, pid, cmd, part, desc, summary, totals, thread, event: header lines we do not need.
          break;
      }
      return;
    }
    if (!/^[+\-*\d]|^0x/.test(raw))
      malformed(
        file,
        where,
        `"${raw.length > 60 ? `${raw.slice(0, 60)}…` : raw}" is neither a specification nor a cost line`,
        fix,
      );
    const fnName = this.fnName;
    if (fnName === undefined) malformed(file, where, 'a cost line comes before any fn=', fix);
    const positions = this.positions;
    const fields = raw.split(/\s+/);
    const pos = fields.slice(0, positions.length).map((t, k) => position(t, this.last[k] ?? 0, file, where));
    this.last = pos;
    const costText = fields[positions.length + this.eventIndex];
    const cost = costText === undefined ? 0 : Number(costText.startsWith('0x') ? parseInt(costText, 16) : costText);
    if (!Number.isFinite(cost) || cost < 0 || cost > MAX_COUNT)
      malformed(file, where, `the cost "${costText}" is not a count`, fix);
    if (this.pendingCalls !== undefined) {
      const cfnName = this.cfnName;
      if (cfnName === undefined) malformed(file, where, 'calls= without a cfn= before it', fix);
      const key = `${fnName}\u0000${cfnName}`;
      if (cfnName !== fnName) this.callCost.set(key, (this.callCost.get(key) ?? 0) + cost);
      const into = this.callCount.get(cfnName) ?? new Map<string, number>();
      into.set(fnName, (into.get(fnName) ?? 0) + this.pendingCalls);
      this.callCount.set(cfnName, into);
      this.pendingCalls = undefined;
      return;
    }
    this.self.set(fnName, (this.self.get(fnName) ?? 0) + cost);
    const lineAt = positions.indexOf('line');
    if (lineAt >= 0 && cost > 0) {
      const key = `${this.fnFile.get(fnName) ?? this.fileName}\u0000${pos[lineAt]}\u0000${fnName}`;
      this.lineCost.set(key, (this.lineCost.get(key) ?? 0) + cost);
    }
  }

  finish(): Profile {
    const { file, fix, events, eventIndex, self, callCost, callCount, fnFile, lineCost } = this;
    if (!events) malformed(file, '', 'has no "events:" line', fix);
    const event = events[eventIndex] ?? events[0]!;
    const b = new ProfileBuilder(
      'callgrind import',
      this.cmd,
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
