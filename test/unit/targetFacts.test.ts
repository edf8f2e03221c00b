import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { TargetFamily } from '../../common/launchArgs';
import { isUnsupported, type ArchInjection } from '../../adapter/arch/archPlugin';
import { fixedPointRatio } from '../../adapter/arch/cortex-m/trampolineThumb';
import { archPlugin } from '../../adapter/arch/registry';
import { CycleLensError } from '../../adapter/errors';
import type { CounterUnitInfo } from '../../adapter/probe/counters';
import { computeTargetFacts, qemuMemoryMap, ticksPerInstruction } from '../../adapter/target/targetFacts';

function injectionOf(family: TargetFamily): ArchInjection {
  const injection = archPlugin(family).injection;
  if (isUnsupported(injection)) throw new Error(`${family} injects: ${injection.unsupported}`);
  return injection;
}
const cortexMInjection = injectionOf('cortex-m');

/** What discovery reports on QEMU mps2-an386: a DWT that reads as zero. */
const qemuDwt: CounterUnitInfo[] = [
  { unit: 'DWT', present: false, note: 'DWT reads as zero (QEMU does not model it)', slots: [], resolution: 1 },
];

describe('target facts', () => {
  test('QEMU mps2-an386: SysTick ticks per instruction are 2^S / 40 for every shift the schema accepts (0-10)', () => {
    for (let shift = 0; shift <= 10; shift++) {
      const facts = computeTargetFacts('cortex-m', { type: 'qemu', icount: shift });
      const ratio = facts.coreClockTicksPerInstruction;
      assert.ok(ratio.fixed, `shift ${shift}`);
      // 25 MHz: one tick per 40 ns; an instruction takes 2^S ns.
      assert.equal(ratio.value, 2 ** shift / 40, `shift ${shift}`);
      // The injector compensates its payload at exactly that ratio.
      const { counterUnitsPerInstruction } = cortexMInjection.support(qemuDwt, facts);
      assert.equal(counterUnitsPerInstruction, 2 ** shift / 40);
    }
    assert.equal(ticksPerInstruction(25e6, 0), 1 / 40);
    // The default shift is 0.
    const byDefault = computeTargetFacts('cortex-m', { type: 'qemu' }).coreClockTicksPerInstruction;
    assert.ok(byDefault.fixed && byDefault.value === 1 / 40);
  });

  test('icount off: no fixed ratio, and SysTick-based injection on QEMU is refused with the fix', () => {
    const facts = computeTargetFacts('cortex-m', { type: 'qemu', icount: null });
    assert.equal(facts.qemu?.icountShift, undefined);
    const ratio = facts.coreClockTicksPerInstruction;
    assert.ok(!ratio.fixed && /icount/.test(ratio.reason));
    assert.throws(
      () => cortexMInjection.support(qemuDwt, facts),
      (e: unknown) => e instanceof CycleLensError && /SysTick/.test(e.message) && /"server.icount"/.test(e.message),
    );
  });

  test('an unknown QEMU machine has no memory map and no ratio, and says which machines are known', () => {
    const facts = computeTargetFacts('cortex-m', { type: 'qemu', machine: 'mps3-an547' });
    assert.equal(facts.memoryMap, undefined);
    assert.equal(facts.qemu?.knownMachine, false);
    const ratio = facts.coreClockTicksPerInstruction;
    assert.ok(!ratio.fixed && /mps3-an547/.test(ratio.reason) && /mps2-an386/.test(ratio.reason));
  });

  test(
    'RAM maps and zero-reading counters of the known machines; RISC-V injects with minstret at ' +
      'one unit per instruction',
    () => {
      const cm = computeTargetFacts('cortex-m', { type: 'qemu', icount: 3 });
      assert.deepEqual(cm.memoryMap, qemuMemoryMap('mps2-an386'));
      assert.deepEqual(cm.zeroCounters, ['DWT', 'PMU']);
      assert.equal(cm.emulator, 'qemu');
      const rv = computeTargetFacts('riscv', { type: 'qemu', icount: 3 });
      assert.equal(rv.memoryMap?.[0]?.start, 0x80000000);
      const { support, counterUnitsPerInstruction } = injectionOf('riscv').support([], rv);
      assert.equal(counterUnitsPerInstruction, undefined);
      assert.equal(support.generator.counter.name, 'minstret');
    },
  );

  test('ARC on QEMU is refused at launch; boards have no fixed ratio', () => {
    assert.throws(() => computeTargetFacts('arc', { type: 'qemu' }), /QEMU has no ARC target/);
    const board = computeTargetFacts('cortex-m', { type: 'openocd', configFiles: ['target/stm32f4x.cfg'] });
    assert.equal(board.emulator, undefined);
    assert.equal(board.coreClockTicksPerInstruction.fixed, false);
  });

  test('the Thumb payload ratio keeps under 1/2048 relative error and a 32-bit product for every shift', () => {
    for (let shift = 0; shift <= 10; shift++) {
      const ratio = 2 ** shift / 40;
      const { multiplier, shift: bits } = fixedPointRatio(ratio);
      assert.ok(multiplier < 2048, `shift ${shift}: multiplier ${multiplier}`);
      assert.ok(Math.abs(multiplier / 2 ** bits - ratio) / ratio < 1 / 2048, `shift ${shift}`);
    }
    assert.deepEqual(fixedPointRatio(1 / 40), { multiplier: 1638, shift: 16 });
    // An instruction counter: exactly one unit per instruction (the payload then skips the multiply).
    const one = fixedPointRatio(1);
    assert.equal(one.multiplier, 1 << one.shift);
  });
});
