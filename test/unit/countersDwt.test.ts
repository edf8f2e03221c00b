import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DwtCounters, wrapDelta } from '../../adapter/arch/cortex-m/dwt';
import { ErrorCode } from '../../adapter/errors';
import { readSlot, rejectsWith } from '../support/assertions';
import { FakeTargetAccess } from '../support/fakeTargetAccess';

const DEMCR = 0xe000edfc;
const CTRL = 0xe0001000;
const CYCCNT = 0xe0001004;
const LSUCNT = 0xe0001014;
const CPICNT = 0xe0001008;
const LAR = 0xe0001fb0;
const LSR = 0xe0001fb4;

interface DwtModelOptions {
  /** QEMU 7.2: everything reads zero and the debugger's writes are dropped. */
  qemu?: boolean;
  /** DWT_CTRL bits 24/25. */
  noCycCnt?: boolean;
  noPrfCnt?: boolean;
  /** Cortex-M7 software lock: writes ignored until LAR gets the key. */
  locked?: boolean;
}

/** A Cortex-M DWT and DEMCR as the debugger sees them. */
class DwtModel extends FakeTargetAccess {
  demcr = 0;
  ctrl: number;
  cyccnt = 0;
  /** Raw 8-bit counters by address. */
  readonly small = new Map<number, number>([
    [0xe0001008, 0],
    [0xe000100c, 0],
    [0xe0001010, 0],
    [0xe0001014, 0],
    [0xe0001018, 0],
  ]);
  locked: boolean;
  readonly writeLog: Array<[number, number]> = [];
  readonly readLog: number[] = [];

  constructor(private readonly o: DwtModelOptions = {}) {
    super();
    this.ctrl = o.qemu ? 0 : (4 << 28) | (o.noPrfCnt ? 1 << 24 : 0) | (o.noCycCnt ? 1 << 25 : 0);
    this.locked = o.locked ?? false;
  }

  /** Runs `cycles` cycles during which each 8-bit counter sees the given number of events. */
  run(cycles: number, events: Partial<Record<'cpi' | 'lsu', number>> = {}): void {
    if (!(this.demcr & (1 << 24))) return;
    if (this.ctrl & 1) this.cyccnt = (this.cyccnt + cycles) >>> 0;
    const bump = (address: number, bit: number, n: number | undefined): void => {
      if (n && this.ctrl & (1 << bit)) this.small.set(address, (this.small.get(address)! + n) & 0xff);
    };
    bump(CPICNT, 17, events.cpi);
    bump(LSUCNT, 20, events.lsu);
  }

  protected override read32(a: number): number {
    this.readLog.push(a);
    if (this.o.qemu) return 0;
    if (a === DEMCR) return this.demcr;
    if (a === CTRL) return this.ctrl;
    if (a === CYCCNT) return this.o.noCycCnt ? 0 : this.cyccnt;
    if (a === LSR) return this.o.locked ? 0b01 | (this.locked ? 0b10 : 0) : 0;
    if (this.small.has(a)) return this.o.noPrfCnt ? 0 : this.small.get(a)!;
    return 0;
  }

  protected override write32(a: number, value: number): void {
    this.writeLog.push([a, value]);
    if (this.o.qemu) return;
    if (a === DEMCR) this.demcr = value;
    if (a === LAR) this.locked = value !== 0xc5acce55;
    if (this.locked) return;
    if (a === CTRL) {
      const fixed = this.ctrl & 0xff00_0000;
      let writable = 0x003e_0001;
      if (this.o.noCycCnt) writable &= ~1;
      if (this.o.noPrfCnt) writable &= ~0x003e_0000;
      this.ctrl = (fixed | (value & writable)) >>> 0;
    }
  }
}

