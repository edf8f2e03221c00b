import { spawn, type ChildProcess } from 'node:child_process';
import { adapterStartEnv } from '../../common/startHint';
import { DapClient, DapProtocolError, type DapEvent } from './dapClient';

/**
 * The debug adapter as a child process, driven over stdio the way VS Code drives it: initialize ->
 * launch (or attach) -> `initialized` -> configurationDone -> the entry stop. The CLI runs its
 * sessions this way, and so do the extra sessions of parallel runs (the CLI's and the editor's).
 * `close()` always disconnects with terminateDebuggee, then ends the adapter, so no QEMU or GDB
 * outlives its owner.
 */

/** The configuration as the adapter's `launch` (or `attach`) request receives it. */
export interface AdapterLaunch {
  request: 'launch' | 'attach';
  args: Record<string, unknown>;
}

export interface AdapterSessionOptions {
  adapterPath: string;
  launch: AdapterLaunch;
  /** Who is asking, in the initialize request (default: the CLI). */
  client?: { id: string; name: string };
  /** How long launching may take to the first stop. */
  timeoutMs: number;
  log(line: string): void;
}

export class AdapterError extends Error {
  override name = 'AdapterError';
}

export class AdapterSession {
  private stderr = '';
  /** The adapter's last 'important' lines: what ended the session (GDB or QEMU dying, with its output). */
  private important: string[] = [];
  /** Set once the adapter reported the session over (terminated). */
  sessionEnded = false;
  private readonly ended: Promise<void>;
  private exited: Promise<void>;
  private closing: Promise<void> | undefined;

  private constructor(
    readonly client: DapClient,
    private readonly child: ChildProcess,
    private readonly log: (line: string) => void,
  ) {
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (d: string) => {
      this.stderr = (this.stderr + d).slice(-8192);
    });
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    child.once('exit', (code, signal) =>
      client.close(new DapProtocolError(`the debug adapter exited (${signal ?? `code ${code}`})${this.stderrTail()}`)),
    );
    client.on('output', (e: DapEvent) => {
      const body = e.body as { category?: string; output?: string } | undefined;
      if (body?.output && (body.category === 'important' || body.category === 'stderr'))
        this.log(body.output.trimEnd());
      if (body?.output && body.category === 'important')
        this.important = [...this.important, body.output.trimEnd()].slice(-3);
    });
    this.ended = new Promise((resolve) =>
      client.on('terminated', () => {
        this.sessionEnded = true;
        resolve();
      }),
    );
  }

  static async start(o: AdapterSessionOptions): Promise<AdapterSession> {
    // Inside an editor's extension host, execPath is Electron: it runs the adapter as plain Node only
    // when told to (as VS Code does for the adapters it starts). Node itself ignores the variable.
    // With the start hint of its launch, as the extension spawns it, a job's later sessions find
    // their QEMU and GDB already starting (common/startHint.ts).
    const env = { ...process.env, ELECTRON_RUN_AS_NODE: '1', ...adapterStartEnv(o.launch.args) };
    const child = spawn(process.execPath, [o.adapterPath], { stdio: ['pipe', 'pipe', 'pipe'], env });
    const spawned = new Promise<void>((resolve, reject) => {
      child.once('spawn', () => resolve());
      child.once('error', (err) =>
        reject(new AdapterError(`cannot start the debug adapter ${o.adapterPath}: ${err.message}`)),
      );
    });
    await spawned;
    const client = new DapClient(child.stdout!, child.stdin!, 60_000);
    const session = new AdapterSession(client, child, o.log);
    try {
      await session.launch(o);
    } catch (err) {
      await session.close();
      throw err;
    }
    return session;
  }

  private async launch(o: AdapterSessionOptions): Promise<void> {
    const c = this.client;
    await c.request('initialize', {
      clientID: o.client?.id ?? 'cyclelens-cli',
      clientName: o.client?.name ?? 'CycleLens CLI',
      adapterID: 'cyclelens',
      pathFormat: 'path',
      linesStartAt1: true,
      columnsStartAt1: true,
      supportsRunInTerminalRequest: false,
    });
    const initialized = c.waitForEvent('initialized', o.timeoutMs);
    const stopped = c.waitForEvent('stopped', o.timeoutMs);
    const terminated = c.waitForEvent('terminated').then((): never => {
      throw new AdapterError(`the debug session ended during launch${this.stderrTail()}`);
    });
    const launched = c.request(o.launch.request, o.launch.args, o.timeoutMs).catch((err: unknown): never => {
      throw new AdapterError(`${o.launch.request} failed: ${err instanceof Error ? err.message : String(err)}`);
    });
    // Whichever of these loses a race must not become an unhandled rejection.
    for (const p of [initialized, stopped, terminated, launched]) p.catch(() => undefined);
    const launchFailed = launched.then(() => new Promise<never>(() => undefined));
    await Promise.race([initialized, launchFailed, terminated]);
    await c.request('configurationDone');
    await Promise.race([launched, terminated]);
    await Promise.race([stopped, terminated]);
  }

  /**
   * Waits up to `ms` for the adapter to report the session over. A request can fail ("the debug
   * session has ended") before the event that says why arrives; the adapter sends its message first.
   */
  async settle(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.ended, this.exited, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
  }

  /** Why the session ended, in the adapter's words (which process died, how, its last output), if it said. */
  get endReason(): string | undefined {
    return this.important.length > 0 ? this.important.join('\n') : undefined;
  }

  /** Disconnects (terminating the target), then makes sure the adapter process is gone. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    if (!this.client.isClosed) {
      await this.client
        .request('disconnect', { terminateDebuggee: true, restart: false }, 15_000)
        .catch((err: unknown) => this.log(`disconnect: ${err instanceof Error ? err.message : String(err)}`));
    }
    this.child.stdin?.end();
    if (await this.exitWithin(10_000)) return;
    // The adapter kills its QEMU/GDB when its input ends or it is terminated; SIGKILL is the last resort.
    this.child.kill('SIGTERM');
    if (await this.exitWithin(5_000)) return;
    this.child.kill('SIGKILL');
    await this.exitWithin(5_000);
  }

  private async exitWithin(ms: number): Promise<boolean> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return true;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    });
    const done = await Promise.race([this.exited.then(() => true), timeout]);
    clearTimeout(timer);
    return done;
  }

  private stderrTail(): string {
    const t = this.stderr.trim();
    return t ? `; adapter stderr: ${t.split('\n').slice(-5).join(' | ')}` : '';
  }
}
