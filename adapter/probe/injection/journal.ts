import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { ElfImage } from '../../elf';
import type { TargetAccess } from '../targetAccess';
import { hex } from './errors';

/**
 * The patch journal: before any code byte is overwritten, the original bytes go to
 * `<dir>/<elf-hash>.<owner>.json`, so a session that dies with patches in place (adapter crash, killed
 * QEMU with the board left running, a lost probe) can put the program back at the next launch.
 * Removal deletes the entries; the file disappears when nothing is patched.
 *
 * One file per adapter process (the owner: pid and the process's start time, so a recycled pid is not
 * mistaken for a live owner): two windows or two CLIs on one workspace and one ELF each keep their
 * own entries, and one session's cleanup never deletes what another still needs. A journal whose
 * owner is still alive belongs to a running session and is left alone at launch.
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

/** The adapter process that wrote a journal. */
export interface JournalOwner {
  pid: number;
  /** Kernel start time of the process (Linux /proc/PID/stat field 22), when known. */
  startTime?: string;
}

export interface JournalFile {
  schema: typeof JOURNAL_SCHEMA;
  elf: string;
  elfHash: string;
  updated: string;
  /** Absent in journals written before journals were per process. */
  owner?: JournalOwner;
  reserved: { start: number; size: number };
  /** RV32: tp before the injector took it (hex), restored when the last measurement goes. */
  threadPointer?: string;
  /**
   * Registers changed by the interrupt sampler (mtvec, mscratch, mie): hex of the original and of
   * what was written. A launch restores one only while it still holds what was written.
   */
  registers?: Record<string, { original: string; patched: string }>;
  patches: JournalPatch[];
}

export function elfHash(elf: ElfImage): string {
  return createHash('sha256').update(elf.file.bytes).digest('hex').slice(0, 16);
}

/** Fields 3 and on of /proc/PID/stat (state first), or undefined when the process is not there. */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // Fields after the command name (which may hold spaces) start at ") ".
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** Kernel start time of a process (field 22 of /proc/PID/stat). */
function processStartTime(pid: number): string | undefined {
  return statFields(pid)?.[19];
}

const thisOwner: JournalOwner = {
  pid: process.pid,
  ...(processStartTime(process.pid) ? { startTime: processStartTime(process.pid)! } : {}),
};