describe('DWT: discovery', () => {
  test('sets TRCENA, finds CYCCNT and the five 8-bit counters, restores on release', async () => {
    const m = new DwtModel();
    const unit = new DwtCounters(m);
    const info = await unit.discover();
    assert.equal(info.present, true);
    assert.deepEqual(
      info.slots.map((s) => [s.index, s.name, s.width, s.fixedEvent]),
      [
        [0, 'CYCCNT', 32, 'cycles'],
        [1, 'CPICNT', 8, 'dwt.cpi'],
        [2, 'EXCCNT', 8, 'dwt.exc'],
        [3, 'SLEEPCNT', 8, 'dwt.sleep'],
        [4, 'LSUCNT', 8, 'dwt.lsu'],
        [5, 'FOLDCNT', 8, 'dwt.fold'],
      ],
    );
    assert.equal(m.demcr & (1 << 24), 1 << 24);
    assert.equal(m.ctrl & 0x003e_0001, 0, 'the probe put the enable bits back');
    await unit.configure(4, 'dwt.lsu');
    await unit.start([4]);
    assert.equal(m.ctrl & 0x0010_0001, 0x0010_0001, 'LSUCNT on, and CYCCNT as its clock');
    await unit.release();
    assert.equal(m.demcr, 0);
    assert.equal(m.ctrl & 0x003e_0001, 0);
  });

  test('QEMU: a DWT that reads zero and drops writes is absent, with the note', async () => {
    const unit = new DwtCounters(new DwtModel({ qemu: true }));
    const info = await unit.discover();
    assert.equal(info.present, false);
    assert.equal(info.note, 'DWT reads as zero (QEMU does not model it)');
    assert.deepEqual(info.slots, []);
    await rejectsWith(unit.configure(0, 'cycles'), ErrorCode.CounterUnavailable, /QEMU does not model it/);
  });

  test('with the target facts saying it reads zero (QEMU), one read confirms it and nothing is written', async () => {
    const m = new DwtModel({ qemu: true });
    const info = await new DwtCounters(m, { readsAsZero: true }).discover();
    assert.equal(info.present, false);
    assert.equal(info.note, 'DWT reads as zero (QEMU does not model it)');
    assert.deepEqual(m.readLog, [CTRL]);
    assert.deepEqual(m.writeLog, []);
  });

  test('a DWT that answers although the facts say zero is probed in full', async () => {
    const unit = new DwtCounters(new DwtModel(), { readsAsZero: true });
    const info = await unit.discover();
    assert.deepEqual(
      info.slots.map((s) => s.name),
      ['CYCCNT', 'CPICNT', 'EXCCNT', 'SLEEPCNT', 'LSUCNT', 'FOLDCNT'],
    );
  });

  test('NOCYCCNT / NOPRFCNT remove those counters', async () => {
    const info = await new DwtCounters(new DwtModel({ noCycCnt: true })).discover();
    assert.deepEqual(
      info.slots.map((s) => s.name),
      ['CPICNT', 'EXCCNT', 'SLEEPCNT', 'LSUCNT', 'FOLDCNT'],
    );
    assert.match(info.note ?? '', /No CYCCNT/);
    const info2 = await new DwtCounters(new DwtModel({ noPrfCnt: true })).discover();
    assert.deepEqual(
      info2.slots.map((s) => s.name),
      ['CYCCNT'],
    );
  });

  test('Cortex-M7 software lock: unlocked with the key, locked again on release', async () => {
    const m = new DwtModel({ locked: true });
    const unit = new DwtCounters(m);
    const info = await unit.discover();
    assert.equal(info.slots.length, 6);
    assert.equal(m.locked, false);
    assert.ok(m.writeLog.some(([a, v]) => a === LAR && v === 0xc5acce55));
    await unit.release();
    assert.equal(m.locked, true);
  });

  test('CYCCNTENA the firmware set stays set, and its CYCCNT is never written', async () => {
    const m = new DwtModel();
    m.demcr = 1 << 24;
    m.ctrl |= 1;
    m.cyccnt = 123456;
    const unit = new DwtCounters(m);
    await unit.discover();
    await unit.configure(0, 'cycles');
    await unit.start([0]);
    m.run(1000);
    assert.equal((await readSlot(unit, 0)).value, 1000n);
    await unit.stop([0]);
    assert.equal(m.ctrl & 1, 1, "stop does not stop the firmware's CYCCNT");
    m.run(50);
    assert.equal((await readSlot(unit, 0)).value, 1000n);
    await unit.release();
    assert.equal(m.ctrl & 1, 1);
    assert.equal(m.demcr, 1 << 24, "TRCENA was the firmware's");
    assert.ok(!m.writeLog.some(([a]) => a === CYCCNT));
    assert.equal(m.cyccnt, 123456 + 1050);
  });
});

