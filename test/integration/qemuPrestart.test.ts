import assert from 'node:assert/strict';
import { copyFileSync, rmSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { after, afterEach, describe, it } from 'node:test';
import type { CycleLensLaunchArgs } from '../../common/launchArgs';
import { AdapterHarness, qemuLaunchArgs } from '../support/dap';
import { fixtureElf } from '../support/paths';
import { processesWithTag, waitForNoTaggedProcesses, type LiveProcess } from '../support/ownedProcesses';
import { finishSession, hintedEnv, newCacheDir, teachStartPlan } from '../support/startAhead';

/**
 * QEMU started ahead of the launch (adapter/servers/qemuPrestart.ts), through the real built adapter
 * spawned as the extension's factory spawns it, with the start hint of its launch. A launch that
 * builds the command the hint's last launch ran takes the running QEMU; a different launch ends it
 * and starts its own; and none of them, nor an adapter SIGKILLed just after it started QEMU, leaves a
 * process behind. Real QEMU and GDB; each test has a cache directory of its own.
 */
const caches: string[] = [];
let h: AdapterHarness | undefined;

function cacheDir(): string {
  const dir = newCacheDir();
  caches.push(dir);
  return dir;
}

/** An adapter spawned with the hint of `hinted` and its own cache directory. */
async function adapterFor(hinted: CycleLensLaunchArgs, cache: string): Promise<AdapterHarness> {
  h = new AdapterHarness(undefined, hintedEnv(hinted, cache));
  await h.start();
  return h;
}

/** Waits (on the condition, not a clock) for the adapter's first QEMU; undefined if none comes within `ms`. */
async function qemuOf(harness: AdapterHarness, ms = 5000): Promise<LiveProcess | undefined> {
  const deadline = Date.now() + ms;
  for (;;) {
    const qemu = processesWithTag(harness.tag).find((p) => /qemu-system-arm/.test(p.cmdline));
    if (qemu || Date.now() > deadline) return qemu;
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * The adapter's GDBs. GDB forks at its start (to run `iconv -l`), and for a moment the fork is a
 * copy of GDB: a process whose parent is a GDB is not counted.
 */
function gdbsOf(harness: AdapterHarness): LiveProcess[] {
  const gdbs = processesWithTag(harness.tag).filter((p) => /gdb-multiarch/.test(p.cmdline));
  return gdbs.filter((p) => !gdbs.some((parent) => parent.pid === p.ppid));
}

async function finish(harness: AdapterHarness): Promise<void> {
  await finishSession(harness);
  h = undefined;
}

/**
 * A launch of `args` has run (so its command is remembered), and a new adapter with that hint has
 * started: the QEMU its loader started ahead, found before any request.
 */
async function adapterWithQemuAhead(
  args: CycleLensLaunchArgs,
  cache: string,
): Promise<{ second: AdapterHarness; ahead: LiveProcess }> {
  await teachStartPlan(args, cache);
  const second = await adapterFor(args, cache);
  const ahead = await qemuOf(second);
  assert.ok(ahead, 'QEMU runs before any request');
  return { second, ahead };
}

describe('QEMU started ahead of the launch', () => {
  afterEach(async () => {
    if (h) await h.stop();
    h = undefined;
  });
  after(() => {
    for (const dir of caches) rmSync(dir, { recursive: true, force: true });
  });

  it(
    'a launch of the hinted configuration takes the QEMU and the GDB the loader started before ' + 'the request',
    async () => {
      const cache = cacheDir();
      const args = qemuLaunchArgs('cortex-m4', 'singlepass');
      // Before any request: the loader started QEMU from the remembered command.
      const { second, ahead } = await adapterWithQemuAhead(args, cache);
      const gdbAhead = gdbsOf(second);
      assert.equal(gdbAhead.length, 1, 'the remembered GDB was started with QEMU, before the adapter program');
      const stopped = await second.launchToEntry(args);
      assert.equal(stopped.body.reason, 'entry');
      assert.equal((await second.topFrame()).name, 'main');
      assert.deepEqual(
        gdbsOf(second).map((p) => p.pid),
        [gdbAhead[0]!.pid],
        'the session runs on the GDB started ahead, and no other',
      );
      assert.match(second.allOutput, /^Started ahead of the launch: \S*qemu-system-arm /m);
      const qemus = processesWithTag(second.tag).filter((p) => /qemu-system-arm/.test(p.cmdline));
      assert.deepEqual(
        qemus.map((p) => p.pid),
        [ahead.pid],
        'the session runs on the QEMU started ahead, and no other',
      );
      await finish(second);
    },
  );

  it('a launch that builds another command ends the QEMU started ahead and starts its own', async () => {
    const cache = cacheDir();
    const hinted = qemuLaunchArgs('cortex-m4', 'singlepass');
    const { second, ahead } = await adapterWithQemuAhead(hinted, cache);
    // The same hint, but the launch asks for another program: the command differs in `-kernel`.
    const other = qemuLaunchArgs('cortex-m4', 'cyclic');
    const stopped = await second.launchToEntry(other);
    assert.equal(stopped.body.reason, 'entry');
    assert.match(second.allOutput, /^Starting \S*qemu-system-arm .*cyclic\.elf/m);
    assert.doesNotMatch(second.allOutput, /Started ahead of the launch/);
    // Ended before the launch answered (a zombie not yet reaped does not count: see processesWithTag).
    assert.ok(!processesWithTag(second.tag).some((p) => p.pid === ahead.pid), 'the QEMU started ahead is ended');
    assert.equal(
      processesWithTag(second.tag).filter((p) => /qemu-system-arm/.test(p.cmdline)).length,
      1,
      'one QEMU: the launch’s own',
    );
    await finish(second);
  });

  it(
    'an ELF rebuilt after QEMU started ahead is not debugged on the old image: the launch ' + 'starts its own',
    async () => {
      const cache = cacheDir();
      const dir = cacheDir();
      const elf = join(dir, 'singlepass.elf');
      copyFileSync(fixtureElf('cortex-m4', 'singlepass'), elf);
      const args = { ...qemuLaunchArgs('cortex-m4', 'singlepass'), executable: elf };
      const { second, ahead } = await adapterWithQemuAhead(args, cache);
      // A build between the adapter's start and the launch: same path, new time.
      const later = new Date(Date.now() + 5_000);
      utimesSync(elf, later, later);
      const stopped = await second.launchToEntry(args);
      assert.equal(stopped.body.reason, 'entry');
      assert.match(second.allOutput, /^Starting \S*qemu-system-arm /m);
      assert.ok(!processesWithTag(second.tag).some((p) => p.pid === ahead.pid), 'the QEMU started ahead is ended');
      await finish(second);
    },
  );

  it('SIGKILL of the adapter just after it started QEMU leaves nothing behind', async () => {
    const cache = cacheDir();
    const args = qemuLaunchArgs('cortex-m4', 'singlepass');
    const { second, ahead } = await adapterWithQemuAhead(args, cache);
    const adapter = processesWithTag(second.tag).find((p) => /dist\/adapter\.js/.test(p.cmdline));
    assert.ok(adapter, 'the adapter runs');
    // QEMU shows in /proc as soon as it is exec'd, a moment before the spawn returns to the loader
    // and registers it with the watchdog. An answer to initialize says the loader's first lines
    // (spawn and registration, synchronous) are behind it: the kill lands before any launch.
    await second.dc.initializeRequest();
    process.kill(adapter.pid, 'SIGKILL');
    const left = await waitForNoTaggedProcesses(second.tag, 4000);
    // No disconnect: a dead adapter would never answer it.
    h = undefined;
    assert.deepEqual(left, [], `survivors of the adapter (QEMU started ahead: ${ahead.pid})`);
  });

  it('an adapter that gets no launch ends the QEMU it started when it is told to go', async () => {
    const cache = cacheDir();
    const args = qemuLaunchArgs('cortex-m4', 'singlepass');
    const { second } = await adapterWithQemuAhead(args, cache);
    await second.dc.initializeRequest();
    await finish(second);
  });
});
