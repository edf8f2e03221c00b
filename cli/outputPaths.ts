import { randomBytes } from 'node:crypto';
import { mkdir, open, unlink } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

/**
 * Output files are checked before the first run: a profile can take many minutes, and finding only
 * at the end that `--out` points into a read-only or missing place loses all of it. The check creates
 * the parent directories and a probe file in the same directory (what the atomic write will do), so
 * permissions, read-only mounts and missing parents all show up now.
 */
export async function checkOutputWritable(path: string, option: string): Promise<void> {
  const dir = dirname(resolve(path));
  try {
    await mkdir(dir, { recursive: true });
  } catch (err) {
    throw new Error(`${option} ${path}: its directory ${dir} does not exist and cannot be created (${reason(err)}). Choose a place you can write to.`);
  }
  const probe = `${resolve(path)}.${process.pid}.${randomBytes(4).toString('hex')}.probe`;
  try {
    const handle = await open(probe, 'wx');
    await handle.close();
  } catch (err) {
    throw new Error(`${option} ${path}: nothing can be written in ${dir} (${reason(err)}). Choose a place you can write to; no run has started.`);
  }
  await unlink(probe).catch(() => undefined);
}

function reason(err: unknown): string {
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

/**
 * Writes every output, each on its own: one that fails (a disk that filled up during the run) does
 * not keep the others from being written. Returns the failures, each naming its file.
 */
export async function writeOutputs(writes: Array<{ what: string; path: string; write: () => Promise<void> }>): Promise<string[]> {
  const failures: string[] = [];
  for (const w of writes) {
    try {
      await w.write();
    } catch (err) {
      failures.push(`${w.what} could not be written to ${w.path} (${reason(err)})`);
    }
  }
  return failures;
}
