import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { AdapterHarness, qemuLaunchArgs } from '../support/dap';
import { killTagged, processesWithTag, waitForNoTaggedProcesses, type LiveProcess } from '../support/ownedProcesses';

/**
 * Faults that take a whole process away (the adapter itself, or the channel it depends on) and
 * must leave nothing behind and lose nothing: each one is injected for real.
 */
describe('faults: nothing lost, nothing left behind', () => {
  let h: AdapterHarness | undefined;
  /** Set once the test killed the adapter: a disconnect request would then wait forever for its answer. */
  let adapterKilled = false;

  afterEach(async () => {
    let left: LiveProcess[] = [];
    if (h && adapterKilled) {
      left = await waitForNoTaggedProcesses(h.tag);
      killTagged(h.tag);
    } else if (h) {
      left = await h.stop();
    }
    h = undefined;
    adapterKilled = false;
    assert.deepEqual(left, [], `processes left behind: ${JSON.stringify(left)}`);
  });

  const find = (all: LiveProcess[], pattern: RegExp): LiveProcess => {
    const p = all.find((x) => pattern.test(x.cmdline));
    assert.ok(p, `no process matches ${pattern} among ${JSON.stringify(all)}`);
    return p;
  };

  for (const target of ['rv32', 'cortex-m4'] as const) {
    it(`SIGKILL of the debug adapter takes QEMU and GDB with it (${target})`, async () => {
      h = new AdapterHarness();
      await h.start();
      await h.launchToEntry(qemuLaunchArgs(target, 'cyclic'));
      // Let the target run: a running QEMU is the one that spins at full CPU when orphaned.
      await h.dc.continueRequest({ threadId: 1 });
      const running = processesWithTag(h.tag);
      const adapter = find(running, /dist\/adapter\.js/);
      const qemu = find(running, /qemu-system-/);
      const gdb = find(running, /gdb-multiarch/);
      process.kill(adapter.pid, 'SIGKILL');
      adapterKilled = true;
      const left = await waitForNoTaggedProcesses(h.tag, 4000);
      assert.deepEqual(left, [], `survivors of the adapter (adapter ${adapter.pid}, QEMU ${qemu.pid}, GDB ${gdb.pid})`);
    });
  }
});
