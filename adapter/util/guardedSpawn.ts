import { spawn, type ChildProcess, type IOType, type SpawnOptions, type StdioPipe } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import type { Writable } from 'node:stream';
import type { ChildWatchdog } from './childWatchdog';

/**
 * Spawning a child the adapter owns so that no moment of its start escapes the watchdog
 * (childWatchdog.ts). The watchdog ends a child once the child is registered with it, and the pid to
 * register comes from `spawn`, after Node has forked and the child has exec'd: an adapter killed in
 * between (SIGKILL as QEMU was being exec'd) left that QEMU running, re-parented to init.
 *
 * So the child is first a shell at a gate: it execs the command only once it reads a line on a pipe
 * from the adapter (fd 3), and the adapter writes that line only after the child's registration is
 * in the watchdog's pipe. If the adapter dies first, the shell reads the pipe's end instead and exits
 * without running anything. The pid stays the command's (the shell execs it), so the watchdog, the
 * exit hooks and the exit messages see the same process. The gate costs one exec of /bin/sh.
 *
 * Linux's PR_SET_PDEATHSIG (util-linux's `setpriv --pdeathsig KILL`, then a shell to check that the
 * parent is still the adapter, since the setting only covers a parent alive when it is made) closes
 * the same window, but its two execs per child delayed a launch with QEMU and GDB started ahead by
 * 4-14 ms (medians of 15, load 3-4), where the gate's one exec cost nothing measurable.
 */

/** Run by `/bin/sh -c`: waits for the adapter's line on fd 3, then runs the command ($@) without that fd. */
const gate = 'IFS= read -r go <&3 || exit 125; exec 3<&-; exec "$@"';

const SHELL = '/bin/sh';

let shell: boolean | undefined;

function hasShell(): boolean {
  if (shell === undefined) {
    try {
      accessSync(SHELL, constants.X_OK);
      shell = process.platform !== 'win32';
    } catch {
      shell = false;
    }
  }
  return shell;
}

function onPath(name: string): boolean {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, name), constants.X_OK);
      return true;
    } catch {
      // not in this directory
    }
  }
  return false;
}

/** Whether `command` names a program spawn would find (so a missing one still fails as `spawn` reports it). */
function runnable(command: string, cwd: string | URL | undefined): boolean {
  if (!command.includes('/')) return onPath(command);
  const path = isAbsolute(command) || cwd === undefined ? command : join(String(cwd), command);
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

type Stream = IOType | StdioPipe | 'inherit' | number | null | undefined;

/** The three standard streams as `spawn` takes them, spelled out, so that a fourth can follow. */
function standardStreams(stdio: SpawnOptions['stdio']): Stream[] {
  if (stdio === undefined) return ['pipe', 'pipe', 'pipe'];
  if (typeof stdio === 'string') return [stdio, stdio, stdio];
  return [0, 1, 2].map((i) => stdio[i] as Stream);
}

/**
 * `spawn(command, args, options)`, registered with `watchdog` before the command runs (see above).
 * Spawned directly, registered once spawned, when there is no watchdog or no /bin/sh, and when the
 * command cannot be found (so that its `error` event is the usual one).
 */
export function spawnGuarded(
  command: string,
  args: string[],
  options: SpawnOptions,
  watchdog: ChildWatchdog | undefined,
): ChildProcess {
  if (!watchdog?.ready() || !hasShell() || !runnable(command, options.cwd)) {
    const child = spawn(command, args, options);
    if (child.pid !== undefined) watchdog?.watch(child.pid);
    return child;
  }
  const child = spawn(SHELL, ['-c', gate, 'cyclelens-child', command, ...args], {
    ...options,
    stdio: [...standardStreams(options.stdio), 'pipe'],
  });
  const go = child.stdio[3] as Writable | null;
  go?.on('error', () => undefined);
  if (child.pid !== undefined) watchdog.watch(child.pid, () => go?.end('\n'));
  else go?.destroy();
  return child;
}
