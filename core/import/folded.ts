import type { Profile, Unit } from '../profile/model';
import { MAX_COUNT, ProfileError } from '../profile/profileError';
import { MAX_IMPORT_BYTES, ProfileBuilder, add, malformed } from './common';

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
  const unit = options.unit ?? { kind: 'samples' };
  const b = new ProfileBuilder('folded stacks import', options.executable ?? file, unit, {
    kind: 'sampled',
    sampler: 'folded stacks',
    halting: false,
    attribution: 'time-proportional',
  });
  const p = b.profile;
  let total = 0;
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, index) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const m = /^(.*\S)\s+(\d+(?:\.\d+)?)$/.exec(line);
    if (!m)
      malformed(
        file,
        `line ${index + 1}`,
        `"${line.length > 60 ? `${line.slice(0, 60)}…` : line}" is not "frame;frame;… count"`,
        'Give a file of folded stacks, one stack and its count per line.',
      );
    const value = Number(m[2]);
    if (!Number.isFinite(value) || value > MAX_COUNT)
      malformed(
        file,
        `line ${index + 1}`,
        `the count ${m[2]} is out of range`,
        'Counts must be whole numbers below 2^53.',
      );
    const names = m[1]!.split(';');
    if (names.some((n) => n.length === 0))
      malformed(
        file,
        `line ${index + 1}`,
        'holds an empty frame name (";;" or a leading/trailing ";")',
        'Remove the empty frame.',
      );
    if (names.length > 10_000)
      malformed(
        file,
        `line ${index + 1}`,
        `a stack of ${names.length} frames is deeper than 10,000`,
        'Truncate the stack.',
      );
    const frames = names.map((n) => b.fn(n).id);
    p.stacks.push({ frames, value });
    total += value;
    const top = p.functions[frames[frames.length - 1]!]!;
    top.self = add(top.self, value);
    for (const id of new Set(frames)) {
      const f = p.functions[id]!;
      f.inclusive = add(f.inclusive, value);
    }
    for (let i = 1; i < frames.length; i++) b.edge(frames[i - 1]!, frames[i]!);
  });
  for (const f of p.functions) f.self ??= { value: 0 };
  p.total = { value: total };
  p.runs = [
    { role: 'sampling', method: `folded stacks from ${file}`, total, measured: p.functions.map((f) => f.name) },
  ];
  return p;
}
