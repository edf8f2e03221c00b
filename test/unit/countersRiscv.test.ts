import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { qemuHpmEvents, RiscvCounters } from '../../adapter/arch/riscv/counters';
import { ErrorCode } from '../../adapter/errors';
import { rejectsWith } from '../support/assertions';
import { FakeTargetAccess } from '../support/fakeTargetAccess';

const M32 = 0xffff_ffffn;
const M64 = (1n << 64n) - 1n;

interface ModelOptions {
  /** Programmable counters that exist (others are read-only zero), with their width in bits. */
  hpm?: Record<number, number>;
  /** Highest mhpmcounter the debugger describes (QEMU: 18). */
  describedUpTo?: number;
  inhibit?: boolean;
  /** mhpmevent bits that are writable (WARL). */
  eventMask?: bigint;
  /**
   * QEMU 7.2's mcountinhibit, as measured: a set bit does not stop the count; reads return the value
   * last written to the counter (after one more live read if the counter was started through
   * mcountinhibit); clearing the bit shows the count as if it never stopped.
   */
  qemuInhibit?: boolean;
  /** Counters that count but ignore writes. */
  readOnly?: number[];
}

/**
 * RV32 machine counters as CSRs behind debugger register names. `run(n)` retires n instructions in
 * n cycles; an hpm counter counts cycles with event 1 and instructions with event 2 (QEMU's numbers).
 */
class RiscvCsrModel extends FakeTargetAccess {
  readonly counters = new Map<number, bigint>();
  /** QEMU model: the counters' live ticks (never inhibited) and what was written. */
  readonly written = new Map<number, bigint>();
  readonly events = new Map<number, bigint>();
  inhibitValue = 0n;
  readonly writes: string[] = [];
  /** Called before every register read: lets a test run the core between two reads. */
  beforeRead: ((name: string) => void) | undefined;
  private readonly started = new Set<number>();
  private readonly widths = new Map<number, number>();

  constructor(private readonly o: ModelOptions = {}) {
    super();
    for (const i of [0, 2]) this.widths.set(i, 64);
    for (const [i, w] of Object.entries(o.hpm ?? {})) this.widths.set(Number(i), w);
    for (const i of this.widths.keys()) this.counters.set(i, 0n);
  }

  run(n: number): void {
    for (const [i, v] of this.counters) {
      const counts = i < 3 || this.events.get(i) === 1n || this.events.get(i) === 2n;
      const inhibited = !this.o.qemuInhibit && (this.inhibitValue >> BigInt(i)) & 1n;
      if (counts && !inhibited) this.counters.set(i, (v + BigInt(n)) & ((1n << BigInt(this.widths.get(i)!)) - 1n));
    }
  }

  private parse(name: string): { kind: 'counter' | 'event' | 'inhibit'; index: number; high: boolean } | undefined {
    if (name === 'mcountinhibit')
      return this.o.inhibit === false ? undefined : { kind: 'inhibit', index: 0, high: false };
    const m = /^(mcycle|minstret|mhpmcounter(\d+)|mhpmevent(\d+))(h?)$/.exec(name);
    if (!m) return undefined;
    const high = m[4] === 'h';
    if (m[3])
      return high || Number(m[3]) > 31 || Number(m[3]) < 3 || Number(m[3]) > (this.o.describedUpTo ?? 31)
        ? undefined
        : { kind: 'event', index: Number(m[3]), high };
    const index = m[1] === 'mcycle' ? 0 : m[1] === 'minstret' ? 2 : Number(m[2]);
    if (index >= 3 && (index > 31 || index > (this.o.describedUpTo ?? 31))) return undefined;
    return { kind: 'counter', index, high };
  }

  override async hasRegister(name: string): Promise<boolean> {
    return this.parse(name) !== undefined;
  }

  private visible(index: number): bigint {
    const live = this.counters.get(index) ?? 0n;
    if (!this.o.qemuInhibit || !((this.inhibitValue >> BigInt(index)) & 1n)) return live;
    if (this.started.delete(index)) return live; // the one live read after inhibiting
    return this.written.get(index) ?? 0n;
  }

