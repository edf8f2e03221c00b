import type { TargetAccess } from '../targetAccess';
import { InjectionRefusedError, hex, refusal } from './errors';
import type { PatchJournal } from './journal';
import type { ProgramModel } from './programModel';
import type { Measurement } from './serviceTypes';

type Patch = Measurement['patches'][number];

/**
 * Code bytes written and put back under the patch journal (adapter/probe/injection/journal.ts): the
 * original bytes are journaled before the first write, every write is read back, and a restore is
 * checked against the ELF, so nothing the injector touches can stay changed unnoticed.
 */
export class PatchWriter {
  constructor(
    private readonly access: TargetAccess,
    private readonly model: ProgramModel,
    private readonly journal: PatchJournal,
  ) {}

  /**
   * Journal first (if anything dies from here on, the next launch can put the bytes back), then
   * every patch written and read back. A patch that does not stick undoes the ones written before
   * it and the journal entries. `journaled` is false for the calibration's own patches, which live
   * in the reserved memory only.
   */
  async apply(id: number, patches: readonly Patch[], journaled: boolean): Promise<void> {
    if (journaled)
      this.journal.add(
        patches.map((p) => ({
          measurement: id,
          address: p.address,
          original: Buffer.from(p.original).toString('hex'),
          patched: Buffer.from(p.patched).toString('hex'),
        })),
      );
    const written: Patch[] = [];
    try {
      for (const p of patches) {
        await this.access.writeMemory(BigInt(p.address), p.patched);
        written.push(p);
        const check = await this.access.readMemory(BigInt(p.address), p.patched.length);
        if (!check.equals(Buffer.from(p.patched))) {
          throw new InjectionRefusedError(
            refusal(
              'memory',
              `The patch at ${hex(p.address)} did not stick (reads ${check.toString('hex')}); the code is ` +
                `probably in flash. Allow flash writes or reserve RAM for the code.`,
              p.address,
            ),
          );
        }
      }
    } catch (err) {
      for (const p of written) await this.access.writeMemory(BigInt(p.address), p.original);
      if (journaled) this.journal.removeMeasurement(id);
      throw err;
    }
  }

  /**
   * Puts the original bytes back and returns what went wrong: code changed behind the patch, a
   * restore that did not stick, or bytes that differ from the ELF. The journal entries stay until
   * `forget`, once the measurement's memory is given back.
   */
  async restore(patches: readonly Patch[]): Promise<string[]> {
    const problems: string[] = [];
    for (const p of patches) {
      const now = await this.access.readMemory(BigInt(p.address), p.patched.length);
      if (!now.equals(Buffer.from(p.patched)))
        problems.push(`the code at ${hex(p.address)} changed after injection (reads ${now.toString('hex')})`);
      await this.access.writeMemory(BigInt(p.address), p.original);
      const check = await this.access.readMemory(BigInt(p.address), p.original.length);
      const image = this.model.imageBytes(p.address, p.original.length);
      if (!check.equals(Buffer.from(p.original)))
        problems.push(`restoring ${hex(p.address)} did not stick (reads ${check.toString('hex')})`);
      else if (image && !check.equals(Buffer.from(image)))
        problems.push(
          `${hex(p.address)} now holds ${check.toString('hex')}, but the ELF has ${Buffer.from(image).toString('hex')}`,
        );
    }
    return problems;
  }

  /** Puts the original bytes back unchecked (the calibration's patches, never journaled). */
  async restoreUnchecked(patches: readonly Patch[]): Promise<void> {
    for (const p of patches) await this.access.writeMemory(BigInt(p.address), p.original);
  }

  forget(id: number): void {
    this.journal.removeMeasurement(id);
  }

  /** RV32: tp as the program had it, kept so a later launch can give it back. */
  setThreadPointer(original: bigint): void {
    this.journal.setThreadPointer(original);
  }

  clear(): void {
    this.journal.clear();
  }
}
