import { createConnection, Socket } from 'node:net';
import { CycleLensError, ErrorCode } from '../errors';

const PROMPT = '(qemu) ';
// HMP runs QEMU's line editor on the socket: it echoes the command with cursor-movement escapes.
const ANSI = /\x1b\[[0-9;]*[A-Za-z]/g;

/**
 * A client of QEMU's human monitor (HMP) on a unix socket or TCP port: one command at a time, the
 * reply being everything up to the next `(qemu) ` prompt. HMP answers while the guest runs, which is
 * what makes non-halting PC sampling possible.
 */
export class HmpMonitor {
  private buffer = '';
  private waiter: ((text: string) => void) | undefined;
  private failure: Error | undefined;

  private constructor(private readonly socket: Socket) {
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      this.buffer += chunk;
      const end = this.buffer.indexOf(PROMPT);
      if (end < 0) return;
      const text = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + PROMPT.length);
      const w = this.waiter;
      this.waiter = undefined;
      w?.(text);
    });
    const fail = (why: string) => {
      this.failure ??= new CycleLensError(ErrorCode.ServerExited, `QEMU's monitor connection ${why}.`);
      const w = this.waiter;
      this.waiter = undefined;
      w?.('');
    };
    socket.on('error', (err) => fail(`failed: ${err.message}`));
    socket.on('close', () => fail('closed'));
  }

  /** Connects to `path` (a unix socket) or `host:port`, and waits for the first prompt. */
  static async connect(address: { path: string } | { host: string; port: number }, timeoutMs = 5_000): Promise<HmpMonitor> {
    const socket = 'path' in address ? createConnection(address.path) : createConnection(address.port, address.host);
    // Every command is one small write followed by a wait for the reply: Nagle would hold each
    // write back for the previous reply's ACK (TCP monitors only; a unix socket ignores it).
    socket.setNoDelay(true);
    const monitor = new HmpMonitor(socket);
    const banner = await monitor.reply(timeoutMs);
    if (monitor.failure || banner === undefined) {
      socket.destroy();
      throw new CycleLensError(ErrorCode.ConnectFailed, `Could not reach QEMU's monitor (${monitor.failure?.message ?? 'no prompt within 5 s'}). The QEMU server strategy opens it; is this session running QEMU?`);
    }
    return monitor;
  }

  private reply(timeoutMs: number): Promise<string | undefined> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiter = undefined;
        resolve(undefined);
      }, timeoutMs);
      this.waiter = (text) => {
        clearTimeout(timer);
        resolve(text);
      };
    });
  }

  /** Runs one HMP command and returns its output without the echoed command line. */
  async command(line: string, timeoutMs = 2_000): Promise<string> {
    if (this.failure) throw this.failure;
    if (this.waiter) throw new Error('HmpMonitor: one command at a time');
    const pending = this.reply(timeoutMs);
    this.socket.write(`${line}\n`);
    const text = await pending;
    if (this.failure) throw this.failure;
    if (text === undefined) throw new CycleLensError(ErrorCode.ServerTimeout, `QEMU's monitor did not answer \`${line}\` within ${timeoutMs} ms.`);
    return stripEcho(text);
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
