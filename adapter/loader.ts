import { join } from 'node:path';
import { codeCacheDir, runWithCodeCache } from './codeCache';
import { prestartQemu } from './servers/qemuPrestart';

/**
 * The debug adapter's entry point (dist/adapter.js): starts the QEMU of the expected launch, when
 * the start hint names one (servers/qemuPrestart.ts), then runs the adapter program
 * (dist/adapterMain.js) with V8's code cache, so that a launch does not wait for the program to be
 * compiled again. Nothing here may fail a start that would work without the cache or the hint.
 */
const cacheDir = codeCacheDir();
prestartQemu(process.env, cacheDir, () => {
  const result = runWithCodeCache(join(__dirname, 'adapterMain.js'), cacheDir, module);
  // Saved once the first session has started, when the code its launch ran is compiled and worth
  // keeping; later starts read it. The timer never holds the adapter open.
  const SAVE_AFTER_MS = 3_000;
  if (result.status === 'absent' || result.status === 'rejected') setTimeout(() => result.save(), SAVE_AFTER_MS).unref();
});
