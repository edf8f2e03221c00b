import { constants } from 'node:fs';
import { open, readdir, stat } from 'node:fs/promises';
import { basename, dirname, join, normalize, resolve } from 'node:path';
import { RESULT_SET_SCHEMA } from '../core/analysis/resultSet';
import { loadAnyProfile } from '../core/profile/json';
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

/** Reads one file as a profile: a result-set document or a native profile, validated field by field. */
export async function loadProfileFile(file: string): Promise<Profile> {
  return loadAnyProfile(file, { generator: 'cyclelens-lsp' });
}

/** Whether a parsed JSON value claims to be a profile or a result set (call graphs and others do not). */
function claimsProfile(schema: unknown): boolean {
  return (
    typeof schema === 'string' &&
    (schema === PROFILE_SCHEMA || schema === RESULT_SET_SCHEMA || /^cyclelens-(resultset|profile)\//.test(schema))
  );
}

/**
 * Whether `profile` was made from the ELF at `program`: the same path, or (a profile made on
 * another machine or in another checkout) the same file name in a folder of the same name, as
 * `build/rv32/singlepass.elf` is told from `build/cortex-m4/singlepass.elf`.
 */
export function madeFrom(profile: Profile, program: string, root: string): boolean {
  const made = profile.program.executable;
  if (!made) return false;
  const a = normalize(resolve(root, made));
  const b = normalize(resolve(root, program));
  if (a === b) return true;
  const tail = (p: string): string => join(basename(dirname(p)), basename(p));
  return tail(a) === tail(b);
}

/**
 * The newest readable profile of a workspace, or of `explicit` when one is configured. With
 * `program`, only a profile made from that ELF (an explicit one is taken as it is).
 */
export async function newestProfile(root: string, explicit?: string, program?: string): Promise<ProfileSearch> {
  const problems: string[] = [];
  const candidates = explicit !== undefined ? [explicit] : await candidateFiles(root);
  const dated: Array<{ file: string; mtimeMs: number }> = [];
  for (const file of candidates) {
    try {
      const s = await stat(file);
      // A FIFO, socket or device named *.json would block a read forever (or never end): only
      // regular files are profiles.
      if (!s.isFile()) {
        problems.push(`${file} is not a regular file (${kindOf(s)}): it was passed over.`);
        continue;
      }
      dated.push({ file, mtimeMs: s.mtimeMs });
    } catch (err) {
      if (explicit !== undefined)
        problems.push(
          `${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)}): check the ` +
            `"profile" setting.`,
        );
    }
  }
  dated.sort((a, b) => b.mtimeMs - a.mtimeMs || (a.file < b.file ? 1 : -1));
  for (const { file, mtimeMs } of dated) {
    // Other JSON in .cyclelens/ (saved call graphs, settings) is not a profile and not a problem;
    // a truncated profile still names its schema, and is reported.
    if (explicit === undefined && !claimsProfile(await schemaOf(file))) continue;
    try {
      const profile = await loadProfileFile(file);
      if (explicit === undefined && program !== undefined && !madeFrom(profile, program, root)) continue;
      return { loaded: { profile, file, mtimeMs }, problems };
    } catch (err) {
      problems.push(err instanceof Error ? err.message : String(err));
    }
  }
  return { problems };
}

/** How much of a file is read to find the `schema` it declares (it is the first field CycleLens writes). */
const SCHEMA_PREFIX_BYTES = 64 * 1024;

/**
 * The `schema` a file declares, from its first bytes only: the whole file is parsed once, when it
 * is loaded (parsing a 38 MB profile twice cost a third of its load). The file is opened without
 * blocking and read only if it is still a regular file.
 */
async function schemaOf(file: string): Promise<unknown> {
  let text: string;
  try {
    const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      if (!(await handle.stat()).isFile()) return undefined;
      const buffer = Buffer.alloc(SCHEMA_PREFIX_BYTES);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
      text = buffer.subarray(0, bytesRead).toString('utf8');
    } finally {
      await handle.close();
    }
  } catch {
    return undefined;
  }
  return /^\s*\{[^]*?"schema"\s*:\s*"([^"]*)"/.exec(text)?.[1];
}

function kindOf(s: import('node:fs').Stats): string {
  if (s.isFIFO()) return 'a FIFO';
  if (s.isSocket()) return 'a socket';
  if (s.isDirectory()) return 'a folder';
  if (s.isCharacterDevice() || s.isBlockDevice()) return 'a device';
  return 'not a file';
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
