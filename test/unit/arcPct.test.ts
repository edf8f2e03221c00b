import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ArcPctUnit, decodeConditionName, decodePctBuild } from '../../adapter/arch/arc/pctCounters';
import {
  createArcAuxAccess,
  MonitorAuxAccess,
  parseMonitorNumber,
  PctAux,
  RegisterAuxAccess,
} from '../../adapter/arch/arc/auxAccess';
import type { TargetAccess } from '../../adapter/probe/targetAccess';
import { CycleLensError, ErrorCode } from '../../adapter/errors';
import { ArcCpuModel } from '../doubles/arcCpuModel';
import {
  ArcPctBuild,
  ArcPctModel,
  DEFAULT_CONDITIONS,
  PCT_REGISTER_NAMES,
  shuffledConditions,
} from '../doubles/arcPctModel';
import { ArcGdbStub } from '../doubles/arcGdbStub';
import { ModelAuxAccess } from '../doubles/modelAuxAccess';

/** ArcPctUnit against the test double's register model, with no debugger in between. */
function rig(build: Partial<ArcPctBuild> = {}) {
  const pct = new ArcPctModel(build);
  const cpu = new ArcCpuModel(pct);
  const access = new ModelAuxAccess(cpu);
  const unit = new ArcPctUnit(access);
  return { pct, cpu, access, unit };
}

/** Runs the double's CPU for exactly `n` instructions. */
function runInstructions(cpu: ArcCpuModel, n: number): void {
  for (let i = 0; i < n; i++) cpu.resume('step');
}

function valueOf(readings: Awaited<ReturnType<ArcPctUnit['read']>>, slot: number): bigint {
  const r = readings.find((x) => x.slot === slot);
  assert.ok(r, `no reading for slot ${slot}`);
  return r.value;
}

function isError(code: ErrorCode, pattern: RegExp) {
  return (err: unknown): boolean => {
    assert.ok(err instanceof CycleLensError, `expected a CycleLensError, got ${String(err)}`);
    assert.equal(err.code, code);
    assert.match(err.message, pattern);
    return true;
  };
}

describe('ARC PCT register decoding', () => {
  it(
    'decodes PCT_BUILD fields: version [7:0], width 32 + (s << 4) from [9:8], interrupt bit 10, ' + 'counters [23:16]',
    () => {
      assert.deepEqual(decodePctBuild(0x0008_0102 | (1 << 10), 0x0011_0001), {
        version: 2,
        counters: 8,
        width: 48,
        interrupts: true,
        conditions: 17,
      });
      assert.deepEqual(decodePctBuild(0x0002_0003, 0x0004_0000), {
        version: 3,
        counters: 2,
        width: 32,
        interrupts: false,
        conditions: 4,
      });
      assert.equal(decodePctBuild(0x0000_0201, 0).width, 64);
    },
  );

  it('decodes CC_NAME0/CC_NAME1 little-endian and stops at the first NUL', () => {
    assert.equal(decodeConditionName(0x6e757263, 0), 'crun'); // 'c' in the low byte
    assert.equal(decodeConditionName(0x6d656d69, 0x63647277), 'imemwrdc'); // all 8 characters used
    assert.equal(decodeConditionName(0, 0), '');
  });

  it('agrees with the double on how names are packed', () => {
    const pct = new ArcPctModel();
    pct.write(PctAux.CC_INDEX, DEFAULT_CONDITIONS.indexOf('imemrdc'));
    assert.equal(decodeConditionName(pct.read(PctAux.CC_NAME0), pct.read(PctAux.CC_NAME1)), 'imemrdc');
  });
});

