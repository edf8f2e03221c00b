import type { BoardLayout, FlashSector } from './boardProfiles';

/**
 * TEST DOUBLE support — the flash of a part profile (boardProfiles.ts) as NOR flash behaves:
 *  - an erase works on whole sectors only and sets every byte of them to 0xFF;
 *  - a program can only turn 1 bits into 0 bits: a byte that needs a 0 to become 1 is not
 *    programmed, and the write fails there (RM0090 §3.5.4; nRF52840 NVMC; SPI NOR page program);
 *  - where the part limits it (nRF52840: twice per word), a unit written too often since its last
 *    erase fails too;
 *  - writes are padded with 0xFF to the part's program unit, as OpenOCD's flash_write pads them;
 *    the padding programs nothing, but counts as a write of that unit.
 * It counts erases per sector (for the life of the model) and models the datasheet's erase and
 * program times; it never sleeps itself (the double adds the delay).
 */

export type FlashResult = { ok: true; modelledMs: number } | { ok: false; reason: string; address?: number };

export interface FlashSessionCounts {
  /** Sector erases since the counts were last reset, by sector index. */
  erases: number[];
  /** Program units written. */
  unitsProgrammed: number;
  /** Bytes handed to program (before padding). */
  bytesProgrammed: number;
  modelledEraseMs: number;
  modelledProgramMs: number;
}

export class FlashModel {
  readonly sectors: readonly FlashSector[];
  readonly start: number;
  readonly size: number;
  private readonly bytes: Buffer;
  /** Writes to each program unit since its sector's last erase. */
  private readonly writes: Uint16Array;
  private readonly lifetimeErases: number[];
  private session: FlashSessionCounts;

  constructor(private readonly layout: BoardLayout) {
    this.sectors = layout.sectors;
    this.start = layout.flashStart;
    this.size = layout.flashSize;
    // Parts leave the factory erased.
    this.bytes = Buffer.alloc(this.size, 0xff);
    this.writes = new Uint16Array(Math.ceil(this.size / layout.profile.flash.programUnit));
    this.lifetimeErases = this.sectors.map(() => 0);
    this.session = this.freshCounts();
  }

  get programUnit(): number {
    return this.layout.profile.flash.programUnit;
  }

  /** Whether [address, address + length) lies wholly in flash. */
  contains(address: number, length: number): boolean {
    return address >= this.start && address + length <= this.start + this.size;
  }

  /** Whether [address, address + length) touches flash at all. */
  overlaps(address: number, length: number): boolean {
    return length > 0 && address < this.start + this.size && address + length > this.start;
  }

  /** The sector holding `address`, if it is in flash. */
  sectorAt(address: number): FlashSector | undefined {
    if (!this.contains(address, 1)) return undefined;
    // Few sectors (at most a few hundred): a scan is plenty.
    return this.sectors.find((s) => address >= s.start && address < s.start + s.size);
  }

  /** The sectors [address, address + length) touches, in order. */
  sectorsIn(address: number, length: number): FlashSector[] {
    return this.sectors.filter((s) => s.start < address + length && s.start + s.size > address);
  }

  read(address: number, length: number): Buffer {
    if (!this.contains(address, length)) throw new Error(`read of 0x${address.toString(16)}+${length} outside flash`);
    return Buffer.from(this.bytes.subarray(address - this.start, address - this.start + length));
  }

  /** Erases whole sectors; [address, address + length) must start and end on sector boundaries. */
  erase(address: number, length: number): FlashResult {
    if (length <= 0) return { ok: false, reason: 'an erase of no bytes' };
    if (!this.contains(address, length)) {
      return { ok: false, reason: `0x${hex(address)}+0x${hex(length)} is not inside the flash`, address };
    }
    const sectors = this.sectorsIn(address, length);
    const first = sectors[0]!;
    const last = sectors[sectors.length - 1]!;
    if (first.start !== address || last.start + last.size !== address + length) {
      return {
        ok: false,
        reason:
          `address range 0x${hex(address)} .. 0x${hex(address + length - 1)} is not sector-aligned ` +
          `(sectors 0x${hex(first.start)} .. 0x${hex(last.start + last.size - 1)})`,
        address,
      };
    }
    let ms = 0;
    const unit = this.programUnit;
    for (const s of sectors) {
      this.bytes.fill(0xff, s.start - this.start, s.start - this.start + s.size);
      this.writes.fill(0, (s.start - this.start) / unit, (s.start - this.start + s.size) / unit);
      this.lifetimeErases[s.index]!++;
      this.session.erases[s.index]!++;
      ms += s.eraseMs;
    }
    this.session.modelledEraseMs += ms;
    return { ok: true, modelledMs: ms };
  }

