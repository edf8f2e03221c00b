import { connect, Socket } from 'node:net';
import { CycleLensError, ErrorCode } from '../errors';
import { Disposable, Emitter } from '../util/emitter';

/**
 * OpenOCD's Tcl RPC server (`tcl_port`, default 6666): a command is a line ended by byte 0x1a
 * (Ctrl-Z), and the reply is the Tcl result ended by 0x1a. The reply carries no status, so every
 * request is wrapped (see wrapCommand) to come back as a self-describing frame:
 *
 *   #<id> <tcl return code> <result bytes> <log bytes> <result><log>
 *
 * The file has a pure part (quoting, wrapping, frame decoding; unit-tested without a socket) and the
 * client that owns one TCP connection.
 */

/** Ends every command and every reply (tcl_server.c). */
export const TCL_TERMINATOR = 0x1a;

// ---------------------------------------------------------------------------------------------------
// Tcl words

/** Characters that never need quoting in a Tcl word. */
const BARE_WORD = /^[A-Za-z0-9_.:/+\-=,@%]+$/;

/**
 * Quotes `word` so that Tcl (OpenOCD's Jim) parses it back to exactly `word`. Braces when that is
 * exact; backslash escapes otherwise. Control characters are always escaped: OpenOCD cuts a command
 * at the first 0x1a and hands the line to Jim as a C string, so a raw 0x1a or NUL would truncate it.
 */
