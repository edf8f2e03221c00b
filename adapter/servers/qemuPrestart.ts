import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { QemuCommand } from '../startPlan';
import { sharedWatchdog } from '../util/childWatchdog';
import { spawnGuarded } from '../util/guardedSpawn';

/**
 * QEMU started ahead of the launch. QEMU takes 50-60 ms to open its gdbserver port, the longest
 * part of a launch once GDB is started with the adapter; begun by the loader at its first line
 * (adapter/loader.ts), it starts while Node loads the adapter program and the client sends its
 * first requests.
 *
 * Which command to start comes from the start hint (common/startHint.ts): a launch that was given a
 * hint remembers the QEMU command it built (adapter/startPlan.ts), as a template with the gdbserver
 * port and the run directory left open; the next adapter spawned with the same hint starts that
 * command halted (`-S`) on a port and in a directory of its own. The launch takes the
 * process only when the command it builds now is the same template (and the ELF named by `-kernel`
 * has not changed since); any other launch, or none within UNUSED_MS, ends it. The process dies
 * with the adapter: it is registered with the child watchdog, started before it, and covered until
 * then (util/guardedSpawn.ts).
 *
 * This module runs in both bundles (the loader and the adapter program): its state is kept on the
 * global object so that the adapter finds what the loader started.
 */

/** Stand-ins, in a template, for the values each start chooses. */
export const PORT_SLOT = '{{cyclelens:port}}';
export const DIR_SLOT = '{{cyclelens:dir}}';

/** A prestarted QEMU nobody took is ended after this long (the adapter got no launch, or a slow one). */
export const UNUSED_MS = 10_000;

interface Prestarted {
  command: QemuCommand;
  child: ChildProcess;
  port: number;
  dir: string;
  kernel: string | undefined;
  timer: NodeJS.Timeout;
}

const SLOT = Symbol.for('cyclelens.prestartedQemu');
const ENDING = Symbol.for('cyclelens.prestartedQemuEnding');
const state = globalThis as { [SLOT]?: Prestarted; [ENDING]?: Promise<void> };

/** The template's arguments with this start's port and run directory. */
export function instantiate(argv: string[], port: number, dir: string): string[] {
  return argv.map((a) => a.split(PORT_SLOT).join(String(port)).split(DIR_SLOT).join(dir));
}

/** The size and time of the ELF a command loads (`-kernel`), to notice a rebuild in between. */
function kernelStamp(argv: string[]): string | undefined {
  const i = argv.indexOf('-kernel');
  const elf = i >= 0 ? argv[i + 1] : undefined;
  if (!elf) return undefined;
  try {
    const st = statSync(elf);
    return `${st.size}:${st.mtimeMs}`;
  } catch {
    return undefined;
  }
}

function sameCommand(a: QemuCommand, b: QemuCommand): boolean {
  return (
    a.binary === b.binary &&
    a.cwd === b.cwd &&
    a.argv.length === b.argv.length &&
    a.argv.every((x, i) => x === b.argv[i])
  );
}

/**
 * Starts `command` (a plan's, adapter/startPlan.ts), then calls `then` (at once when there is nothing
 * to start). The port is chosen by the kernel first, which takes one turn of the event loop. Nothing
 * here may fail a start: the launch starts its own QEMU whatever happens.
 */
export function prestartQemu(command: QemuCommand | undefined, then: () => void): void {
  if (!command || state[SLOT]) return then();
  let done = false;
  const go = (port: number | undefined): void => {
    if (done) return;
    done = true;
    try {
      if (port) startQemu(command, port);
    } catch {
      // the launch starts QEMU itself
    }
    then();
  };
  try {
    const server = createServer();
    server.unref();
    server.once('error', () => go(undefined));
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      // close() releases the port at once; only its callback waits for the next turn.
      server.close();
      go(typeof address === 'object' && address ? address.port : undefined);
    });
  } catch {
    go(undefined);
  }
}

function startQemu(command: QemuCommand, port: number): void {
  const watchdog = sharedWatchdog();
  watchdog.start();
  const dir = mkdtempSync(join(tmpdir(), 'cyclelens-qemu-'));
  const kernel = kernelStamp(command.argv);
  const argv = instantiate(command.argv, port, dir);
  const child = spawnGuarded(
    command.binary,
    argv,
    { cwd: command.cwd, stdio: ['pipe', 'pipe', 'pipe'], detached: true },
    watchdog,
  );
  child.once('error', () => undefined);
  const pid = child.pid;
  if (pid === undefined) {
    rmSync(dir, { recursive: true, force: true });
    return;
  }
  const timer = setTimeout(() => void discardPrestartedQemu(), UNUSED_MS);
  timer.unref();
  const entry: Prestarted = { command, child, port, dir, kernel, timer };
  child.once('exit', () => {
    watchdog.forget(pid);
    // Still untaken: nobody else removes its directory.
    if (state[SLOT] === entry) {
      state[SLOT] = undefined;
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
    }
  });
  // Until a launch takes it, the adapter's exit hooks do not know it: end it with the process.
  process.once('exit', () => {
    if (state[SLOT] === entry) signal(child, 'SIGKILL');
  });
  state[SLOT] = entry;
}

function signal(child: ChildProcess, sig: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, sig);
  } catch {
    // already gone
  }
}

/** The prestarted QEMU, its port and run directory, when `command` is what it runs; another one is ended. */
export function takePrestartedQemu(
  command: QemuCommand,
): { child: ChildProcess; port: number; dir: string } | undefined {
  const p = state[SLOT];
  if (!p) return undefined;
  const running = p.child.exitCode === null && p.child.signalCode === null;
  if (running && sameCommand(p.command, command) && kernelStamp(command.argv) === p.kernel) {
    state[SLOT] = undefined;
    clearTimeout(p.timer);
    return { child: p.child, port: p.port, dir: p.dir };
  }
  // Ended meanwhile; discardPrestartedQemu (before the launch answers) waits for it.
  state[ENDING] = discardPrestartedQemu();
  return undefined;
}

/** Ends a prestarted QEMU that no launch took and removes its run directory; resolves once it is gone. */
export async function discardPrestartedQemu(): Promise<void> {
  const p = state[SLOT];
  if (!p) {
    const ending = state[ENDING];
    state[ENDING] = undefined;
    return ending;
  }
  state[SLOT] = undefined;
  clearTimeout(p.timer);
  if (p.child.exitCode === null && p.child.signalCode === null) {
    const exited = new Promise<void>((resolve) => p.child.once('exit', () => resolve()));
    signal(p.child, 'SIGTERM');
    const kill = setTimeout(() => signal(p.child, 'SIGKILL'), 1000);
    await exited;
    clearTimeout(kill);
  }
  rmSync(p.dir, { recursive: true, force: true });
}

/** Whether a QEMU started ahead is waiting to be taken (for tests). */
export function prestartedQemuPid(): number | undefined {
  return state[SLOT]?.child.pid;
}
