import { randomBytes } from 'node:crypto';
import { constants, readFileSync, unlinkSync } from 'node:fs';
import { access, mkdir, open, readdir, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
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
  const refused = await probeWrite(full, PROBE_BYTES);
  if (refused)
    return (
      `${path} cannot be written: nothing can be written in ${folder} (${refused}); choose a ` +
      `folder you can write to`
    );
  try {
    const s = await stat(full);
    if (s.isDirectory())
      return (
        `${path} is a folder: give a file name, ` +
        `e.g. ${path.replace(/[\\/]+$/, '')}/profile${EXPORT_FORMATS[0]!.extension}`
      );
    await access(full, constants.W_OK).catch(() => {
      throw new Error('read-only');
    });
  } catch (err) {
    if ((err as Error).message === 'read-only')
      return `${path} exists and is read-only: make it writable or choose another path`;
  }
  return undefined;
}

/** Writes one export atomically (temporary file, then rename); a failure names the file and the fix. */
export async function writeExport(p: Profile, target: ExportTarget): Promise<number> {
  const data = target.format.write(p);
  try {
    await writeExportFile(target.path, data);
  } catch (err) {
    throw new Error(
      `${target.path} could not be written (${fileErrorWords(err)}): ${fixFor(err)}; nothing was left in its place`,
    );
  }
  return typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength;
}

function fixFor(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOSPC' || code === 'EDQUOT') return 'free space on that disk or choose another path';
  if (code === 'EROFS' || code === 'EACCES' || code === 'EPERM') return 'choose a folder you can write to';
  return 'check the path';
}

/**
 * The temporary file of an export being written: next to it, named after it and after the process
 * that writes it (`profile.pb.gz.cyclelens-partial-4242.tmp`), so one a killed export left behind is
 * seen in a listing, says what it is, and is removed by the next export to that folder.
 */
export function partialFileName(path: string, pid = process.pid): string {
  return join(dirname(path), `${basename(path)}${PARTIAL_MARK}${pid}.${randomBytes(4).toString('hex')}.tmp`);
}

const PARTIAL_MARK = '.cyclelens-partial-';
const PARTIAL = /\.cyclelens-partial-(\d+)\.[0-9a-f]+\.tmp$/;
/** Temporary files of this process, removed if it exits before it renames them. */
const inProgress = new Set<string>();
let exitHook = false;

/** Writes `data` to a temporary file, syncs it and renames it over `path`; the temporary never survives an error. */
export async function writeExportFile(path: string, data: string | Uint8Array): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await removeAbandonedPartials(dirname(path));
  const temporary = partialFileName(path);
  if (!exitHook) {
    exitHook = true;
    // An exit while writing (a signal the CLI handles ends in process.exit) takes its file with it.
    process.once('exit', () => {
      for (const f of inProgress) {
        try {
          unlinkSync(f);
        } catch {
          // Already gone.
        }
      }
    });
  }
  inProgress.add(temporary);
  let renamed = false;
  try {
    const handle = await open(temporary, 'wx', 0o644);
    try {
      await (typeof data === 'string' ? handle.writeFile(data, 'utf8') : handle.writeFile(data));
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, path);
    renamed = true;
  } finally {
    inProgress.delete(temporary);
    if (!renamed) await unlink(temporary).catch(() => undefined);
  }
}

/**
 * Removes the temporary export files in `folder` whose writer is gone (a SIGKILL leaves its file;
 * nothing else can clean up after it). A writer that still runs keeps its file; a zombie is gone.
 * Returns the files removed.
 */
export async function removeAbandonedPartials(folder: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(folder);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const m = PARTIAL.exec(name);
    if (!m || processAlive(Number(m[1]))) continue;
    const file = join(folder, name);
    try {
      await unlink(file);
      removed.push(file);
    } catch {
      // Removed by another export meanwhile, or not ours to remove.
    }
  }
  return removed;
}

function processAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    // State Z: dead, not yet reaped by its parent.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}

/**
 * Creates (and with `bytes`, fills and syncs) then removes a probe file next to `path`, as the
 * atomic write will: permission bits, a read-only mount and a full disk all show up here, for root
 * too (access(2) passes root through permissions it would then fail on). A full disk still has
 * room for an empty file, so the export check (unwritableReason) writes a block of data. Returns
 * the reason in words, or undefined when it worked.
 */
export async function probeWrite(path: string, bytes = 0): Promise<string | undefined> {
  const probe = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.probe`;
  let made = false;
  try {
    const handle = await open(probe, 'wx');
    made = true;
    try {
      if (bytes > 0) {
        await handle.writeFile(Buffer.alloc(bytes, 0x20));
        await handle.sync();
      }
    } finally {
      await handle.close();
    }
  } catch (err) {
    return fileErrorWords(err);
  } finally {
    if (made) await unlink(probe).catch(() => undefined);
  }
  return undefined;
}

/** What the export check's probe writes: one block, so that a disk with no block left fails it. */
const PROBE_BYTES = 4096;

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