describe('ArcPctUnit discovery', () => {
  it('finds 2 × 32-bit counters and enumerates the conditions, leaving out #0 ("never")', async () => {
    const { unit } = rig({ counters: 2, width: 32 });
    const info = await unit.discover();
    assert.equal(info.present, true);
    assert.equal(info.unit, 'ARC PCT');
    assert.deepEqual(
      info.slots.map((s) => [s.index, s.name, s.width, s.running]),
      [
        [0, 'PCT[0]', 32, false],
        [1, 'PCT[1]', 32, false],
      ],
    );
    assert.deepEqual(
      unit.events().map((e) => e.id),
      DEFAULT_CONDITIONS.slice(1).map((n) => `arc.${n}`),
    );
    const crun = unit.events().find((e) => e.id === 'arc.crun');
    assert.match(crun?.description ?? '', /[Cc]ycles/);
  });

  it('finds 8 × 48-bit counters', async () => {
    const { unit } = rig({ counters: 8, width: 48 });
    const info = await unit.discover();
    assert.equal(info.slots.length, 8);
    assert.ok(info.slots.every((s) => s.width === 48));
  });

  it('describes an unknown condition name by its index and keeps its name', async () => {
    const { unit } = rig({ conditions: ['never', 'crun', 'xyzzy'] });
    await unit.discover();
    const e = unit.events().find((x) => x.id === 'arc.xyzzy');
    assert.ok(e);
    assert.match(e.description, /xyzzy.*index 2/);
  });

  it('reports a core without PCT as absent, with a note, and refuses to configure', async () => {
    const { unit } = rig({ present: false });
    const info = await unit.discover();
    assert.equal(info.present, false);
    assert.match(info.note ?? '', /no performance counters.*version 0/);
    assert.deepEqual(info.slots, []);
    assert.deepEqual(unit.events(), []);
    await assert.rejects(
      unit.configure(0, 'arc.crun'),
      isError(ErrorCode.CounterUnavailable, /no performance counters/),
    );
  });

  it('refuses to work before discover()', async () => {
    const { unit } = rig();
    await assert.rejects(unit.configure(0, 'arc.crun'), isError(ErrorCode.CounterUnavailable, /discover/));
  });

  it('passes "target is running" through instead of calling the PCT absent', async () => {
    const running = new CycleLensError(ErrorCode.NotStopped, 'The target must be halted to reach its counters.');
    const unit = new ArcPctUnit({
      via: 'test',
      read: async () => Promise.reject(running),
      write: async () => Promise.reject(running),
    });
    await assert.rejects(unit.discover(), (err) => err === running);
  });

  it('reads nothing before any slot is configured', async () => {
    const { unit } = rig({ present: false });
    await unit.discover();
    assert.deepEqual(await unit.read(), []);
  });

  it('restores CC_INDEX after enumerating', async () => {
    const { pct, unit } = rig();
    pct.write(PctAux.CC_INDEX, 5);
    await unit.discover();
    assert.equal(pct.read(PctAux.CC_INDEX), 5);
  });
});

