import type { FlashModel } from './boardFlash';
import { binaryData } from './boardPackets';

/**
 * TEST DOUBLE support — the board double's flash packets, as OpenOCD 0.12's gdb_server.c answers
 * them (GDB manual, "Packets": vFlashErase, vFlashWrite, vFlashDone):
 *  - `vFlashErase:addr,length`: the target event `gdb-flash-erase-start` (OpenOCD's default:
 *    `reset init`), then the erase of whole sectors; a range that is not sector-aligned, or not in
 *    flash, fails with `E05` (EIO: GDB "doesn't evaluate the actual error number");
 *  - `vFlashWrite:addr:data`: added to the flash image, nothing programmed yet;
 *  - `vFlashDone`: the image programmed, contiguous writes as one run (OpenOCD's flash_write); a
 *    write outside flash `E.memtype`, a failed program `E05`; then `gdb-flash-write-end`
 *    (`reset halt`), whether or not the write succeeded.
 */

export interface VFlashHooks {
  /** A halting reset (OpenOCD's `reset init` and `reset halt` do the same on the double). */
  resetHalt(): Promise<void>;
  /** Copies flash contents where the core fetches them. */
  mirror(address: number, length: number): Promise<void>;
  /** Waits a modelled erase or program time. */
  wait(ms: number): Promise<void>;
  /** A failed operation, as OpenOCD would log it. */
  failed(reason: string): void;
}

const E_IO = 'E05';

export class VFlashPackets {
  private image: Array<{ address: number; data: Buffer }> = [];

  constructor(
    private readonly flash: FlashModel,
    private readonly hooks: VFlashHooks,
  ) {}

  async erase(text: string): Promise<string> {
    const m = /^vFlashErase:([0-9a-fA-F]+),([0-9a-fA-F]+)$/.exec(text);
    if (!m) return 'E01';
    const address = parseInt(m[1]!, 16);
    const length = parseInt(m[2]!, 16);
    await this.hooks.resetHalt();
    const r = this.flash.erase(address, length);
    if (!r.ok) return this.failed(r.reason);
    await this.hooks.mirror(address, length);
    await this.hooks.wait(r.modelledMs);
    return 'OK';
  }

  write(text: string, raw: Buffer): string {
    const m = /^vFlashWrite:([0-9a-fA-F]+):/.exec(text);
    if (!m) return 'E01';
    this.image.push({ address: parseInt(m[1]!, 16), data: Buffer.from(binaryData(raw, 'vFlashWrite:'.length)) });
    return 'OK';
  }

  async done(): Promise<string> {
    const image = mergeContiguous(this.image);
    this.image = [];
    if (image.length === 0) return 'OK'; // GDB's `flash-erase` writes nothing
    const reply = await this.program(image);
    await this.hooks.resetHalt();
    return reply;
  }

  private async program(image: ReadonlyArray<{ address: number; data: Buffer }>): Promise<string> {
    let ms = 0;
    try {
      for (const { address, data } of image) {
        if (!this.flash.contains(address, data.length)) {
          this.hooks.failed(`0x${address.toString(16)}+0x${data.length.toString(16)} is outside the flash`);
          return 'E.memtype';
        }
        const r = this.flash.program(address, data);
        // What was programmed before a failure stays programmed, on the board as in QEMU.
        await this.hooks.mirror(address, data.length);
        if (!r.ok) return this.failed(r.reason);
        ms += r.modelledMs;
      }
      return 'OK';
    } finally {
      await this.hooks.wait(ms);
    }
  }

  private failed(reason: string): string {
    this.hooks.failed(reason);
    return E_IO;
  }
}

/** Contiguous parts joined, in address order. */
function mergeContiguous(
  parts: ReadonlyArray<{ address: number; data: Buffer }>,
): Array<{ address: number; data: Buffer }> {
  const sorted = [...parts].sort((a, b) => a.address - b.address);
  const out: Array<{ address: number; data: Buffer }> = [];
  for (const p of sorted) {
    const last = out[out.length - 1];
    if (last && last.address + last.data.length === p.address) last.data = Buffer.concat([last.data, p.data]);
    else out.push({ address: p.address, data: p.data });
  }
  return out;
}
