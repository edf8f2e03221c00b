import { spawn, type ChildProcess } from 'node:child_process';

/**
 * The watchdog's program, run by `/bin/sh -c` (POSIX shell only: dash, bash and busybox all run it).
 * It reads `+PGID` / `-PGID` lines on stdin, and when stdin ends (the parent died, whatever the
 * signal: SIGKILL runs no exit hook in the parent, but the kernel always closes its pipe ends) it
 * sends SIGTERM to every process group still registered and alive, then SIGKILL to them 700 ms later.
 * A shell starts in about a millisecond; a second Node would take tens of milliseconds of CPU while the
 * debugger and the emulator start beside it.
 */
const watchdogProgram = `
trap '' INT HUP
groups=' '
while IFS= read -r line; do
  case $line in
    +[0-9]*) groups="$groups\${line#+} " ;;
    -[0-9]*) g=\${line#-}; case $groups in *" $g "*) groups="\${groups%% $g *} \${groups#* $g }" ;; esac ;;
  esac
done
live=
for g in $groups; do kill -0 "-$g" 2>/dev/null && live="$live $g"; done
[ -n "$live" ] || exit 0
for g in $live; do kill -TERM "-$g" 2>/dev/null; done
sleep 0.7
for g in $live; do kill -KILL "-$g" 2>/dev/null; done
`;

/**
 * Kills this process's children when it dies abnormally. Exit hooks cover every ending that runs
 * JavaScript (exit, SIGTERM, SIGINT, SIGHUP), but not SIGKILL (the OOM killer, a crashed VS Code
 * killing its debug adapters), and children spawned detached (their own process group, so a group
 * kill reaches their helpers) are then re-parented to init and run on: QEMU at full CPU.
 *
 * The watchdog is a tiny shell process in its own process group that holds only the read end
 * of a pipe from us. Our death closes the pipe; the watchdog then kills the registered groups.
 * A child is registered only once its spawn returns: guardedSpawn.ts has it wait at a gate, running
 * nothing, until its registration is in our pipe.
 */
export class ChildWatchdog {
  private child: ChildProcess | undefined;
  private failed = false;
  private readonly watched = new Set<number>();

  /**
   * Registers a child's process group (its pid: children are spawned detached). `registered` is
   * called once the registration is in the watchdog's pipe (or there is no watchdog to tell).
   */
  watch(pgid: number, registered?: () => void): void {
    if (this.watched.has(pgid)) return registered?.();
    this.watched.add(pgid);
    this.send(`+${pgid}\n`, registered);
  }

  /**
   * The group has been reaped by us: the watchdog must not signal a recycled pid later. With the last
   * group gone the watchdog is retired (its pipe closed: it finds nothing to kill and exits), so no
   * process of ours outlives the children it guards; the next child starts a new one.
   */
  forget(pgid: number): void {
    if (!this.child || !this.watched.has(pgid)) return;
    this.send(`-${pgid}\n`);
    this.watched.delete(pgid);
    if (this.watched.size === 0) {
      const retired = this.child;
      this.child = undefined;
      retired.stdin?.end();
    }
  }

  /**
   * Starts the watchdog now, so that a child spawned next is registered by one write to a shell
   * that is already running (no fork between the child's spawn and its registration).
   */
  start(): void {
    this.ensureStarted();
  }

  /** Starts the watchdog if need be; whether one runs. */
  ready(): boolean {
    return this.ensureStarted() !== undefined;
  }

  /** The watchdog's pid, for tests. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  private send(line: string, written?: () => void): void {
    const child = this.ensureStarted();
    if (!child?.stdin || child.stdin.destroyed) return written?.();
    let told = false;
    const tell = (): void => {
      if (told) return;
      told = true;
      written?.();
    };
    child.stdin.write(line, tell);
    // Nothing left in the stream's buffer: the line is in the pipe already (the callback comes a
    // turn later, after whatever the caller does next, such as the loader compiling the adapter).
    if (child.stdin.writableLength === 0) tell();
  }

  private ensureStarted(): ChildProcess | undefined {
    if (this.child || this.failed) return this.child;
    try {
      // Windows has no process groups to signal: the exit hooks are all there is.
      if (process.platform === 'win32') throw new Error('no process groups');
      const child = spawn('/bin/sh', ['-c', watchdogProgram], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
      // The watchdog must not keep this process alive, nor its pipe: it lives exactly as long as we do.
      child.unref();
      const stdin = child.stdin as (NodeJS.WritableStream & { unref?: () => void }) | null;
      stdin?.unref?.();
      child.stdin?.on('error', () => undefined);
      child.once('error', () => {
        this.failed = true;
        this.child = undefined;
      });
      this.child = child;
    } catch {
      // Without a watchdog the exit hooks still cover every ending except SIGKILL.
      this.failed = true;
    }
    return this.child;
  }
}

const SHARED = Symbol.for('cyclelens.childWatchdog');

/**
 * The process's one watchdog. The loader (dist/adapter.js) and the adapter program are two bundles,
 * each with its own copy of this module: the instance lives on the global object so that a child the
 * loader starts and the children the adapter starts are guarded by the same shell.
 */
export function sharedWatchdog(): ChildWatchdog {
  const g = globalThis as { [SHARED]?: ChildWatchdog };
  return (g[SHARED] ??= new ChildWatchdog());
}
