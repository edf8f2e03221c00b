import { createConnection, Socket } from 'node:net';
import { CycleLensError, ErrorCode } from '../errors';

const PROMPT = '(qemu) ';
// HMP runs QEMU's line editor on the socket: it echoes the command with cursor-movement escapes.
const ANSI = /\x1b\[[0-9;]*[A-Za-z]/g;

/**
 * A client of QEMU's human monitor (HMP) on a unix socket or TCP port, the reply to a command being
 * everything up to the next `(qemu) ` prompt. Commands may be pipelined: HMP's line editor takes the
 * input byte by byte and runs each command at its newline, so replies come back in order, each
 * ended by its prompt. HMP answers while the guest runs, which is what makes non-halting PC
 * sampling possible.
 */
export class HmpMonitor {
  private buffer = '';
  /** Replies awaited, oldest first; the first entry before any command is the connection's banner. */
  private readonly waiters: Array<(text: string | undefined) => void> = [];
  private failure: Error | undefined;

  private constructor(private readonly socket: Socket) {
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      this.buffer += chunk;
      let end: number;
      while ((end = this.buffer.indexOf(PROMPT)) >= 0) {
        const text = this.buffer.slice(0, end);
        this.buffer = this.buffer.slice(end + PROMPT.length);
        this.waiters.shift()?.(text);
      }
    });
    const fail = (why: string) => {
      this.failure ??= new CycleLensError(ErrorCode.ServerExited, `QEMU's monitor connection ${why}.`);
      for (const w of this.waiters.splice(0)) w('');
    };
    socket.on('error', (err) => fail(`failed: ${err.message}`));
    socket.on('close', () => fail('closed'));
  }

  /** Connects to `path` (a unix socket) or `host:port`, and waits for the first prompt. */
  static async connect(
    address: { path: string } | { host: string; port: number },
    timeoutMs = 5_000,
  ): Promise<HmpMonitor> {
    const socket = 'path' in address ? createConnection(address.path) : createConnection(address.port, address.host);
    // Every command is one small write followed by a wait for the reply: Nagle would hold each
    // write back for the previous reply's ACK (TCP monitors only; a unix socket ignores it).
    socket.setNoDelay(true);
    const monitor = new HmpMonitor(socket);
    const banner = await monitor.reply(timeoutMs);
    if (monitor.failure || banner === undefined) {
      socket.destroy();
      throw new CycleLensError(
        ErrorCode.ConnectFailed,
        `Could not reach QEMU's monitor (${monitor.failure?.message ?? 'no prompt within 5 s'}). ` +
          `The QEMU server strategy opens it; is this session running QEMU?`,
      );
    }
    return monitor;
  }

  private reply(timeoutMs: number): Promise<string | undefined> {
    return new Promise((resolve) => {
      const waiter = (text: string | undefined) => {
        clearTimeout(timer);
        resolve(text);
      };
      // A reply that never came would shift every later one onto the wrong command: the
      // connection is given up instead.
      const timer = setTimeout(() => {
        this.failure ??= new CycleLensError(
          ErrorCode.ServerTimeout,
          `QEMU's monitor stopped answering (nothing within ${timeoutMs} ms).`,
        );
        for (const w of this.waiters.splice(0)) if (w !== waiter) w('');
        resolve(undefined);
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /** Runs one HMP command (after those already sent) and returns its output without the echoed command line. */
  async command(line: string, timeoutMs = 2_000): Promise<string> {
    if (this.failure) throw this.failure;
    const pending = this.reply(timeoutMs);
    this.socket.write(`${line}\n`);
    const text = await pending;
    // The connection may have failed while the reply was awaited.
    const failed = this.currentFailure();
    if (failed) throw failed;
    if (text === undefined)
      throw new CycleLensError(
        ErrorCode.ServerTimeout,
        `QEMU's monitor did not answer \`${line}\` within ${timeoutMs} ms.`,
      );
    return stripEcho(text);
  }

  /**
   * Read through a call: the check above narrows `this.failure` to undefined, though the socket may fail
   * during an await.
   */
  private currentFailure(): Error | undefined {
    return this.failure;
  }

  close(): void {
    this.socket.destroy();
  }
}

/** The reply without the line editor's echo of the command (the first line, full of escapes). */
export function stripEcho(text: string): string {
  const clean = text.replace(ANSI, '').replace(/\r/g, '');
  const nl = clean.indexOf('\n');
  return nl < 0 ? '' : clean.slice(nl + 1);
}
