import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { thumbInjectionSupport } from '../../adapter/arch/cortex-m/trampolineThumb';
import { startGdb } from '../support/gdb';
import type { Debugger } from '../../adapter/debugger/debugger';
import { parseLocationSpec } from '../../adapter/debugger/locations';
import { ElfImage } from '../../adapter/elf';
import { debuggerTargetRunner } from '../../adapter/probe/debuggerRunner';
import { InjectionService, type MeasurementResults } from '../../adapter/probe/injection/injectionService';
import { qemuMemoryMap } from '../../adapter/target/targetFacts';
import { resolveReservedMemory } from '../../adapter/probe/injection/reservedMemory';
import { SYSTICK_CVR, type ReservedMemory } from '../../adapter/probe/injection/types';
import { DebuggerTargetAccess } from '../../adapter/probe/targetAccess';
import { QemuServer } from '../../adapter/servers/qemu';
import { runOracle, type OracleSummary } from '../oracle/oracle';
import { markerLine } from '../support/markers';
import { OWNER_TAG_VAR, killTagged, newOwnerTag, waitForNoTaggedProcesses } from '../support/ownedProcesses';
import { fixtureElf, fixturesDir } from '../support/paths';

/**
 * Cortex-M4 (QEMU mps2-an386) with SysTick as the counter: a 24-bit down counter at the 25 MHz
 * board clock, so under -icount shift=0 (1 ns per instruction) one tick is 40 instructions. Each
 * pass is quantised to whole ticks, so a total agrees with the oracle within one tick per pass.
 */

const ELF = fixtureElf('cortex-m4', 'singlepass');
const skip = existsSync(ELF) ? false : 'cortex-m4 fixtures not built';
const INSTRUCTIONS_PER_TICK = 40;
// CMSDK APB timer 0 control (the fixture's board.c): writing 0 stops it. QEMU's gdbstub writes
// neither the peripherals nor the NVIC, so a three-instruction routine does it on the target.
const TIMER0_CTRL = 0x40000000;
// Unused code memory past the image (SSRAM1 is 4 MiB of RAM on mps2).
const HELPER = 0x00300000;
// A line in main after the timer started, outside every patched function (a GDB breakpoint inside
// patched bytes would overwrite the patch while the target runs).
const ROUND = `singlepass.c:${markerLine(join(fixturesDir, 'src', 'singlepass.c'), '#ROUND')}`;
const tag = newOwnerTag();
const scratch = mkdtempSync(join(tmpdir(), 'cyclelens-injection-cm-'));
let oracle: OracleSummary;

before(async () => {
  process.env[OWNER_TAG_VAR] = tag;
  if (!skip) oracle = await runOracle({ elf: ELF });
});
after(async () => {
  killTagged(tag);
  rmSync(scratch, { recursive: true, force: true });
  assert.deepEqual(await waitForNoTaggedProcesses(tag, 5000), []);
});

async function session(): Promise<{
  svc: InjectionService;
  gdb: Debugger;
  access: DebuggerTargetAccess;
  elf: ElfImage;
  uart: () => Promise<string>;
  runTo(l: string): Promise<void>;
  stopTimer(): Promise<void>;
  close(): Promise<void>;
}> {
  const elf = ElfImage.loadSync(ELF);
  let out = '';
  const qemu = new QemuServer({ type: 'qemu' });
  await qemu.start({ executable: ELF, family: 'cortex-m', cwd: scratch, log: (l) => (out += l) });
  const gdb = await startGdb(scratch, 'cortex-m');
  await gdb.loadProgram(ELF);
  await gdb.connectRemote(qemu.gdbAddress);
  const access = new DebuggerTargetAccess(gdb);
  const runTo = async (location: string): Promise<void> => {
    const bp = await gdb.insertBreakpoint({ location: parseLocationSpec(location) });
    const stopped = gdb.waitForStop(60_000);
    await gdb.continue();
    const stop = await stopped;
    assert.ok(stop?.breakpointIds.includes(bp.id), `stopped at ${location}`);
    await gdb.deleteBreakpoints([bp.id]);
  };
  const svc = new InjectionService({
    access,
    elf,
    support: thumbInjectionSupport(SYSTICK_CVR, { counterUnitsPerInstruction: 1 / INSTRUCTIONS_PER_TICK }),
    counterUnitsPerInstruction: 1 / INSTRUCTIONS_PER_TICK,
    isHalted: () => gdb.executionState === 'stopped',
    journalDir: join(scratch, 'journal'),
    reserved: resolveReservedMemory(elf) as ReservedMemory,
    memoryMap: qemuMemoryMap('mps2-an386'),
    runner: debuggerTargetRunner(gdb),
  });
  const stopTimer = async (): Promise<void> => {
    // ldr r0, [pc, #4]; movs r1, #0; str r1, [r0]; bkpt; .word TIMER0_CTRL
    const code = Buffer.from([0x01, 0x48, 0x00, 0x21, 0x01, 0x60, 0x00, 0xbe, 0, 0, 0, 0]);
    code.writeUInt32LE(TIMER0_CTRL, 8);
    const saved = new Map<string, bigint>();
    for (const r of ['r0', 'r1', 'pc', 'xpsr']) saved.set(r, await access.readRegister(r));
    await access.writeMemory(BigInt(HELPER), code);
    await access.writeRegister('pc', BigInt(HELPER | 1));
    assert.ok(await debuggerTargetRunner(gdb).runTo(HELPER + 6, 10_000), 'timer-stop routine ran');
    for (const [r, v] of saved) await access.writeRegister(r, v);
  };
  return {
    svc,
    gdb,
    access,
    elf,
    runTo,
    stopTimer,
    uart: async () => (await qemu.flushOutput(), out),
    async close() {
      await gdb.exit();
      await qemu.stop();
    },
  };
}

