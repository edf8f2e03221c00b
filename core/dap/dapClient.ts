import { EventEmitter } from 'node:events';
import type { Readable, Writable } from 'node:stream';

/**
 * A small Debug Adapter Protocol client for the CLI: Content-Length framing over a byte stream,
 * requests matched to responses by sequence number, events to listeners, and every pending request
 * failed when the adapter goes away (never a promise left hanging).
 */

export interface DapMessage {
  seq: number;
  type: 'request' | 'response' | 'event';
  [key: string]: unknown;
}

export interface DapResponse extends DapMessage {
  type: 'response';
  request_seq: number;
  success: boolean;
  command: string;
  message?: string;
  body?: unknown;
}

export interface DapEvent extends DapMessage {
  type: 'event';
  event: string;
  body?: unknown;
}

export class DapProtocolError extends Error {
  override name = 'DapProtocolError';
}

const HEADER_END = Buffer.from('\r\n\r\n');
/** A message larger than this is a broken stream, not a message (the adapter's are kilobytes). */
const MAX_MESSAGE = 64 * 1024 * 1024;

/** Splits a byte stream into DAP messages: `Content-Length: N\r\n\r\n` + N bytes of JSON. */
export class DapFramer {
  private buffer = Buffer.alloc(0);

  push(chunk: Buffer | string): DapMessage[] {
    this.buffer = Buffer.concat([this.buffer, typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk]);
    const out: DapMessage[] = [];
    for (;;) {
      const end = this.buffer.indexOf(HEADER_END);
      if (end < 0) {
        if (this.buffer.length > 8192)
          throw new DapProtocolError('no end of a DAP header in 8 KiB: the adapter is not speaking DAP on this stream');
        return out;
      }
      const header = this.buffer.subarray(0, end).toString('ascii');
      let length: number | undefined;
      for (const line of header.split('\r\n')) {
        const m = /^content-length:\s*(\d+)\s*$/i.exec(line);
        if (m) length = Number(m[1]);
      }
      if (length === undefined)
        throw new DapProtocolError(`DAP header without Content-Length: ${JSON.stringify(header.slice(0, 200))}`);
      if (length > MAX_MESSAGE)
        throw new DapProtocolError(`DAP message of ${length} bytes announced: the stream is corrupt`);
      const start = end + HEADER_END.length;
      if (this.buffer.length < start + length) return out;
      const body = this.buffer.subarray(start, start + length).toString('utf8');
      this.buffer = this.buffer.subarray(start + length);
      let msg: unknown;
      try {
        msg = JSON.parse(body);
      } catch (err) {
        throw new DapProtocolError(
          `a DAP message is not JSON (${(err as Error).message}): ${JSON.stringify(body.slice(0, 200))}`,
        );
      }
      if (typeof msg !== 'object' || msg === null || typeof (msg as DapMessage).type !== 'string')
        throw new DapProtocolError(`a DAP message has no type: ${JSON.stringify(body.slice(0, 200))}`);
      out.push(msg as DapMessage);
    }
  }
}

export function encodeDapMessage(msg: object): Buffer {
  const json = Buffer.from(JSON.stringify(msg), 'utf8');
  return Buffer.concat([Buffer.from(`Content-Length: ${json.length}\r\n\r\n`, 'ascii'), json]);
}

/** The user-facing text of an error response: the formatted `body.error`, else `message`. */
export function responseError(r: DapResponse): string {
  const error = (r.body as { error?: { format?: string; variables?: Record<string, string> } } | undefined)?.error;
  if (error?.format) return error.format.replace(/\{(\w+)\}/g, (all, name: string) => error.variables?.[name] ?? all);
  return r.message ?? `${r.command} failed`;
}

interface Pending {
  command: string;
  resolve(body: unknown): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout | undefined;
}

export class DapClient {
  private seq = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly events = new EventEmitter();
  private readonly framer = new DapFramer();
  private closed: Error | undefined;

  constructor(
    input: Readable,
    private readonly output: Writable,
    /** Default time a request may take (0: no limit). */
    private readonly timeoutMs = 0,
  ) {
    this.events.setMaxListeners(0);
    input.on('data', (chunk: Buffer) => this.receive(chunk));
    input.on('end', () => this.close(new DapProtocolError('the debug adapter closed its output')));
    input.on('error', (err) => this.close(err));
    output.on('error', (err) => this.close(err));
  }

