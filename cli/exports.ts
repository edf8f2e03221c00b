import type { ResultSetDocument } from '../core/analysis/resultSet';
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
      `cyclelens: ${t.format.label} written to ${t.path} (${bytes.toLocaleString('en-US')} bytes; opens in ${t.format.opensIn})\n`,
    );
  }
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
