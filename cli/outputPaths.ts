import { mkdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileErrorWords, probeWrite } from '../core/export/writeExport';

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
    throw new Error(
      `${option} ${path}: its directory ${dir} does not exist and cannot be created (${fileErrorWords(err)}). ` +
        `Choose a place you can write to.`,
    );
  }
  const refused = await probeWrite(resolve(path));
  if (refused)
    throw new Error(
      `${option} ${path}: nothing can be written in ${dir} (${refused}). Choose a place you can ` +
        `write to; no run has started.`,
    );
}

/**
 * Writes every output, each on its own: one that fails (a disk that filled up during the run) does
 * not keep the others from being written. Returns the failures, each naming its file.
 */
export async function writeOutputs(
  writes: Array<{ what: string; path: string; write: () => Promise<void> }>,
): Promise<string[]> {
  const failures: string[] = [];
  for (const w of writes) {
    try {
      await w.write();
    } catch (err) {
      failures.push(`${w.what} could not be written to ${w.path} (${fileErrorWords(err)})`);
    }
  }
  return failures;
}
