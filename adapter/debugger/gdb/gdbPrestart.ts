import { sharedWatchdog } from '../../util/childWatchdog';
import { findExecutable, OwnedProcess } from '../../util/processes';

/** How GDB is started for CycleLens: machine interface, no init files, no banner. */
export const GDB_ARGS = ['--interpreter=mi3', '--nx', '--quiet'];

/** A prestarted GDB nobody took is ended after this long (the adapter was started and never launched). */
const UNUSED_MS = 15_000;

interface Warm {
  executable: string;
  proc: OwnedProcess;
  timer: NodeJS.Timeout;
}
// On the global object: the loader (dist/adapter.js) starts the GDB of a remembered plan
// (adapter/startPlan.ts) and the adapter program, a bundle of its own, takes it.
const SLOT = Symbol.for('cyclelens.prestartedGdb');
const state = globalThis as { [SLOT]?: Warm };

/**
 * Starts the default GDB as soon as the adapter starts, before the launch request arrives. GDB takes
 * 60-100 ms to start (its Python, its architectures), the largest part of a launch; started here it
 * starts while the adapter loads and the client sends its requests. The launch takes it when it
 * asks for the same executable (GdbDebugger.start), and any other launch ends it. It is an owned
 * process like any other: the exit hooks and the watchdog end it with the adapter.
 */
export function prestartGdb(name: string): void {
  if (state[SLOT]) return;
  const executable = findExecutable(name);
  if (!executable) return; // the launch reports a missing GDB with its fix
  try {
    sharedWatchdog().start();
    const proc = OwnedProcess.spawn('gdb', executable, GDB_ARGS);
    proc.child.once('error', () => {
      if (state[SLOT]?.proc === proc) void discardPrestartedGdb();
    });
    const timer = setTimeout(() => void discardPrestartedGdb(), UNUSED_MS);
    timer.unref();
    state[SLOT] = { executable, proc, timer };
  } catch {
    // the launch starts GDB itself and reports what goes wrong
  }
}

/** The prestarted GDB when it is `executable` and still running; another one is ended. */
export function takePrestartedGdb(executable: string): OwnedProcess | undefined {
  const w = state[SLOT];
  if (!w) return undefined;
  state[SLOT] = undefined;
  clearTimeout(w.timer);
  if (w.executable === executable && !w.proc.hasExited) return w.proc;
  void w.proc.kill();
  return undefined;
}

/** Ends a prestarted GDB that no launch took; resolves once it is gone. */
export async function discardPrestartedGdb(): Promise<void> {
  const w = state[SLOT];
  if (!w) return;
  state[SLOT] = undefined;
  clearTimeout(w.timer);
  await w.proc.kill();
}
