import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { rv32InjectionSupport } from '../../adapter/arch/riscv/trampolineRv32';
import { startGdb } from '../support/gdb';
import type { Debugger } from '../../adapter/debugger/debugger';
import { parseLocationSpec } from '../../adapter/debugger/locations';
import { ElfImage } from '../../adapter/elf';
import { debuggerTargetRunner } from '../../adapter/probe/debuggerRunner';
import { InjectionService, type MeasurementResults } from '../../adapter/probe/injection/injectionService';
import { journalPath, restoreFromJournal } from '../../adapter/probe/injection/journal';
import { qemuMemoryMap } from '../../adapter/target/targetFacts';
import { resolveReservedMemory } from '../../adapter/probe/injection/reservedMemory';
import type { ReservedMemory } from '../../adapter/probe/injection/types';
import { DebuggerTargetAccess } from '../../adapter/probe/targetAccess';
import { QemuServer } from '../../adapter/servers/qemu';
import type { OracleSummary } from '../oracle/oracle';
import { runOracle } from '../oracle/oracle';
import { markerLine } from '../support/markers';
import { OWNER_TAG_VAR, killTagged, newOwnerTag, waitForNoTaggedProcesses } from '../support/ownedProcesses';
import { fixtureElf, fixturesDir } from '../support/paths';

/**
 * Function and region measurement by injection on QEMU virt rv32, checked against the oracle
 * (test/oracle: exact per-function inclusive counts from a -singlestep instruction trace of the
 * unpatched program). `minstret` is exact under -icount, so the comparisons are exact:
 * measured total - stated payload instructions per pass - payloads of other measurements inside
 * the passes = the oracle's count. Runs that compare with `inclusiveExcludingInterrupts` stop the
 * timer interrupt after the program started it (mie = 0): the patched program runs more
 * instructions, so its interrupts land elsewhere than in the oracle's run.
 */

const ELF = fixtureElf('rv32', 'singlepass');
const CYCLIC = fixtureElf('rv32', 'cyclic_limited');
const CYCLIC_FOREVER = fixtureElf('rv32', 'cyclic');
const skip = existsSync(ELF) ? false : 'rv32 fixtures not built (make -C test/fixtures)';
// A line in main after the timer started, outside every patched function (a GDB breakpoint inside
// patched bytes would overwrite the patch while the target runs).
const ROUND = `singlepass.c:${markerLine(join(fixturesDir, 'src', 'singlepass.c'), '#ROUND')}`;
const tag = newOwnerTag();
const scratch = mkdtempSync(join(tmpdir(), 'cyclelens-injection-it-'));
const hex = (n: number): string => `0x${n.toString(16)}`;

let oracle: OracleSummary;
let fir: { start: number; end: number };

before(async () => {
  process.env[OWNER_TAG_VAR] = tag;
  if (skip) return;
  const elf = ElfImage.loadSync(ELF);
  const dsp = join(fixturesDir, 'src', 'dsp.c');
  fir = {
    start: elf.lineTable.addressesForLine(dsp, markerLine(dsp, '#REGION_START'))[0]!,
    end: elf.lineTable.addressesForLine(dsp, markerLine(dsp, '#REGION_END'))[0]!,
  };
  // Per-call costs of the timer work: from its entry to its return instruction (end excluded).
  const tick = elf.functionNamed('app_timer_tick')!;
  const decoded = new (await import('../../adapter/probe/injection/programModel')).ProgramModel(
    elf,
    (await import('../../adapter/arch/riscv/trampolineRv32')).rv32InjectionArch(),
  );
  const ret = decoded.functionNamed('app_timer_tick')!.instructions.filter((i) => i.kind === 'return');
  assert.equal(ret.length, 1, 'app_timer_tick has one return');
  oracle = await runOracle({
    elf: ELF,
    regions: [
      { name: 'fir', start: fir.start, end: fir.end },
      { name: 'tick', start: tick.address, end: ret[0]!.address },
    ],
  });
});

