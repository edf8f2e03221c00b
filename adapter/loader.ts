import { join } from 'node:path';
import { codeCacheDir, runWithCodeCache } from './codeCache';
import { prestartGdb } from './debugger/gdb/gdbPrestart';
import { prestartQemu } from './servers/qemuPrestart';
import { savedStartPlan } from './startPlan';
import { sharedWatchdog } from './util/childWatchdog';

/**
 * The debug adapter's entry point (dist/adapter.js). When the start hint has a remembered plan
 * (startPlan.ts), it starts that plan's GDB and QEMU first, so that their start-up overlaps Node's
 * loading of the adapter; then it runs the adapter program (dist/adapterMain.js) with V8's code
 * cache, so that a launch does not wait for the program to be compiled again. Nothing here may fail
 * a start that would work without the cache or the plan.
 */
const cacheDir = codeCacheDir();
const plan = savedStartPlan(process.env, cacheDir);
if (plan?.gdb || plan?.qemu) {
  // Running before the first child: each child is registered by one write to a live shell.
  sharedWatchdog().start();
}
if (plan?.gdb) prestartGdb(plan.gdb);
prestartQemu(plan?.qemu, () => {
  const result = runWithCodeCache(join(__dirname, 'adapterMain.js'), cacheDir, module);
  // Saved once the first session has started, when the code its launch ran is compiled and worth
  // keeping; later starts read it. The timer never holds the adapter open.
  const SAVE_AFTER_MS = 3_000;
  if (result.status === 'absent' || result.status === 'rejected') setTimeout(() => result.save(), SAVE_AFTER_MS).unref();
});
