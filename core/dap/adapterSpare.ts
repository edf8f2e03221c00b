import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { CONTROL_FD, SPARE_ARG, START_HINT_VAR, type SpareHandover } from '../../common/startHint';

/**
 * Debug adapters started ahead of their session. Node's own start and the loading of the adapter
 * take some 60-110 ms, and an adapter spawned when a session begins puts all of it between "Start
 * Debugging" and the first stop. A spare is an adapter process started earlier: it loads the
 * program, says `ready` on its control pipe and waits there, with nothing else started. Handing it a
 * session writes that session's start hint on the pipe (common/startHint.ts); the adapter then
 * starts what the hint remembers (QEMU, GDB) and serves DAP on stdin and stdout, as any adapter
 * does. A spare whose control pipe closes before that ends at once. Used by the extension's
 * DebugAdapterDescriptorFactory and by the CLI, whose descents run one session after another.
 */
export interface AdapterProcessOptions {
  /** dist/adapter.js. */
  adapterPath: string;
  /** The environment (default: this process's). */
  env?: NodeJS.ProcessEnv;
}

/** Inside an editor's extension host execPath is Electron: it runs the adapter as plain Node only when told to. */
function adapterEnv(o: AdapterProcessOptions, extra: Record<string, string>): NodeJS.ProcessEnv {
  return { ...(o.env ?? process.env), ELECTRON_RUN_AS_NODE: '1', ...extra };
}

/** An adapter for a session now, with the session's start hint in its environment. */
export function spawnAdapter(o: AdapterProcessOptions, hint: string | undefined): ChildProcess {
  return spawn(process.execPath, [o.adapterPath], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: adapterEnv(o, hint ? { [START_HINT_VAR]: hint } : {}),
  });
}

/** How long a discarded spare may take to end by itself before it is killed. */
const DISCARD_GRACE_MS = 2_000;

export class SpareAdapter {
  /** Resolves true once the adapter has loaded and waits; false if it ended or was handed over first. */
  readonly ready: Promise<boolean>;
  private used = false;
  private exited = false;

  private constructor(readonly child: ChildProcess) {
    child.once('exit', () => (this.exited = true));
    // A spare that fails to spawn or dies is simply not used; its errors are nobody's business.
    child.on('error', () => (this.exited = true));
    this.control.on('error', () => undefined);
    this.ready = new Promise((resolve) => {
      let said = '';
      const onData = (chunk: Buffer): void => {
        said += chunk.toString('utf8');
        if (said.includes('ready\n')) done(true);
      };
      const done = (ok: boolean): void => {
        this.control.off('data', onData);
        resolve(ok && !this.used && !this.exited);
      };
      this.control.on('data', onData);
      this.control.once('close', () => done(false));
      child.once('exit', () => done(false));
    });
  }

  static spawn(o: AdapterProcessOptions): SpareAdapter {
    const child = spawn(process.execPath, [o.adapterPath, SPARE_ARG], {
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      env: adapterEnv(o, {}),
    });
    return new SpareAdapter(child);
  }

  private get control(): Socket {
    return this.child.stdio[CONTROL_FD] as Socket;
  }

  /** Still able to take a session: not handed over, not ended. */
  get usable(): boolean {
    return !this.used && !this.exited && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Gives the spare its session; from here on it is an adapter like any other, DAP on stdin and stdout. */
  handOver(hint: string | undefined): ChildProcess {
    if (!this.usable) throw new Error('this spare adapter has ended or was handed over already');
    this.used = true;
    const handover: SpareHandover = hint ? { hint } : {};
    this.control.end(`${JSON.stringify(handover)}\n`);
    return this.child;
  }

  /** No session for it: it ends by itself when its pipe closes, and is killed if it does not. */
  discard(): void {
    if (this.used) return;
    this.used = true;
    this.control.destroy();
    if (this.exited) return;
    const kill = setTimeout(() => this.child.kill('SIGKILL'), DISCARD_GRACE_MS);
    kill.unref();
    this.child.once('exit', () => clearTimeout(kill));
  }
}

export interface SpareKeeperOptions extends AdapterProcessOptions {
  /** How long after a session took an adapter the next spare is spawned (it should not slow that launch). */
  refillAfterMs: number;
  /** How long a spare may wait unused, from when it is ready, before it is ended. */
  idleMs: number;
  /** Asked before each spare is spawned (a setting may turn spares off); default: always. */
  wanted?: () => boolean;
}

/**
 * Keeps at most one spare. `take` hands a session the spare when there is one and spawns an adapter
 * with the hint otherwise; either way a new spare follows `refillAfterMs` later, for the next
 * session (a restart, the next run of a descent). A spare ready and unused for `idleMs` ends.
 */
export class SpareKeeper {
  private spare: SpareAdapter | undefined;
  private refill: NodeJS.Timeout | undefined;
  private idle: NodeJS.Timeout | undefined;
  private disposed = false;

  constructor(private readonly o: SpareKeeperOptions) {}

  /** An adapter for a session with this start hint: true in `fromSpare` when it was started ahead. */
  take(hint: string | undefined): { child: ChildProcess; fromSpare: boolean } {
    const spare = this.spare;
    this.spare = undefined;
    clearTimeout(this.idle);
    const taken = spare?.usable
      ? { child: spare.handOver(hint), fromSpare: true }
      : { child: spawnAdapter(this.o, hint), fromSpare: false };
    spare?.discard();
    this.scheduleRefill();
    return taken;
  }

  /** Spawns the spare now (when there is none), for a caller that knows a session will follow. */
  prepare(): SpareAdapter | undefined {
    if (this.disposed || this.o.wanted?.() === false) {
      this.spare?.discard();
      this.spare = undefined;
      return undefined;
    }
    clearTimeout(this.refill);
    this.refill = undefined;
    if (!this.spare?.usable) {
      this.spare?.discard();
      const spare = SpareAdapter.spawn(this.o);
      spare.child.once('exit', () => {
        if (this.spare === spare) this.spare = undefined;
      });
      this.spare = spare;
    }
    clearTimeout(this.idle);
    this.idle = undefined;
    const spare = this.spare;
    // Idle time counts from when the spare is ready: loading it on a busy machine is not waiting.
    void spare.ready.then((ok) => {
      if (!ok || this.spare !== spare || this.disposed) return;
      clearTimeout(this.idle);
      this.idle = setTimeout(() => {
        if (this.spare !== spare) return;
        spare.discard();
        this.spare = undefined;
      }, this.o.idleMs);
      this.idle.unref();
    });
    return spare;
  }

  private scheduleRefill(): void {
    if (this.disposed || this.refill) return;
    this.refill = setTimeout(() => {
      this.refill = undefined;
      this.prepare();
    }, this.o.refillAfterMs);
    this.refill.unref();
  }

  /** Ends the spare (if any) and spawns no more. Sessions already handed out are not touched. */
  dispose(): void {
    this.disposed = true;
    clearTimeout(this.refill);
    clearTimeout(this.idle);
    this.spare?.discard();
    this.spare = undefined;
  }
}
