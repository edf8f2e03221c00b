import { spawn, type ChildProcess, type IOType, type SpawnOptions, type StdioPipe } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import type { Writable } from 'node:stream';
import type { ChildWatchdog } from './childWatchdog';

/**
 * Spawning a child the adapter owns so that it dies with the adapter whenever the adapter dies. The
 * watchdog (childWatchdog.ts) ends a child once the child is registered with it, but registration
 * follows the spawn: Node forks, the child execs, and only then does `spawn` return the pid to
 * register. An adapter killed in between (SIGKILL as QEMU was being exec'd) left that QEMU running,
 * re-parented to init. Two ways close the window:
 *
 * - On Linux with util-linux's `setpriv`, PR_SET_PDEATHSIG: the child gets SIGKILL when the thread
 *   that forked it ends, and Node forks from the main thread, which ends only with the process. Node
 *   cannot set it between fork and exec, so the child runs `setpriv --pdeathsig KILL`, which sets it
 *   and execs a shell that execs the command. The setting only covers a parent still alive when
 *   setpriv makes it, so the shell first checks that its parent is still the adapter.
 * - Elsewhere (no setpriv), a gate: the child is a shell that execs the command only once it reads a
 *   line on a pipe from the adapter, written after the watchdog has the child's registration. If the
 *   adapter dies first, the shell reads the pipe's end instead and exits without running anything.
 *
 * Either way the pid stays the command's (each step execs), so the watchdog, the exit hooks and the
 * exit messages see the same process. The kernel's signal reaches the direct child only: the
 * watchdog still ends what the child started in its process group (OpenOCD's helpers).
 */

/** Run by `/bin/sh -c`: $1 is the pid of the process that spawned it, the rest is the command. */
const parentCheck = 'p=$1; shift; [ "$PPID" = "$p" ] || exit 125; exec "$@"';

/** Run by `/bin/sh -c`: waits for the adapter's line on fd 3, then runs the command without that fd. */
const gate = 'IFS= read -r go <&3 || exit 125; exec 3<&-; exec "$@"';

const SHELL = '/bin/sh';

let helpers: { setpriv: string | undefined; shell: boolean } | undefined;

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

/** What this host offers (looked up once): setpriv on Linux, and a POSIX shell for either way. */
function guardHelpers(): { setpriv: string | undefined; shell: boolean } {
  if (!helpers) {
    let shell = process.platform !== 'win32';
    try {
      accessSync(SHELL, constants.X_OK);
    } catch {
      shell = false;
    }
    helpers = { setpriv: shell && process.platform === 'linux' ? onPath('setpriv') : undefined, shell };
  }
  return helpers;
}

/** Whether `command` names a program spawn would find (so a missing one still fails as `spawn` reports it). */
function runnable(command: string, cwd: string | URL | undefined): boolean {
  if (!command.includes('/')) return onPath(command) !== undefined;
  const path = isAbsolute(command) || cwd === undefined ? command : join(String(cwd), command);
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The three standard streams as `spawn` takes them, spelled out, so that a fourth can follow. */
function standardStreams(stdio: SpawnOptions['stdio']): (IOType | StdioPipe | 'inherit' | number | null | undefined)[] {
  if (stdio === undefined) return ['pipe', 'pipe', 'pipe'];
  if (typeof stdio === 'string') return [stdio, stdio, stdio];
  return [0, 1, 2].map((i) => stdio[i] as IOType | StdioPipe | 'inherit' | number | null | undefined);
}

/**
 * `spawn(command, args, options)`, registered with `watchdog` (when given) and dying with this
 * process (see above). A command that cannot be found is spawned directly, so that its `error` event
 * is the usual one.
 */
export function spawnGuarded(command: string, args: string[], options: SpawnOptions, watchdog: ChildWatchdog | undefined): ChildProcess {
  const { setpriv, shell } = guardHelpers();
  const canGuard = shell && runnable(command, options.cwd);
  if (canGuard && setpriv) {
    const child = spawn(setpriv, ['--pdeathsig', 'KILL', '--', SHELL, '-c', parentCheck, 'cyclelens-child', String(process.pid), command, ...args], options);
    if (child.pid !== undefined) watchdog?.watch(child.pid);
    return child;
  }
  if (canGuard && watchdog?.ready()) {
    const child = spawn(SHELL, ['-c', gate, 'cyclelens-child', command, ...args], { ...options, stdio: [...standardStreams(options.stdio), 'pipe'] });
    const go = child.stdio[3] as Writable | null;
    go?.on('error', () => undefined);
    if (child.pid !== undefined) watchdog.watch(child.pid, () => go?.end('\n'));
    else go?.destroy();
    return child;
  }
  const child = spawn(command, args, options);
  if (child.pid !== undefined) watchdog?.watch(child.pid);
  return child;
}