export function tclQuote(word: string | number): string {
  const text = String(word);
  if (text === '') return '{}';
  if (BARE_WORD.test(text)) return text;
  if (canBrace(text)) return `{${text}}`;
  return text.replace(/[\\{}[\]$";\s]|[\x00-\x1f\x7f]/g, escapeChar);
}

/** Inside braces Tcl substitutes nothing, except that braces nest and a backslash escapes a brace. */
function canBrace(text: string): boolean {
  if (/[\\\x00-\x08\x0b-\x1f\x7f]/.test(text)) return false;
  let depth = 0;
  for (const ch of text) {
    if (ch === '{') depth++;
    else if (ch === '}' && --depth < 0) return false;
  }
  return depth === 0;
}

function escapeChar(ch: string): string {
  switch (ch) {
    case '\n':
      return '\\n';
    case '\t':
      return '\\t';
    case '\r':
      return '\\r';
  }
  const code = ch.charCodeAt(0);
  // Jim reads at most two hex digits after \x, so a following hex digit is safe. (\u is avoided:
  // OpenOCD's Jim is built without UTF-8 and \u00e9 would become two bytes.)
  if (code < 0x20 || code === 0x7f) return `\\x${code.toString(16).padStart(2, '0')}`;
  return `\\${ch}`;
}

// ---------------------------------------------------------------------------------------------------
// Request wrapping

/** Name of the proc every wrapped request ends with; defined by the first request of a connection. */
const REPLY_PROC = 'cyclelens_reply';

/**
 * Return codes that mean success: 0 TCL_OK, 2 `return` at the top of the script, and -600
 * ERROR_COMMAND_CLOSE_CONNECTION, which `shutdown` returns. Anything else is an error; OpenOCD
 * commands fail with their negative C error code (e.g. -4 ERROR_TARGET_NOT_EXAMINED), often with
 * an empty result and the explanation only in the log.
 */
const SUCCESS_CODES = [0, 2, -600];

export function isSuccessCode(code: number): boolean {
  return SUCCESS_CODES.includes(code);
}

/**
 * The script sent for one request. It
 * - runs the caller's script under `catch`, so an error becomes a return code instead of an error
 *   reply that cannot be told apart from a result;
 * - runs that inside `capture`, because OpenOCD 0.12 reports most command failures only in its log
 *   (`halt` on an unexamined target: code -4, empty result, "Target not examined yet" logged). The
 *   `list` at the end makes capture return "" when nothing was logged (it returns the script's
 *   result then);
 * - sends result and log with their byte lengths, so results may hold any byte, even 0x1a;
 * - ends in a proc that returns code -600: OpenOCD's command_run_line() prints every other
 *   successful top-level result to its log, which would flood the Debug Console at sampling rates.
 *   For -600 it prints nothing, and the Tcl server still sends the result (checked on 0.12).
 */
export function wrapCommand(id: number, script: string): string {
  return [
    `set ::cyclelens_cmd ${tclQuote(script)}`,
    'set ::cyclelens_log [capture {set ::cyclelens_rc [catch $::cyclelens_cmd ::cyclelens_res]; list}]',
    `if {$::cyclelens_rc in {${SUCCESS_CODES.join(' ')}}} {set ::cyclelens_log {}}`,
    `${REPLY_PROC} "#${id} $::cyclelens_rc [string bytelength $::cyclelens_res] [string ` +
      `bytelength $::cyclelens_log] $::cyclelens_res$::cyclelens_log"`,
  ].join('; ');
}

/** Defines REPLY_PROC; it is sent wrapped, and the wrapper's last line calls it after it exists. */
const DEFINE_REPLY_PROC = `proc ${REPLY_PROC} {text} {return -code -600 $text}`;

// ---------------------------------------------------------------------------------------------------
// Frames

/** `#id code resultBytes logBytes ` in front of a wrapped reply. */
const REPLY_HEADER = /^#(\d+) (-?\d+) (\d+) (\d+) /;
const MAX_HEADER = 64;

function replyHeader(
  frame: Buffer,
): { length: number; id: number; code: number; resultBytes: number; logBytes: number } | undefined {
  const m = REPLY_HEADER.exec(frame.subarray(0, MAX_HEADER).toString('latin1'));
  if (!m) return undefined;
  return {
    length: m[0].length,
    id: Number(m[1]),
    code: Number(m[2]),
    resultBytes: Number(m[3]),
    logBytes: Number(m[4]),
  };
}

/**
 * Splits the byte stream from OpenOCD into frames (without their 0x1a). Chunks may end anywhere and
 * hold several frames. A wrapped reply is cut by its declared lengths, so a 0x1a inside a result
 * does not end it; anything else (notifications) ends at the next 0x1a.
 */
export class TclFrameDecoder {
  private buffer: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): Buffer[] {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    const frames: Buffer[] = [];
    for (let end = this.frameEnd(); end >= 0; end = this.frameEnd()) {
      frames.push(this.buffer.subarray(0, end));
      this.buffer = this.buffer.subarray(end + 1);
    }
    return frames;
  }

  /** Bytes received that do not yet make a whole frame. */
  get pendingBytes(): number {
    return this.buffer.length;
  }

  /** Index of the terminator that ends the first frame, or -1 while that frame is incomplete. */
  private frameEnd(): number {
    // A header is only matched once complete (it ends with a space after the 4th number), and it
    // holds no 0x1a, so a frame that merely starts like one still ends at its terminator.
    const header = replyHeader(this.buffer);
    if (header) {
      const end = header.length + header.resultBytes + header.logBytes;
      if (this.buffer.length <= end) return -1;
      if (this.buffer[end] === TCL_TERMINATOR) return end;
      // The lengths do not fit the data: not our reply after all; fall back to the terminator.
    }
    return this.buffer.indexOf(TCL_TERMINATOR);
  }
}

/** `tcl_notifications on` frames, e.g. `type target_event event halted`, `type target_state state running`. */
export interface TclNotification {
  /** target_event, target_state, target_reset, target_trace */
  type: string;
  key: string;
  value: string;
}

export type TclFrame =
  | { kind: 'reply'; id: number; code: number; result: string; log: string }
  | { kind: 'notification'; notification: TclNotification }
  | { kind: 'unknown'; text: string };

export function parseFrame(frame: Buffer): TclFrame {
  const header = replyHeader(frame);
  if (header && header.length + header.resultBytes + header.logBytes === frame.length) {
    const resultEnd = header.length + header.resultBytes;
    return {
      kind: 'reply',
      id: header.id,
      code: header.code,
      result: frame.toString('utf8', header.length, resultEnd),
      log: frame.toString('utf8', resultEnd),
    };
  }
  const text = frame.toString('utf8');
  // tcl_server.c formats these as "type %s %s %s\r\n".
  const n = /^type (\S+) (\S+)(?: ([^]*))?$/.exec(text.replace(/\r?\n$/, ''));
  if (n) return { kind: 'notification', notification: { type: n[1]!, key: n[2]!, value: n[3] ?? '' } };
  return { kind: 'unknown', text };
}

/** OpenOCD's explanation of a failure: the Tcl result, then what it logged that the result does not repeat. */
export function failureMessage(code: number, result: string, log: string): string {
  const lines = [result.trim(), ...log.split('\n').map((l) => l.trim())].filter((l) => l !== '');
  const unique = lines.filter((l, i) => lines.indexOf(l) === i);
  return unique.length > 0 ? unique.join('\n') : `failed with code ${code} and no message`;
}

// ---------------------------------------------------------------------------------------------------
// Client

/** A command OpenOCD ran and that failed; `message` names the command and quotes OpenOCD. */
export class TclCommandError extends CycleLensError {
  constructor(
    readonly command: string,
    /** Tcl return code: 1 for a Tcl error, OpenOCD's negative C error code for a failed command. */
    readonly returnCode: number,
    /** OpenOCD's own words. */
    readonly openOcdMessage: string,
  ) {
    super(ErrorCode.TclError, `OpenOCD command \`${shorten(command)}\` failed: ${openOcdMessage}`);
    this.name = 'TclCommandError';
  }
}

export type MemoryWidth = 8 | 16 | 32;

/** `$target curstate` values (target.c target_state_name). */
export type TargetState = 'unknown' | 'running' | 'halted' | 'reset' | 'debug-running';
const TARGET_STATES: readonly string[] = ['unknown', 'running', 'halted', 'reset', 'debug-running'];

export interface TclRpcOptions {
  /** Per-request timeout, from the moment the request is sent. Default 10 s. */
  timeoutMs?: number;
  /** Default 3 s. */
  connectTimeoutMs?: number;
}

interface Pending {
  id: number;
  script: string;
  timeoutMs: number;
  resolve: (result: string) => void;
  reject: (err: Error) => void;
  timer?: NodeJS.Timeout;
}

/** write_memory arguments per request: keeps each command line short. */
const WRITE_CHUNK = 1024;

/**
 * One connection to OpenOCD's Tcl RPC port. Requests are sent one at a time, in call order: a reply
 * has no id of its own, so the wrapper's id only serves to drop a late reply after a timeout.
 */
export class TclRpcClient {
  private readonly decoder = new TclFrameDecoder();
  private readonly queue: Pending[] = [];
  private inFlight: Pending | undefined;
  private nextId = 1;
  private socketError: Error | undefined;
  private closedByUs = false;
  private lost: CycleLensError | undefined;
  private readonly closed: Promise<void>;
  private readonly notificationEmitter = new Emitter<TclNotification>();
  private readonly closeEmitter = new Emitter<CycleLensError>();

  /** Target events, once enableNotifications() has run. */
  readonly onNotification: (listener: (n: TclNotification) => void) => Disposable = this.notificationEmitter.event;
  /** The connection ended (OpenOCD exited, or close()). */
  readonly onClose: (listener: (reason: CycleLensError) => void) => Disposable = this.closeEmitter.event;

  private constructor(
    private readonly socket: Socket,
    readonly address: string,
    private readonly timeoutMs: number,
  ) {
    socket.on('data', (chunk: Buffer) => {
      for (const frame of this.decoder.push(chunk)) this.onFrame(parseFrame(frame));
    });
    socket.on('error', (err) => (this.socketError = err));
    this.closed = new Promise((resolve) =>
      socket.once('close', () => {
        this.onSocketClosed();
        resolve();
      }),
    );
  }

  /** Connects and prepares the connection (defines the reply proc the wrapper ends with). */
  static async connect(port: number, host = '127.0.0.1', options: TclRpcOptions = {}): Promise<TclRpcClient> {
    const address = `${host}:${port}`;
    const socket = await openSocket(host, port, options.connectTimeoutMs ?? 3000).catch((err: Error) => {
      throw new CycleLensError(
        ErrorCode.ConnectFailed,
        `Could not connect to OpenOCD's Tcl RPC port at ${address}: ${err.message}. Check that ` +
          `OpenOCD runs with \`tcl_port ${port}\`.`,
      );
    });
    const client = new TclRpcClient(socket, address, options.timeoutMs ?? 10_000);
    try {
      await client.command(DEFINE_REPLY_PROC);
    } catch (err) {
      await client.close();
      throw err;
    }
    return client;
  }

  get isOpen(): boolean {
    return this.lost === undefined && !this.closedByUs;
  }

  /** Runs a Tcl script in OpenOCD and returns its result; a Tcl or OpenOCD error throws TclCommandError. */
  command(script: string, timeoutMs = this.timeoutMs): Promise<string> {
    if (this.lost) return Promise.reject(this.lost);
    return new Promise((resolve, reject) => {
      this.queue.push({ id: this.nextId++, script, timeoutMs, resolve, reject });
      this.pump();
    });
  }

  /** Runs one command whose words are quoted here: `call('write_memory', addr, 32, '1 2')`. */
  call(...words: Array<string | number>): Promise<string> {
    return this.command(words.map(tclQuote).join(' '));
  }

  async readMemory(address: number, width: MemoryWidth, count: number): Promise<number[]> {
    checkAddress(address);
    checkWidth(width);
    if (!Number.isInteger(count) || count < 1) throw invalid(`read count must be a positive integer (got ${count})`);
    const reply = await this.command(`read_memory ${hex(address)} ${width} ${count}`);
    // 0.12 answers a Tcl list of hex numbers ("0x20001000 0x0 ...").
    const values = reply
      .split(/\s+/)
      .filter((w) => w !== '')
      .map(Number);
    if (values.length !== count || values.some((v) => !Number.isInteger(v))) {
      throw new CycleLensError(
        ErrorCode.TclError,
        `OpenOCD answered read_memory of ${count} value(s) at ${hex(address)} with '${shorten(reply)}', ` +
          `which is not ${count} number(s).`,
      );
    }
    return values;
  }

  async writeMemory(address: number, width: MemoryWidth, values: readonly number[]): Promise<void> {
    checkAddress(address);
    checkWidth(width);
    const limit = 2 ** width;
    for (const v of values) {
      if (!Number.isInteger(v) || v < 0 || v >= limit) throw invalid(`value ${v} does not fit in ${width} bits`);
    }
    for (let i = 0; i < values.length; i += WRITE_CHUNK) {
      const chunk = values.slice(i, i + WRITE_CHUNK);
      await this.command(`write_memory ${hex(address + (i * width) / 8)} ${width} {${chunk.map(hex).join(' ')}}`);
    }
  }

  async targetState(): Promise<TargetState> {
    const state = (await this.command('[target current] curstate')).trim();
    if (!TARGET_STATES.includes(state)) {
      throw new CycleLensError(
        ErrorCode.TclError,
        `OpenOCD reported target state '${state}', which CycleLens does not know.`,
      );
    }
    return state as TargetState;
  }

  async halt(): Promise<void> {
    await this.command('halt');
  }

  async resume(): Promise<void> {
    await this.command('resume');
  }

  /** Target events arrive through onNotification from now on. */
  async enableNotifications(): Promise<void> {
    // 0.12 names it tcl_notifications; later releases add `tcl notifications` and deprecate the former.
    await this.command(
      'if {[info commands tcl_notifications] ne ""} {tcl_notifications on} else {tcl notifications on}',
    );
  }

  /** Asks OpenOCD to exit and waits (up to `timeoutMs`) for it to drop the connection. Never throws. */
  async shutdown(timeoutMs = 2000): Promise<void> {
    if (!this.isOpen) return;
    await this.command('shutdown', timeoutMs).catch(() => undefined);
    await Promise.race([this.closed, delay(timeoutMs)]);
    await this.close();
  }

  /** Ends the connection; pending requests are rejected. Idempotent. */
  async close(): Promise<void> {
    if (!this.lost) this.closedByUs = true;
    this.socket.destroy();
    await this.closed;
  }

  private pump(): void {
    if (this.inFlight || this.lost) return;
    const next = this.queue.shift();
    if (!next) return;
    this.inFlight = next;
    next.timer = setTimeout(() => {
      if (this.inFlight !== next) return;
      this.inFlight = undefined;
      next.reject(
        new CycleLensError(
          ErrorCode.TclTimeout,
          `OpenOCD did not answer \`${shorten(next.script)}\` within ${next.timeoutMs} ms. The probe ` +
            `or target may be stuck; check OpenOCD's output in the Debug Console.`,
        ),
      );
      this.pump();
    }, next.timeoutMs);
    this.socket.write(
      Buffer.concat([Buffer.from(wrapCommand(next.id, next.script), 'utf8'), Buffer.of(TCL_TERMINATOR)]),
    );
  }

  private onFrame(frame: TclFrame): void {
    if (frame.kind === 'notification') {
      this.notificationEmitter.fire(frame.notification);
      return;
    }
    const pending = this.inFlight;
    // A reply to a request that already timed out, or stray output: nobody waits for it.
    if (!pending || (frame.kind === 'reply' && frame.id !== pending.id)) return;
    clearTimeout(pending.timer);
    this.inFlight = undefined;
    if (frame.kind === 'unknown') {
      pending.reject(
        new CycleLensError(
          ErrorCode.TclError,
          `OpenOCD answered \`${shorten(pending.script)}\` with '${shorten(frame.text)}', which is ` +
            `not a CycleLens Tcl reply. Is this OpenOCD 0.12 or later?`,
        ),
      );
    } else if (isSuccessCode(frame.code)) {
      pending.resolve(frame.result);
    } else {
      pending.reject(
        new TclCommandError(pending.script, frame.code, failureMessage(frame.code, frame.result, frame.log)),
      );
    }
    this.pump();
  }

  private onSocketClosed(): void {
    const why = this.closedByUs
      ? `The Tcl RPC connection to OpenOCD (${this.address}) was closed before OpenOCD answered.`
      : `The Tcl RPC connection to OpenOCD (${this.address}) was lost` +
        `${this.socketError ? ` (${this.socketError.message})` : ''}. ` +
        `OpenOCD has probably exited; its last output is in the Debug Console.`;
    this.lost = new CycleLensError(ErrorCode.TclConnectionLost, why);
    const pending = [...(this.inFlight ? [this.inFlight] : []), ...this.queue.splice(0)];
    this.inFlight = undefined;
    for (const p of pending) {
      clearTimeout(p.timer);
      p.reject(
        new CycleLensError(ErrorCode.TclConnectionLost, `${why} Request not answered: \`${shorten(p.script)}\`.`),
      );
    }
    this.closeEmitter.fire(this.lost);
  }
}

function openSocket(host: string, port: number, timeoutMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.setNoDelay(true);
      resolve(socket);
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

function checkAddress(address: number): void {
  if (!Number.isSafeInteger(address) || address < 0)
    throw invalid(`address must be a non-negative integer (got ${address})`);
}

function checkWidth(width: number): void {
  if (width !== 8 && width !== 16 && width !== 32)
    throw invalid(`memory access width must be 8, 16 or 32 bits (got ${width})`);
}

function invalid(what: string): CycleLensError {
  return new CycleLensError(ErrorCode.InvalidRequest, `Tcl RPC: ${what}.`);
}

function hex(n: number): string {
  return `0x${n.toString(16)}`;
}

function shorten(text: string, max = 120): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