/** Whether the process that wrote a journal still runs (then its session may still need it). */
export function ownerIsAlive(owner: JournalOwner | undefined): boolean {
  if (!owner || !Number.isInteger(owner.pid) || owner.pid <= 0) return false;
  // This process's own journals come from sessions that ended here (or their debugger died).
  if (owner.pid === process.pid && owner.startTime === thisOwner.startTime) return false;
  try {
    process.kill(owner.pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  const fields = statFields(owner.pid);
  // A process that has ended but is not yet reaped (a zombie, `Z`; `X` while it goes) still takes
  // signals, yet runs no session: where nothing reaps it (a container without an init), it never goes.
  if (fields && (fields[0] === 'Z' || fields[0] === 'X')) return false;
  const start = fields?.[19];
  return owner.startTime === undefined || start === undefined || start === owner.startTime;
}

/** Directory of patch journals: a crashed session's patches are restored from here at the next launch. */
export function journalDir(cwd: string): string {
  return join(cwd, '.cyclelens', 'journal');
}

/**
 * This process's journal for `elf` in `dir`; `tag` names a second journal of the same process (the
 * interrupt sampler's).
 */
export function journalPath(dir: string, elf: ElfImage, tag?: string): string {
  return join(dir, `${elfHash(elf)}.${process.pid}${tag ? `.${tag}` : ''}.json`);
}

/** Every journal for `elf` in `dir`: this process's, other sessions', and one from before journals were per process. */
export function journalFiles(dir: string, elf: ElfImage): string[] {
  const hash = elfHash(elf);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const own = new RegExp(`^${hash}(\\.\\d+)?(\\.[a-z]+)?\\.json$`);
  return names
    .filter((n) => own.test(n))
    .sort()
    .map((n) => join(dir, n));
}

export class PatchJournal {
  private data: JournalFile;

  constructor(
    private readonly dir: string,
    private readonly elf: ElfImage,
    reserved: { start: number; size: number },
    private readonly tag?: string,
  ) {
    this.data = {
      schema: JOURNAL_SCHEMA,
      elf: elf.path,
      elfHash: elfHash(elf),
      updated: '',
      owner: thisOwner,
      reserved,
      patches: [],
    };
  }

  get path(): string {
    return journalPath(this.dir, this.elf, this.tag);
  }

  setRegisters(registers: Record<string, { original: bigint; patched: bigint }> | undefined): void {
    if (registers === undefined) delete this.data.registers;
    else
      this.data.registers = Object.fromEntries(
        Object.entries(registers).map(([k, v]) => [
          k,
          { original: v.original.toString(16), patched: v.patched.toString(16) },
        ]),
      );
    this.flush();
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
    delete this.data.registers;
    rmSync(this.path, { force: true });
  }

  private flush(): void {
    if (this.data.patches.length === 0 && this.data.threadPointer === undefined && this.data.registers === undefined) {
      rmSync(this.path, { force: true });
      return;
    }
    mkdirSync(this.dir, { recursive: true });
    this.data.updated = new Date().toISOString();
    // A name no other writer uses: two sessions renaming one fixed `.tmp` name lost each other's file.
    const tmp = `${this.path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(this.data, null, 2)}\n`);
    renameSync(tmp, this.path);
  }
}

export interface RestoreReport {
  /** The last journal read for this ELF, or undefined when there was none. */
  journal?: string;
  /** Every journal read (this ELF, owners no longer running). */
  journals: string[];
  /** Patches whose original bytes were written back. */
  restored: number[];
  /** Patches already gone (the program was reloaded or reset since). */
  alreadyOriginal: number[];
  /** Patches where the target holds neither the original nor the patched bytes: left alone. */
  conflicts: Array<{ address: number; found: string }>;
  /** Original bytes that differ from the ELF's own (the ELF changed?): reported, not written. */
  mismatches: number[];
  threadPointerRestored: boolean;
  /** Registers the interrupt sampler had changed, put back. */
  registersRestored: string[];
  /** Journals that could not be read: moved aside (kept for inspection), the launch goes on. */
  damaged: Array<{ path: string; movedTo: string; problem: string }>;
  /** Journals of sessions still running (another window or CLI): theirs, left alone. */
  liveElsewhere: string[];
}

/** What is wrong with a journal's content, or undefined when it is well formed. */
export function journalProblem(data: unknown): string | undefined {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return 'it is not a JSON object';
  const d = data as Record<string, unknown>;
  if (d.schema !== JOURNAL_SCHEMA)
    return `its schema is ${JSON.stringify(d.schema) ?? 'missing'}, not "${JOURNAL_SCHEMA}"`;
  if (
    d.threadPointer !== undefined &&
    (typeof d.threadPointer !== 'string' || !/^[0-9a-f]{1,16}$/i.test(d.threadPointer))
  )
    return 'threadPointer is not a hex number';
  if (d.registers !== undefined) {
    if (typeof d.registers !== 'object' || d.registers === null || Array.isArray(d.registers))
      return 'registers is not an object';
    for (const [name, v] of Object.entries(d.registers as Record<string, unknown>)) {
      const r = v as Record<string, unknown> | null;
      if (
        typeof r !== 'object' ||
        r === null ||
        typeof r.original !== 'string' ||
        typeof r.patched !== 'string' ||
        !/^[0-9a-f]{1,16}$/i.test(r.original) ||
        !/^[0-9a-f]{1,16}$/i.test(r.patched)
      )
        return `registers.${name} does not hold hex original and patched values`;
    }
  }
  if (!Array.isArray(d.patches)) return 'patches is not a list';
  for (const [i, raw] of d.patches.entries()) {
    const p = raw as Partial<Record<keyof JournalPatch, unknown>> | null;
    if (typeof p !== 'object' || p === null) return `patches[${i}] is not an object`;
    if (typeof p.address !== 'number' || !Number.isInteger(p.address) || p.address < 0 || p.address > 0xffff_ffff)
      return `patches[${i}].address is not a 32-bit address`;
    for (const k of ['original', 'patched'] as const) {
      const v = p[k];
      if (typeof v !== 'string' || v.length === 0 || v.length % 2 !== 0 || !/^[0-9a-f]*$/i.test(v))
        return `patches[${i}].${k} is not a hex byte string`;
    }
    if ((p.original as string).length !== (p.patched as string).length)
      return `patches[${i}] has original and patched bytes of different lengths`;
  }
  return undefined;
}

/** Reads a journal, or says what is wrong with it. */
function readJournal(path: string): { data: JournalFile } | { problem: string } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    return { problem: `it cannot be read (${(err as Error).message})` };
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    return {
      problem: `it is not valid JSON (${(err as Error).message}${text.trim() === '' ? '; the file is empty' : ''})`,
    };
  }
  const problem = journalProblem(data);
  return problem ? { problem } : { data: data as JournalFile };
}

