import { connect } from 'node:net';

/** Resolves once a TCP connection to host:port succeeds; polls until `deadline` (ms since epoch). */
export async function waitForTcp(
  host: string,
  port: number,
  deadline: number,
  abort: () => string | undefined,
): Promise<void> {
  // A server usually opens its port within tens of milliseconds of starting: poll every few
  // milliseconds for the first second (a refused connect on the loopback costs microseconds),
  // then every 50 ms for slow starters.
  const started = Date.now();
  for (;;) {
    const reason = abort();
    if (reason) throw new Error(reason);
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect({ host, port });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error('timeout');
    await new Promise((r) => setTimeout(r, Date.now() - started < 1_000 ? 4 : 50));
  }
}

/** Keeps the last lines a server printed, for error messages. */
export class OutputTail {
  private readonly lines: string[] = [];
  constructor(private readonly keep = 15) {}

  push(text: string): void {
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      this.lines.push(line.trimEnd());
      if (this.lines.length > this.keep) this.lines.shift();
    }
  }

  get text(): string {
    return this.lines.join('\n');
  }

  get last(): string[] {
    return [...this.lines];
  }
}

/** What a gdbserver handshake probe found at an address. */
export type RspProbeResult =
  { kind: 'gdbserver' } | { kind: 'silent' } | { kind: 'other'; said: string } | { kind: 'closed' };

/**
 * Asks whatever listens at host:port one harmless GDB remote protocol question (`qSupported`, which
 * every stub answers, if only with an empty packet) and waits up to `timeoutMs` for an ack (`+`) or
 * a packet (`$`). A port that accepts TCP but is not a gdbserver (a telnet console, a web server, a
 * forwarded port with nothing behind it) would otherwise make GDB wait its whole connect timeout.
 */
export function probeGdbServer(host: string, port: number, timeoutMs: number): Promise<RspProbeResult> {
  const body = 'qSupported';
  let sum = 0;
  for (const ch of body) sum = (sum + ch.charCodeAt(0)) & 0xff;
  const packet = `$${body}#${sum.toString(16).padStart(2, '0')}`;
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    let received = '';
    let settled = false;
    const finish = (r: RspProbeResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(r);
    };
    const timer = setTimeout(
      () => finish(received ? { kind: 'other', said: received } : { kind: 'silent' }),
      timeoutMs,
    );
    socket.setNoDelay(true);
    socket.once('connect', () => socket.write(packet));
    socket.on('data', (data: Buffer) => {
      received += data.toString('latin1');
      const first = received.trimStart()[0];
      if (first === '+' || first === '$') finish({ kind: 'gdbserver' });
      else if (received.length >= 64 || received.includes('\n')) finish({ kind: 'other', said: received });
    });
    socket.once('error', () => finish({ kind: 'closed' }));
    socket.once('close', () => finish(received ? { kind: 'other', said: received } : { kind: 'closed' }));
  });
}
