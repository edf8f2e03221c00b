import type { ImageBytes } from '../types';

/**
 * Whether GDB may answer reads of the program's read-only sections (code, constants, vector tables)
 * from the ELF instead of the target (`set trust-readonly-sections`). At each single step of a
 * `next` and for each frame it unwinds, GDB reads instructions around the pc for its prologue and
 * epilogue analysis, after every resume again: on the Cortex-M4 fixture that is about a hundred
 * 2- and 4-byte reads per `next` and stack listing, each a round trip to the gdbserver (on a probe,
 * a millisecond or more). From the file they cost nothing.
 *
 * That holds only while the target has what the file has, so it is granted only after the image
 * was put there (QEMU loaded it, or a download ran) and then kept honest:
 * - a write whose address is known (a patched call site, a vector-table entry, a user's memory
 *   write) is compared byte by byte with the file; while any byte differs, GDB reads the target;
 *   a later write that puts the file's bytes back restores the trust;
 * - a write that may land anywhere (a command typed for the debugger, an assignment or a call in an
 *   expression) ends the trust until the image is loaded again.
 * What the program writes into its own read-only sections (code copied to RAM and patched at run
 * time) is not seen.
 */
export class ReadonlyTrust {
  /** Addresses of bytes in read-only sections that hold something other than the file's. */
  private readonly differing = new Set<number>();
  private unplacedWrite = false;

  constructor(private readonly sections: readonly ImageBytes[]) {}

  /** True when GDB may read the read-only sections from the file. */
  get holds(): boolean {
    return !this.unplacedWrite && this.differing.size === 0;
  }

  /** True when the range [address, address + size) meets a read-only section. */
  overlaps(address: number, size: number): boolean {
    return this.sections.some((s) => address < s.address + s.bytes.length && s.address < address + size);
  }

  /** `data` is being written at `address`. */
  noteWrite(address: number, data: Uint8Array): void {
    for (const s of this.sections) {
      const from = Math.max(address, s.address);
      const to = Math.min(address + data.length, s.address + s.bytes.length);
      for (let a = from; a < to; a++) {
        if (data[a - address] === s.bytes[a - s.address]) this.differing.delete(a);
        else this.differing.add(a);
      }
    }
  }

  /** Something may have written memory at an address nobody can tell. */
  noteUnplacedWrite(): void {
    this.unplacedWrite = true;
  }

  /** The whole image was written to the target again. */
  noteReload(): void {
    this.differing.clear();
    this.unplacedWrite = false;
  }
}
