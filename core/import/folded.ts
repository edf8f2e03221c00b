import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Profile, Unit } from '../profile/model';
import { MAX_COUNT, ProfileError } from '../profile/profileError';
import { MAX_IMPORT_BYTES, ProfileBuilder, add, eachLine, malformed } from './common';

/**
 * Folded stacks (`main;work;leaf 123` per line, root first; Brendan Gregg's stackcollapse output)
 * as a profile: the stacks are kept as they are, and each function's self value is the sum of the
 * stacks it tops, its inclusive the sum of the stacks it appears in (once per stack, so recursion
 * does not count twice). Blank lines and `#` comments are skipped. The unit is not in the format:
 * the caller says it (samples by default).
 */
export interface FoldedImportOptions {
  file?: string;
  unit?: Unit;
  executable?: string;
}

export function importFolded(text: string, options: FoldedImportOptions = {}): Profile {
  const file = options.file ?? 'the folded stacks';
  if (text.length > MAX_IMPORT_BYTES)
    throw new ProfileError('unsupported', `${file} is larger than ${MAX_IMPORT_BYTES} bytes: split it.`);
  const reader = new FoldedReader(options);
  eachLine(text, (line, number) => reader.line(line, number));
  return reader.finish();
}

/**
 * A folded-stacks file read as a stream, line by line: memory grows with the profile (its
 * functions, edges and distinct stacks), not with the file, so a file of any size reads.
 */
export async function importFoldedFile(path: string, options: FoldedImportOptions = {}): Promise<Profile> {
  const reader = new FoldedReader({ file: path, ...options });
  const lines = createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity });
  let number = 0;
  for await (const line of lines) reader.line(line, ++number);
  return reader.finish();
}

/** Folded stacks, one line at a time; identical stacks are merged as they come. */
export class FoldedReader {
  private readonly file: string;
  private readonly b: ProfileBuilder;
  private readonly stackAt = new Map<string, number>();
  private total = 0;

  constructor(options: FoldedImportOptions = {}) {
    this.file = options.file ?? 'the folded stacks';
    this.b = new ProfileBuilder(
      'folded stacks import',
      options.executable ?? this.file,
      options.unit ?? { kind: 'samples' },
      { kind: 'sampled', sampler: 'folded stacks', halting: false, attribution: 'time-proportional' },
      this.file,
    );
  }

  line(raw: string, number: number): void {
    const file = this.file;
    const b = this.b;
    const p = b.profile;
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const m = /^(.*\S)\s+(\d+(?:\.\d+)?)$/.exec(line);
    if (!m)
      malformed(
        file,
        `line ${number}`,
        `"${line.length > 60 ? `${line.slice(0, 60)}…` : line}" is not "frame;frame;… count"`,
        'Give a file of folded stacks, one stack and its count per line.',
      );
    const value = Number(m[2]);
    if (!Number.isFinite(value) || value > MAX_COUNT)
      malformed(
        file,
        `line ${number}`,
        `the count ${m[2]} is out of range`,
        'Counts must be whole numbers below 2^53.',
      );
    const stack = m[1]!;
    const names = stack.split(';');
    if (names.some((n) => n.length === 0))
      malformed(
        file,
        `line ${number}`,
        'holds an empty frame name (";;" or a leading/trailing ";")',
        'Remove the empty frame.',
      );
    if (names.length > 10_000)
      malformed(
        file,
        `line ${number}`,
        `a stack of ${names.length} frames is deeper than 10,000`,
        'Truncate the stack.',
      );
    const frames = names.map((n) => b.fn(n).id);
    this.total += value;
    const seen = this.stackAt.get(stack);
    if (seen !== undefined) p.stacks[seen]!.value += value;
    else {
      this.stackAt.set(stack, p.stacks.length);
      p.stacks.push({ frames, value });
    }
    const top = p.functions[frames[frames.length - 1]!]!;
    top.self = add(top.self, value);
    for (const id of new Set(frames)) {
      const f = p.functions[id]!;
      f.inclusive = add(f.inclusive, value);
    }
    for (let i = 1; i < frames.length; i++) b.edge(frames[i - 1]!, frames[i]!);
  }

  finish(): Profile {
    const p = this.b.profile;
    for (const f of p.functions) f.self ??= { value: 0 };
    p.total = { value: this.total };
    p.runs = [
      {
        role: 'sampling',
        method: `folded stacks from ${this.file}`,
        total: this.total,
        measured: p.functions.map((f) => f.name),
      },
    ];
    return p;
  }
}