const fn = (name: string): OracleSummary['functions'][number] => oracle.functions.find((f) => f.name === name)!;
const result = (rs: MeasurementResults[], name: string): MeasurementResults => rs.find((r) => r.name === name)!;

describe('injected measurement on QEMU Cortex-M4 with SysTick', { skip, timeout: 300_000 }, () => {
  it('calibration: the stated payload cost agrees with SysTick within its resolution', async () => {
    const s = await session();
    try {
      await s.runTo('main');
      const c = await s.svc.calibrate(2000);
      assert.equal(c.passes, 2000);
      // (2 function instructions + the stated counted payload) / 40 per pass, within a tick in total.
      const expectedTicks =
        ((c.functionInstructions + c.statedOverhead * INSTRUCTIONS_PER_TICK) / INSTRUCTIONS_PER_TICK) * c.passes;
      assert.ok(Math.abs(c.perPassRaw * c.passes - expectedTicks) <= c.passes * 0.05 + 2, JSON.stringify(c));
    } finally {
      await s.close();
    }
  });

  async function measureAndRun(names: string[]): Promise<{ rs: MeasurementResults[]; uart: string }> {
    const s = await session();
    try {
      await s.runTo('main');
      for (const n of names) await s.svc.measureFunction(n);
      await s.runTo(ROUND);
      await s.stopTimer(); // the timer interrupt lands elsewhere in a patched run
      const ticks = BigInt(s.elf.symbols.objectNamed('g_ticks')!.address);
      const before = await s.access.readU32(ticks);
      await s.runTo('board_exit');
      assert.equal(await s.access.readU32(ticks), before, 'no tick after the timer was stopped');
      return { rs: await s.svc.read(), uart: await s.uart() };
    } finally {
      await s.close();
    }
  }

  it(
    'totals agree with the oracle within one SysTick tick per pass (leaf, loop, jump table, ' + 'literal-load entry)',
    async () => {
      const names = ['crc16_step', 'vm_run', 'fir_filter', 'window_moments', 'hash_finish', 'ticks_now'];
      const { rs, uart } = await measureAndRun(names);
      for (const n of names) {
        const r = result(rs, n);
        const o = fn(n);
        assert.equal(r.calls, o.calls, `${n} calls`);
        const expected = o.inclusiveExcludingInterrupts / INSTRUCTIONS_PER_TICK;
        // Each pass is read in whole ticks at both ends: at most one tick off per pass.
        assert.ok(
          Math.abs(r.compensatedTotal - expected) <= r.passes + 1,
          `${n}: ${r.compensatedTotal.toFixed(1)} ticks vs oracle ${expected.toFixed(1)} (passes ${r.passes})`,
        );
      }
      assert.match(uart, /checksum=0xe420b5dd/);
    },
  );

  it('recursion and nesting: the nested payloads are compensated, within a tick per pass', async () => {
    const names = ['packet_validate', 'crc16_block', 'crc16_step', 'quicksort', 'partition'];
    const { rs } = await measureAndRun(names);
    for (const n of names) {
      const r = result(rs, n);
      const o = fn(n);
      assert.equal(r.calls, o.calls, `${n} calls`);
      const expected = o.inclusiveExcludingInterrupts / INSTRUCTIONS_PER_TICK;
      assert.ok(
        Math.abs(r.compensatedTotal - expected) <= r.passes + 1,
        `${n}: ${r.compensatedTotal.toFixed(1)} ticks vs oracle ${expected.toFixed(1)} (passes ${r.passes}, ` +
          `nested ${r.nested.toFixed(1)})`,
      );
      assert.ok(n !== 'packet_validate' || r.nested > 0, 'measured callees ran inside');
    }
  });

  it(
    'interrupt handlers are measured: EXC_RETURN is redirected and the exit stub returns from ' +
      'the exception (TIMER0 tail-calls app_timer_tick)',
    async () => {
      const s = await session();
      try {
        await s.runTo('main');
        await s.svc.measureFunction('TIMER0_IRQHandler');
        await s.svc.measureFunction('app_timer_tick');
        await s.runTo('board_exit');
        const rs = await s.svc.read();
        const ticks = await s.access.readU32(BigInt(s.elf.symbols.objectNamed('g_ticks')!.address));
        assert.ok(ticks >= 10, `${ticks} timer interrupts`);
        assert.match(
          await s.uart(),
          /checksum=0xe420b5dd/,
          'every exception return went through the exit stub and the program ran on unchanged',
        );
        for (const n of ['TIMER0_IRQHandler', 'app_timer_tick']) {
          const r = result(rs, n);
          assert.equal(r.untracked, 0, `${n}: no entry left untracked`);
          assert.equal(r.calls, ticks, `${n}: one entry per interrupt`);
          assert.equal(r.passes, ticks, `${n}: every pass closed`);
        }
        // Per interrupt: what the trace shows the handler runs, within a tick per pass.
        const o = fn('app_timer_tick');
        const perTick = o.inclusive / Math.max(1, o.calls + o.interrupts) / INSTRUCTIONS_PER_TICK;
        for (const n of ['TIMER0_IRQHandler', 'app_timer_tick']) {
          const r = result(rs, n);
          assert.ok(
            Math.abs(r.compensatedTotal / r.passes - perTick) <= 1.5,
            `${n}: ${(r.compensatedTotal / r.passes).toFixed(2)} ticks per interrupt vs oracle ${perTick.toFixed(2)}`,
          );
        }
        const handler = result(rs, 'TIMER0_IRQHandler');
        assert.ok(
          handler.compensatedTotal >= result(rs, 'app_timer_tick').compensatedTotal - handler.passes,
          'the handler includes the function it tail-calls',
        );
      } finally {
        await s.close();
      }
    },
  );
});
