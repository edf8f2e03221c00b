/**
 * TEST DOUBLE support — framing of the GDB Remote Serial Protocol ("Remote Protocol" appendix of
 * the GDB manual: Overview, Binary Data, Packet Acknowledgment):
 *  - a packet is `$payload#cc`, cc = two lower-case hex digits of the payload's byte sum mod 256;
 *  - the receiver answers `+` (good) or `-` (resend) until no-ack mode is agreed (QStartNoAckMode);
 *  - a bare 0x03 byte outside a packet asks the target to stop;
 *  - in binary data `}` escapes the next byte, which is XOR 0x20 (`#`, `$`, `}` and `*` are escaped);
 *  - run-length encoding: `X*n` repeats X (n − 29) more times. GDB does not send it, but it is legal,
 *    so the decoder accepts it; the encoder never produces it.
 */

export type RspEvent =
  | { type: 'packet'; payload: Buffer }
  | { type: 'bad-checksum'; raw: string }
  | { type: 'ack' }
  | { type: 'nack' }
  | { type: 'interrupt' };

function checksum(bytes: Buffer): number {
  let sum = 0;
  for (const b of bytes) sum = (sum + b) & 0xff;
  return sum;
}

/** `$payload#cc` for a payload that is already escaped where it needs to be. */
export function framePacket(payload: Buffer | string): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload, 'latin1') : payload;
  return Buffer.concat([Buffer.from('$'), body, Buffer.from(`#${checksum(body).toString(16).padStart(2, '0')}`)]);
}

/** Escapes the four bytes binary data may not carry literally. */
export function escapeBinary(data: Buffer): Buffer {
  const out: number[] = [];
  for (const b of data) {
    if (b === 0x23 || b === 0x24 || b === 0x7d || b === 0x2a) out.push(0x7d, b ^ 0x20);
    else out.push(b);
  }
  return Buffer.from(out);
}

/** Undoes run-length encoding and `}` escapes of a received payload (between `$` and `#`). */
export function decodePayload(raw: Buffer): Buffer {
  const out: number[] = [];
  for (let i = 0; i < raw.length; i++) {
    const b = raw[i]!;
    if (b === 0x7d && i + 1 < raw.length) {
      out.push(raw[++i]! ^ 0x20);
    } else if (b === 0x2a && out.length > 0 && i + 1 < raw.length) {
      const repeat = raw[++i]! - 29;
      const last = out[out.length - 1]!;
      for (let r = 0; r < repeat; r++) out.push(last);
    } else {
      out.push(b);
    }
  }
  return Buffer.from(out);
}

/** Incremental decoder of the byte stream GDB sends. */
export class RspDecoder {
  private pending: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): RspEvent[] {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const events: RspEvent[] = [];
    let i = 0;
    while (i < this.pending.length) {
      const b = this.pending[i]!;
      if (b === 0x2b) {
        events.push({ type: 'ack' });
        i++;
      } else if (b === 0x2d) {
        events.push({ type: 'nack' });
        i++;
      } else if (b === 0x03) {
        events.push({ type: 'interrupt' });
        i++;
      } else if (b === 0x24) {
        const hash = this.pending.indexOf(0x23, i + 1);
        if (hash < 0 || hash + 2 >= this.pending.length) break; // incomplete: wait for more bytes
        const raw = this.pending.subarray(i + 1, hash);
        const sent = parseInt(this.pending.subarray(hash + 1, hash + 3).toString('latin1'), 16);
        if (sent === checksum(raw)) events.push({ type: 'packet', payload: decodePayload(raw) });
        else events.push({ type: 'bad-checksum', raw: raw.toString('latin1') });
        i = hash + 3;
      } else {
        i++; // line noise between packets
      }
    }
    this.pending = this.pending.subarray(i);
    return events;
  }
}

export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}

export function fromHex(hex: string): Buffer {
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) throw new Error(`bad hex '${hex}'`);
  return Buffer.from(hex, 'hex');
}

/** A 32-bit register value as the target (little-endian ARC) stores it, in hex. */
export function u32LeHex(value: number): string {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(value >>> 0, 0);
  return b.toString('hex');
}

export function u32FromLeHex(hex: string): number {
  return fromHex(hex.padEnd(8, '0').slice(0, 8)).readUInt32LE(0);
}
