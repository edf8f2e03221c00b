import { createConnection, Socket } from 'node:net';
import { CycleLensError, ErrorCode } from '../errors';

interface Pending {
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
}

/**
 * A client of QEMU's machine monitor (QMP) on a unix socket: one JSON object per line each way,
 * replies in the order of the commands, asynchronous events (`{"event": …}`) interleaved and
 * skipped. Commands may be pipelined: QEMU queues up to 8 per monitor and answers each in turn.
 *
 * The PC sampler's other candidate channel, kept for bench/samplingTransport.ts: HMP runs QEMU's line
 * editor (it echoes every typed character) and flushes its output at every newline, so one
 * `info registers` is some 40 socket writes; through QMP's `human-monitor-command` the text comes
 * back in one write and costs QEMU's main thread less CPU. Yet on a loaded host it gave fewer reads
 * per second of wall time than HMP (its dispatch takes more main-loop wake-ups), so the sampler
 * reads through HMP (monitorSampler.ts).
 */
export class QmpMonitor {
  private buffer = '';
  private readonly pending: Pending[] = [];
  private failure: Error | undefined;

  private constructor(private readonly socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => this.receive(chunk));
    const fail = (why: string) => {
      this.failure ??= new CycleLensError(ErrorCode.ServerExited, `QEMU's QMP connection ${why}.`);
      for (const p of this.pending.splice(0)) p.reject(this.failure);
    };
    socket.on('error', (err) => fail(`failed: ${err.message}`));
    socket.on('close', () => fail('closed'));
  }

  /** Connects, reads QEMU's greeting and leaves capabilities negotiation (QMP's command mode). */
  static async connect(path: string, timeoutMs = 5_000): Promise<QmpMonitor> {
    const socket = createConnection(path);
    const monitor = new QmpMonitor(socket);
    // The greeting arrives unasked: it is the reply to a command never sent.
    const greeting = new Promise<unknown>((resolve, reject) => monitor.pending.push({ resolve, reject }));
    try {
      await withTimeout(greeting, timeoutMs, 'no greeting');
      await withTimeout(monitor.execute('qmp_capabilities'), timeoutMs, 'no answer to qmp_capabilities');
    } catch (err) {
      socket.destroy();
      throw new CycleLensError(
        ErrorCode.ConnectFailed,
        `Could not reach QEMU's QMP monitor at ${path} (${err instanceof Error ? err.message : String(err)}). ` +
          `The QEMU server strategy opens it; is this session running QEMU?`,
      );
    }
    return monitor;
  }

  /** Sends one command without waiting: the promise settles with its `return` value, in order. */
  execute(command: string, args?: Record<string, unknown>): Promise<unknown> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.pending.push({ resolve, reject });
      this.socket.write(`${JSON.stringify(args ? { execute: command, arguments: args } : { execute: command })}\n`);
    });
  }

  /** An HMP command through QMP (`human-monitor-command`): its output text. */
  async human(commandLine: string): Promise<string> {
    const out = await this.execute('human-monitor-command', { 'command-line': commandLine });
    return typeof out === 'string' ? out : '';
  }

  get inFlight(): number {
    return this.pending.length;
  }

  close(): void {
    this.socket.destroy();
  }

  private receive(chunk: string): void {
    this.buffer += chunk;
    let nl: number;
    while ((nl = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, nl).trim();
      this.buffer = this.buffer.slice(nl + 1);
      if (line.length === 0) continue;
      const reply = parseReply(line);
      if (reply.kind === 'event') continue;
      const p = this.pending.shift();
      if (!p) continue;
      if (reply.kind === 'error')
        p.reject(
          new CycleLensError(ErrorCode.CommandFailed, `QEMU's QMP monitor refused the command: ${reply.message}`),
        );
      else p.resolve(reply.value);
    }
  }
}

type Reply = { kind: 'event' } | { kind: 'error'; message: string } | { kind: 'return'; value: unknown };

/** One QMP line: an event, an error, a return value, or the greeting (`{"QMP": …}`, a return). */
export function parseReply(line: string): Reply {
  const obj = JSON.parse(line) as Record<string, unknown>;
  if ('event' in obj) return { kind: 'event' };
  if ('error' in obj) {
    const e = obj['error'] as { class?: string; desc?: string };
    return { kind: 'error', message: `${e.class ?? 'Error'}: ${e.desc ?? ''}` };
  }
  return { kind: 'return', value: 'return' in obj ? obj['return'] : obj };
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms))),
  ]).finally(() => clearTimeout(timer));
}
