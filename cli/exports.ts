import { resultSetDocument, type ResultSet, type ResultSetDocument } from '../core/analysis/resultSet';
import { unwritableReason, writeExport, type ExportTarget } from '../core/export/writeExport';
import { loadAnyProfile } from '../core/profile/json';
import { profileFromResultSets } from '../core/profile/fromResultSet';
import type { Profile } from '../core/profile/model';
import type { ExportCommand } from './args';

/** What the CLI prints to; the subset of CliIo this file needs. */
interface Io {
  out(text: string): void;
  err(text: string): void;
}

/** Every destination writable, or an error naming the file and the fix; runs before any target is touched. */
export async function checkExportTargets(targets: readonly ExportTarget[]): Promise<void> {
  const seen = new Set<string>();
  for (const t of targets) {
    if (seen.has(t.path)) throw new Error(`--export names ${t.path} twice: give each format its own file`);
    seen.add(t.path);
    const reason = await unwritableReason(t.path);
    if (reason) throw new Error(`--export ${t.format.id}:${t.path}: ${reason}`);
  }
}

export async function writeExports(profile: Profile, targets: readonly ExportTarget[], io: Io): Promise<void> {
  for (const t of targets) {
    const bytes = await writeExport(profile, t);
    io.err(
      `cyclelens: ${t.format.label} written to ${t.path} (${bytes.toLocaleString('en-US')} bytes; ` +
        `opens in ${t.format.opensIn})\n`,
    );
  }
}

/**
 * After an analysis that failed: each --export says what became of it. With finished runs, the
 * exports are written from those (and say so); without any, each says it was not written and why.
 * Returns how many could not be written.
 */
export async function writeExportsOfFailedRun(
  targets: readonly ExportTarget[],
  finished: readonly ResultSet[],
  io: Io,
): Promise<number> {
  if (targets.length === 0) return 0;
  if (finished.length === 0) {
    for (const t of targets)
      io.err(`cyclelens: --export ${t.format.id}:${t.path} not written: the analysis ended before any run finished\n`);
    return targets.length;
  }
  let failed = 0;
  let profile: Profile;
  try {
    profile = profileOfRun(resultSetDocument([...finished], undefined, 'cyclelens-cli (partial)'));
  } catch (err) {
    for (const t of targets)
      io.err(
        `cyclelens: --export ${t.format.id}:${t.path} not written: the finished runs do not make a ` +
          `profile (${err instanceof Error ? err.message : String(err)})\n`,
      );
    return targets.length;
  }
  for (const t of targets) {
    try {
      io.err(
        `cyclelens: --export ${t.format.id}:${t.path}: the analysis did not finish; writing the ${finished.length} ` +
          `run(s) that did\n`,
      );
      await writeExports(profile, [t], io);
    } catch (err) {
      failed++;
      io.err(
        `cyclelens: --export ${t.format.id}:${t.path} not written: ` +
          `${err instanceof Error ? err.message : String(err)}\n`,
      );
    }
  }
  return failed;
}

export function profileOfRun(doc: ResultSetDocument): Profile {
  return profileFromResultSets(doc, { generator: 'cyclelens-cli' });
}

/** `cyclelens export INPUT --format F -o OUTPUT`: exit 0 written, 1 unreadable input or unwritable output. */
export async function runExportCommand(cmd: ExportCommand, io: Io): Promise<number> {
  try {
    const reason = await unwritableReason(cmd.target.path);
    if (reason) throw new Error(reason);
    const profile = await loadAnyProfile(cmd.input);
    await writeExports(profile, [cmd.target], io);
    return 0;
  } catch (err) {
    io.err(`cyclelens: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}
