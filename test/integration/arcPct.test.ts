import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGdb } from '../support/gdb';
import type { Debugger } from '../../adapter/debugger/debugger';
import { DebuggerTargetAccess } from '../../adapter/probe/targetAccess';
import { createArcAuxAccess, MonitorAuxAccess, RegisterAuxAccess } from '../../adapter/arch/arc/auxAccess';
import { ArcPctUnit } from '../../adapter/arch/arc/pctCounters';
import type { CounterReading } from '../../adapter/probe/counters';
import { ArcGdbStub, ArcGdbStubOptions } from '../doubles/arcGdbStub';
import { ArcCpuModel, DEFAULT_PROGRAM } from '../doubles/arcCpuModel';
import { PCT_REGISTER_NAMES, shuffledConditions } from '../doubles/arcPctModel';
import { buildTinyArcElf, ensureArcGdb, TinyArcElf } from '../support/arcTools';
import {
  OWNER_TAG_VAR,
  killTagged,
  newOwnerTag,
  processesWithTag,
  waitForNoTaggedProcesses,
} from '../support/ownedProcesses';

/**
 * ArcPctUnit through the real debugger: a real arc-elf32-gdb (built from Debian's gdb source by
 * scripts/buildArcGdb.sh) talks the GDB remote protocol over TCP to the ARC gdbserver test double,
 * and the PCT registers are reached either by name (target description) or through OpenOCD-style
 * `monitor arc jtag …` commands. Values must match the double's model exactly.
 */

let gdbPath = '';
let workDir = '';
let tinyElf: TinyArcElf | undefined;
const ownerTag = newOwnerTag();

before(() => {
  gdbPath = ensureArcGdb();
  workDir = mkdtempSync(join(tmpdir(), 'cyclelens-arcpct-'));
  tinyElf = buildTinyArcElf(workDir);
  // Every process the debugger spawns inherits the tag, so leaks can be found afterwards.
  process.env[OWNER_TAG_VAR] = ownerTag;
});

after(async () => {
  const left = await waitForNoTaggedProcesses(ownerTag, 5000);
  killTagged(ownerTag);
  if (workDir) rmSync(workDir, { recursive: true, force: true });
  assert.deepEqual(left, [], 'no GDB may outlive the tests');
});

interface Session {
  stub: ArcGdbStub;
  gdb: Debugger;
  target: DebuggerTargetAccess;
  /** Address of the loop's slot 8 (`mid`) and of its first slot. */
  mid: number;
  loopStart: number;
}

/** `withElf: false` connects the way it must when ARC binutils are not built: no file, architecture set by hand. */
async function connect(options: ArcGdbStubOptions, withElf = true): Promise<Session> {
  const elf = withElf ? tinyElf : undefined;
  const program = elf ? { loopStart: elf.textBase, loopEnd: elf.symbols.get('loop_end')! } : DEFAULT_PROGRAM;
  const stub = new ArcGdbStub({ ...options, program });
  if (elf) stub.cpu.writeMemory(elf.textBase, elf.text);
  const port = await stub.listen(0);
  const gdb = await startGdb(workDir, 'arc', gdbPath);
  try {
    if (elf) await gdb.loadProgram(elf.path);
    else await gdb.command('set architecture ARCv2');
    await gdb.connectRemote(`127.0.0.1:${port}`);
  } catch (err) {
    await gdb.exit();
    await stub.close();
    throw err;
  }
  return {
    stub,
    gdb,
    target: new DebuggerTargetAccess(gdb),
    mid: program.loopStart + 8 * 4,
    loopStart: program.loopStart,
  };
}

async function disconnect(s: Session): Promise<void> {
  await s.gdb.exit();
  await s.stub.close();
}

/** Continues and waits for the stop; fails the test on a timeout. */
async function continueToStop(gdb: Debugger): Promise<NonNullable<Awaited<ReturnType<Debugger['waitForStop']>>>> {
  const stopped = gdb.waitForStop(20_000);
  await gdb.continue();
  const event = await stopped;
  assert.ok(event, 'the target did not stop');
  return event;
}

function value(readings: CounterReading[], slot: number): bigint {
  const r = readings.find((x) => x.slot === slot);
  assert.ok(r, `no reading for slot ${slot}`);
  return r.value;
}

