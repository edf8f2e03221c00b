import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { countUp, PmuCounters } from '../../adapter/arch/cortex-m/pmu';
import { ErrorCode } from '../../adapter/errors';
import { readSlot, rejectsWith } from '../support/assertions';
import { FakeTargetAccess } from '../support/fakeTargetAccess';

/**
 * The PMU is tested against this model: QEMU 7.2 does not model the Armv8.1-M PMU (mps3-an547,
 * Cortex-M55, reads all zeros at 0xE0003000, checked by hand and in the integration test).
 */
const DEMCR = 0xe000edfc;
const BASE = 0xe0003000;
const CCNTR = BASE + 0x07c;
const EVTYPER = BASE + 0x400;
const CNTENSET = BASE + 0xc00;
const CNTENCLR = BASE + 0xc20;
const OVSCLR = BASE + 0xc80;
const OVSSET = BASE + 0xcc0;
const TYPE = BASE + 0xe00;
const CTRL = BASE + 0xe04;
const CHAIN = 0x1e;

/** Armv8.1-M PMU: N 16-bit event counters (odd ones can CHAIN), a 32-bit CCNTR, overflow flags. */
class PmuModel extends FakeTargetAccess {
  demcr = 0;
  ctrl = 0;
  enabled = 0;
  ovs = 0;
  ccntr = 0;
  readonly evcntr: number[];
  readonly evtyper: number[];
  /** Called before every read: lets a test run the core between two reads. */
  beforeRead: ((address: number) => void) | undefined;

  constructor(
    readonly n = 4,
    private readonly absent = false,
  ) {
    super();
    this.evcntr = Array.from({ length: n }, () => 0);
    this.evtyper = Array.from({ length: n }, () => 0);
  }

  private counting(i: number): boolean {
    return (this.demcr & (1 << 24)) !== 0 && (this.ctrl & 1) !== 0 && ((this.enabled >>> i) & 1) === 1;
  }

  /** Runs `cycles` cycles in which each event number occurs the given number of times. */
  run(cycles: number, events: Record<number, number> = {}): void {
    if (this.counting(31)) {
      const next = this.ccntr + cycles;
      if (next > 0xffffffff) this.ovs |= 1 << 31;
      this.ccntr = next >>> 0;
    }
    const all: Record<number, number> = { 0x11: cycles, ...events };
    for (let i = 0; i < this.n; i++) {
      if (!this.counting(i) || this.evtyper[i] === CHAIN) continue;
      this.add(i, all[this.evtyper[i]!] ?? 0);
    }
  }

  private add(i: number, count: number): void {
    const total = this.evcntr[i]! + count;
    const wraps = Math.floor(total / 0x10000);
    this.evcntr[i] = total % 0x10000;
    if (wraps > 0) {
      this.ovs |= 1 << i;
      if (i % 2 === 0 && i + 1 < this.n && this.evtyper[i + 1] === CHAIN && this.counting(i + 1))
        this.add(i + 1, wraps);
    }
  }

  protected override read32(a: number): number {
    this.beforeRead?.(a);
    if (a === DEMCR) return this.demcr;
    if (this.absent) return 0;
    if (a >= BASE && a < BASE + 4 * this.n) return this.evcntr[(a - BASE) / 4]!;
    if (a === CCNTR) return this.ccntr;
    if (a >= EVTYPER && a < EVTYPER + 4 * this.n) return this.evtyper[(a - EVTYPER) / 4]!;
    if (a === CNTENSET || a === CNTENCLR) return this.enabled >>> 0;
    if (a === OVSSET || a === OVSCLR) return this.ovs >>> 0;
    if (a === TYPE) return (1 << 14) | (15 << 8) | this.n;
    if (a === CTRL) return this.ctrl;
    return 0;
  }

  protected override write32(a: number, value: number): void {
    if (a === DEMCR) this.demcr = value;
    if (this.absent) return;
    if (a >= BASE && a < BASE + 4 * this.n) this.evcntr[(a - BASE) / 4] = value & 0xffff;
    if (a === CCNTR) this.ccntr = value >>> 0;
    if (a >= EVTYPER && a < EVTYPER + 4 * this.n) this.evtyper[(a - EVTYPER) / 4] = value & 0xffff;
    const implemented = ((1 << this.n) - 1) | (1 << 31);
    if (a === CNTENSET) this.enabled = (this.enabled | (value & implemented)) >>> 0;
    if (a === CNTENCLR) this.enabled = (this.enabled & ~value) >>> 0;
    if (a === OVSCLR) this.ovs = (this.ovs & ~value) >>> 0;
    if (a === CTRL) this.ctrl = value & 1;
  }
}

