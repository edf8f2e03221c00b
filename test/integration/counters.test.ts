import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { CapabilitiesEventBody } from '../../common/dapCustom';
import { CustomEvents, CustomRequests } from '../../common/dapCustom';
import { ElfImage } from '../../adapter/elf';
import { runOracle, resolveLocation } from '../oracle/oracle';
import { AdapterHarness, fixtureSource, qemuLaunchArgs } from '../support/dap';
import { markerLine } from '../support/markers';
import { fixtureElf } from '../support/paths';

/**
 * Counters through the real adapter, checked against the oracle (the instruction trace of the same
 * program under QEMU), never against the tool's own numbers.
 *
 * QEMU fact the regions are chosen for: under -icount, minstret is QEMU's virtual clock, and every
 * debugger stop lets that clock jump to the next armed timer deadline. Breakpoint-bounded counts are
 * therefore exact only before the firmware arms its timer (board_timer_start); the regions below lie
 * there. Injected measurements, which never stop the target, have no such limit.
 */
const elf = fixtureElf('rv32', 'singlepass');
const image = ElfImage.loadSync(elf);
const consoleC = fixtureSource('console.c');
const loopHead = resolveLocation(image, `${consoleC}:${markerLine(consoleC, '#PUTSTR_LOOP')}`, 'putstr-loop');
const timerStart = image.functionNamed('board_timer_start')!.address;
const hex = (n: number): string => `0x${n.toString(16)}`;

describe('counters on QEMU RV32 (minstret) against the oracle', () => {
  const h = new AdapterHarness();
  let capabilities: CapabilitiesEventBody;
  let entryPc = 0;

  before(async () => {
    await h.start();
    const caps = h.dc.waitForEvent(CustomEvents.capabilities);
    await h.launchToEntry(qemuLaunchArgs('rv32'));
    capabilities = (await caps).body as CapabilitiesEventBody;
    entryPc = Number((await h.topFrame()).instructionPointerReference);
  });
  after(async () => assert.deepEqual(await h.stop(), []));

  it('reports the counters RV32 QEMU implements', () => {
    const unit = capabilities.units.find((u) => u.unit === 'RISC-V counters');
    assert.ok(unit?.present, JSON.stringify(capabilities));
    const slots = new Map(unit.slots.map((s) => [s.name, s]));
    assert.equal(slots.get('mcycle')?.fixedEvent, 'cycles');
    assert.equal(slots.get('minstret')?.fixedEvent, 'instructions');
    assert.ok(!slots.has('mhpmcounter19'), 'QEMU 7.2 describes mhpmcounter3..18 only');
  });

  it('rejects an unknown event and a slot that does not exist, saying what to do', async () => {
    await assert.rejects(
      h.custom(CustomRequests.configure, { events: ['dcache-miss'] }),
      /Unknown event 'dcache-miss'\. This target counts: .*instructions/,
    );
    await assert.rejects(
      h.custom(CustomRequests.configure, {
        assignments: [{ unit: 'RISC-V counters', slot: 1, event: 'instructions' }],
      }),
      /has no counter slot 1\. Its slots: 0 \(mcycle\), 2 \(minstret\)/,
    );
    await assert.rejects(
      h.custom(CustomRequests.configure, {
        assignments: [{ unit: 'RISC-V counters', slot: 0, event: 'instructions' }],
      }),
      /mcycle always counts 'cycles'/,
    );
  });

  it('measures to a location exactly as the oracle counts it', async () => {
    const configured = await h.custom(CustomRequests.configure, { events: ['instructions', 'cycles'] });
    const unit = configured.units.find((u) => u.unit === 'RISC-V counters')!;
    assert.equal(unit.slots.find((s) => s.name === 'minstret')?.event, 'instructions');
    // From the stop at main (before its first statement) to the entry of board_timer_start.
    const r = await h.custom(CustomRequests.measureTo, { to: { address: hex(timerStart) } });
    assert.equal(r.passes.length, 1, r.incomplete);
    assert.equal(Number(r.stoppedAt?.address), timerStart);
    const oracle = await runOracle({
      elf,
      regions: [{ name: 'to-timer', start: entryPc, end: timerStart }],
      maxInstructions: 20_000,
    });
    const expected = oracle.regions[0]!.passes[0]!;
    const byEvent = new Map(r.passes[0]!.values.map((v) => [v.event, Number(v.value)]));
    assert.equal(byEvent.get('instructions'), expected, 'minstret between the two stops');
    // Under -icount shift=0 one instruction is one virtual ns, and QEMU derives mcycle from it too.
    assert.equal(byEvent.get('cycles'), expected);
  });

  it('reset zeroes the configured counters', async () => {
    await h.custom(CustomRequests.reset, {});
    const values = (await h.custom(CustomRequests.read)).values;
    assert.deepEqual(
      values.map((v) => v.value),
      values.map(() => '0'),
    );
  });

  it('marks counts across stops unreliable once the timer is armed, saying why', async () => {
    const dsp = fixtureSource('dsp.c');
    const r = await h.custom(CustomRequests.measureTo, { to: { path: dsp, line: markerLine(dsp, '#BP_LOCALS') } });
    assert.equal(r.passes.length, 1, r.incomplete);
    const v = r.passes[0]!.values.find((x) => x.event === 'instructions')!;
    assert.equal(v.reliable, false);
    assert.match(v.note ?? '', /virtual clock.*timer deadline.*Injected measurements/);
  });

  it('measures every pass of a loop, each exactly as the oracle counts it', async () => {
    // Relaunched from reset so the loop's passes happen before the timer starts.
    const again = new AdapterHarness();
    await again.start();
    try {
      await again.launchToEntry(qemuLaunchArgs('rv32'));
      await again.custom(CustomRequests.configure, { events: ['instructions'] });
      const passes = 20;
      const r = await again.custom(CustomRequests.measureRange, {
        start: { address: hex(loopHead) },
        end: { address: hex(loopHead) },
        passes,
      });
      assert.equal(r.passes.length, passes, r.incomplete);
      const oracle = await runOracle({
        elf,
        regions: [{ name: 'putstr', start: loopHead, end: loopHead }],
        maxInstructions: 20_000,
      });
      const expected = oracle.regions[0]!.passes.slice(0, passes);
      assert.deepEqual(
        r.passes.map((p) => Number(p.values.find((v) => v.event === 'instructions')!.value)),
        expected,
      );
    } finally {
      assert.deepEqual(await again.stop(), []);
    }
  });
});