/** Keeps a damaged journal for a person to inspect, under a name no launch reads again. */
function moveAside(path: string): string {
  const to = `${path}.damaged-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  try {
    renameSync(path, to);
    return to;
  } catch {
    // Could not rename (read-only directory?): it stays, and the next launch reports it again.
    return path;
  }
}

/**
 * Puts back whatever previous sessions left patched in this program: call at launch, with the
 * target halted, before anything else writes code. A journal is deleted once every patch in it is
 * accounted for; conflicts keep it (and are reported) for a person to look at. A damaged journal
 * does not stop the launch (the program is loaded from the ELF anyway): it is moved aside and
 * reported.
 */
export async function restoreFromJournal(access: TargetAccess, elf: ElfImage, dir: string): Promise<RestoreReport> {
  const report: RestoreReport = {
    journals: [],
    restored: [],
    alreadyOriginal: [],
    conflicts: [],
    mismatches: [],
    threadPointerRestored: false,
    registersRestored: [],
    damaged: [],
    liveElsewhere: [],
  };
  for (const path of journalFiles(dir, elf)) {
    const read = readJournal(path);
    if ('problem' in read) {
      report.damaged.push({ path, movedTo: moveAside(path), problem: read.problem });
      continue;
    }
    if (ownerIsAlive(read.data.owner)) {
      report.liveElsewhere.push(path);
      continue;
    }
    report.journal = path;
    report.journals.push(path);
    await restoreOne(access, elf, path, read.data, report);
  }
  return report;
}

async function restoreOne(
  access: TargetAccess,
  elf: ElfImage,
  path: string,
  data: JournalFile,
  report: RestoreReport,
): Promise<void> {
  const restoredBefore = report.restored.length;
  const keptBefore = report.conflicts.length + report.mismatches.length;
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
    if (!check.equals(original))
      throw new Error(
        `Restoring ${hex(p.address)} did not stick (reads ${check.toString('hex')}); the memory may be flash.`,
      );
    report.restored.push(p.address);
  }
  if (data.threadPointer !== undefined && report.restored.length > restoredBefore) {
    await access.writeRegister('tp', BigInt(`0x${data.threadPointer}`));
    report.threadPointerRestored = true;
  }
  for (const [name, v] of Object.entries(data.registers ?? {})) {
    if ((await access.readRegister(name)) !== BigInt(`0x${v.patched}`)) continue;
    await access.writeRegister(name, BigInt(`0x${v.original}`));
    report.registersRestored.push(name);
  }
  if (report.conflicts.length + report.mismatches.length === keptBefore) rmSync(path, { force: true });
}

/** Addresses as `0x… (function)`, for messages. */
function where(addresses: readonly number[], elf: ElfImage): string {
  return addresses
    .map((a) => {
      const fn = elf.functionContaining(a)?.name;
      return fn ? `${hex(a)} (${fn})` : hex(a);
    })
    .join(', ');
}

/**
 * The launch message for a restore: what was put back and where, what was left and why, or
 * undefined when no journal was found. Each part is a full sentence; no part is ever empty.
 */
export function describeRestore(
  report: RestoreReport,
  elf: ElfImage,
): { text: string; important: boolean } | undefined {
  const lines: string[] = [];
  for (const d of report.damaged) {
    const kept =
      d.movedTo === d.path
        ? `It could not be moved aside and stays at ${d.path}`
        : `It was moved aside to ${d.movedTo} for inspection`;
    lines.push(
      `The patch journal ${d.path} is damaged: ${d.problem}. ${kept}; the launch goes on with the ` +
        `program loaded from the ELF. If a previous session left measurements patched into a ` +
        `board's RAM, reset the board.`,
    );
  }
  if (report.journals.length > 0) {
    const parts: string[] = [];
    if (report.restored.length)
      parts.push(
        `restored the original bytes at ${report.restored.length} address(es): ${where(report.restored, elf)}` +
          `${report.threadPointerRestored ? ', and the tp register' : ''}`,
      );
    if (report.registersRestored.length)
      parts.push(`restored the register(s) ${report.registersRestored.join(', ')} the interrupt sampler had changed`);
    if (report.alreadyOriginal.length)
      parts.push(
        `found ${report.alreadyOriginal.length} address(es) already original (the program was ` +
          `reloaded since): ${where(report.alreadyOriginal, elf)}`,
      );
    if (report.conflicts.length)
      parts.push(
        `left ${report.conflicts.length} address(es) alone because the target holds unexpected ` +
          `bytes there: ${report.conflicts.map((c) => `${where([c.address], elf)} reads ${c.found}`).join(', ')} ` +
          `(journal kept)`,
      );
    if (report.mismatches.length)
      parts.push(
        `did not write ${report.mismatches.length} address(es) because the ELF changed since they ` +
          `were journaled: ${where(report.mismatches, elf)} (journal kept)`,
      );
    if (parts.length === 0) parts.push('found nothing left to restore');
    const journals = report.journals.map((j) => basename(j)).join(', ');
    lines.push(
      `CycleLens found patches a previous session left in this program (${journals}) and ${parts.join('; ')}.`,
    );
  }
  if (lines.length === 0) return undefined;
  return {
    text: `${lines.join('\n')}\n`,
    important: report.damaged.length > 0 || report.conflicts.length > 0 || report.mismatches.length > 0,
  };
}
