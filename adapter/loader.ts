import { join } from 'node:path';
import { SPARE_ARG, START_HINT_VAR } from '../common/startHint';
import { codeCacheDir, runWithCodeCache, type CodeCacheResult } from './codeCache';
import { prestartGdb } from './debugger/gdb/gdbPrestart';
import { prestartQemu } from './servers/qemuPrestart';
import { awaitHandover } from './spareHold';
import { savedStartPlan } from './startPlan';
import { sharedWatchdog } from './util/childWatchdog';

/**
 * The debug adapter's entry point (dist/adapter.js). When the start hint has a remembered plan
 * (startPlan.ts), it starts that plan's GDB and QEMU first, so that their start-up overlaps Node's
 * loading of the adapter; then it runs the adapter program (dist/adapterMain.js) with V8's code
 * cache, so that a launch does not wait for the program to be compiled again. Spawned as a spare
 * (core/dap/adapterSpare.ts), it loads the program first and then waits, with nothing started, until
 * it is handed a session and its hint. Nothing here may fail a start that would work without the
 * cache or the plan.
 */
const cacheDir = codeCacheDir();
const program = join(__dirname, 'adapterMain.js');

/** Starts what the plan under the hint in the environment names; calls `then` once QEMU is spawned. */
function startAhead(then: () => void): void {
  const plan = savedStartPlan(process.env, cacheDir);
  if (plan?.gdb || plan?.qemu) {
    // Running before the first child: each child is registered by one write to a live shell.
    sharedWatchdog().start();
  }
  if (plan?.gdb) prestartGdb(plan.gdb);
  prestartQemu(plan?.qemu, then);
}

/** Runs the loaded program's main, then saves the code cache once the first session has started. */
function run(loaded: CodeCacheResult): void {
  (loaded.exports as { main(argv: string[]): void }).main(process.argv.slice(2));
  // Saved when the code its launch ran is compiled and worth keeping; later starts read it. The
  // timer never holds the adapter open.
  const SAVE_AFTER_MS = 3_000;
  if (loaded.status === 'absent' || loaded.status === 'rejected')
    setTimeout(() => loaded.save(), SAVE_AFTER_MS).unref();
}

if (process.argv.includes(SPARE_ARG)) {
  const loaded = runWithCodeCache(program, cacheDir, module);
  void awaitHandover().then(
    (handover) => {
      if (!handover) process.exit(0);
      // From here it serves a session: its title no longer says spare (common/startHint.ts).
      process.title = [process.argv0, ...process.argv.slice(1).filter((a) => a !== SPARE_ARG)].join(' ');
      if (handover.hint) process.env[START_HINT_VAR] = handover.hint;
      startAhead(() => run(loaded));
    },
    (err: unknown) => {
      process.stderr.write(`CycleLens debug adapter: ${(err as Error).message}\n`);
      process.exit(2);
    },
  );
} else {
  startAhead(() => run(runWithCodeCache(program, cacheDir, module)));
}