  override async readRegister(name: string): Promise<bigint> {
    this.beforeRead?.(name);
    const r = this.parse(name);
    if (!r) throw new Error(`no register ${name}`);
    if (r.kind === 'inhibit') return this.inhibitValue;
    if (r.kind === 'event') return this.events.get(r.index) ?? 0n;
    if (!this.widths.has(r.index)) return 0n; // read-only zero: not implemented
    const v = this.visible(r.index);
    return r.high ? (v >> 32n) & M32 : v & M32;
  }

  override async writeRegister(name: string, value: bigint): Promise<void> {
    this.writes.push(`${name}=${value}`);
    const r = this.parse(name);
    if (!r) throw new Error(`no register ${name}`);
    if (r.kind === 'inhibit') {
      const implemented = [...this.widths.keys()].reduce((m, i) => m | (1n << BigInt(i)), 0n);
      const next = value & implemented;
      if (this.o.qemuInhibit) for (const i of this.widths.keys()) if (!((next >> BigInt(i)) & 1n)) this.started.add(i);
      this.inhibitValue = next;
      return;
    }
    if (r.kind === 'event') {
      if (this.widths.has(r.index)) this.events.set(r.index, value & (this.o.eventMask ?? M64));
      return;
    }
    if (!this.widths.has(r.index) || this.o.readOnly?.includes(r.index)) return;
    const mask = (1n << BigInt(this.widths.get(r.index)!)) - 1n;
    const old = this.counters.get(r.index)!;
    const next = (r.high ? (old & M32) | ((value & M32) << 32n) : (old & ~M32) | (value & M32)) & mask;
    this.counters.set(r.index, next);
    const w = this.written.get(r.index) ?? 0n;
    this.written.set(r.index, r.high ? (w & M32) | ((value & M32) << 32n) : (w & ~M32) | (value & M32));
  }
}

function valueOf(readings: Awaited<ReturnType<RiscvCounters['read']>>, slot: number): bigint {
  const r = readings.find((x) => x.slot === slot);
  assert.ok(r, `no reading for slot ${slot}`);
  return r.value;
}

describe('RISC-V counters: discovery', () => {
  test('finds mcycle, minstret and the writable mhpmcounters; read-only-zero ones are absent', async () => {
    const m = new RiscvCsrModel({ hpm: { 3: 64, 4: 40 }, describedUpTo: 18 });
    const unit = new RiscvCounters(m);
    const info = await unit.discover();
    assert.equal(info.present, true);
    assert.deepEqual(
      info.slots.map((s) => [s.index, s.name, s.width, s.fixedEvent]),
      [
        [0, 'mcycle', 64, 'cycles'],
        [2, 'minstret', 64, 'instructions'],
        [3, 'mhpmcounter3', 64, undefined],
        [4, 'mhpmcounter4', 40, undefined],
      ],
    );
    assert.equal(info.note, undefined);
    // Every probe put back what it found.
    assert.equal(m.inhibitValue, 0n);
    for (const i of [0, 2, 3, 4]) assert.equal(m.counters.get(i), 0n);
  });

  test('a counter that already counts is present without a write', async () => {
    const m = new RiscvCsrModel({ hpm: {} });
    m.run(1234);
    const unit = new RiscvCounters(m);
    await unit.discover();
    assert.equal(m.counters.get(2), 1234n);
  });

  test('without mcountinhibit the unit says so and still holds stopped values', async () => {
    const m = new RiscvCsrModel({ inhibit: false });
    const unit = new RiscvCounters(m);
    const info = await unit.discover();
    assert.match(info.note ?? '', /no mcountinhibit/);
    await unit.configure(2, 'instructions');
    await unit.start([2]);
    m.run(10);
    await unit.stop([2]);
    m.run(500);
    assert.equal(valueOf(await unit.read(), 2), 10n);
    await unit.start([2]);
    m.run(5);
    assert.equal(valueOf(await unit.read(), 2), 15n);
  });
});