  /** Sends a request; resolves with the response body, rejects with the adapter's message. */
  request<T = unknown>(command: string, args?: unknown, timeoutMs = this.timeoutMs): Promise<T> {
    if (this.closed) return Promise.reject(new DapProtocolError(`${command}: ${this.closed.message}`));
    const seq = this.seq++;
    return new Promise<T>((resolve, reject) => {
      const timer =
        timeoutMs > 0
          ? setTimeout(() => {
              this.pending.delete(seq);
              reject(new DapProtocolError(`${command}: no answer from the debug adapter within ${timeoutMs / 1000} s`));
            }, timeoutMs)
          : undefined;
      this.pending.set(seq, { command, resolve: resolve as (b: unknown) => void, reject, timer });
      this.output.write(
        encodeDapMessage({ seq, type: 'request', command, ...(args !== undefined ? { arguments: args } : {}) }),
      );
    });
  }

  /** The shape the profiler needs (vscode.DebugSession has the same method). */
  customRequest(command: string, args?: unknown): Promise<unknown> {
    return this.request(command, args);
  }

  on(event: string, listener: (e: DapEvent) => void): () => void {
    this.events.on(event, listener);
    return () => this.events.off(event, listener);
  }

  /** The next event of this name (optionally one that `accept`s), or an error when closed or late. */
  waitForEvent(event: string, timeoutMs = 0, accept: (e: DapEvent) => boolean = () => true): Promise<DapEvent> {
    return new Promise((resolve, reject) => {
      if (this.closed) {
        reject(new DapProtocolError(`waiting for '${event}': ${this.closed.message}`));
        return;
      }
      const cleanup = (): void => {
        this.events.off(event, onEvent);
        this.events.off('__closed', onClosed);
        if (timer) clearTimeout(timer);
      };
      const onEvent = (e: DapEvent): void => {
        if (!accept(e)) return;
        cleanup();
        resolve(e);
      };
      const onClosed = (err: Error): void => {
        cleanup();
        reject(new DapProtocolError(`waiting for '${event}': ${err.message}`));
      };
      const timer =
        timeoutMs > 0
          ? setTimeout(() => {
              cleanup();
              reject(new DapProtocolError(`no '${event}' event from the debug adapter within ${timeoutMs / 1000} s`));
            }, timeoutMs)
          : undefined;
      this.events.on(event, onEvent);
      this.events.on('__closed', onClosed);
    });
  }

  /** Fails every pending request and waiter; later requests fail at once. */
  close(reason: Error): void {
    if (this.closed) return;
    this.closed = reason;
    for (const [seq, p] of this.pending) {
      if (p.timer) clearTimeout(p.timer);
      p.reject(new DapProtocolError(`${p.command}: ${reason.message}`));
      this.pending.delete(seq);
    }
    this.events.emit('__closed', reason);
  }

  get isClosed(): boolean {
    return this.closed !== undefined;
  }

  private receive(chunk: Buffer): void {
    let messages: DapMessage[];
    try {
      messages = this.framer.push(chunk);
    } catch (err) {
      this.close(err as Error);
      return;
    }
    for (const msg of messages) this.dispatch(msg);
  }

  private dispatch(msg: DapMessage): void {
    if (msg.type === 'response') {
      const r = msg as DapResponse;
      const p = this.pending.get(r.request_seq);
      if (!p) return;
      this.pending.delete(r.request_seq);
      if (p.timer) clearTimeout(p.timer);
      if (r.success) p.resolve(r.body);
      else p.reject(new Error(responseError(r)));
    } else if (msg.type === 'event') {
      const e = msg as DapEvent;
      this.events.emit(e.event, e);
    } else if (msg.type === 'request') {
      // Reverse requests (runInTerminal, startDebugging) need a UI the CLI does not have.
      const command = String(msg.command);
      this.output.write(
        encodeDapMessage({
          seq: this.seq++,
          type: 'response',
          request_seq: msg.seq,
          command,
          success: false,
          message: `the CycleLens CLI does not support the reverse request '${command}'`,
        }),
      );
    }
  }
}
