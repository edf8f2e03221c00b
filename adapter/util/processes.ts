import { ChildProcess, SpawnOptions } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import { CycleLensError, ErrorCode } from '../errors';
import { sharedWatchdog } from './childWatchdog';
import { spawnGuarded } from './guardedSpawn';

/** Resolves an executable name against PATH, or returns undefined. */
export function findExecutable(name: string): string | undefined {
  const candidates =
    isAbsolute(name) || name.includes('/')
      ? [name]
      : (process.env.PATH ?? '').split(delimiter).map((d) => join(d, name));
  for (const c of candidates) {
    try {
      accessSync(c, constants.X_OK);
      return c;
    } catch {
      // not here; keep looking
    }
  }
  return undefined;
}

/** Like findExecutable, but throws the user-facing "not found" error with the install hint. */
export function requireExecutable(name: string, what: string, hint: string): string {
  const found = findExecutable(name);
  if (!found) {
    throw new CycleLensError(ErrorCode.ProgramNotFound, `${what} '${name}' was not found. ${hint}`);
  }
  return found;
}

/**
 * A child process the adapter owns. Each one is registered so that any way the adapter ends
 * (disconnect, crash, signal) kills it: a profiler must never leave a QEMU or GDB running.
 */
export class OwnedProcess {
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;

  /** Resolves once the process has exited and its output pipes have closed. */
  private readonly closed: Promise<void>;

  private constructor(
    readonly name: string,
    readonly child: ChildProcess,
  ) {
    this.closed = new Promise((resolve) => child.once('close', () => resolve()));
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        ownedProcesses.delete(this);
        if (child.pid !== undefined) watchdog.forget(child.pid);
        resolve({ code, signal });
      });
    });
  }

  static spawn(name: string, command: string, args: string[], options: SpawnOptions = {}): OwnedProcess {
    // detached: own process group, so kill() reaches grandchildren (a shell wrapper, OpenOCD's helpers).
    // Registered with the watchdog at once, and covered by guardedSpawn.ts until then: SIGKILL may
    // come at any moment.
    const child = spawnGuarded(
      command,
      args,
      { stdio: ['pipe', 'pipe', 'pipe'], detached: true, ...options },
      options.detached !== false ? watchdog : undefined,
    );
    const owned = new OwnedProcess(name, child);
    ownedProcesses.add(owned);
    child.once('error', () => ownedProcesses.delete(owned));
    return owned;
  }

  /**
   * Takes charge of a child started elsewhere in this process (the QEMU the loader starts ahead of
   * the launch, adapter/servers/qemuPrestart.ts): spawned detached and registered with the watchdog
   * there, it is from now on ended by the exit hooks and `kill()` like one spawned here.
   */
  static adopt(name: string, child: ChildProcess): OwnedProcess {
    const owned = new OwnedProcess(name, child);
    ownedProcesses.add(owned);
    if (child.pid !== undefined) watchdog.watch(child.pid);
    return owned;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get hasExited(): boolean {
    return this.exitInfo !== undefined;
  }

  /**
   * After the exit: resolves once every line the process wrote has been read (its pipes closed), or
   * after `ms` should a helper it left behind hold them open. The exit is often reported first on a
   * loaded host, so a message quoting the last output waits for this.
   */
  async outputEnded(ms = 2_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.closed, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
  async kill(graceMs = 1000): Promise<void> {
    if (this.hasExited || this.child.pid === undefined) return;
    signalGroup(this.child, 'SIGTERM');
    const timer = setTimeout(() => signalGroup(this.child, 'SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // already gone
    }
  }
}

// On the global object, like the watchdog: the loader (dist/adapter.js) and the adapter program are
// two bundles with a copy of this module each, and a process the loader starts is ended by the
// adapter's exit hooks all the same.
const OWNED = Symbol.for('cyclelens.ownedProcesses');
const ownedProcesses = ((globalThis as { [OWNED]?: Set<OwnedProcess> })[OWNED] ??= new Set<OwnedProcess>());
const watchdog = sharedWatchdog();

/** The pid of the process that kills our children if we are SIGKILLed (undefined until the first spawn). */
export function watchdogPid(): number | undefined {
  return watchdog.pid;
}

/** Kills every owned process synchronously: for process exit paths where nothing async runs. */
export function killAllOwnedNow(): void {
  for (const p of ownedProcesses) signalGroup(p.child, 'SIGKILL');
  ownedProcesses.clear();
}

let exitHooksInstalled = false;
/** Makes sure children die with the adapter, however it ends. */
export function installExitHooks(): void {
  if (exitHooksInstalled) return;
  exitHooksInstalled = true;
  process.on('exit', killAllOwnedNow);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(sig, () => {
      killAllOwnedNow();
      process.exit(128 + (sig === 'SIGINT' ? 2 : sig === 'SIGTERM' ? 15 : 1));
    });
  }
}