  /**
   * Programs `data` at `address`, padded with 0xFF to whole program units, in address order. It stops
   * at the first unit that needs a 0 turned into a 1, or that was written as often as the part allows
   * since its last erase: that unit and those after it are left as they were.
   */
  program(address: number, data: Uint8Array): FlashResult {
    if (data.length === 0) return { ok: true, modelledMs: 0 };
    if (!this.contains(address, data.length)) {
      return { ok: false, reason: `0x${hex(address)}+0x${hex(data.length)} is not inside the flash`, address };
    }
    const unit = this.programUnit;
    const limit = this.layout.profile.flash.writesPerErase;
    const offset = address - this.start;
    const firstUnit = Math.floor(offset / unit);
    const endUnit = Math.ceil((offset + data.length) / unit);
    let done = 0;
    let failure: FlashResult | undefined;
    for (let u = firstUnit; u < endUnit && !failure; u++) {
      const at = u * unit;
      const incoming = Buffer.alloc(unit, 0xff);
      // Padding is 0xFF, which programs nothing: only the bytes asked for must come out as asked.
      const asked: boolean[] = [];
      for (let i = 0; i < unit; i++) {
        const k = at + i - offset;
        asked.push(k >= 0 && k < data.length);
        if (asked[i]) incoming[i] = data[k]!;
      }
      const current = this.bytes.subarray(at, at + unit);
      const setting = incoming.findIndex((b, i) => asked[i] === true && (b & ~current[i]!) !== 0);
      if (setting >= 0) {
        const where = this.start + at + setting;
        failure = {
          ok: false,
          reason:
            `0x${hex(where)} holds 0x${hex(current[setting]!, 2)} and cannot become 0x${hex(incoming[setting]!, 2)} ` +
            'without an erase (flash only turns 1 bits into 0)',
          address: where,
        };
      } else if (limit !== undefined && this.writes[u]! >= limit) {
        failure = {
          ok: false,
          reason: `0x${hex(this.start + at)} was written ${limit} times since its sector was erased, the part's limit`,
          address: this.start + at,
        };
      } else {
        for (let i = 0; i < unit; i++) current[i] = current[i]! & incoming[i]!;
        this.writes[u]!++;
        done++;
      }
    }
    const ms = (done * this.layout.profile.flash.programUnitUs) / 1000;
    this.session.unitsProgrammed += done;
    this.session.bytesProgrammed += data.length;
    this.session.modelledProgramMs += ms;
    return failure ?? { ok: true, modelledMs: ms };
  }

  /** A copy of one sector's bytes. */
  sectorContents(index: number): Buffer {
    const s = this.sectors[index];
    if (!s) throw new Error(`no sector ${index} (the flash has ${this.sectors.length})`);
    return this.read(s.start, s.size);
  }

  /** Erases of each sector since the model was made (wear). */
  eraseCounts(): number[] {
    return [...this.lifetimeErases];
  }

  /** What was done since the last `resetCounts`. */
  counts(): FlashSessionCounts {
    return { ...this.session, erases: [...this.session.erases] };
  }

  resetCounts(): void {
    this.session = this.freshCounts();
  }

  private freshCounts(): FlashSessionCounts {
    return {
      erases: this.sectors.map(() => 0),
      unitsProgrammed: 0,
      bytesProgrammed: 0,
      modelledEraseMs: 0,
      modelledProgramMs: 0,
    };
  }
}

function hex(value: number, digits = 0): string {
  return value.toString(16).padStart(digits, '0');
}
