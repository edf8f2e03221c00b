import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ArcPctUnit } from '../../adapter/arch/arc/pctCounters';
import { createCounterUnits } from '../../adapter/arch/counterUnits';
import { DwtCounters } from '../../adapter/arch/cortex-m/dwt';
import { PmuCounters } from '../../adapter/arch/cortex-m/pmu';
import { SysTickCounters } from '../../adapter/arch/cortex-m/sysTick';
import { RiscvCounters } from '../../adapter/arch/riscv/counters';
import { FakeTargetAccess } from '../support/fakeTargetAccess';

/** A target where nothing answers: the factory must not touch it. */
class UntouchableTarget extends FakeTargetAccess {}
const untouchable = new UntouchableTarget();

describe('createCounterUnits', () => {
  test('RISC-V: the machine counters; QEMU gets its named mhpmevent numbers', () => {
    const [unit, ...rest] = createCounterUnits('riscv', untouchable);
    assert.ok(unit instanceof RiscvCounters);
    assert.deepEqual(rest, []);
    assert.equal(createCounterUnits('riscv', untouchable, { emulator: 'qemu' })[0]!.unit, 'RISC-V counters');
  });

  test('Cortex-M: DWT, PMU, then SysTick, without probing', () => {
    const units = createCounterUnits('cortex-m', untouchable, { stepInstruction: async () => undefined });
    assert.ok(units[0] instanceof DwtCounters);
    assert.ok(units[1] instanceof PmuCounters);
    assert.ok(units[2] instanceof SysTickCounters);
    assert.deepEqual(
      units.map((u) => u.info().present),
      [false, false, false],
    );
  });

  test('ARC: the PCT unit, without probing (aux access is resolved on first use)', () => {
    const units = createCounterUnits('arc', untouchable);
    assert.equal(units.length, 1);
    assert.ok(units[0] instanceof ArcPctUnit);
    assert.equal(units[0]!.info().present, false);
  });
});