describe('RISC-V counters: counting, start and stop', () => {
  test('configure zeroes; stop through mcountinhibit holds; start resumes', async () => {
    const m = new RiscvCsrModel({ hpm: { 3: 64 } });
    const unit = new RiscvCounters(m);
    await unit.discover();
    m.run(999);
    await unit.configure(2, 'instructions');
    await unit.configure(0, 'cycles');
    assert.equal(m.inhibitValue, 0n, "configure leaves the firmware's inhibit bits alone");
    await unit.start([0, 2]);
    m.run(100);
    let r = await unit.read();
    assert.equal(valueOf(r, 2), 100n);
    assert.equal(valueOf(r, 0), 100n);
    assert.ok(r.every((x) => x.reliable));
    await unit.stop([2]);
    assert.equal(m.inhibitValue, 4n, 'bit 2 (IR) set');
    m.run(50);
    r = await unit.read();
    assert.equal(valueOf(r, 2), 100n);
    assert.equal(valueOf(r, 0), 150n);
    await unit.start([2]);
    assert.equal(m.inhibitValue, 0n);
    m.run(7);
    assert.equal(valueOf(await unit.read(), 2), 107n);
    await unit.reset([0, 2, 3]);
    m.run(3);
    r = await unit.read();
    assert.equal(valueOf(r, 2), 3n);
    assert.equal(r.length, 2, 'unconfigured mhpmcounter3 is skipped by reset and read');
  });

  test(
    'QEMU 7.2 inhibit semantics: the write-back keeps stopped counters still and start() counts ' + 'on from there',
    async () => {
      const m = new RiscvCsrModel({ qemuInhibit: true });
      const unit = new RiscvCounters(m);
      await unit.discover(); // probing mcountinhibit marks every counter "started", as on QEMU
      await unit.configure(2, 'instructions');
      await unit.start([2]);
      m.run(40);
      await unit.stop([2]);
      m.run(1000); // QEMU keeps counting underneath
      const stopped = await unit.read();
      assert.equal(valueOf(stopped, 2), 40n);
      assert.equal(stopped[0]!.reliable, true);
      await unit.start([2]);
      m.run(2);
      assert.equal(valueOf(await unit.read(), 2), 42n, 'the 1000 instructions while stopped are not counted');
    },
  );

  test('a counter that moves while inhibited is reported unreliable', async () => {
    const m = new RiscvCsrModel({});
    const unit = new RiscvCounters(m);
    await unit.discover();
    await unit.configure(2, 'instructions');
    await unit.start([2]);
    m.run(10);
    await unit.stop([2]);
    m.counters.set(2, m.counters.get(2)! + 5n); // a core that ignores mcountinhibit
    const [r] = await unit.read();
    assert.equal(r!.reliable, false);
    assert.match(r!.note ?? '', /moved while stopped/);
  });

  test('programmable counter: hpm.<n> and QEMU-named aliases program mhpmevent', async () => {
    const m = new RiscvCsrModel({ hpm: { 3: 64, 4: 64 } });
    const unit = new RiscvCounters(m, { hpmEvents: qemuHpmEvents });
    await unit.discover();
    assert.deepEqual(
      unit.events().map((e) => e.id),
      ['cycles', 'instructions', 'hpm.1', 'hpm.2'],
    );
    await unit.configure(3, 'hpm.2');
    await unit.configure(4, 'cycles');
    assert.equal(m.events.get(3), 2n);
    assert.equal(m.events.get(4), 1n);
    await unit.start([3, 4]);
    m.run(77);
    const r = await unit.read();
    assert.equal(valueOf(r, 3), 77n);
    assert.equal(valueOf(r, 4), 77n);
    await unit.configure(3, 'hpm.0x10');
    assert.equal(m.events.get(3), 16n);
  });

  test('a narrow counter that ignores writes: its width is probed and the count wraps at it', async () => {
    const m = new RiscvCsrModel({ hpm: { 3: 40 }, readOnly: [3] });
    m.counters.set(3, (1n << 40n) - 10n);
    const unit = new RiscvCounters(m);
    const info = await unit.discover();
    assert.equal(info.slots.find((s) => s.index === 3)?.width, 40);
    await unit.configure(3, 'hpm.1'); // zeroing fails: the value found becomes the base
    await unit.start([3]);
    m.run(25);
    assert.equal(valueOf(await unit.read(), 3), 25n);
  });

  test('release restores mhpmevent and mcountinhibit', async () => {
    const m = new RiscvCsrModel({ hpm: { 3: 64 } });
    m.inhibitValue = 0b1000n;
    m.events.set(3, 9n);
    const unit = new RiscvCounters(m);
    await unit.discover();
    await unit.configure(3, 'hpm.1');
    await unit.start([3]);
    await unit.release();
    assert.equal(m.events.get(3), 9n);
    assert.equal(m.inhibitValue, 0b1000n);
    assert.deepEqual(await unit.read(), []);
  });
});

