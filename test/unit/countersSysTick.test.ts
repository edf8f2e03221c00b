import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SysTickCounters, sysTickInterval } from '../../adapter/arch/cortex-m/sysTick';
import { CoreExecutedStore, type PeripheralStore } from '../../adapter/arch/cortex-m/sysTickCoreStore';
import { ErrorCode } from '../../adapter/errors';
import { readSlot, rejectsWith } from '../support/assertions';
import { FakeTargetAccess } from '../support/fakeTargetAccess';

const CSR = 0xe000e010;
const RVR = 0xe000e014;
const CVR = 0xe000e018;
const CALIB = 0xe000e01c;

/**
 * SysTick per ARMv7-M B3.3: counts down when ENABLE, reloads from RVR on the tick after 0, sets
 * COUNTFLAG on reaching 0; reading CSR clears COUNTFLAG; writing CVR clears it and COUNTFLAG.
 */
class SysTickModel extends FakeTargetAccess {
  csr = 0;
  rvr = 0;
  cvr = 0;
  calib = 0x270f;
  csrReads = 0;
  readonly debuggerWrites: Array<[number, number]> = [];

  /** @param dropDebuggerWrites QEMU: the debugger's writes to device registers are ignored. */
  constructor(private readonly dropDebuggerWrites = false) {
    super();
  }

  tick(n: number): void {
    if (!(this.csr & 1)) return;
    for (let i = 0; i < n; i++) {
      if (this.cvr === 0) {
        this.cvr = this.rvr;
      } else {
        this.cvr--;
        if (this.cvr === 0) this.csr |= 1 << 16;
      }
    }
  }

  /** What a store by the core does. */
  store(address: number, value: number): void {
    if (address === CSR) this.csr = (this.csr & (1 << 16)) | (value & 7);
    if (address === RVR) this.rvr = value & 0xffffff;
    if (address === CVR) {
      this.cvr = 0;
      this.csr &= ~(1 << 16);
    }
  }

  protected override read32(address: number): number {
    switch (address) {
      case CSR: {
        this.csrReads++;
        const v = this.csr;
        this.csr &= ~(1 << 16);
        return v;
      }
      case RVR:
        return this.rvr;
      case CVR:
        return this.cvr;
      case CALIB:
        return this.calib;
      default:
        return 0;
    }
  }

  protected override write32(address: number, value: number): void {
    this.debuggerWrites.push([address, value]);
    if (!this.dropDebuggerWrites) this.store(address, value);
  }
}

/** A core store that reaches the model directly, counting its uses. */
class ModelCoreStore implements PeripheralStore {
  uses = 0;
  constructor(private readonly m: SysTickModel) {}
  async store32(address: number, value: number): Promise<void> {
    this.uses++;
    this.m.store(address, value);
  }
}

describe('SysTick: reload arithmetic', () => {
  test('no COUNTFLAG: the counter only went down (or reloaded from 0): exact', () => {
    assert.deepEqual(sysTickInterval(1000, 400, 1000, false), { ticks: 600, exact: true });
    assert.deepEqual(sysTickInterval(0, 990, 1000, false), { ticks: 10, exact: true }, 'reload from 0 sets no flag');
    assert.deepEqual(sysTickInterval(0, 0, 1000, false), { ticks: 0, exact: true });
  });

  test('no COUNTFLAG but the counter went up from non-zero: someone wrote it: inexact', () => {
    assert.equal(sysTickInterval(100, 500, 1000, false).exact, false);
  });

  test('COUNTFLAG: the fewest ticks that pass 0, never exact', () => {
    // 100 → 0 (flag) → reload 999 → 500: 100 + 1 + 499 = 600 ticks at least.
    assert.deepEqual(sysTickInterval(100, 500, 1000, true), { ticks: 600, exact: false });
    // Lower than before with the flag set: a whole period at least.
    assert.deepEqual(sysTickInterval(500, 100, 1000, true), { ticks: 1400, exact: false });
    // Stopped exactly on 0.
    assert.deepEqual(sysTickInterval(500, 0, 1000, true), { ticks: 500, exact: false });
  });

  test('COUNTFLAG not read: the count is only known modulo the period', () => {
    assert.deepEqual(sysTickInterval(500, 100, 1000, undefined), { ticks: 400, exact: false });
  });

  test('the arithmetic matches the model for every start phase and interval up to two periods', () => {
    const period = 7;
    for (let start = 0; start < period; start++) {
      for (let n = 0; n <= 2 * period; n++) {
        const m = new SysTickModel();
        m.rvr = period - 1;
        m.csr = 1;
        m.cvr = start;
        m.tick(n);
        const flag = (m.csr & (1 << 16)) !== 0;
        const got = sysTickInterval(start, m.cvr, period, flag);
        if (got.exact) assert.equal(got.ticks, n, `start ${start}, ${n} ticks`);
        else
          assert.ok(got.ticks <= n && (n - got.ticks) % period === 0, `start ${start}, ${n} ticks: got ${got.ticks}`);
        assert.equal(got.exact, !flag, `exact iff no wrap (start ${start}, ${n} ticks)`);
      }
    }
  });
});