after(async () => {
  killTagged(tag);
  rmSync(scratch, { recursive: true, force: true });
});

interface Session {
  elf: ElfImage;
  qemu: QemuServer;
  gdb: Debugger;
  access: DebuggerTargetAccess;
  svc: InjectionService;
  uart: () => Promise<string>;
  runTo(location: string, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

async function session(elfPath = ELF, journalDir = join(scratch, 'journal'), qemu?: QemuServer): Promise<Session> {
  const elf = ElfImage.loadSync(elfPath);
  let out = '';
  const fresh = !qemu;
  qemu ??= new QemuServer({ type: 'qemu' });
  if (fresh) await qemu.start({ executable: elfPath, family: 'riscv', cwd: scratch, log: (l) => (out += l) });
  const gdb = await startGdb(scratch, 'riscv');
  await gdb.loadProgram(elfPath);
  await gdb.connectRemote(qemu.gdbAddress);
  const access = new DebuggerTargetAccess(gdb);
  const runTo = async (location: string, timeoutMs = 60_000): Promise<void> => {
    const bp = await gdb.insertBreakpoint({ location: parseLocationSpec(location) });
    const stopped = gdb.waitForStop(timeoutMs);
    await gdb.continue();
    const stop = await stopped;
    assert.ok(stop?.breakpointIds.includes(bp.id), `stopped at ${location} (${stop?.reason ?? 'no stop'})`);
    await gdb.deleteBreakpoints([bp.id]);
  };
  const svc = new InjectionService({
    access,
    elf,
    support: rv32InjectionSupport(),
    isHalted: () => gdb.executionState === 'stopped',
    journalDir,
    reserved: resolveReservedMemory(elf) as ReservedMemory,
    memoryMap: qemuMemoryMap('virt'),
    runner: debuggerTargetRunner(gdb),
  });
  return {
    elf,
    qemu,
    gdb,
    access,
    svc,
    runTo,
    uart: async () => {
      await qemu.flushOutput();
      return out;
    },
    async close() {
      await gdb.exit();
      await qemu!.stop();
    },
  };
}

/** Runs to the first process_packet (the timer is started by then) and stops the timer interrupt. */
async function maskTimer(s: Session): Promise<void> {
  await s.runTo(ROUND);
  await s.access.writeRegister('mie', 0n);
}

function fn(name: string): OracleSummary['functions'][number] {
  const f = oracle.functions.find((x) => x.name === name);
  assert.ok(f, `oracle has ${name}`);
  return f;
}

function result(rs: MeasurementResults[], name: string): MeasurementResults {
  const r = rs.find((x) => x.name === name);
  assert.ok(r, `measured ${name}`);
  return r;
}

describe('injected measurement on QEMU rv32 against the oracle', { skip, timeout: 600_000 }, () => {
  it('calibration: an empty function costs exactly the stated payload instructions per call', async () => {
    const s = await session();
    try {
      await s.runTo('main');
      const c = await s.svc.calibrate(200);
      assert.equal(c.passes, 200);
      assert.equal(c.perPassRaw, c.functionInstructions + 4, JSON.stringify(c));
      assert.equal(c.measuredOverhead, c.statedOverhead);
      assert.equal(c.statedOverhead, 4, 'at most four counted payload instructions per call');
    } finally {
      await s.close();
    }
  });

  it(
    'measured totals minus the stated overhead equal the oracle exactly, and calls match (leaf, ' +
      'loop, jump table, tail call)',
    async () => {
      const s = await session();
      try {
        await s.runTo('main');
        const names = ['crc16_step', 'vm_run', 'fir_filter', 'memcpy', 'hash_mix', 'window_moments', 'decode_samples'];
        for (const n of names) await s.svc.measureFunction(n);
        await maskTimer(s);
        await s.runTo('board_exit');
        const rs = await s.svc.read();
        assert.equal(result(rs, 'crc16_step').nested, 0, 'a leaf has no other payload inside');
        for (const n of names) {
          const r = result(rs, n);
          const o = fn(n);
          assert.equal(r.calls, o.calls, `${n} calls`);
          assert.equal(
            r.total - r.nested - r.ownOverheadPerPass * r.passes,
            o.inclusiveExcludingInterrupts,
            `${n}: ${r.total} - ${r.nested} - ${r.ownOverheadPerPass} x ${r.passes}`,
          );
          assert.equal(r.compensatedTotal, o.inclusiveExcludingInterrupts);
        }
        assert.match(await s.uart(), /checksum=0xe420b5dd/, 'the program computed what it always computes');
      } finally {
        await s.close();
      }
    },
  );

  it('recursion (quicksort, depth 12): inclusive counted once, every call counted', async () => {
    const s = await session();
    try {
      await s.runTo('main');
      await s.svc.measureFunction('quicksort');
      await maskTimer(s);
      await s.runTo('board_exit');
      const r = result(await s.svc.read(), 'quicksort');
      const o = fn('quicksort');
      assert.equal(r.calls, o.calls);
      assert.equal(r.passes, 20, 'one pass per outermost call');
      assert.ok(r.nested > 0, 'recursive entries ran their payload inside the outer pass');
      assert.equal(r.compensatedTotal, o.inclusiveExcludingInterrupts);
      assert.equal(r.open, 0);
    } finally {
      await s.close();
    }
  });

  it(
    'nested measured functions (packet_validate > crc16_block > crc16_step, and seal_report ' +
      'tail-calling crc16_block)',
    async () => {
      const s = await session();
      try {
        await s.runTo('main');
        const names = [
          'packet_validate',
          'seal_report',
          'crc16_block',
          'crc16_step',
          'quicksort',
          'partition',
          'swap_s16',
        ];
        for (const n of names) await s.svc.measureFunction(n);
        await maskTimer(s);
        await s.runTo('board_exit');
        const rs = await s.svc.read();
        for (const n of names) {
          const r = result(rs, n);
          assert.equal(r.calls, fn(n).calls, `${n} calls`);
          assert.equal(
            r.compensatedTotal,
            fn(n).inclusiveExcludingInterrupts,
            `${n}: raw ${r.total}, nested payloads ${r.nested}`,
          );
        }
        assert.ok(result(rs, 'packet_validate').nested > 0);
      } finally {
        await s.close();
      }
    },
  );

  it(
    "with the timer interrupt on: the handler's work is counted exactly, and an interrupted " +
      'function differs from the oracle by whole interrupts',
    async () => {
      const s = await session();
      try {
        await s.runTo('main');
        await s.svc.measureFunction('app_timer_tick');
        await s.svc.measureFunction('vm_run');
        const trap = s.elf.functionNamed('trap_entry')!;
        const mret = s.svc.model.functionNamed('trap_entry')!.instructions.find((i) => i.mnemonic === 'mret')!;
        await s.svc.measureRegion(trap.address, mret.address);
        await s.runTo('board_exit');
        const gTicks = await s.access.readU32(BigInt(s.elf.symbols.objectNamed('g_ticks')!.address));
        const rs = await s.svc.read();
        const tick = result(rs, 'app_timer_tick');
        assert.equal(tick.calls, gTicks, 'one call per tick');
        // Tick k costs the same in both runs (its LFSR work depends on k only): compare tick by tick.
        const perTick = oracle.regions.find((r) => r.name === 'tick')!.passes.map((p) => p + 1); // + the return
        const firstInRing = tick.calls - tick.last.compensated.length;
        let compared = 0;
        tick.last.compensated.forEach((v, j) => {
          const k = firstInRing + j;
          if (k < perTick.length) {
            assert.equal(v, perTick[k], `tick ${k + 1}`);
            compared++;
          }
        });
        assert.ok(compared > 0 || tick.calls - perTick.length > 8, 'some ticks compared');
        const beyond = tick.last.compensated
          .slice(Math.max(0, perTick.length - firstInRing))
          .reduce((a, b) => a + b, 0);
        if (tick.calls - perTick.length <= tick.last.compensated.length) {
          assert.equal(
            tick.compensatedTotal,
            perTick.slice(0, Math.min(tick.calls, perTick.length)).reduce((a, b) => a + b, 0) +
              (tick.calls > perTick.length ? beyond : 0),
          );
        }
        const isr = rs.find((r) => r.kind === 'region')!;
        assert.equal(isr.passes, gTicks);
        const vm = result(rs, 'vm_run');
        const extra = vm.compensatedTotal - fn('vm_run').inclusiveExcludingInterrupts;
        // Each interrupt inside vm_run adds one whole handler run: its region pass plus the MRET.
        const handler = isr.last.compensated.at(-1)! + 1;
        assert.ok(
          extra >= 0 && extra % handler === 0 && extra / handler <= gTicks,
          `vm_run +${extra} = k x ${handler}`,
        );
        assert.match(await s.uart(), /checksum=0xe420b5dd/);
      } finally {
        await s.close();
      }
    },
  );

  it('call-site instrumentation of tiny functions (c.jal through the tp dispatcher, jal through tp)', async () => {
    const s = await session();
    try {
      await s.runTo('main');
      const read = await s.svc.measureCallSites('read_be16');
      const end = await s.svc.measureCallSites('program_end');
      assert.ok(read.patches.some((p) => p.length === 2) && end.patches.every((p) => p.length === 4));
      await maskTimer(s);
      await s.runTo('board_exit');
      const rs = await s.svc.read();
      for (const n of ['read_be16', 'program_end']) {
        const r = result(rs, n);
        assert.equal(r.calls, fn(n).calls);
        assert.equal(r.compensatedTotal, fn(n).inclusiveExcludingInterrupts, n);
      }
    } finally {
      await s.close();
    }
  });

  it("a region (the marked fir_filter loop body) equals the oracle's region passes", async () => {
    const s = await session();
    try {
      await s.runTo('main');
      await s.svc.measureRegion(fir.start, fir.end);
      await maskTimer(s);
      await s.runTo('board_exit');
      const r = (await s.svc.read())[0]!;
      const o = oracle.regions.find((x) => x.name === 'fir')!;
      assert.equal(r.passes, o.count);
      assert.equal(
        r.compensatedTotal,
        o.passesExcludingInterrupts.reduce((a, b) => a + b, 0),
      );
    } finally {
      await s.close();
    }
  });

  it('hardware gating (mcountinhibit) of a recursive function agrees with the oracle', async () => {
    const s = await session();
    try {
      await s.runTo('main');
      const info = await s.svc.measureFunction('quicksort', { payload: 'hardware' });
      assert.equal(info.payload, 'hardware');
      await assert.rejects(
        s.svc.measureFunction('vm_run', { payload: 'hardware' }),
        /already gates another measurement/,
      );
      await maskTimer(s);
      await s.runTo('board_exit');
      const r = result(await s.svc.read(), 'quicksort');
      assert.equal(r.calls, fn('quicksort').calls);
      assert.equal(r.compensatedTotal, fn('quicksort').inclusiveExcludingInterrupts, JSON.stringify(r));
    } finally {
      await s.close();
    }
  });

  it(
    'removal at a halt restores the exact original bytes (checked against the ELF) and the ' +
      'program still runs right',
    async () => {
      const s = await session();
      try {
        await s.runTo('main');
        const infos = [];
        for (const n of ['crc16_step', 'quicksort', 'vm_run', 'hash_mix']) infos.push(await s.svc.measureFunction(n));
        infos.push(await s.svc.measureCallSites('read_be16'));
        infos.push(await s.svc.measureRegion(fir.start, fir.end));
        await s.runTo('partition'); // inside quicksort: measured calls are in flight
        await s.svc.removeAll();
        for (const p of infos.flatMap((i) => i.patches)) {
          const now = await s.access.readMemory(BigInt(p.address), p.length);
          assert.deepEqual(now, Buffer.from(s.elf.file.readMemory(p.address, p.length)!), `bytes at ${hex(p.address)}`);
        }
        await s.runTo('board_exit');
        assert.match(await s.uart(), /checksum=0xe420b5dd/, 'calls in flight returned through their exit stubs');
      } finally {
        await s.close();
      }
    },
  );

  it(
    'a dead session leaves a journal; restoreFromJournal puts the bytes back (GDB killed, then QEMU killed)',
    { skip: existsSync(CYCLIC_FOREVER) ? false : 'cyclic not built' },
    async () => {
      const dir = join(scratch, 'crash-journal');
      // `cyclic` runs forever, so the target keeps running with its patches when the debugger dies.
      const s1 = await session(CYCLIC_FOREVER, dir);
      let qemuAlive = true;
      try {
        await s1.runTo('main');
        const info = await s1.svc.measureFunction('vm_run');
        await s1.svc.measureFunction('crc16_step');
        const path = journalPath(dir, s1.elf);
        assert.ok(existsSync(path), 'journal written before patching');
        // The adapter dies: GDB goes away without removing anything; the target runs on, patched.
        await s1.gdb.exit();
        const s2 = await session(CYCLIC_FOREVER, dir, s1.qemu);
        try {
          const report = await restoreFromJournal(s2.access, s2.elf, dir);
          assert.equal(report.restored.length, 2, JSON.stringify(report));
          assert.ok(report.threadPointerRestored);
          assert.equal(existsSync(path), false);
          for (const p of info.patches) {
            assert.deepEqual(
              await s2.access.readMemory(BigInt(p.address), p.length),
              Buffer.from(s2.elf.file.readMemory(p.address, p.length)!),
            );
          }
          // Patched again, and now QEMU itself is killed; the next launch loads the image afresh.
          await s2.svc.measureFunction('fir_filter');
          assert.ok(existsSync(path));
          await s2.gdb.exit();
          await s1.qemu.stop();
          qemuAlive = false;
        } finally {
          if (qemuAlive) await s2.gdb.exit();
        }
        const s3 = await session(CYCLIC_FOREVER, dir);
        try {
          const report = await restoreFromJournal(s3.access, s3.elf, dir);
          assert.equal(report.alreadyOriginal.length, 1, 'a fresh QEMU loaded the original code');
          assert.equal(existsSync(path), false, 'journal cleared at the next launch');
        } finally {
          await s3.close();
        }
      } finally {
        if (qemuAlive) await s1.qemu.stop();
      }
    },
  );

  it(
    'cyclic_limited: the 2-byte idle_point is measured at its c.jal call site, once per iteration',
    { skip: existsSync(CYCLIC) ? false : 'cyclic_limited not built' },
    async () => {
      const s = await session(CYCLIC);
      try {
        await s.runTo('main');
        const r0 = await s.svc.measureFunction('idle_point', { callSitesIfTooShort: true });
        assert.equal(r0.kind, 'callSites');
        await s.runTo('board_exit');
        const iterations = await s.access.readU32(BigInt(s.elf.symbols.objectNamed('cl_iteration_count')!.address));
        const r = (await s.svc.read())[0]!;
        assert.equal(r.calls, iterations);
        assert.equal(r.compensatedTotal, r.calls, 'idle_point is one instruction (its return)');
      } finally {
        await s.close();
      }
    },
  );
});

after(async () => {
  const left = await waitForNoTaggedProcesses(tag, 5000);
  assert.deepEqual(left, [], 'no QEMU or GDB left behind');
});
