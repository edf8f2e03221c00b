import {
  AbstractMessageReader,
  Disposable,
  type DataCallback,
  type Message,
  type MessageReader,
} from 'vscode-languageserver/node';

/**
 * The base protocol's framing (`Content-Length: N\r\n\r\n` and N bytes of JSON) read so that no
 * input can stop the reading: a header without a byte count, a count that is not a number, a
 * header block that never ends or a body that is not JSON is reported to `malformed` and skipped,
 * and the reader carries on with the next frame. (The protocol library's own reader stops for
 * good at such a frame: its header is consumed, its body is then taken for the next header.)
 */

/** A header block longer than this is not a header. */
export const MAX_HEADER_BYTES = 8 * 1024;
/** The largest message read: a whole source file in a didOpen is far smaller. */
export const MAX_MESSAGE_BYTES = 256 * 1024 * 1024;

const HEADER_END = Buffer.from('\r\n\r\n');
const CONTENT_LENGTH = Buffer.from('content-length:');

export type MalformedReport = (problem: string, kind: 'parse' | 'invalid') => void;

export class FrameReader extends AbstractMessageReader implements MessageReader {
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** The body length of the frame being read, or -1 between frames. */
  private expected = -1;
  /** While resynchronising after a bad header: bytes are dropped up to the next `Content-Length:`. */
  private skipping = false;
  private callback: DataCallback | undefined;

  constructor(
    private readonly input: NodeJS.ReadableStream,
    private readonly malformed: MalformedReport,
  ) {
    super();
  }

  listen(callback: DataCallback): Disposable {
    this.callback = callback;
    const onData = (data: Buffer | string): void => this.take(typeof data === 'string' ? Buffer.from(data) : data);
    const onError = (err: Error): void => this.fireError(err);
    const onClose = (): void => this.fireClose();
    this.input.on('data', onData);
    this.input.on('error', onError);
    this.input.on('end', onClose);
    this.input.on('close', onClose);
    return Disposable.create(() => {
      this.input.off('data', onData);
      this.input.off('error', onError);
      this.input.off('end', onClose);
      this.input.off('close', onClose);
    });
  }

  private buffer(): Buffer {
    if (this.chunks.length > 1) this.chunks = [Buffer.concat(this.chunks, this.buffered)];
    return this.chunks[0] ?? Buffer.alloc(0);
  }

  private drop(bytes: number): void {
    const rest = this.buffer().subarray(bytes);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered = rest.length;
  }

  /** Feeds bytes in; exported for the reader's own tests. */
  take(data: Buffer): void {
    this.chunks.push(data);
    this.buffered += data.length;
    // A body is waited for without copying chunk after chunk: only a complete one is joined.
    while (this.expected >= 0 ? this.buffered >= this.expected : this.buffered > 0) {
      if (this.expected >= 0) {
        const body = this.buffer().subarray(0, this.expected);
        const length = this.expected;
        this.expected = -1;
        this.deliver(Buffer.from(body));
        this.drop(length);
        continue;
      }
      if (!this.header()) return;
    }
  }

  /** Reads (or skips) one header block; false when more bytes are needed. */
  private header(): boolean {
    const buf = this.buffer();
    if (this.skipping) {
      const at = indexOfCaseless(buf, CONTENT_LENGTH, 0);
      if (at < 0) {
        // Keep a tail that may be the start of the next header.
        this.drop(Math.max(0, buf.length - CONTENT_LENGTH.length));
        return false;
      }
      this.skipping = false;
      this.drop(at);
      return true;
    }
    const end = buf.indexOf(HEADER_END);
    if (end < 0) {
      if (buf.length > MAX_HEADER_BYTES) {
        this.malformed(
          `a header block of more than ${MAX_HEADER_BYTES} bytes without the blank line that ends it`,
          'parse',
        );
        this.skipping = true;
        this.drop(1);
        return true;
      }
      return false;
    }
    // Bytes before a header (what is left of a broken frame): skip them, from the `Content-Length:` on.
    const start = indexOfCaseless(buf.subarray(0, end), CONTENT_LENGTH, 0);
    if (start > 0 && !(buf[start - 2] === 0x0d && buf[start - 1] === 0x0a)) {
      this.malformed(`${start} bytes that are not a header`, 'parse');
      this.drop(start);
      return true;
    }
    const text = buf.subarray(0, end).toString('ascii');
    this.drop(end + HEADER_END.length);
    let length: string | undefined;
    for (const line of text.split('\r\n')) {
      const colon = line.indexOf(':');
      if (colon > 0 && line.slice(0, colon).trim().toLowerCase() === 'content-length')
        length = line.slice(colon + 1).trim();
    }
    const shown = (s: string): string => JSON.stringify(s.length > 40 ? `${s.slice(0, 40)}…` : s);
    if (length === undefined) {
      this.malformed(`a header without Content-Length (${shown(text)})`, 'parse');
      this.skipping = true;
    } else if (!/^\d{1,10}$/.test(length)) {
      this.malformed(`Content-Length ${shown(length)} is not a byte count`, 'parse');
      this.skipping = true;
    } else if (Number(length) > MAX_MESSAGE_BYTES) {
      this.malformed(`Content-Length ${length} is over the ${MAX_MESSAGE_BYTES}-byte limit of a message`, 'parse');
      this.skipping = true;
    } else {
      this.expected = Number(length);
    }
    return true;
  }

  private deliver(body: Buffer): void {
    let message: unknown;
    try {
      message = JSON.parse(body.toString('utf8'));
    } catch (err) {
      this.malformed(`a body that is not JSON (${err instanceof Error ? err.message : String(err)})`, 'parse');
      return;
    }
    if (typeof message !== 'object' || message === null || Array.isArray(message)) {
      this.malformed(
        `a message that is not a JSON object (${Array.isArray(message) ? 'an array' : typeof message})`,
        'invalid',
      );
      return;
    }
    this.callback?.(message as Message);
  }
}

function indexOfCaseless(buf: Buffer, needle: Buffer, from: number): number {
  for (let at = from; at <= buf.length - needle.length; at++) {
    let i = 0;
    while (i < needle.length && (buf[at + i]! | 0x20) === needle[i]) i++;
    if (i === needle.length) return at;
  }
  return -1;
}