describe('SysTick: owned by CycleLens', () => {
  test('takes SysTick with TICKINT = 0 and RELOAD 0xFFFFFF, counts, restores CSR and RVR', async () => {
    const m = new SysTickModel();
    m.rvr = 1234;
    const unit = new SysTickCounters(m);
    const info = await unit.discover();
    assert.equal(info.present, true);
    assert.deepEqual(info.slots, [
      { index: 0, name: 'SYST_CVR', width: 24, fixedEvent: 'cycles', event: undefined, running: false },
    ]);
    assert.equal(m.rvr, 1234, 'discover put RVR back');
    await unit.configure(0, 'cycles');
    assert.equal(m.rvr, 0xffffff);
    assert.equal(m.csr & 7, 0b100, 'CLKSOURCE, not enabled, TICKINT clear');
    await unit.start([0]);
    assert.equal(m.csr & 7, 0b101);
    m.tick(1000);
    assert.deepEqual(await readSlot(unit, 0), { value: 1000n, reliable: true, note: undefined });
    m.tick(0xffffff); // a long interval: each read restarts from the top, so this is still exact
    assert.deepEqual(await readSlot(unit, 0), { value: 1000n + 0xffffffn, reliable: true, note: undefined });
    await unit.stop([0]);
    m.tick(500);
    assert.equal((await readSlot(unit, 0)).value, 1000n + 0xffffffn);
    await unit.release();
    assert.equal(m.csr & 7, 0);
    assert.equal(m.rvr, 1234);
  });

  test('an interval of 2^24 ticks or more wraps: unreliable lower bound', async () => {
    const m = new SysTickModel();
    const unit = new SysTickCounters(m);
    await unit.discover();
    await unit.configure(0, 'cycles');
    await unit.start([0]);
    m.tick(0x1000000 + 5);
    const r = await readSlot(unit, 0);
    assert.equal(r.reliable, false);
    assert.ok(r.value <= 0x1000005n && r.value >= 0x1000000n, `value ${r.value}`);
    assert.match(r.note ?? '', /wrapped since the last read.*lower bound/);
    await unit.reset([0]);
    m.tick(10);
    assert.deepEqual(await readSlot(unit, 0), { value: 10n, reliable: true, note: undefined });
  });

  test("QEMU: the debugger's writes are dropped; a core store does them", async () => {
    const withoutCore = new SysTickCounters(new SysTickModel(true));
    const info = await withoutCore.discover();
    assert.equal(info.present, false);
    assert.match(info.note ?? '', /ignored the debugger's write.*QEMU.*stepping one store instruction/);
    await rejectsWith(withoutCore.configure(0, 'cycles'), ErrorCode.CounterUnavailable, /SysTick is not available/);

    const m = new SysTickModel(true);
    const core = new ModelCoreStore(m);
    const unit = new SysTickCounters(m, { coreStore: core });
    assert.equal((await unit.discover()).present, true);
    await unit.configure(0, 'cycles');
    await unit.start([0]);
    m.tick(40);
    assert.equal((await readSlot(unit, 0)).value, 40n);
    assert.ok(core.uses >= 5, `core store used ${core.uses} times`);
    await unit.release();
    assert.equal(m.rvr, 0);
    assert.equal(m.csr & 7, 0);
  });

  test(
    'a reset CycleLens makes is not taken for the firmware: SysTick is programmed again and ' + 'keeps counting',
    async () => {
      const m = new SysTickModel(true);
      const unit = new SysTickCounters(m, { coreStore: new ModelCoreStore(m) });
      await unit.discover();
      await unit.configure(0, 'cycles');
      await unit.start([0]);
      m.tick(80);
      assert.equal((await readSlot(unit, 0)).value, 80n);
      // B3.3.1: a reset clears SYST_CSR; QEMU also zeroes RVR and CVR.
      m.csr = 0;
      m.rvr = 0;
      m.cvr = 0;
      await unit.afterReset();
      assert.equal(m.csr & 7, 0b101, 'enabled again on the processor clock, no interrupt');
      assert.equal(m.rvr, 0xffffff);
      m.tick(120);
      const r = await readSlot(unit, 0);
      assert.equal(r.reliable, true, r.note);
      assert.equal(r.value, 200n, 'the count goes on from where the reset found it');
    },
  );

  test('the firmware taking SysTick over is noticed', async () => {
    const m = new SysTickModel();
    const unit = new SysTickCounters(m);
    await unit.discover();
    await unit.configure(0, 'cycles');
    await unit.start([0]);
    m.tick(100);
    m.store(CSR, 0b111); // firmware: TICKINT on
    m.store(RVR, 24_999);
    const r = await readSlot(unit, 0);
    assert.equal(r.reliable, false);
    assert.match(r.note ?? '', /firmware reconfigured SysTick/);
    m.debuggerWrites.length = 0;
    m.tick(10);
    await unit.read();
    await unit.release();
    assert.deepEqual(m.debuggerWrites, [], "the firmware's SysTick is left alone from then on");
  });
});

describe('SysTick: shared with the firmware', () => {
  test("uses the firmware's reload read-only; a wrap makes the reading unreliable", async () => {
    const m = new SysTickModel();
    m.rvr = 999;
    m.cvr = 900;
    m.csr = 0b111; // the firmware's 1000-tick period with interrupts
    const unit = new SysTickCounters(m);
    const info = await unit.discover();
    assert.match(info.note ?? '', /firmware runs SysTick \(reload 999, processor clock\)/);
    await unit.configure(0, 'cycles');
    await unit.start([0]);
    m.tick(300);
    assert.deepEqual(await readSlot(unit, 0), { value: 300n, reliable: true, note: undefined });
    m.tick(700); // 600 → 0 → reload → 899: across a wrap
    const r = await readSlot(unit, 0);
    assert.equal(r.value, 1000n, 'the fewest ticks consistent with the registers');
    assert.equal(r.reliable, false);
    assert.match(r.note ?? '', /periods of 1000 ticks/);
    await unit.release();
    assert.deepEqual(m.debuggerWrites, [], 'never written');
  });

  test('a firmware that polls COUNTFLAG (TICKINT = 0) keeps it: SYST_CSR is read only once', async () => {
    const m = new SysTickModel();
    m.rvr = 99;
    m.csr = 0b101;
    const unit = new SysTickCounters(m);
    await unit.discover();
    await unit.configure(0, 'cycles');
    await unit.start([0]);
    m.tick(50);
    const r = await readSlot(unit, 0);
    assert.equal(m.csrReads, 1);
    assert.equal(r.reliable, false);
    assert.match(r.note ?? '', /polls COUNTFLAG/);
  });

  test('reference clock chosen by the firmware: the event is systick.ref, not cycles', async () => {
    const m = new SysTickModel();
    m.rvr = 99;
    m.csr = 0b011;
    const unit = new SysTickCounters(m);
    await unit.discover();
    assert.deepEqual(
      unit.events().map((e) => e.id),
      ['systick.ref'],
    );
    await rejectsWith(unit.configure(0, 'cycles'), ErrorCode.UnknownEvent, /SysTick counts only 'systick.ref'/);
  });
});

describe('SysTick: errors name the fix', () => {
  test('one slot only, one event only', async () => {
    const unit = new SysTickCounters(new SysTickModel());
    await unit.discover();
    await rejectsWith(
      unit.configure(1, 'cycles'),
      ErrorCode.CounterUnavailable,
      /one slot, 0; there is no slot 1\. Use slot 0/,
    );
    await rejectsWith(unit.configure(0, 'dwt.lsu'), ErrorCode.UnknownEvent, /counts only 'cycles'.*DWT or PMU/);
    await rejectsWith(unit.start([0]), ErrorCode.CounterUnavailable, /configure slot 0 with 'cycles' first/);
  });
});

/** Registers and memory of a halted Cortex-M core whose step executes `STR r1, [r0]` or `BX r2`. */
class CoreModel extends FakeTargetAccess {
  readonly regs = new Map<string, bigint>([
    ['r0', 0x11n],
    ['r1', 0x22n],
    ['r2', 0x33n],
    ['pc', 0x1000n],
    ['xpsr', 0x0100_0000n | (0x3n << 25n) | (0x2n << 10n)], // Thumb, inside an IT block
  ]);
  readonly mem = new Map<number, number>([
    [0x1000, 0x2a],
    [0x1001, 0xb1],
    [0x1002, 0x70],
    [0x1003, 0x47],
  ]);
  readonly stores: Array<[number, number]> = [];
  readonly pcWrites: bigint[] = [];
  xpsrDuringStep: bigint | undefined;

  step = async (): Promise<void> => {
    const pc = Number(this.regs.get('pc'));
    const op = this.mem.get(pc)! | (this.mem.get(pc + 1)! << 8);
    this.xpsrDuringStep = this.regs.get('xpsr');
    if (op === 0x6001) {
      this.stores.push([Number(this.regs.get('r0')), Number(this.regs.get('r1'))]);
      this.regs.set('pc', BigInt(pc + 2));
    } else if (op === 0x4710) {
      this.regs.set('pc', this.regs.get('r2')! & ~1n);
    } else {
      assert.fail(`unexpected instruction 0x${op.toString(16)} at 0x${pc.toString(16)}`);
    }
  };

  override async readRegister(name: string): Promise<bigint> {
    return this.regs.get(name)!;
  }
  override async writeRegister(name: string, value: bigint): Promise<void> {
    if (name === 'pc') this.pcWrites.push(value);
    this.regs.set(name, value);
  }
  override async readMemory(address: bigint, length: number): Promise<Buffer> {
    return Buffer.from(Array.from({ length }, (_, i) => this.mem.get(Number(address) + i) ?? 0));
  }
  override async writeMemory(address: bigint, data: Uint8Array): Promise<void> {
    data.forEach((b, i) => this.mem.set(Number(address) + i, b));
  }
}

describe('CoreExecutedStore', () => {
  test('runs STR at the PC, branches back (the PC is never written), restores registers and code', async () => {
    const core = new CoreModel();
    const before = new Map(core.regs);
    await new CoreExecutedStore(core, core.step).store32(0xe000e014, 0xffffff);
    assert.deepEqual(core.stores, [[0xe000e014, 0xffffff]]);
    assert.equal((core.xpsrDuringStep! >> 25n) & 3n, 0n);
    assert.equal((core.xpsrDuringStep! >> 10n) & 0x3fn, 0n);
    assert.equal(core.xpsrDuringStep! & 0x0100_0000n, 0x0100_0000n, 'Thumb bit kept');
    assert.deepEqual(core.regs, before);
    assert.deepEqual(core.pcWrites, [], 'GDB must see the PC arrive where it last stopped');
    assert.deepEqual(
      [0x1000, 0x1001, 0x1002, 0x1003].map((a) => core.mem.get(a)),
      [0x2a, 0xb1, 0x70, 0x47],
    );
  });

  test('a stub elsewhere (scratch RAM) also comes back by branching', async () => {
    const core = new CoreModel();
    await new CoreExecutedStore(core, core.step, 0x2000n).store32(0xe000e018, 0);
    assert.deepEqual(core.stores, [[0xe000e018, 0]]);
    assert.equal(core.regs.get('pc'), 0x1000n);
    assert.deepEqual(core.pcWrites, [0x2000n]);
  });

  test('restores everything, the PC included, when a step fails', async () => {
    const core = new CoreModel();
    const before = new Map(core.regs);
    let steps = 0;
    const failing = async (): Promise<void> => {
      if (steps++ === 1) throw new Error('step timed out');
      await core.step();
    };
    await assert.rejects(new CoreExecutedStore(core, failing).store32(0xe000e010, 5), /step timed out/);
    assert.deepEqual(core.regs, before);
    assert.equal(core.mem.get(0x1000), 0x2a);
  });
});
