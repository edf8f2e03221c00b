import { connect } from 'node:net';

/** Resolves once a TCP connection to host:port succeeds; polls until `deadline` (ms since epoch). */
export async function waitForTcp(host: string, port: number, deadline: number, abort: () => string | undefined): Promise<void> {
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
    await new Promise((r) => setTimeout(r, 50));
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
