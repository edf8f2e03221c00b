import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { loadResultSetDocument } from '../../core/analysis/resultSet';
import { profileFromResultSets } from '../../core/profile/fromResultSet';
import { PROFILE_SCHEMA, type Profile } from '../../core/profile/model';

/** The files the profile panel opens: saved result sets and profile files. */
export const PROFILE_FILE_SUFFIX = '.cyclelens-profile.json';

/**
 * A profile from a file: a `*.cyclelens-profile.json` profile as written by the exporter, or a
 * result-set document (validated field by field by its loader) turned into one. Imported files are
 * data: a profile file is parsed as JSON and checked for its schema and arrays, nothing in it runs.
 */
export async function loadProfileFile(path: string): Promise<{ profile: Profile; title: string }> {
  if (path.endsWith(PROFILE_FILE_SUFFIX)) {
    let value: unknown;
    try {
      value = JSON.parse(await readFile(path, 'utf8'));
    } catch (err) {
      throw new Error(`${path} is not a readable JSON profile (${err instanceof Error ? err.message : String(err)}): export the profile again.`);
    }
    const p = value as Partial<Profile> | null;
    if (!p || typeof p !== 'object' || p.schema !== PROFILE_SCHEMA) {
      throw new Error(`${path} is not a CycleLens profile (its "schema" is not "${PROFILE_SCHEMA}"): open a file CycleLens exported.`);
    }
    for (const key of ['functions', 'edges', 'lines', 'addresses', 'stacks', 'runs'] as const) {
      if (!Array.isArray(p[key])) throw new Error(`${path}: "${key}" is not a list: the profile file is damaged; export it again.`);
    }
    return { profile: p as Profile, title: basename(path) };
  }
  const doc = await loadResultSetDocument(path);
  return { profile: profileFromResultSets(doc), title: basename(path) };
}

/** Where a function is, as line ranges per file: its DWARF line to its end line, or to the next function in the file. */
export function functionRanges(p: Profile): Map<string, Array<{ name: string; first: number; last: number }>> {
  const byFile = new Map<string, Array<{ name: string; first: number; last: number }>>();
  const located = p.functions.filter((f) => f.location).sort((a, b) => a.location!.line - b.location!.line);
  for (const f of located) {
    const list = byFile.get(f.location!.path) ?? [];
    list.push({ name: f.name, first: f.location!.line, last: f.location!.endLine ?? Number.POSITIVE_INFINITY });
    byFile.set(f.location!.path, list);
  }
  for (const list of byFile.values()) {
    for (let i = 0; i < list.length; i++) {
      const next = list[i + 1];
      if (next && list[i]!.last === Number.POSITIVE_INFINITY) list[i]!.last = next.first - 1;
    }
  }
  return byFile;
}

/** The function whose range holds `line` (1-based) in `path`. */
export function functionAt(ranges: ReturnType<typeof functionRanges>, path: string, line: number): string | undefined {
  return ranges.get(path)?.find((r) => line >= r.first && line <= r.last)?.name;
}
