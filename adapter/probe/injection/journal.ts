import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ElfImage } from '../../elf';
import type { TargetAccess } from '../targetAccess';
import { hex } from './errors';

/**
 * The patch journal: before any code byte is overwritten, the original bytes go to
 * `<dir>/<elf-hash>.json`, so a session that dies with patches in place (adapter crash, killed
 * QEMU with the board left running, a lost probe) can put the program back at the next launch.
 * Removal deletes the entries; the file disappears when nothing is patched.
 */
export const JOURNAL_SCHEMA = 'cyclelens-patch-journal/1';

export interface JournalPatch {
  /** Measurement the patch belongs to. */
  measurement: number;
  address: number;
  /** Hex of the program's bytes and of what was written. */
  original: string;
  patched: string;
}

export interface JournalFile {
  schema: typeof JOURNAL_SCHEMA;
  elf: string;
  elfHash: string;
  updated: string;
  reserved: { start: number; size: number };
  /** RV32: tp before the injector took it (hex), restored when the last measurement goes. */
  threadPointer?: string;
  patches: JournalPatch[];
}

export function elfHash(elf: ElfImage): string {
  return createHash('sha256').update(elf.file.bytes).digest('hex').slice(0, 16);
}

export function journalPath(dir: string, elf: ElfImage): string {
  return join(dir, `${elfHash(elf)}.json`);
}

export class PatchJournal {
  private data: JournalFile;

  constructor(
    private readonly dir: string,
    private readonly elf: ElfImage,
    reserved: { start: number; size: number },
  ) {
    this.data = { schema: JOURNAL_SCHEMA, elf: elf.path, elfHash: elfHash(elf), updated: '', reserved, patches: [] };
  }

  get path(): string {
    return journalPath(this.dir, this.elf);
  }

  get patches(): readonly JournalPatch[] {
    return this.data.patches;
  }

  setThreadPointer(original: bigint | undefined): void {
    if (original === undefined) delete this.data.threadPointer;
    else this.data.threadPointer = original.toString(16);
    this.flush();
  }

  /** Records patches; returns once the file is on disk (written to a temporary file, then renamed). */
  add(patches: JournalPatch[]): void {
    this.data.patches.push(...patches);
    this.flush();
  }

  removeMeasurement(id: number): void {
    this.data.patches = this.data.patches.filter((p) => p.measurement !== id);
    this.flush();
  }

  /** Deletes the file: nothing is patched any more. */
  clear(): void {
    this.data.patches = [];
    delete this.data.threadPointer;
    rmSync(this.path, { force: true });
  }

  private flush(): void {
    if (this.data.patches.length === 0 && this.data.threadPointer === undefined) {
      rmSync(this.path, { force: true });
      return;
    }
    mkdirSync(this.dir, { recursive: true });
    this.data.updated = new Date().toISOString();
    const tmp = `${this.path}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(this.data, null, 2)}\n`);
    renameSync(tmp, this.path);
  }
}

export interface RestoreReport {
  /** The journal found for this ELF, or undefined when there was none. */
  journal?: string;
  /** Patches whose original bytes were written back. */
  restored: number[];
  /** Patches already gone (the program was reloaded or reset since). */
  alreadyOriginal: number[];
  /** Patches where the target holds neither the original nor the patched bytes: left alone. */
  conflicts: Array<{ address: number; found: string }>;
  /** Original bytes that differ from the ELF's own (the ELF changed?): reported, not written. */
  mismatches: number[];
  threadPointerRestored: boolean;
}

/**
 * Puts back whatever a previous session left patched in this program: call at launch, with the
 * target halted, before anything else writes code. The journal is deleted once every patch is
 * accounted for; conflicts keep it (and are reported) for a person to look at.
 */
export async function restoreFromJournal(access: TargetAccess, elf: ElfImage, dir: string): Promise<RestoreReport> {
  const path = journalPath(dir, elf);
  const report: RestoreReport = { restored: [], alreadyOriginal: [], conflicts: [], mismatches: [], threadPointerRestored: false };
  if (!existsSync(path)) return report;
  report.journal = path;
  const data = JSON.parse(readFileSync(path, 'utf8')) as JournalFile;
  if (data.schema !== JOURNAL_SCHEMA) throw new Error(`${path} is not a CycleLens patch journal (schema ${String(data.schema)})`);
  for (const p of data.patches) {
    const original = Buffer.from(p.original, 'hex');
    const patched = Buffer.from(p.patched, 'hex');
    const image = elf.file.readMemory(p.address, original.length);
    if (image && !Buffer.from(image).equals(original)) {
      report.mismatches.push(p.address);
      continue;
    }
    const now = await access.readMemory(BigInt(p.address), original.length);
    if (now.equals(original)) {
      report.alreadyOriginal.push(p.address);
      continue;
    }
    if (!now.equals(patched)) {
      report.conflicts.push({ address: p.address, found: now.toString('hex') });
      continue;
    }
    await access.writeMemory(BigInt(p.address), original);
    const check = await access.readMemory(BigInt(p.address), original.length);
    if (!check.equals(original)) throw new Error(`Restoring ${hex(p.address)} did not stick (reads ${check.toString('hex')}); the memory may be flash.`);
    report.restored.push(p.address);
  }
  if (data.threadPointer !== undefined && report.restored.length > 0) {
    await access.writeRegister('tp', BigInt(`0x${data.threadPointer}`));
    report.threadPointerRestored = true;
  }
  if (report.conflicts.length === 0 && report.mismatches.length === 0) rmSync(path, { force: true });
  return report;
}
