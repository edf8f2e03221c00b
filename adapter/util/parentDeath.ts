import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';

/**
 * Children that die with the adapter, whenever it dies. The watchdog (childWatchdog.ts) ends a child
 * once the child is registered with it, but registration follows the spawn: Node forks, the child
 * execs, and only then does `spawn` return the pid to register. An adapter killed in between (SIGKILL
 * as QEMU is being exec'd) used to leave that QEMU running, re-parented to init.
 *
 * On Linux the kernel closes that window: PR_SET_PDEATHSIG makes a process receive a signal when the
 * thread that forked it ends, and Node forks from the main thread, which ends only with the process.
 * Node cannot set it between fork and exec, so the child is started through util-linux's `setpriv
 * --pdeathsig KILL`, which sets it and execs a shell that execs the command (the pid stays the
 * command's: the watchdog, the exit hooks and the error messages see the same process). The setting
 * only covers a parent that is still alive when setpriv makes it, so the shell first checks that its
 * parent is still the adapter; if the adapter is gone already, the command is never run.
 *
 * The signal reaches the direct child only: the watchdog still ends what the child started in its
 * process group (OpenOCD's helpers, a shell wrapper's children). Without setpriv (another OS, a
 * minimal image), children are spawned directly and the watchdog alone guards them.
 */

/** Run by `/bin/sh -c`: $1 is the pid of the process that spawned it, the rest is the command. */
const guard = 'p=$1; shift; [ "$PPID" = "$p" ] || exit 125; exec "$@"';

let setprivPath: string | null | undefined;

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

/** The setpriv to start children through, or undefined where there is none (or no PR_SET_PDEATHSIG). */
export function parentDeathHelper(): string | undefined {
  if (setprivPath === undefined) {
    setprivPath = process.platform === 'linux' ? (onPath('setpriv') ?? null) : null;
    if (setprivPath) {
      try {
        accessSync('/bin/sh', constants.X_OK);
      } catch {
        setprivPath = null;
      }
    }
  }
  return setprivPath ?? undefined;
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

/**
 * `spawn(command, args, options)`, with the child killed by the kernel when this process dies (see
 * above). A command that cannot be found is spawned directly, so its `error` event is the usual one.
 */
export function spawnDyingWithParent(command: string, args: string[], options: SpawnOptions): ChildProcess {
  const setpriv = parentDeathHelper();
  if (!setpriv || !runnable(command, options.cwd)) return spawn(command, args, options);
  return spawn(setpriv, ['--pdeathsig', 'KILL', '--', '/bin/sh', '-c', guard, 'cyclelens-child', String(process.pid), command, ...args], options);
}