describe('DWT: 8-bit counters', () => {
  test('wrapDelta extends by the difference modulo the width', () => {
    assert.equal(wrapDelta(250, 4, 8), 10);
    assert.equal(wrapDelta(4, 250, 8), 246);
    assert.equal(wrapDelta(0xffff_fff0, 0x10, 32), 0x20);
  });

  test('each read extends the 8-bit value across wraps while reads are < 256 cycles apart', async () => {
    const m = new DwtModel();
    const unit = new DwtCounters(m);
    await unit.discover();
    await unit.configure(4, 'dwt.lsu');
    await unit.start([4]);
    let expected = 0;
    for (let i = 0; i < 10; i++) {
      m.run(200, { lsu: 90 }); // 900 events in total: the counter wraps three times
      expected += 90;
      const r = await readSlot(unit, 4);
      assert.equal(r.value, BigInt(expected));
      assert.equal(r.reliable, true, r.note);
    }
    assert.equal(m.small.get(LSUCNT), 900 % 256);
  });

  test('more than 255 cycles between reads: unreliable, with a note that says why', async () => {
    const m = new DwtModel();
    const unit = new DwtCounters(m);
    await unit.discover();
    await unit.configure(1, 'dwt.cpi');
    await unit.start([1]);
    m.run(255, { cpi: 255 });
    assert.deepEqual(await readSlot(unit, 1), { value: 255n, reliable: true, note: undefined });
    m.run(1000, { cpi: 300 });
    const r = await readSlot(unit, 1);
    assert.equal(r.value, 255n + 44n, 'the fewest events consistent with the register (300 mod 256)');
    assert.equal(r.reliable, false);
    assert.match(r.note ?? '', /1000 cycles passed between two reads.*wrapped more than once.*lower bound/);
    m.run(10, { cpi: 1 });
    assert.equal((await readSlot(unit, 1)).reliable, false, 'stays unreliable until reset');
    await unit.reset([0, 1, 2, 3, 4, 5]);
    m.run(10, { cpi: 3 });
    assert.deepEqual(await readSlot(unit, 1), { value: 3n, reliable: true, note: undefined });
  });

  test('without CYCCNT the bound comes from a cycle clock (SysTick), or the reading is unreliable', async () => {
    const m = new DwtModel({ noCycCnt: true });
    let clock = 0n;
    const unit = new DwtCounters(m, { cycleClock: async () => ({ cycles: clock, inexactIntervals: 0 }) });
    await unit.discover();
    await unit.configure(4, 'dwt.lsu');
    await unit.start([4]);
    m.run(100, { lsu: 60 });
    clock += 100n;
    assert.equal((await readSlot(unit, 4)).reliable, true);
    m.run(300, { lsu: 10 });
    clock += 300n;
    assert.equal((await readSlot(unit, 4)).reliable, false);

    const noClock = new DwtCounters(new DwtModel({ noCycCnt: true }));
    await noClock.discover();
    await noClock.configure(4, 'dwt.lsu');
    await noClock.start([4]);
    const r = await readSlot(noClock, 4);
    assert.equal(r.reliable, false);
    assert.match(r.note ?? '', /no cycle clock/);
  });
});

describe('DWT: errors name the fix', () => {
  test('a fixed counter refuses another event and says which slot counts it', async () => {
    const unit = new DwtCounters(new DwtModel());
    await unit.discover();
    await rejectsWith(
      unit.configure(1, 'cycles'),
      ErrorCode.UnknownEvent,
      /slot 1 \(CPICNT\) counts only 'dwt.cpi'.*'cycles' is counted by CYCCNT \(slot 0\)/,
    );
    await rejectsWith(unit.configure(1, 'l1d-miss'), ErrorCode.UnknownEvent, /counts only 'cycles', 'dwt.cpi'/);
  });

  test('out-of-range slots list the slots', async () => {
    const unit = new DwtCounters(new DwtModel({ noPrfCnt: true }));
    await unit.discover();
    await rejectsWith(
      unit.configure(4, 'dwt.lsu'),
      ErrorCode.CounterUnavailable,
      /DWT slot 4 does not exist.*0 \(CYCCNT\)/,
    );
    await rejectsWith(unit.start([0]), ErrorCode.CounterUnavailable, /configure it with 'cycles' first/);
  });
});
