import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CounterSlotInfo, CounterUnitInfo } from '../../common/counters';
import { counterPickItems, eventName, type OfferedEvent } from '../../extension/commands/counterPicks';

// What "Configure Counters…" offers. The catalogues are what the adapter reports for QEMU's RV32
// `virt` machine (adapter/arch/riscv/counters.ts with qemuHpmEvents) and for a Cortex-M with DWT
// and the Armv8.1-M PMU.

const slot = (index: number, name: string, fixedEvent?: string): CounterSlotInfo => ({
  index,
  name,
  width: 64,
  running: false,
  ...(fixedEvent ? { fixedEvent } : {}),
});

const rv32Unit: CounterUnitInfo = {
  unit: 'RISC-V counters',
  present: true,
  resolution: 1,
  slots: [
    slot(0, 'mcycle', 'cycles'),
    slot(2, 'minstret', 'instructions'),
    ...Array.from({ length: 16 }, (_, i) => slot(i + 3, `mhpmcounter${i + 3}`)),
  ],
};
const rv32Events: OfferedEvent[] = [
  { unit: 'RISC-V counters', id: 'cycles', name: 'cycles', description: 'Core clock cycles (mcycle).' },
  {
    unit: 'RISC-V counters',
    id: 'instructions',
    name: 'instructions retired',
    description: 'Instructions retired (minstret).',
  },
  {
    unit: 'RISC-V counters',
    id: 'hpm.1',
    name: 'cycles (QEMU)',
    description: 'Core cycles; under -icount equal to instructions. (mhpmevent = 1)',
  },
  {
    unit: 'RISC-V counters',
    id: 'hpm.2',
    name: 'instructions retired (QEMU)',
    description: 'Instructions retired. (mhpmevent = 2)',
  },
];

describe('counterPickItems', () => {
  it("lists QEMU's mhpmevent duplicates of mcycle and minstret once, as the fixed counters", () => {
    const items = counterPickItems(rv32Events, [rv32Unit]);
    assert.deepEqual(
      items.map((i) => [i.label, i.description, i.id]),
      [
        ['cycles', 'mcycle', 'cycles'],
        ['instructions retired', 'minstret', 'instructions'],
      ],
    );
    assert.match(
      items[1]!.detail,
      /instructions retired \(QEMU\) on mhpmcounter3 … mhpmcounter18/,
      'the folded selector is named in the detail',
    );
  });

  it('keeps a programmable event that no fixed counter counts, with its registers', () => {
    const events: OfferedEvent[] = [
      ...rv32Events,
      { unit: 'RISC-V counters', id: 'hpm.9', name: 'cache misses', description: 'L1 misses. (mhpmevent = 9)' },
    ];
    const miss = counterPickItems(events, [rv32Unit]).find((i) => i.id === 'hpm.9');
    assert.deepEqual(miss && [miss.label, miss.description], ['cache misses', 'mhpmcounter3 … mhpmcounter18']);
  });

  it('keeps the selector where the core has no fixed counter for it', () => {
    const noMinstret: CounterUnitInfo = { ...rv32Unit, slots: rv32Unit.slots.filter((s) => s.name !== 'minstret') };
    const events = rv32Events.filter((e) => e.id !== 'instructions');
    const items = counterPickItems(events, [noMinstret]);
    assert.deepEqual(
      items.map((i) => i.id),
      ['cycles', 'hpm.2'],
    );
    assert.equal(items[1]!.description, 'mhpmcounter3 … mhpmcounter18');
  });

  it('lists an event offered by two units once, with both registers', () => {
    const dwt: CounterUnitInfo = {
      unit: 'DWT',
      present: true,
      resolution: 1,
      slots: [slot(0, 'CYCCNT', 'cycles'), slot(1, 'LSUCNT', 'dwt.lsu')],
    };
    const pmu: CounterUnitInfo = {
      unit: 'PMU',
      present: true,
      resolution: 1,
      slots: [slot(31, 'PMU_CCNTR', 'cycles'), slot(0, 'EVCNTR0'), slot(1, 'EVCNTR1')],
    };
    const events: OfferedEvent[] = [
      { unit: 'DWT', id: 'cycles', name: 'cycles', description: 'CYCCNT.' },
      { unit: 'DWT', id: 'dwt.lsu', name: 'load/store extra cycles', description: 'LSUCNT.' },
      { unit: 'PMU', id: 'cycles', name: 'cycles', description: 'PMU_CCNTR.' },
      { unit: 'PMU', id: 'instructions', name: 'instructions retired', description: 'INST_RETIRED.' },
    ];
    assert.deepEqual(
      counterPickItems(events, [dwt, pmu]).map((i) => [i.label, i.description]),
      [
        ['cycles', 'CYCCNT, PMU_CCNTR'],
        ['load/store extra cycles', 'LSUCNT'],
        ['instructions retired', 'EVCNTR0, EVCNTR1'],
      ],
    );
  });

  it('ignores the slots of a unit the target does not have', () => {
    const absent: CounterUnitInfo = {
      unit: 'PMU',
      present: false,
      resolution: 1,
      slots: [slot(31, 'PMU_CCNTR', 'cycles')],
    };
    assert.equal(counterPickItems(rv32Events, [rv32Unit, absent])[0]!.description, 'mcycle');
  });
});

describe('eventName', () => {
  it('names an event id as the catalogue does, and falls back to the id', () => {
    assert.equal(eventName('instructions', rv32Events), 'instructions retired');
    assert.equal(eventName('hpm.7', rv32Events), 'hpm.7');
  });
});