describe('counters on QEMU Cortex-M4 (no DWT; SysTick)', () => {
  const h = new AdapterHarness();
  let capabilities: CapabilitiesEventBody;

  before(async () => {
    await h.start();
    const caps = h.dc.waitForEvent(CustomEvents.capabilities);
    await h.launchToEntry(qemuLaunchArgs('cortex-m4'));
    capabilities = (await caps).body as CapabilitiesEventBody;
  });
  after(async () => assert.deepEqual(await h.stop(), []));

  it('detects that QEMU has no DWT and no PMU, and says so', () => {
    const dwt = capabilities.units.find((u) => u.unit === 'DWT');
    assert.equal(dwt?.present, false, JSON.stringify(capabilities.units));
    assert.match(dwt?.note ?? '', /reads as zero/i);
    assert.equal(capabilities.units.find((u) => u.unit === 'PMU')?.present, false);
    const sysTick = capabilities.units.find((u) => u.unit === 'SysTick');
    assert.ok(sysTick?.present, sysTick?.note);
  });

  it('refuses more events than the target has slots', async () => {
    await assert.rejects(
      h.custom(CustomRequests.configure, { events: ['cycles', 'cycles'] }),
      /no free counter slot is left for 'cycles'.*several runs/,
    );
    await assert.rejects(
      h.custom(CustomRequests.configure, { assignments: [{ unit: 'DWT', slot: 0, event: 'cycles' }] }),
      /DWT is not available on this target: DWT reads as zero/,
    );
  });
});
