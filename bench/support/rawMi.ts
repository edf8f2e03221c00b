import { ChildProcess, spawn } from 'node:child_process';
import { connect, createServer } from 'node:net';

/**
 * The floor for the adapter benchmark: the least a debugger front end can do to drive GDB/MI over
 * the same QEMU target. One QEMU and one gdb-multiarch, MI lines matched by token with a prefix
 * test, no record parsing beyond that, no state kept. What the adapter spends above this is its own.
 */
export class RawMiClient {
  private pending = new Map<number, (line: string) => void>();
  private stopWaiters: Array<(line: string) => void> = [];
  private nextToken = 1;
  /** MI commands sent so far. */
  sent = 0;
  private partial = '';
  private readonly gdbExited: Promise<void>;
  private readonly qemuExited: Promise<void>;

  private constructor(
    private readonly qemu: ChildProcess | undefined,
    private readonly gdb: ChildProcess,
  ) {
    this.gdbExited = new Promise((r) => gdb.once('exit', () => r()));
    this.qemuExited = qemu ? new Promise((r) => qemu.once('exit', () => r())) : Promise.resolve();
    gdb.stdout!.setEncoding('utf8');
    gdb.stdout!.on('data', (chunk: string) => this.onData(chunk));
    qemu?.stdout!.resume();
    qemu?.stderr!.resume();
    gdb.stderr!.resume();
  }

  /**
   * GDB in MI mode with the program's symbols, not yet connected, for a gdbserver someone else runs
   * (a board's probe server): `-target-select remote ADDRESS` is the caller's first command.
   */
  static async forServer(elf: string): Promise<RawMiClient> {
    const gdb = spawn('gdb-multiarch', ['--interpreter=mi3', '--nx', '--quiet'], { stdio: ['pipe', 'pipe', 'pipe'] });
    const client = new RawMiClient(undefined, gdb);
    try {
      await client.send(`-file-exec-and-symbols ${elf}`);
    } catch (err) {
      client.kill();
      throw err;
    }
    return client;
  }

  /** Starts QEMU halted (the adapter's command line, less its monitor socket) and GDB in MI mode. */
  static async start(elf: string, machine = 'mps2-an386'): Promise<RawMiClient> {
    const port = await freePort();
    const qemu = spawn(
      'qemu-system-arm',
      [
        '-M',
        machine,
        '-semihosting-config',
        'enable=on,target=native',
        '-icount',
        'shift=0,sleep=off',
        '-kernel',
        elf,
        '-display',
        'none',
        '-serial',
        'stdio',
        '-gdb',
        `tcp:127.0.0.1:${port}`,
        '-S',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const gdb = spawn('gdb-multiarch', ['--interpreter=mi3', '--nx', '--quiet'], { stdio: ['pipe', 'pipe', 'pipe'] });
    const client = new RawMiClient(qemu, gdb);
    try {
      await client.send(`-file-exec-and-symbols ${elf}`);
      await waitForPort(port);
      await client.send(`-target-select remote 127.0.0.1:${port}`);
    } catch (err) {
      client.kill();
      throw err;
    }
    return client;
  }

  /** Sends one command and resolves with its result line (`^done…`); `^error` and silence reject. */
  send(command: string): Promise<string> {
    const token = this.nextToken++;
    this.sent++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`GDB did not answer ${command} within 30 s`)), 30_000);
      this.pending.set(token, (line) => {
        clearTimeout(timer);
        if (line.startsWith('^error')) reject(new Error(`${command}: ${line}`));
        else resolve(line);
      });
      this.gdb.stdin!.write(`${token}${command}\n`);
    });
  }

  /** The next `*stopped` record (a bench that waits longer than 30 s for one has failed). */
  stopped(): Promise<string> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no *stopped record within 30 s')), 30_000);
      this.stopWaiters.push((line) => {
        clearTimeout(timer);
        resolve(line);
      });
    });
  }

  /** Runs an execution command and resolves at the stop it causes. */
  async run(command: string): Promise<string> {
    const stop = this.stopped();
    await this.send(command);
    return stop;
  }

  /** As an IDE ends a session: the emulator first (a detached target would run on), then GDB. */
  async disconnect(): Promise<void> {
    this.qemu?.kill('SIGTERM');
    await this.qemuExited;
    this.sent++;
    this.gdb.stdin!.write('-gdb-exit\n');
    await this.gdbExited;
  }

  /** Leaves nothing behind if a run failed half-way. */
  kill(): void {
    for (const p of [this.qemu, this.gdb]) if (p && p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  }

  private onData(chunk: string): void {
    const lines = (this.partial + chunk).split('\n');
    this.partial = lines.pop()!;
    for (const line of lines) {
      const c = line.charCodeAt(0);
      if (c >= 48 && c <= 57) {
        const caret = line.indexOf('^');
        const token = Number(line.slice(0, caret));
        const resolve = this.pending.get(token);
        if (caret > 0 && resolve) {
          this.pending.delete(token);
          resolve(line.slice(caret));
        }
      } else if (line.startsWith('*stopped')) {
        const waiters = this.stopWaiters;
        this.stopWaiters = [];
        for (const w of waiters) w(line);
      }
    }
  }
}

/** The first `name="value"` in an MI line (enough for addresses and counts). */
export function miField(line: string, name: string): string {
  const at = line.indexOf(`${name}="`);
  if (at < 0) throw new Error(`no ${name} in ${line.slice(0, 200)}`);
  const start = at + name.length + 2;
  return line.slice(start, line.indexOf('"', start));
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** Polls QEMU's gdbstub port every 2 ms: the floor should not wait longer than QEMU needs. */
async function waitForPort(port: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port });
      socket.setNoDelay(true);
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`QEMU did not open port ${port} within 10 s`);
    await new Promise((r) => setTimeout(r, 2));
  }
}