/** What the double's model says slots 0..8 of the loop raise: 8 instructions from loop_start to mid, no branch. */
function expectedFirstLeg(): { crun: bigint; iall: bigint } {
  let crun = 0n;
  for (let k = 0; k < 8; k++)
    crun += BigInt(ArcCpuModel.conditionsOf(k % 4 === 1 ? 'load' : k % 4 === 2 ? 'store' : 'alu').crun ?? 0);
  return { crun, iall: 8n };
}

describe('ARC PCT through arc-elf32-gdb and the gdbserver double', () => {
  it("GDB accepts the double's ARCv2 target description and shows the PCT registers by name", async () => {
    const s = await connect({ build: { counters: 2, width: 32 } }, false);
    try {
      const names = await s.gdb.registerNames();
      for (const r of ['r0', 'gp', 'fp', 'sp', 'blink', 'lp_count', 'pcl', 'pc', 'status32', 'bta'])
        assert.ok(names.includes(r), `missing ${r}`);
      for (const [n] of PCT_REGISTER_NAMES) assert.ok(names.includes(n), `missing ${n}`);
      assert.match(await s.gdb.command('show architecture'), /"ARCv2"/);
      assert.ok(
        processesWithTag(ownerTag).some((p) => p.cmdline.includes('arc-elf32-gdb')),
        'the leak check can see our GDB',
      );
      assert.equal(await s.target.readRegister('pc'), BigInt(s.loopStart));
      assert.equal(await s.target.readRegister('pct_build'), BigInt(s.stub.pct.read(0xf5)));
      assert.ok(
        s.stub.received.some((p) => p.startsWith('qXfer:features:read:target.xml:')),
        'GDB asked for the target description',
      );
    } finally {
      await disconnect(s);
    }
  });

  for (const { title, options, withElf } of [
    { title: 'by register name, 2 × 32-bit counters', options: { build: { counters: 2, width: 32 as const } } },
    {
      title: 'by register name, 8 × 48-bit counters, shuffled conditions',
      options: { build: { counters: 8, width: 48 as const, conditions: shuffledConditions(99) } },
    },
    {
      title: 'through `monitor arc jtag`, hex output (no PCT registers in target.xml)',
      options: {
        build: { counters: 2, width: 48 as const, conditions: shuffledConditions(5) },
        exposePctRegisters: false,
        monitorNumberFormat: 'hex' as const,
      },
    },
    {
      title: 'through `monitor arc jtag`, decimal output (OpenOCD 0.12), no ELF loaded',
      options: {
        build: { counters: 4, width: 32 as const },
        exposePctRegisters: false,
        monitorNumberFormat: 'decimal' as const,
      },
      withElf: false,
    },
  ]) {
    it(`counts crun and iall exactly, ${title}`, async (t) => {
      const s = await connect(options, withElf ?? true);
      if (!tinyElf && withElf !== false)
        t.diagnostic('arc-elf32 binutils are not built (scripts/buildArcBinutils.sh): GDB runs without an ELF');
      try {
        const access = await createArcAuxAccess(s.target);
        if (options.exposePctRegisters === false) assert.ok(access instanceof MonitorAuxAccess, access.via);
        else assert.ok(access instanceof RegisterAuxAccess && access.via === 'GDB registers', access.via);

        const unit = new ArcPctUnit(access);
        const info = await unit.discover();
        assert.equal(info.present, true);
        assert.equal(info.slots.length, options.build.counters);
        assert.ok(info.slots.every((x) => x.width === options.build.width));
        const ids = unit.events().map((e) => e.id);
        assert.ok(ids.includes('arc.crun') && ids.includes('arc.iall'));

        await unit.configure(0, 'arc.crun');
        await unit.configure(1, 'arc.iall');
        await unit.start([0, 1]);
        const conditions = s.stub.pct.build.conditions;
        assert.equal(s.stub.pct.peekConfig(0), conditions.indexOf('crun'));
        assert.equal(s.stub.pct.peekConfig(1), conditions.indexOf('iall'));
        assert.equal(s.stub.pct.enabled, true);

        const bp = await s.gdb.insertBreakpoint({ location: { kind: 'address', address: BigInt(s.mid) } });
        const before = new Map(s.stub.cpu.totals);
        const first = await continueToStop(s.gdb);
        assert.equal(first.reason, 'breakpoint');
        assert.deepEqual(first.breakpointIds, [bp.id]);
        assert.equal(await s.target.readRegister('pc'), BigInt(s.mid));

        const leg = expectedFirstLeg();
        let readings = await unit.read();
        assert.equal(value(readings, 0), leg.crun);
        assert.equal(value(readings, 1), leg.iall);

        // Once more round the loop: 16 instructions, one of them the 2-cycle back branch.
        await continueToStop(s.gdb);
        readings = await unit.read();
        assert.equal(value(readings, 0), leg.crun + 17n);
        assert.equal(value(readings, 1), leg.iall + 16n);
        const delta = (n: string): bigint => (s.stub.cpu.totals.get(n) ?? 0n) - (before.get(n) ?? 0n);
        assert.equal(value(readings, 0), delta('crun'));
        assert.equal(value(readings, 1), delta('iall'));
        assert.equal(await s.target.readRegister('r0'), 1n, 'one back branch taken');
        assert.ok(readings.every((r) => r.reliable));

        // Stopped slots stay frozen while the target runs.
        await unit.stop([0]);
        await continueToStop(s.gdb);
        readings = await unit.read();
        assert.equal(value(readings, 0), leg.crun + 17n);
        assert.equal(value(readings, 1), leg.iall + 32n);

        await unit.release();
        assert.equal(s.stub.pct.enabled, false);
        assert.equal(s.stub.pct.peekConfig(0), 0);
        assert.equal(s.stub.pct.peekConfig(1), 0);
        assert.equal(s.stub.pct.peekCount(1), 0n);
        if (options.exposePctRegisters === false) {
          assert.ok(
            s.stub.received.some((p) => p.startsWith('qRcmd,')),
            'the monitor path was used',
          );
          assert.ok(
            !s.stub.received.some((p) => /^[pP]([0-9a-f]+)/.test(p) && parseInt(p.slice(1), 16) >= 39),
            'no PCT register packets',
          );
        } else {
          assert.ok(!s.stub.received.some((p) => p.startsWith('qRcmd,')), 'no monitor commands');
        }
      } finally {
        await disconnect(s);
      }
    });
  }

  it('reads a 48-bit counter past 2^32 through GDB', async () => {
    const s = await connect({ build: { counters: 2, width: 48 } });
    try {
      const unit = new ArcPctUnit(await createArcAuxAccess(s.target));
      await unit.discover();
      await unit.configure(0, 'arc.crun');
      await unit.start([0]);
      const big = (1n << 32n) + 77n;
      s.stub.pct.count({ crun: big });
      await s.gdb.insertBreakpoint({ location: { kind: 'address', address: BigInt(s.mid) } });
      await continueToStop(s.gdb);
      const [r] = await unit.read();
      assert.equal(r?.value, big + expectedFirstLeg().crun);
      await unit.release();
    } finally {
      await disconnect(s);
    }
  });

  it('runs standalone from its CLI and answers a real GDB', async () => {
    const main = join(__dirname, '..', 'doubles', 'arcGdbStubMain.js');
    const child = spawn(
      process.execPath,
      [main, '--port', '0', '--counters', '8', '--width', '48', '--no-pct-registers'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    try {
      const port = await new Promise<number>((resolve, reject) => {
        let text = '';
        child.stdout.on('data', (d: Buffer) => {
          text += d.toString();
          const m = /Listening on port (\d+) for gdb connections/.exec(text);
          if (m) resolve(Number(m[1]));
        });
        child.once('exit', (code) => reject(new Error(`the double exited (${code}) before listening: ${text}`)));
      });
      const gdb = await startGdb(workDir, 'arc', gdbPath);
      try {
        await gdb.command('set architecture ARCv2');
        await gdb.connectRemote(`127.0.0.1:${port}`);
        const target = new DebuggerTargetAccess(gdb);
        assert.equal(await target.hasRegister('pct_build'), false);
        const unit = new ArcPctUnit(await createArcAuxAccess(target));
        const info = await unit.discover();
        assert.deepEqual([info.present, info.slots.length, info.slots[0]?.width], [true, 8, 48]);
      } finally {
        await gdb.exit();
      }
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
    }
  });

  it('reports a core without PCT as absent through GDB', async () => {
    for (const exposePctRegisters of [true, false]) {
      const s = await connect({ build: { present: false }, exposePctRegisters });
      try {
        const unit = new ArcPctUnit(await createArcAuxAccess(s.target));
        const info = await unit.discover();
        assert.equal(info.present, false);
        assert.match(info.note ?? '', /no performance counters/);
      } finally {
        await disconnect(s);
      }
    }
  });
});
