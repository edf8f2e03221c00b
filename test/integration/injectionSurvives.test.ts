import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { InjectResponse } from '../../common/dapCustom';
import { CustomEvents, CustomRequests } from '../../common/dapCustom';
import { ElfImage } from '../../adapter/elf';
import { runOracle, type OracleSummary } from '../oracle/oracle';
import { AdapterHarness, qemuLaunchArgs } from '../support/dap';
import { fixtureElf } from '../support/paths';

/**
 * Measurements across the end of a run and across a restart, through the built adapter on QEMU
 * RV32: a program that finishes with measurements in leaves no patch record behind (QEMU took the
 * patched memory with it), so the next launch has nothing to restore and says nothing; a restart
 * applies the measurements asked for before it again, and they count the new run from its entry,
 * call for call as the oracle's trace does.
 */
const elfPath = fixtureElf('rv32', 'singlepass');
const image = ElfImage.loadSync(elfPath);
const scratch = mkdtempSync(join(tmpdir(), 'cyclelens-survive-'));
let count = 0;
function workspace(): string {
  const dir = join(scratch, `ws${++count}`);
  mkdirSync(dir);
  return dir;
}
const journals = (ws: string): string[] =>
  existsSync(join(ws, '.cyclelens', 'journal'))
    ? readdirSync(join(ws, '.cyclelens', 'journal')).filter((f) => f.endsWith('.json'))
    : [];

describe('measurements across the end of a run and a restart (QEMU RV32)', () => {
  let oracle: OracleSummary;
  const harnesses: AdapterHarness[] = [];
  const harness = (): AdapterHarness => {
    const h = new AdapterHarness();
    harnesses.push(h);
    return h;
  };
  const codeAt = async (h: AdapterHarness, address: number): Promise<Buffer> =>
    Buffer.from(
      (await h.dc.customRequest('readMemory', { memoryReference: `0x${address.toString(16)}`, count: 8 })).body.data,
      'base64',
    );
  const original = (name: string): Buffer => Buffer.from(image.file.readMemory(image.functionNamed(name)!.address, 8)!);

  before(async () => {
    oracle = await runOracle({ elf: elfPath });
  });
  after(async () => {
    for (const h of harnesses) assert.deepEqual(await h.stop(), []);
  });

  it(
    'a program that finishes with measurements in leaves no patch record, and the next launch ' + 'warns of none',
    async () => {
      const ws = workspace();
      const h = harness();
      await h.start();
      await h.launchToEntry(qemuLaunchArgs('rv32', 'singlepass', { cwd: ws }));
      const r = await h.custom(CustomRequests.inject, { targets: [{ function: 'fir_filter' }] });
      assert.equal(r.injected.length, 1, JSON.stringify(r.refused));
      assert.equal(journals(ws).length, 1, 'the patch is recorded while it is in');
      const terminated = h.dc.waitForEvent('terminated', 60_000);
      await h.dc.continueRequest({ threadId: 1 });
      await terminated;
      assert.deepEqual(journals(ws), [], 'a clean end clears the record: QEMU took the patched memory with it');

      // The next launch in the same folder has nothing to restore and says nothing about it.
      const next = harness();
      await next.start();
      await next.launchToEntry(qemuLaunchArgs('rv32', 'singlepass', { cwd: ws }));
      const said = next.output.join('');
      assert.doesNotMatch(said, /previous session/i, said);
      assert.deepEqual(await codeAt(next, image.functionNamed('fir_filter')!.address), original('fir_filter'));
    },
  );

  it('a restart applies the measurements asked for again, and they count the new run as the oracle does', async () => {
    const ws = workspace();
    const h = harness();
    await h.start();
    await h.launchToEntry(qemuLaunchArgs('rv32', 'singlepass', { cwd: ws, programEnd: 'program_end' }));
    const first = await h.custom(CustomRequests.inject, {
      targets: [{ function: 'fir_filter' }, { function: 'quicksort' }],
    });
    assert.equal(first.injected.length, 2, JSON.stringify(first.refused));
    const removed = h.dc.waitForEvent(CustomEvents.injectionsRemoved);
    const applied = h.dc.waitForEvent(CustomEvents.injectionsApplied, 60_000);
    await h.dc.customRequest('restart', {});
    await removed;
    const again = (await applied).body as InjectResponse;
    assert.deepEqual(
      again.injected.map((i) => i.name),
      ['fir_filter', 'quicksort'],
    );
    assert.deepEqual(again.refused, []);
    for (const name of ['fir_filter', 'quicksort'])
      assert.notDeepEqual(
        await codeAt(h, image.functionNamed(name)!.address),
        original(name),
        `${name} is patched again`,
      );
    // Counted from the restarted run's entry to its end: every call of the run.
    const stopped = h.dc.waitForEvent('stopped', 60_000);
    await h.dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: '*program_end' }] });
    await h.dc.continueRequest({ threadId: 1 });
    await stopped;
    const results = await h.custom(CustomRequests.injectedResults);
    for (const name of ['fir_filter', 'quicksort']) {
      const got = results.results.find((x) => x.name === name);
      const o = oracle.functions.find((f) => f.name === name)!;
      assert.ok(got, `${name} has results after the restart`);
      assert.equal(got.calls, o.calls, `${name}: calls of the restarted run`);
    }
    // A removal by the user is not asked again by the next restart.
    await h.custom(CustomRequests.removeInjections, {});
    let reapplied = false;
    const onApplied = (): void => void (reapplied = true);
    h.dc.on(CustomEvents.injectionsApplied, onApplied);
    await h.dc.customRequest('restart', {});
    h.dc.removeListener(CustomEvents.injectionsApplied, onApplied);
    assert.equal(reapplied, false, 'nothing was asked any more');
    assert.deepEqual((await h.custom(CustomRequests.injectedResults)).results, []);
  });
});