describe('PMU: overflow arithmetic', () => {
  test('countUp: exact without the flag, the fewest consistent count with it', () => {
    assert.deepEqual(countUp(100, 300, 0x10000, false), { count: 200, exact: true });
    assert.deepEqual(countUp(0xfff0, 0x10, 0x10000, true), { count: 0x20, exact: false });
    assert.deepEqual(countUp(100, 300, 0x10000, true), { count: 0x10000 + 200, exact: false });
    assert.deepEqual(countUp(0, 0, 0x10000, true), { count: 0x10000, exact: false });
    assert.equal(countUp(300, 100, 0x10000, false).exact, false, 'went down without an overflow: someone wrote it');
  });
});

describe('PMU: discovery', () => {
  test('reads TYPE: N 16-bit counters and CCNTR, listed even counters first', async () => {
    const m = new PmuModel(4);
    const unit = new PmuCounters(m);
    const info = await unit.discover();
    assert.equal(info.present, true);
    assert.deepEqual(
      info.slots.map((s) => [s.index, s.name, s.width]),
      [
        [0, 'EVCNTR0', 16],
        [2, 'EVCNTR2', 16],
        [1, 'EVCNTR1', 16],
        [3, 'EVCNTR3', 16],
        [31, 'CCNTR', 32],
      ],
    );
    assert.equal(m.demcr, 1 << 24, 'TRCENA set');
    assert.ok(unit.events().some((e) => e.id === 'pmu.0x0008' && e.name === 'INST_RETIRED'));
  });

  test('a core whose 0xE0003000 answers with a bus error has no PMU', async () => {
    const m = new PmuModel(4);
    m.beforeRead = (a) => {
      if (a >= BASE && a < BASE + 0x1000) throw new Error('Only 0 of 4 bytes at 0xe0003e00 could be read.');
    };
    const info = await new PmuCounters(m).discover();
    assert.equal(info.present, false);
    assert.match(info.note ?? '', /cannot be read/);
    assert.equal(m.demcr, 0);
  });

  test('a PMU that reads zero is absent (QEMU 7.2 mps3-an547)', async () => {
    const m = new PmuModel(4, true);
    const info = await new PmuCounters(m).discover();
    assert.equal(info.present, false);
    assert.match(info.note ?? '', /PMU registers read as zero/);
    assert.equal(m.demcr, 0, 'TRCENA put back');
  });

  test(
    'with the target facts saying it reads zero (QEMU), one read of TYPE confirms it and DEMCR ' + 'is not touched',
    async () => {
      const m = new PmuModel(4, true);
      const read: number[] = [];
      m.beforeRead = (a) => void read.push(a);
      const info = await new PmuCounters(m, { readsAsZero: true }).discover();
      assert.equal(info.present, false);
      assert.equal(info.note, 'PMU reads as zero (QEMU does not model it)');
      assert.deepEqual(read, [BASE + 0xe00]);
    },
  );

  test('a PMU that answers although the facts say zero is probed in full', async () => {
    const info = await new PmuCounters(new PmuModel(2), { readsAsZero: true }).discover();
    assert.deepEqual(
      info.slots.map((s) => s.name),
      ['EVCNTR0', 'EVCNTR1', 'CCNTR'],
    );
  });
});