describe('ArcPctUnit counting against the model', () => {
  it('counts crun and iall exactly as the double executed them (2 × 32-bit)', async () => {
    const { cpu, unit } = rig({ counters: 2, width: 32 });
    await unit.discover();
    await unit.configure(0, 'arc.crun');
    await unit.configure(1, 'arc.iall');
    runInstructions(cpu, 7); // not counted: not started yet
    const before = new Map(cpu.totals);
    await unit.start([0, 1]);
    runInstructions(cpu, 50);
    cpu.resume('continue'); // a whole budget of instructions
    const readings = await unit.read();
    const delta = (name: string): bigint => (cpu.totals.get(name) ?? 0n) - (before.get(name) ?? 0n);
    assert.equal(valueOf(readings, 0), delta('crun'));
    assert.equal(valueOf(readings, 1), delta('iall'));
    assert.ok(delta('crun') > delta('iall'), 'the back branch costs 2 cycles, so crun > iall');
    assert.ok(readings.every((r) => r.reliable));
    assert.deepEqual(
      readings.map((r) => r.event),
      ['arc.crun', 'arc.iall'],
    );
  });

  for (const seed of [1, 7, 1234]) {
    it(`enumerates a shuffled condition order (seed ${seed}) instead of assuming indices`, async () => {
      const conditions = shuffledConditions(seed);
      assert.notDeepEqual(conditions, DEFAULT_CONDITIONS);
      const { pct, cpu, unit } = rig({ counters: 4, width: 48, conditions });
      await unit.discover();
      await unit.configure(0, 'arc.crun');
      await unit.configure(1, 'arc.iall');
      await unit.configure(2, 'arc.ijmp');
      await unit.configure(3, 'arc.imemrdc');
      await unit.start([0, 1, 2, 3]);
      assert.equal(pct.peekConfig(0), conditions.indexOf('crun'));
      assert.equal(pct.peekConfig(1), conditions.indexOf('iall'));
      assert.equal(pct.peekConfig(2), conditions.indexOf('ijmp'));
      assert.equal(pct.peekConfig(3), conditions.indexOf('imemrdc'));
      runInstructions(cpu, 100);
      const r = await unit.read();
      assert.equal(valueOf(r, 0), cpu.totals.get('crun'));
      assert.equal(valueOf(r, 1), cpu.totals.get('iall'));
      assert.equal(valueOf(r, 2), cpu.totals.get('ijmp'));
      assert.equal(valueOf(r, 3), cpu.totals.get('imemrdc'));
      // The double's loop is 16 slots: 100 instructions = 6 iterations (6 branches) + 4.
      assert.equal(valueOf(r, 1), 100n);
      assert.equal(valueOf(r, 2), 6n);
      assert.equal(valueOf(r, 0), 106n);
    });
  }

  it(
    'programs a slot with the documented sequence: PCT_INDEX, CONFIG = 0, COUNTL = COUNTH = 0; ' +
      'start writes the condition',
    async () => {
      const { access, unit } = rig({ counters: 2 });
      await unit.discover();
      const at = access.log.length;
      await unit.configure(1, 'arc.iall');
      const writes = access.log.slice(at).filter((r) => r.op === 'write' && r.aux !== PctAux.PCT_CONTROL);
      assert.deepEqual(
        writes.map((w) => [w.aux, w.value]),
        [
          [PctAux.PCT_INDEX, 1],
          [PctAux.PCT_CONFIG, 0],
          [PctAux.PCT_COUNTL, 0],
          [PctAux.PCT_COUNTH, 0],
        ],
      );
      const at2 = access.log.length;
      await unit.start([1]);
      const w2 = access.log.slice(at2).filter((r) => r.op === 'write');
      assert.deepEqual(
        w2.map((w) => [w.aux, w.value]),
        [
          [PctAux.PCT_CONTROL, 1],
          [PctAux.PCT_INDEX, 1],
          [PctAux.PCT_CONFIG, DEFAULT_CONDITIONS.indexOf('iall')],
        ],
      );
    },
  );

  it('stop freezes a slot (condition 0) and start resumes it with the remembered condition', async () => {
    const { pct, cpu, unit } = rig();
    await unit.discover();
    await unit.configure(0, 'arc.iall');
    await unit.start([0]);
    runInstructions(cpu, 10);
    await unit.stop([0]);
    assert.equal(pct.peekConfig(0), 0);
    assert.equal(unit.info().slots[0]?.running, false);
    runInstructions(cpu, 25);
    assert.equal(valueOf(await unit.read(), 0), 10n);
    await unit.start([0]);
    assert.equal(unit.info().slots[0]?.running, true);
    runInstructions(cpu, 5);
    assert.equal(valueOf(await unit.read(), 0), 15n);
  });

  it('reset zeroes only the given slots', async () => {
    const { cpu, unit } = rig();
    await unit.discover();
    await unit.configure(0, 'arc.iall');
    await unit.configure(1, 'arc.crun');
    await unit.start([0, 1]);
    runInstructions(cpu, 20);
    await unit.reset([0]);
    runInstructions(cpu, 3);
    const r = await unit.read();
    assert.equal(valueOf(r, 0), 3n);
    assert.equal(valueOf(r, 1), cpu.totals.get('crun'));
  });

  it('reads past 2^32 on a 48-bit build', async () => {
    const { pct, cpu, unit } = rig({ counters: 2, width: 48 });
    await unit.discover();
    await unit.configure(0, 'arc.crun');
    await unit.start([0]);
    const big = (1n << 32n) + 12_345n;
    pct.count({ crun: big }); // what ~4.3 s at 1 GHz would leave in the counter
    runInstructions(cpu, 3);
    const [r] = await unit.read();
    assert.equal(r?.value, big + 3n);
    assert.equal(r?.reliable, true);
    assert.equal(pct.peekCount(0), big + 3n);
  });

  it('wraps a 48-bit counter at 2^48 in hardware and extends it in software', async () => {
    const { pct, unit } = rig({ counters: 1, width: 48 });
    await unit.discover();
    await unit.configure(0, 'arc.crun');
    await unit.start([0]);
    pct.count({ crun: (1n << 48n) - 10n });
    assert.equal(valueOf(await unit.read(), 0), (1n << 48n) - 10n);
    pct.count({ crun: 25n });
    assert.equal(pct.peekCount(0), 15n);
    const [r] = await unit.read();
    assert.equal(r?.value, (1n << 48n) + 15n);
    assert.equal(r?.reliable, true);
  });

  it('extends a 32-bit counter across a wrap and flags the reading as not fully reliable', async () => {
    const { pct, unit } = rig({ counters: 2, width: 32 });
    await unit.discover();
    await unit.configure(0, 'arc.crun');
    await unit.start([0]);
    pct.count({ crun: 0xffff_fff0 });
    const first = await unit.read();
    assert.equal(valueOf(first, 0), 0xffff_fff0n);
    assert.equal(first[0]?.reliable, true);
    pct.count({ crun: 0x20 });
    const [r] = await unit.read();
    assert.equal(r?.value, 0x1_0000_0010n);
    assert.equal(r?.reliable, false);
    assert.match(r?.note ?? '', /32 bits wide and wrapped/);
  });

  it('accepts generic ids and bare names: cycles → crun, instructions → iall, crun → arc.crun', async () => {
    const { pct, unit } = rig({ counters: 3 });
    await unit.discover();
    await unit.configure(0, 'cycles');
    await unit.configure(1, 'instructions');
    await unit.configure(2, 'ijmp');
    await unit.start([0, 1, 2]);
    assert.equal(pct.peekConfig(0), DEFAULT_CONDITIONS.indexOf('crun'));
    assert.equal(pct.peekConfig(1), DEFAULT_CONDITIONS.indexOf('iall'));
    assert.deepEqual(
      unit.info().slots.map((s) => s.event),
      ['arc.crun', 'arc.iall', 'arc.ijmp'],
    );
  });
});

