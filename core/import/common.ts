import { emptyProfile, type Profile, type ProfileEdge, type ProfileFunction, type Unit } from '../profile/model';
import { MAX_NAME_LENGTH, ProfileError } from '../profile/profileError';

/** What every importer shares: size limits, and a profile that grows a function per new name. */

/** Imported files larger than this are refused before parsing (a profile of firmware is far smaller). */
export const MAX_IMPORT_BYTES = 512 * 1024 * 1024;

export function malformed(file: string, where: string, what: string, fix: string): never {
  throw new ProfileError('malformed', `${file}${where ? ` ${where}` : ''}: ${what}. ${fix}`);
}

/**
 * A profile built one name and one edge at a time. Functions and edges are indexed as they are
 * added (by name, and by caller and callee), so an import takes time linear in its records: a
 * search of the edge list per call made 40k edges take 16.5 s.
 */
export class ProfileBuilder {
  readonly profile: Profile;
  private readonly ids = new Map<string, number>();
  private readonly edges = new Map<number, ProfileEdge>();

  constructor(
    generator: string,
    executable: string,
    unit: Unit,
    provenance: Profile['provenance'],
    private readonly file = 'the file',
  ) {
    this.profile = emptyProfile({
      generator,
      program: { executable },
      unit,
      provenance,
      analysis: { scenario: 'import' },
    });
  }

  fn(name: string): ProfileFunction {
    let id = this.ids.get(name);
    if (id === undefined) {
      if (name.length > MAX_NAME_LENGTH)
        throw new ProfileError(
          'unsupported',
          `${this.file} names a function of ${name.length} characters ("${name.slice(0, 40)}…"), over ` +
            `the ${MAX_NAME_LENGTH}-character limit of a CycleLens profile: shorten the name (demangle, ` +
            `or drop template arguments).`,
        );
      id = this.profile.functions.length;
      this.ids.set(name, id);
      this.profile.functions.push({ id, name, status: 'measured' });
    }
    return this.profile.functions[id]!;
  }

  edge(caller: number, callee: number, calls?: number): void {
    // Function ids are below 2^24 (a profile holds at most ten million): the pair fits a double exactly.
    const key = caller * 2 ** 26 + callee;
    const e = this.edges.get(key);
    if (e) {
      if (calls !== undefined) e.calls = (e.calls ?? 0) + calls;
    } else {
      const added: ProfileEdge = { caller, callee, kind: 'call', ...(calls !== undefined ? { calls } : {}) };
      this.edges.set(key, added);
      this.profile.edges.push(added);
    }
  }
}

/**
 * Calls `line` with each line of `text` and its 1-based number, without splitting the text into
 * an array first (which holds a second copy of a large file); `\r\n` and `\n` both end a line.
 */
export function eachLine(text: string, line: (text: string, number: number) => void): void {
  let start = 0;
  let number = 1;
  while (start <= text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const stop = end > start && text.charCodeAt(end - 1) === 13 ? end - 1 : end;
    line(text.slice(start, stop), number++);
    start = end + 1;
  }
}

/** Adds to an optional measure. */
export function add(m: { value: number } | undefined, v: number): { value: number } {
  return { value: (m?.value ?? 0) + v };
}
