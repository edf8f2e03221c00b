/**
 * Bounds-checked little-endian reading over a byte range. Every read past the end throws
 * `TruncatedData`, which the ELF and DWARF readers turn into a message naming the file and the
 * structure that was cut short: a corrupt or truncated input must end in a clear error, never in
 * a crash on `undefined` or an endless loop.
 */
export class TruncatedData extends Error {
  constructor(
    readonly offset: number,
    readonly wanted: number,
    readonly limit: number,
  ) {
    super(`needed ${wanted} byte(s) at offset 0x${offset.toString(16)}, but the data ends at 0x${limit.toString(16)}`);
    this.name = 'TruncatedData';
  }
}

export class ByteCursor {
  private readonly view: DataView;
  /** Absolute position in `bytes`. */
  pos: number;

  /** Reads `bytes[start, end)`; positions stay absolute so error offsets point into the file. */
  constructor(
    readonly bytes: Uint8Array,
    start = 0,
    readonly end = bytes.length,
  ) {
    if (start < 0 || end > bytes.length || start > end)
      throw new TruncatedData(start, Math.max(0, end - start), bytes.length);
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.pos = start;
  }

  get remaining(): number {
    return this.end - this.pos;
  }

  get atEnd(): boolean {
    return this.pos >= this.end;
  }

  private need(n: number): number {
    const at = this.pos;
    if (n < 0 || at + n > this.end) throw new TruncatedData(at, n, this.end);
    this.pos = at + n;
    return at;
  }

  skip(n: number): void {
    this.need(n);
  }

  u8(): number {
    return this.bytes[this.need(1)]!;
  }

  i8(): number {
    return this.view.getInt8(this.need(1));
  }

  u16(): number {
    return this.view.getUint16(this.need(2), true);
  }

  u32(): number {
    return this.view.getUint32(this.need(4), true);
  }

  /** A 64-bit value; throws if it does not fit a JS number exactly (no 32-bit ELF needs more). */
  u64(): number {
    const at = this.need(8);
    const lo = this.view.getUint32(at, true);
    const hi = this.view.getUint32(at + 4, true);
    if (hi >= 0x200000) throw new RangeError(`64-bit value at offset 0x${at.toString(16)} is too large`);
    return hi * 0x1_0000_0000 + lo;
  }

  /** An unsigned value of 1, 2, 4 or 8 bytes. */
  uN(size: number): number {
    switch (size) {
      case 1:
        return this.u8();
      case 2:
        return this.u16();
      case 4:
        return this.u32();
      case 8:
        return this.u64();
      default:
        throw new RangeError(`unsupported field size ${size}`);
    }
  }

  /** Unsigned LEB128. Values beyond 2^53 are rejected rather than silently rounded. */
  uleb(): number {
    let result = 0;
    let scale = 1;
    for (;;) {
      const b = this.u8();
      result += (b & 0x7f) * scale;
      if ((b & 0x80) === 0) break;
      scale *= 128;
      if (scale > 2 ** 56) throw new RangeError(`LEB128 value at offset 0x${(this.pos - 1).toString(16)} is too long`);
    }
    if (result > Number.MAX_SAFE_INTEGER)
      throw new RangeError(`LEB128 value at offset 0x${this.pos.toString(16)} is too large`);
    return result;
  }

  /** Signed LEB128. */
  sleb(): number {
    let result = 0;
    let scale = 1;
    let b: number;
    do {
      b = this.u8();
      result += (b & 0x7f) * scale;
      scale *= 128;
      if (scale > 2 ** 63) throw new RangeError(`LEB128 value at offset 0x${(this.pos - 1).toString(16)} is too long`);
    } while ((b & 0x80) !== 0);
    if ((b & 0x40) !== 0) result -= scale;
    return result;
  }

  /** A NUL-terminated string (UTF-8). */
  cstring(): string {
    const start = this.pos;
    const nul = this.bytes.indexOf(0, start);
    if (nul < 0 || nul >= this.end) throw new TruncatedData(start, this.end - start + 1, this.end);
    this.pos = nul + 1;
    return decodeUtf8(this.bytes, start, nul);
  }
}

const decoder = new TextDecoder('utf-8');

export function decodeUtf8(bytes: Uint8Array, start: number, end: number): string {
  // Symbol and file names are almost always ASCII: build those directly, it is several times
  // faster than TextDecoder on short strings.
  let ascii = true;
  for (let i = start; i < end; i++) {
    if (bytes[i]! >= 0x80) {
      ascii = false;
      break;
    }
  }
  if (!ascii) return decoder.decode(bytes.subarray(start, end));
  let s = '';
  for (let i = start; i < end; i += 4096) {
    s += String.fromCharCode(...bytes.subarray(i, Math.min(end, i + 4096)));
  }
  return s;
}

/** The NUL-terminated string at `offset` of a string table section, bounds-checked. */
export function stringAt(table: Uint8Array, offset: number): string {
  if (offset < 0 || offset >= table.length) {
    throw new TruncatedData(offset, 1, table.length);
  }
  const nul = table.indexOf(0, offset);
  if (nul < 0) throw new TruncatedData(offset, table.length - offset + 1, table.length);
  return decodeUtf8(table, offset, nul);
}
