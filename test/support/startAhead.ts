import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CycleLensLaunchArgs } from '../../common/launchArgs';
import { adapterStartEnv } from '../../common/startHint';
import { AdapterHarness } from './dap';

/**
 * Start-ahead test support (adapter/startPlan.ts): a cache directory of the test's own, the
 * environment an adapter gets for a hinted configuration, and one launch that teaches the
 * configuration, so that the next adapter with that hint starts its QEMU and GDB at its first line.
 */

/** A new cache directory; the caller removes it. */
export function newCacheDir(): string {
  return mkdtempSync(join(tmpdir(), 'cyclelens-prestart-test-'));
}

/** What the extension's factory adds to the adapter's environment for `hinted`, with the cache in `cache`. */
export function hintedEnv(hinted: CycleLensLaunchArgs, cache: string): Record<string, string> {
  return { ...adapterStartEnv(hinted as unknown as Record<string, unknown>), CYCLELENS_CODE_CACHE: cache };
}

/** Ends a session with a disconnect and checks that it left nothing behind. */
export async function finishSession(harness: AdapterHarness): Promise<void> {
  await harness.dc.disconnectRequest({ terminateDebuggee: true });
  const left = await harness.stop();
  assert.deepEqual(left, [], 'no process outlives the session');
}

/** One session that remembers the command for `args` under its hint in `cache`. */
export async function teachStartPlan(args: CycleLensLaunchArgs, cache: string): Promise<void> {
  const first = new AdapterHarness(undefined, hintedEnv(args, cache));
  await first.start();
  try {
    const stopped = await first.launchToEntry(args);
    assert.equal(stopped.body.reason, 'entry');
    assert.match(
      first.allOutput,
      /^Starting \S*qemu-system-\S+ /m,
      'with nothing remembered, the launch starts QEMU itself',
    );
  } catch (err) {
    await first.stop();
    throw err;
  }
  await finishSession(first);
  assert.equal(
    readdirSync(cache).filter((f) => /^start-[0-9a-f]{32}\.json$/.test(f)).length,
    1,
    'the launch remembered its command',
  );
}
