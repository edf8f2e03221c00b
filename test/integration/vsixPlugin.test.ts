import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StartSamplingResponse } from '../../common/dapCustom';
import { CustomRequests } from '../../common/dapCustom';
import { runOracle } from '../oracle/oracle';
import { importScriptsLib } from '../support/codeServerScripts';
import { AdapterHarness, qemuLaunchArgs } from '../support/dap';
import { fixtureElf } from '../support/paths';
import { SampleCollector } from '../support/sampling';

/**
 * The packaged extension (no checkout around it) has the exact sampler: the .vsix holds the plugin
 * built for linux-x64, and the adapter inside the package loads it and counts exactly.
 */
const platformDir = `${process.platform}-${process.arch}`;
const unpacked = mkdtempSync(join(tmpdir(), 'cyclelens-vsix-'));
after(() => rmSync(unpacked, { recursive: true, force: true }));

describe('the exact sampler in the packaged extension', () => {
  it(`the .vsix holds the plugin for ${platformDir} and its source`, async () => {
    const { vsix } = await importScriptsLib();
    const file = vsix.ensureVsix();
    const entries = execFileSync('unzip', ['-Z1', file], { encoding: 'utf8' }).split('\n');
    assert.ok(
      entries.includes(`extension/dist/qemu-plugin/${platformDir}/qemuInsnCount.so`),
      entries.filter((e) => e.includes('dist/')).join(', '),
    );
    assert.ok(entries.includes('extension/dist/qemu-plugin/qemuInsnCount.c'));
    execFileSync('unzip', ['-q', file, '-d', unpacked]);
  });

  it('the adapter inside the package loads its own plugin and counts singlepass exactly', async () => {
    const adapter = join(unpacked, 'extension', 'dist', 'adapter.js');
    assert.ok(existsSync(adapter), 'unpacked by the previous test');
    const elf = fixtureElf('rv32', 'singlepass');
    const oracle = await runOracle({ elf });
    const h = new AdapterHarness(adapter, { CYCLELENS_QEMU_PLUGIN: undefined });
    try {
      await h.start();
      const samples = new SampleCollector(h);
      const terminated = h.dc.waitForEvent('terminated', 60_000);
      await h.dc.launch(
        qemuLaunchArgs('rv32', 'singlepass', {
          stopAtEntry: false,
          server: { type: 'qemu', machine: 'virt', instructionCounts: true },
        }),
      );
      const started = (await h.dc.customRequest(CustomRequests.startSampling, { sampler: 'qemu-plugin' }))
        .body as StartSamplingResponse;
      assert.equal(started.sampler.attribution, 'exact-count');
      await h.dc.configurationDoneRequest();
      await terminated;
      // QEMU was started with the package's plugin, not the checkout's.
      const command = h.output
        .join('')
        .split('\n')
        .find((l) => l.includes('-plugin'));
      assert.ok(
        command?.includes(join(unpacked, 'extension', 'dist', 'qemu-plugin', platformDir, 'qemuInsnCount.so')),
        command,
      );
      assert.equal(samples.total, oracle.totals.instructions);
    } finally {
      assert.deepEqual(await h.stop(), [], 'processes left behind');
    }
  });
});