describe('ArcPctUnit errors and release', () => {
  it('names the available events for an unknown one', async () => {
    const { unit } = rig({ conditions: ['never', 'crun', 'iall', 'dclm'] });
    await unit.discover();
    await assert.rejects(
      unit.configure(0, 'arc.l2miss'),
      isError(ErrorCode.UnknownEvent, /'arc\.l2miss'.*arc\.crun, arc\.iall, arc\.dclm/),
    );
  });

  it('does not offer the "never" condition', async () => {
    const { unit } = rig();
    await unit.discover();
    await assert.rejects(unit.configure(0, 'arc.never'), isError(ErrorCode.UnknownEvent, /never/));
  });

  it('says how many counters the build has for a slot out of range', async () => {
    const { unit } = rig({ counters: 2 });
    await unit.discover();
    await assert.rejects(
      unit.configure(2, 'arc.crun'),
      isError(ErrorCode.CounterUnavailable, /slot 2 .*2 counters \(slots 0–1\)/),
    );
    await assert.rejects(unit.configure(-1, 'arc.crun'), isError(ErrorCode.CounterUnavailable, /2 counters/));
    await assert.rejects(unit.start([5]), isError(ErrorCode.CounterUnavailable, /2 counters/));
  });

  it('refuses to start a slot that was never configured', async () => {
    const { unit } = rig({ counters: 2 });
    await unit.discover();
    await assert.rejects(unit.start([1]), isError(ErrorCode.CounterUnavailable, /configure it first/));
  });

  it("release restores PCT_CONTROL, each touched slot's config and count, and PCT_INDEX", async () => {
    const { pct, cpu, unit } = rig({ counters: 4, width: 48 });
    // State firmware left behind: counter 1 counts iall and is at 1000; global enable off; index 3.
    pct.preset(1, DEFAULT_CONDITIONS.indexOf('iall'), 1000n);
    pct.write(PctAux.PCT_INDEX, 3);
    await unit.discover();
    await unit.configure(1, 'arc.crun');
    await unit.configure(2, 'arc.ijmp');
    await unit.start([1, 2]);
    assert.equal(pct.enabled, true);
    runInstructions(cpu, 40);
    await unit.release();
    assert.equal(pct.enabled, false);
    assert.equal(pct.peekConfig(1), DEFAULT_CONDITIONS.indexOf('iall'));
    assert.equal(pct.peekCount(1), 1000n);
    assert.equal(pct.peekConfig(2), 0);
    assert.equal(pct.peekCount(2), 0n);
    assert.equal(pct.read(PctAux.PCT_INDEX), 3);
    assert.deepEqual(
      unit.info().slots.map((s) => s.event),
      [undefined, undefined, undefined, undefined],
    );
  });

  it('release leaves the global enable on when it was on before', async () => {
    const { pct, unit } = rig();
    pct.write(PctAux.PCT_CONTROL, 1);
    await unit.discover();
    await unit.configure(0, 'arc.crun');
    await unit.start([0]);
    await unit.release();
    assert.equal(pct.enabled, true);
  });
});

/** A TargetAccess whose monitor is the gdbserver double's and whose registers are named ones. */
function fakeTarget(stub: ArcGdbStub, names: readonly string[]): TargetAccess & { commands: string[] } {
  const auxOf = new Map(PCT_REGISTER_NAMES);
  const commands: string[] = [];
  const unsupported = (): never => {
    throw new Error('not used');
  };
  return {
    commands,
    readMemory: unsupported,
    writeMemory: unsupported,
    readU32: unsupported,
    writeU32: unsupported,
    hasRegister: async (name) => names.includes(name),
    readRegister: async (name) => BigInt(stub.cpu.readAux(auxOf.get(name)!)),
    writeRegister: async (name, value) => stub.cpu.writeAux(auxOf.get(name)!, Number(value)),
    monitor: async (command) => {
      commands.push(command);
      return stub.monitor(command);
    },
  };
}