describe('PMU: counting', () => {
  test('an even slot is chained with its odd partner into 32 bits (CHAIN 0x001E)', async () => {
    const m = new PmuModel(4);
    const unit = new PmuCounters(m);
    await unit.discover();
    await unit.configure(0, 'instructions');
    assert.deepEqual(m.evtyper.slice(0, 2), [0x0008, CHAIN]);
    const info = unit.info();
    assert.deepEqual(
      info.slots.find((s) => s.index === 0),
      { index: 0, name: 'EVCNTR0+EVCNTR1', width: 32, fixedEvent: undefined, event: 'instructions', running: false },
    );
    assert.equal(info.slots.find((s) => s.index === 1)?.event, undefined);
    await unit.start([0]);
    assert.equal(m.enabled & 3, 3);
    assert.equal(m.ctrl & 1, 1);
    m.run(300_000, { 0x08: 200_000 });
    assert.deepEqual(await readSlot(unit, 0), { value: 200_000n, reliable: true, note: undefined });
    m.run(300_000, { 0x08: 70_000 });
    assert.deepEqual(await readSlot(unit, 0), { value: 270_000n, reliable: true, note: undefined });
    await unit.reset([0, 1, 2, 3, 31]);
    m.run(10, { 0x08: 9 });
    assert.equal((await readSlot(unit, 0)).value, 9n);
  });

  test('configuring the odd partner splits the pair; a 16-bit counter that overflows is unreliable', async () => {
    const m = new PmuModel(2);
    const unit = new PmuCounters(m);
    await unit.discover();
    await unit.configure(0, 'pmu.0x0006');
    await unit.configure(1, 'pmu.0x0007');
    assert.deepEqual(m.evtyper, [6, 7]);
    assert.equal(unit.info().slots.find((s) => s.index === 0)?.width, 16);
    await unit.start([0, 1]);
    m.run(1000, { 6: 1000, 7: 500 });
    let r0 = await readSlot(unit, 0);
    assert.deepEqual(r0, { value: 1000n, reliable: true, note: undefined });
    m.run(100_000, { 6: 70_000 });
    r0 = await readSlot(unit, 0);
    assert.equal(r0.reliable, false);
    assert.equal(r0.value, 71_000n, 'the fewest consistent events: one wrap');
    assert.match(r0.note ?? '', /16-bit\) overflowed.*Configure an even slot with a free odd partner/);
    assert.deepEqual(await readSlot(unit, 1), { value: 500n, reliable: true, note: undefined });
  });

  test('a chained pair is read race-free: upper, lower, upper again', async () => {
    const m = new PmuModel(2);
    const unit = new PmuCounters(m);
    await unit.discover();
    await unit.configure(0, 'cycles');
    await unit.start([0]);
    m.run(0xfffe);
    let lowReads = 0;
    m.beforeRead = (a) => {
      if (a === BASE && lowReads++ === 0) m.run(3); // the lower half wraps between the two reads
    };
    const r = await readSlot(unit, 0);
    assert.equal(r.value, 0x10001n);
    assert.ok(lowReads >= 2);
  });

  test('CCNTR counts cycles in slot 31; stop holds the value', async () => {
    const m = new PmuModel(2);
    const unit = new PmuCounters(m);
    await unit.discover();
    await unit.configure(31, 'cycles');
    await unit.start([31]);
    m.run(5000);
    await unit.stop([31]);
    assert.equal(m.enabled >>> 31, 0);
    m.run(5000);
    assert.deepEqual(await readSlot(unit, 31), { value: 5000n, reliable: true, note: undefined });
  });

  test('release restores EVTYPER, the enables, CTRL and DEMCR', async () => {
    const m = new PmuModel(4);
    m.evtyper[2] = 0x13;
    const unit = new PmuCounters(m);
    await unit.discover();
    await unit.configure(2, 'pmu.0x0003');
    await unit.start([2]);
    await unit.release();
    assert.deepEqual(m.evtyper, [0, 0, 0x13, 0]);
    assert.equal(m.enabled, 0);
    assert.equal(m.ctrl, 0);
    assert.equal(m.demcr, 0);
  });
});

describe('PMU: errors name the fix', () => {
  test('unknown events, CHAIN, CCNTR, slots out of range, upper halves', async () => {
    const unit = new PmuCounters(new PmuModel(4));
    await unit.discover();
    await rejectsWith(
      unit.configure(0, 'l2-miss'),
      ErrorCode.UnknownEvent,
      /Unknown PMU event 'l2-miss'.*pmu\.0x0008 INST_RETIRED.*pmu\.0xNNNN/,
    );
    await rejectsWith(unit.configure(0, 'pmu.0x001e'), ErrorCode.UnknownEvent, /CHAIN.*configure an even slot/);
    await rejectsWith(
      unit.configure(31, 'instructions'),
      ErrorCode.UnknownEvent,
      /slot 31 is CCNTR.*event counter \(slots 0–3\)/,
    );
    await rejectsWith(
      unit.configure(4, 'cycles'),
      ErrorCode.CounterUnavailable,
      /slot 4 does not exist.*event counters 0–3 and CCNTR as slot 31/,
    );
    await unit.configure(2, 'cycles');
    await rejectsWith(
      unit.start([3]),
      ErrorCode.CounterUnavailable,
      /slot 3 is the upper half of slot 2.*start slot 2 instead/,
    );
    const absent = new PmuCounters(new PmuModel(4, true));
    await absent.discover();
    await rejectsWith(
      absent.configure(0, 'cycles'),
      ErrorCode.CounterUnavailable,
      /PMU is not available: The PMU registers read as zero/,
    );
  });
});