describe('RISC-V counters: 64-bit reads on RV32', () => {
  test('a carry between the halves is caught: high, low, high again', async () => {
    const m = new RiscvCsrModel({});
    const unit = new RiscvCounters(m);
    await unit.discover();
    await unit.configure(0, 'cycles');
    await unit.start([0]);
    m.counters.set(0, 0xffff_fffen);
    let lowReads = 0;
    m.beforeRead = (name) => {
      // The core runs 3 cycles between the first high read and the low read: low wraps, high carries.
      if (name === 'mcycle' && lowReads++ === 0) m.run(3);
    };
    const value = valueOf(await unit.read(), 0);
    assert.equal(value, 0x1_0000_0001n, `a torn read would give 0x1 or 0x1_ffff_fffe..., got 0x${value.toString(16)}`);
    assert.ok(lowReads >= 2, 'the pair was read again');
  });

  test('a core that keeps carrying is an error that says to halt it', async () => {
    const m = new RiscvCsrModel({});
    const unit = new RiscvCounters(m);
    await unit.discover();
    await unit.configure(0, 'cycles');
    m.beforeRead = (name) => {
      if (name === 'mcycle') m.counters.set(0, m.counters.get(0)! + (1n << 32n));
    };
    await rejectsWith(unit.read(), ErrorCode.CounterUnreliable, /Halt it/);
  });

  test('writes go low = 0, high, low so no carry reaches the new high half', async () => {
    const m = new RiscvCsrModel({});
    const unit = new RiscvCounters(m);
    await unit.discover();
    m.writes.length = 0;
    await unit.configure(2, 'instructions');
    assert.deepEqual(m.writes.slice(0, 3), ['minstret=0', 'minstreth=0', 'minstret=0']);
  });
});

describe('RISC-V counters: errors name the fix', () => {
  test('out-of-range and absent slots list the slots that exist', async () => {
    const m = new RiscvCsrModel({ hpm: { 3: 64, 4: 64 }, describedUpTo: 18 });
    const unit = new RiscvCounters(m);
    await unit.discover();
    await rejectsWith(
      unit.configure(5, 'hpm.1'),
      ErrorCode.CounterUnavailable,
      /slot 5 does not exist.*mcycle \(0\), minstret \(2\), mhpmcounter3–4 \(3–4\).*Pick one/,
    );
    await rejectsWith(unit.configure(1, 'cycles'), ErrorCode.CounterUnavailable, /slot 1/);
    await rejectsWith(unit.start([3]), ErrorCode.CounterUnavailable, /Configure it first/);
  });

  test('unknown events say how to name one', async () => {
    const m = new RiscvCsrModel({ hpm: { 3: 64 } });
    const unit = new RiscvCounters(m);
    await unit.discover();
    await rejectsWith(
      unit.configure(3, 'cache-misses'),
      ErrorCode.UnknownEvent,
      /Unknown event 'cache-misses'.*hpm\.<n>/,
    );
    await rejectsWith(unit.configure(3, 'cycles'), ErrorCode.UnknownEvent, /implementation-defined/);
    await rejectsWith(unit.configure(3, 'hpm.0'), ErrorCode.UnknownEvent, /no event/);
    await rejectsWith(
      unit.configure(2, 'cycles'),
      ErrorCode.UnknownEvent,
      /minstret \(slot 2\) counts only 'instructions'.*programmable slot \(3–3\)/,
    );
  });

  test('an event the selector does not accept is refused and the old selector kept', async () => {
    const m = new RiscvCsrModel({ hpm: { 3: 64 }, eventMask: 0xffn });
    m.events.set(3, 5n);
    const unit = new RiscvCounters(m);
    await unit.discover();
    await rejectsWith(unit.configure(3, 'hpm.0x100'), ErrorCode.UnknownEvent, /mhpmevent3 did not accept event 0x100/);
    assert.equal(m.events.get(3), 5n);
  });
});