describe('ARC aux register access', () => {
  it('parses what get-aux-reg prints in either OpenOCD format', () => {
    assert.equal(parseMonitorNumber('0x20001\n'), 0x20001);
    assert.equal(parseMonitorNumber('131073\n'), 131073);
    assert.equal(parseMonitorNumber('0xffffffff'), 0xffffffff);
    assert.equal(parseMonitorNumber('Error: aux register 0x25f does not exist\n'), undefined);
    assert.equal(parseMonitorNumber('invalid command name "arc"'), undefined);
    assert.equal(parseMonitorNumber(''), undefined);
    assert.equal(parseMonitorNumber('0x1\n0x2\n'), undefined);
  });

  for (const format of ['hex', 'decimal'] as const) {
    it(`drives ArcPctUnit through monitor commands (${format} output)`, async () => {
      const stub = new ArcGdbStub({
        build: { counters: 2, width: 48 },
        exposePctRegisters: false,
        monitorNumberFormat: format,
      });
      const target = fakeTarget(stub, []);
      const access = await createArcAuxAccess(target);
      assert.ok(access instanceof MonitorAuxAccess);
      const unit = new ArcPctUnit(access);
      assert.equal((await unit.discover()).present, true);
      await unit.configure(0, 'arc.crun');
      await unit.start([0]);
      stub.cpu.resume('continue');
      assert.equal(valueOf(await unit.read(), 0), stub.cpu.totals.get('crun'));
      assert.ok(target.commands.includes('arc jtag set-aux-reg 0x256 0x0'));
      assert.ok(target.commands.some((c) => c.startsWith('arc jtag get-aux-reg 0xf5')));
      await stub.close();
    });
  }

  it('turns a monitor error into a clear CounterUnavailable error', async () => {
    const stub = new ArcGdbStub({ exposePctRegisters: false });
    const access = new MonitorAuxAccess(fakeTarget(stub, []));
    await assert.rejects(access.read(0x3ff), isError(ErrorCode.CounterUnavailable, /aux 0x3ff.*does not exist/));
    await assert.rejects(access.write(0x3ff, 1), isError(ErrorCode.CounterUnavailable, /Could not write aux 0x3ff/));
    await stub.close();
  });

  it('reports a gdbserver without the ARC monitor commands as "PCT not available"', async () => {
    const target = fakeTarget(new ArcGdbStub(), []);
    target.monitor = async () => 'Unknown monitor command\n';
    const unit = new ArcPctUnit(await createArcAuxAccess(target));
    const info = await unit.discover();
    assert.equal(info.present, false);
    assert.match(info.note ?? '', /PCT_BUILD.*OpenOCD/);
  });

  it('uses register names when the target description has them all', async () => {
    const stub = new ArcGdbStub();
    const target = fakeTarget(
      stub,
      PCT_REGISTER_NAMES.map(([n]) => n),
    );
    const access = await createArcAuxAccess(target);
    assert.ok(access instanceof RegisterAuxAccess);
    assert.equal(access.via, 'GDB registers');
    const unit = new ArcPctUnit(access);
    await unit.discover();
    await unit.configure(1, 'arc.iall');
    await unit.start([1]);
    stub.cpu.resume('step');
    assert.equal(valueOf(await unit.read(), 1), 1n);
    assert.deepEqual(target.commands, []);
    await stub.close();
  });

  it('mixes names and monitor when the description has only some PCT registers', async () => {
    const stub = new ArcGdbStub();
    const target = fakeTarget(stub, ['pct_build', 'cc_build', 'pct_control']);
    const access = await createArcAuxAccess(target);
    assert.match(access.via, /GDB registers, with the gdbserver monitor/);
    const unit = new ArcPctUnit(access);
    await unit.discover();
    await unit.configure(0, 'arc.crun');
    await unit.start([0]);
    stub.cpu.resume('step');
    assert.equal(valueOf(await unit.read(), 0), 1n);
    assert.ok(target.commands.length > 0);
    assert.ok(!target.commands.some((c) => c.includes(' 0xf5')), 'PCT_BUILD went by name');
    await stub.close();
  });
});
