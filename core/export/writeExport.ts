import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, open, stat, unlink } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { writeFileAtomic } from '../analysis/resultSet';
import type { Profile } from '../profile/model';
import { EXPORT_FORMATS, exportFormat, formatIds, type ExportFormat } from './formats';

/** An export asked for on the command line or in the editor: a format and where to write it. */
export interface ExportTarget {
  format: ExportFormat;
  path: string;
}

/** `pprof:out/profile.pb.gz` → a target, or a message that says what to write instead. */
export function parseExportSpec(spec: string): ExportTarget | string {
  const colon = spec.indexOf(':');
  if (colon <= 0 || colon === spec.length - 1)
    return `--export ${spec}: write FORMAT:PATH, e.g. pprof:profile.pb.gz (formats: ${formatIds()})`;
  const id = spec.slice(0, colon);
  const format = exportFormat(id);
  if (!format) return `--export ${spec}: unknown format '${id}': use one of ${formatIds()}`;
  return { format, path: spec.slice(colon + 1) };
}

/**
 * Checks that `path` can be written (its folder exists and is writable, and it is not a folder or
 * a read-only file) before anything expensive runs: a descent of many minutes must not end in
 * "cannot write". Returns a message naming the file and the fix, or undefined when it is writable.
 */
export async function unwritableReason(path: string): Promise<string | undefined> {
  const full = resolve(path);
  const folder = dirname(full);
  try {
    const s = await stat(folder);
    if (!s.isDirectory()) return `${path} cannot be written: ${folder} is not a folder; choose another path`;
  } catch {
    return `${path} cannot be written: the folder ${folder} does not exist; create it or choose another path`;
  }
  const refused = await probeWrite(full);
  if (refused)
    return `${path} cannot be written: nothing can be written in ${folder} (${refused}); choose a folder you can write to`;
  try {
    const s = await stat(full);
    if (s.isDirectory())
      return `${path} is a folder: give a file name, e.g. ${path.replace(/[\\/]+$/, '')}/profile${EXPORT_FORMATS[0]!.extension}`;
    await access(full, constants.W_OK).catch(() => {
      throw new Error('read-only');
    });
  } catch (err) {
    if ((err as Error).message === 'read-only')
      return `${path} exists and is read-only: make it writable or choose another path`;
  }
  return undefined;
}

/** Writes one export atomically (temporary file, then rename). */
export async function writeExport(p: Profile, target: ExportTarget): Promise<number> {
  const data = target.format.write(p);
  await writeFileAtomic(target.path, data);
  return typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength;
}

/**
 * Creates and removes a probe file next to `path`, as the atomic write will: permission bits, a
 * read-only mount and a full disk all show up here, for root too (access(2) passes root through
 * permissions it would then fail on). Returns the reason in words, or undefined when it worked.
 */
export async function probeWrite(path: string): Promise<string | undefined> {
  const probe = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.probe`;
  try {
    const handle = await open(probe, 'wx');
    await handle.close();
  } catch (err) {
    return fileErrorWords(err);
  }
  await unlink(probe).catch(() => undefined);
  return undefined;
}

/** An errno in words for a message (`read-only file system`), else the error's own message. */
export function fileErrorWords(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const words: Record<string, string> = {
    EROFS: 'read-only file system',
    EACCES: 'permission denied',
    EPERM: 'not permitted',
    ENOTDIR: 'a part of the path is a file, not a directory',
    ENOSPC: 'no space left on the device',
    EDQUOT: 'disk quota exceeded',
  };
  return (e.code && words[e.code]) ?? e.message;
}
