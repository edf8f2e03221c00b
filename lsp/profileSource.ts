import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { parseResultSetDocument, RESULT_SET_SCHEMA } from '../core/analysis/resultSet';
import { profileFromResultSets } from '../core/profile/fromResultSet';
import { PROFILE_SCHEMA, type Profile } from '../core/profile/model';

/**
 * Where the language server's profile comes from: the newest profile the workspace holds in
 * `.cyclelens/` (the result sets descents and full profiles save under `.cyclelens/results/`, and
 * native profile files). Files are data, never code: each is parsed and validated before use, and a
 * file that fails is reported and passed over for the next newest one.
 */

/** The folders, relative to the workspace root, searched for profiles (and watched for new ones). */
export const PROFILE_FOLDERS = ['.cyclelens', join('.cyclelens', 'results'), join('.cyclelens', 'profiles')];

export interface LoadedProfile {
  profile: Profile;
  file: string;
  mtimeMs: number;
}

export interface ProfileSearch {
  loaded?: LoadedProfile;
  /** Files that looked like profiles but could not be read, each with what is wrong. */
  problems: string[];
}

/** Reads one file as a profile: a result-set document or a native profile. */
export async function loadProfileFile(file: string): Promise<Profile> {
  const text = await readFile(file, 'utf8');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`${file} is not valid JSON (${err instanceof Error ? err.message : String(err)}): it may be truncated; measure again or restore it.`);
  }
  const schema = typeof json === 'object' && json !== null && !Array.isArray(json) ? (json as Record<string, unknown>).schema : undefined;
  if (schema === PROFILE_SCHEMA) return parseProfileDocument(json as Record<string, unknown>, file);
  // parseResultSetDocument names the problem (no schema, other version …) for everything else.
  return profileFromResultSets(parseResultSetDocument(json as never, file), { generator: 'cyclelens-lsp' });
}

/** Whether a parsed JSON value claims to be a profile or a result set (call graphs and others do not). */
function claimsProfile(schema: unknown): boolean {
  return typeof schema === 'string' && (schema === PROFILE_SCHEMA || schema === RESULT_SET_SCHEMA || /^cyclelens-(resultset|profile)\//.test(schema));
}

/** The newest readable profile of a workspace, or of `explicit` when one is configured. */
export async function newestProfile(root: string, explicit?: string): Promise<ProfileSearch> {
  const problems: string[] = [];
  const candidates = explicit !== undefined ? [explicit] : await candidateFiles(root);
  const dated: Array<{ file: string; mtimeMs: number }> = [];
  for (const file of candidates) {
    try {
      dated.push({ file, mtimeMs: (await stat(file)).mtimeMs });
    } catch (err) {
      if (explicit !== undefined) problems.push(`${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)}): check the "profile" setting.`);
    }
  }
  dated.sort((a, b) => b.mtimeMs - a.mtimeMs || (a.file < b.file ? 1 : -1));
  for (const { file, mtimeMs } of dated) {
    // Other JSON in .cyclelens/ (saved call graphs, settings) is not a profile and not a problem;
    // a truncated profile still names its schema, and is reported.
    if (explicit === undefined && !claimsProfile(await schemaOf(file))) continue;
    try {
      return { loaded: { profile: await loadProfileFile(file), file, mtimeMs }, problems };
    } catch (err) {
      problems.push(err instanceof Error ? err.message : String(err));
    }
  }
  return { problems };
}

/** The `schema` a file declares, read from the text when the JSON does not parse. */
async function schemaOf(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return undefined;
  }
  try {
    return (JSON.parse(text) as { schema?: unknown } | null)?.schema;
  } catch {
    return /"schema"\s*:\s*"([^"]*)"/.exec(text)?.[1];
  }
}

async function candidateFiles(root: string): Promise<string[]> {
  const files: string[] = [];
  for (const folder of PROFILE_FOLDERS) {
    let names: string[];
    try {
      names = await readdir(join(root, folder));
    } catch {
      continue;
    }
    // Dot files are the temporary files of atomic writes (writeFileAtomic), not finished profiles.
    for (const name of names) if (name.endsWith('.json') && !name.startsWith('.')) files.push(join(root, folder, name));
  }
  return files;
}

/**
 * The minimal reader of a native profile file (`cyclelens-profile/1`): it checks the fields the
 * server reads, with their types, and refuses the file with the field's name otherwise.
 */
export function parseProfileDocument(json: Record<string, unknown>, file: string): Profile {
  const fail = (what: string): never => {
    throw new Error(`${file} is not a valid ${PROFILE_SCHEMA} profile: ${what}; export it again.`);
  };
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  const isMeasure = (v: unknown): boolean => v === undefined || (isObject(v) && typeof v.value === 'number' && Number.isFinite(v.value) && (v.bound === undefined || (isObject(v.bound) && typeof v.bound.low === 'number' && typeof v.bound.high === 'number' && typeof v.bound.kind === 'string')));
  if (!isObject(json.unit) || typeof json.unit.kind !== 'string') fail('"unit" needs a "kind"');
  if (!isObject(json.provenance) || typeof json.provenance.kind !== 'string') fail('"provenance" needs a "kind"');
  if (!isMeasure(json.total)) fail('"total" needs a numeric "value"');
  for (const key of ['functions', 'edges', 'lines', 'addresses', 'stacks', 'runs']) if (!Array.isArray(json[key])) fail(`"${key}" must be an array`);
  (json.functions as unknown[]).forEach((f, i) => {
    if (!isObject(f) || typeof f.name !== 'string' || typeof f.status !== 'string') fail(`functions[${i}] needs a "name" and a "status"`);
    const fn = f as Record<string, unknown>;
    if (!isMeasure(fn.inclusive) || !isMeasure(fn.self)) fail(`functions[${i}] ("${String(fn.name)}") has an inclusive or self value that is not a number`);
    if (fn.calls !== undefined && typeof fn.calls !== 'number') fail(`functions[${i}].calls must be a number`);
    const loc = fn.location;
    if (loc !== undefined && (!isObject(loc) || typeof loc.path !== 'string' || typeof loc.line !== 'number' || loc.line < 1)) fail(`functions[${i}].location needs a "path" and a "line" ≥ 1`);
  });
  (json.lines as unknown[]).forEach((l, i) => {
    if (!isObject(l) || typeof l.path !== 'string' || typeof l.line !== 'number' || l.line < 1 || !isMeasure(l.self) || l.self === undefined) fail(`lines[${i}] needs a "path", a "line" ≥ 1 and a "self" value`);
  });
  (json.runs as unknown[]).forEach((r, i) => {
    if (!isObject(r) || typeof r.method !== 'string') fail(`runs[${i}] needs a "method"`);
  });
  return json as unknown as Profile;
}
