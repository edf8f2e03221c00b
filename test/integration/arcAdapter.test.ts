import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CapabilitiesEventBody, MeasurementResponse } from '../../common/dapCustom';
import { CustomEvents, CustomRequests } from '../../common/dapCustom';
import { ArcCpuModel } from '../doubles/arcCpuModel';
import { ArcGdbStub } from '../doubles/arcGdbStub';
import { buildTinyArcElf, ensureArcGdb, TinyArcElf } from '../support/arcTools';
import { AdapterHarness } from '../support/dap';

/**
 * ARC PCT counters through the whole product: the built adapter, a real arc-elf32-gdb (built from
 * Debian's GDB source), and the gdbserver TEST DOUBLE of test/doubles/ that models the PCT registers
 * as documented. No ARC chip or simulator runs here; the double stands in for nSIM or OpenOCD.
 */
describe('ARC PCT through the debug adapter (gdbserver test double)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cyclelens-arc-adapter-'));
  let gdbPath = '';
  let elf: TinyArcElf;
  let stub: ArcGdbStub;
  const h = new AdapterHarness();
  let capabilities: CapabilitiesEventBody;

  before(async () => {
    gdbPath = ensureArcGdb();
    const built = buildTinyArcElf(dir);
    assert.ok(built, 'ARC binutils are needed to assemble the test program (scripts/buildArcBinutils.sh)');
    elf = built;
    // A build with 4 counters of 48 bits and the conditions in a shuffled order: the product must enumerate.
    stub = new ArcGdbStub({
      build: { counters: 4, width: 48 },
      program: { loopStart: elf.textBase, loopEnd: elf.symbols.get('loop_end')! },
    });
    stub.cpu.writeMemory(elf.textBase, elf.text);
    const port = await stub.listen(0);
    await h.start();
    const caps = h.dc.waitForEvent(CustomEvents.capabilities);
    const mid = elf.symbols.get('mid')!;
    await h.launchToEntry({
      executable: elf.path,
      gdbPath,
      server: { type: 'remote', address: `127.0.0.1:${port}` },
      stopAtEntry: `*0x${mid.toString(16)}`,
    });
    capabilities = (await caps).body as CapabilitiesEventBody;
  });

  after(async () => {
    const left = await h.stop();
    await stub?.close();
    rmSync(dir, { recursive: true, force: true });
    assert.deepEqual(left, []);
  });

  it('discovers the PCT and enumerates its countable conditions by name', () => {
    assert.equal(capabilities.family, 'arc');
    const pct = capabilities.units.find((u) => u.unit === 'ARC PCT');
    assert.ok(pct?.present, JSON.stringify(capabilities.units));
    assert.equal(pct.slots.length, 4);
    assert.ok(pct.slots.every((s) => s.width === 48));
    const ids = (pct.events ?? []).map((e) => e.id);
    for (const id of ['arc.crun', 'arc.iall', 'arc.ijmp', 'arc.imemrdc'])
      assert.ok(ids.includes(id), `missing ${id} in ${ids.join(',')}`);
  });

  it('counts cycles and instructions over one loop iteration exactly as the modelled hardware', async () => {
    await h.dc.customRequest(CustomRequests.configure, { events: ['arc.crun', 'arc.iall', 'arc.imemrdc'] });
    const mid = elf.symbols.get('mid')!;
    // From `mid` around the loop back to `mid`: all 16 instructions once, including the taken branch.
    const r = (
      await h.dc.customRequest(CustomRequests.measureRange, {
        start: { address: `0x${mid.toString(16)}` },
        end: { address: `0x${mid.toString(16)}` },
        passes: 3,
      })
    ).body as MeasurementResponse;
    assert.equal(r.passes.length, 3, r.incomplete);
    let crun = 0;
    let loads = 0;
    for (let k = 0; k < 16; k++) {
      const c = ArcCpuModel.conditionsOf(stub.cpu.kindAt(elf.textBase + 4 * k));
      crun += c['crun'] ?? 0;
      loads += c['imemrdc'] ?? 0;
    }
    for (const pass of r.passes) {
      const byEvent = new Map(pass.values.map((v) => [v.event, Number(v.value)]));
      assert.equal(byEvent.get('arc.iall'), 16);
      assert.equal(byEvent.get('arc.crun'), crun);
      assert.equal(byEvent.get('arc.imemrdc'), loads);
    }
  });

  it('refuses more events than the build has counters', async () => {
    await assert.rejects(
      h.dc.customRequest(CustomRequests.configure, {
        events: ['arc.crun', 'arc.iall', 'arc.ijmp', 'arc.imemrdc', 'arc.imemwrc'],
      }),
      /no free counter slot is left for 'arc\.imemwrc'/,
    );
  });
});
