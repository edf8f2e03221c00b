import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { CustomRequests, type InjectResponse, type InjectedResultsResponse } from '../../common/dapCustom';
import { isUnsupported } from '../../adapter/arch/archPlugin';
import { archPlugin } from '../../adapter/arch/registry';
import { parseLocationSpec } from '../../adapter/debugger/locations';
import { ElfImage } from '../../adapter/elf';
import { debuggerTargetRunner } from '../../adapter/probe/debuggerRunner';
import { InjectionService } from '../../adapter/probe/injection/injectionService';
import { resolveReservedMemory } from '../../adapter/probe/injection/reservedMemory';
import type { ReservedMemory } from '../../adapter/probe/injection/types';
import { DebuggerTargetAccess } from '../../adapter/probe/targetAccess';
import { QemuServer } from '../../adapter/servers/qemu';
import { computeTargetFacts } from '../../adapter/target/targetFacts';
import { runOracle, type OracleSummary } from '../oracle/oracle';
import { AdapterHarness, fixtureSource, qemuLaunchArgs } from '../support/dap';
import { startGdb } from '../support/gdb';
import { OWNER_TAG_VAR, killTagged, newOwnerTag, waitForNoTaggedProcesses } from '../support/ownedProcesses';
import { markerLine } from '../support/markers';
import { fixtureElf, fixturesDir } from '../support/paths';

/**
 * A non-zero icount shift on QEMU Cortex-M4: under `-icount shift=2` an instruction takes 4 ns, so
 * the 25 MHz SysTick ticks once per 10 instructions (2^S/40 = 0.1 ticks per instruction). The
 * ratio comes from the target facts and the plugin, as in a session; the oracle's instruction
 * counts (which do not depend on virtual time) say what each function ran.
 */

const ELF = fixtureElf('cortex-m4', 'singlepass');
const skip = existsSync(ELF) ? false : 'cortex-m4 fixtures not built';
const SHIFT = 2;
// As in injectionCortexM.test.ts: the CMSDK timer is stopped at #ROUND (by a three-instruction
// routine in unused code memory, since QEMU's gdbstub does not write peripherals), so the
// measured functions run without interrupts from there on.
const TIMER0_CTRL = 0x40000000;
const HELPER = 0x00300000;
const ROUND = `singlepass.c:${markerLine(join(fixturesDir, 'src', 'singlepass.c'), '#ROUND')}`;
const tag = newOwnerTag();
const scratch = mkdtempSync(join(tmpdir(), 'cyclelens-icount-shift-'));
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

describe(`injected measurement on QEMU Cortex-M4 under -icount shift=${SHIFT}`, { skip, timeout: 300_000 }, () => {
  it(
    'the facts give 2^S/40 ticks per instruction, and measured functions agree with the oracle ' +
      'within a tick per pass',
    async () => {
      const server = { type: 'qemu' as const, icount: SHIFT };
      const facts = computeTargetFacts('cortex-m', server);
      const injection = archPlugin('cortex-m').injection;
      assert.ok(!isUnsupported(injection));
      // QEMU's DWT reads as zero: discovery reports it absent, so the payloads read SysTick.
      const { support, counterUnitsPerInstruction } = injection.support(
        [{ unit: 'DWT', present: false, slots: [], resolution: 1 }],
        facts,
      );
      assert.equal(counterUnitsPerInstruction, 2 ** SHIFT / 40);
      const instructionsPerTick = 1 / counterUnitsPerInstruction!;

      const elf = ElfImage.loadSync(ELF);
      const qemu = new QemuServer(server);
      await qemu.start({ executable: ELF, family: 'cortex-m', cwd: scratch, log: () => undefined });
      const gdb = await startGdb(scratch, 'cortex-m');
      try {
        await gdb.loadProgram(ELF);
        await gdb.connectRemote(qemu.gdbAddress);
        const runTo = async (location: string): Promise<void> => {
          const bp = await gdb.insertBreakpoint({ location: parseLocationSpec(location) });
          const stopped = gdb.waitForStop(60_000);
          await gdb.continue();
          assert.ok((await stopped)?.breakpointIds.includes(bp.id), `stopped at ${location}`);
          await gdb.deleteBreakpoints([bp.id]);
        };
        const svc = new InjectionService({
          access: new DebuggerTargetAccess(gdb),
          elf,
          support,
          counterUnitsPerInstruction,
          isHalted: () => gdb.executionState === 'stopped',
          journalDir: join(scratch, 'journal'),
          reserved: resolveReservedMemory(elf) as ReservedMemory,
          ...(facts.memoryMap ? { memoryMap: facts.memoryMap } : {}),
          runner: debuggerTargetRunner(gdb),
        });
        await runTo('main');
        // Calibration runs a known function 2000 times: its ticks are (instructions + payload) x 0.1,
        // within one instruction per pass (measured: 10 instructions per pass where 9 are stated).
        const c = await svc.calibrate(2000);
        const expectedTicks = (c.functionInstructions * counterUnitsPerInstruction! + c.statedOverhead) * c.passes;
        assert.ok(
          Math.abs(c.perPassRaw * c.passes - expectedTicks) <= c.passes * counterUnitsPerInstruction! + 2,
          `calibration ${JSON.stringify(c)} vs ${expectedTicks} ticks`,
        );
        console.log(
          `shift ${SHIFT} calibration: ${c.perPassRaw} ticks per pass, ` +
            `stated ${(c.functionInstructions * counterUnitsPerInstruction! + c.statedOverhead).toFixed(2)}`,
        );

        const names = ['crc16_step', 'fir_filter', 'vm_run', 'window_moments'];
        for (const n of names) await svc.measureFunction(n);
        await runTo(ROUND);
        // ldr r0, [pc, #4]; movs r1, #0; str r1, [r0]; bkpt; .word TIMER0_CTRL
        const access = new DebuggerTargetAccess(gdb);
        const code = Buffer.from([0x01, 0x48, 0x00, 0x21, 0x01, 0x60, 0x00, 0xbe, 0, 0, 0, 0]);
        code.writeUInt32LE(TIMER0_CTRL, 8);
        const saved = new Map<string, bigint>();
        for (const r of ['r0', 'r1', 'pc', 'xpsr']) saved.set(r, await access.readRegister(r));
        await access.writeMemory(BigInt(HELPER), code);
        await access.writeRegister('pc', BigInt(HELPER | 1));
        assert.ok(await debuggerTargetRunner(gdb).runTo(HELPER + 6, 10_000), 'timer-stop routine ran');
        for (const [r, v] of saved) await access.writeRegister(r, v);
        await runTo('board_exit');
        const rs = await svc.read();
        for (const n of names) {
          const r = rs.find((x) => x.name === n)!;
          const o = oracle.functions.find((f) => f.name === n)!;
          assert.equal(r.calls, o.calls, `${n} calls`);
          const expected = o.inclusiveExcludingInterrupts / instructionsPerTick;
          // Whole ticks at both ends of a pass: at most one tick (10 instructions here) off per pass.
          assert.ok(
            Math.abs(r.compensatedTotal - expected) <= r.passes + 1,
            `${n}: ${r.compensatedTotal.toFixed(1)} ticks vs oracle ${expected.toFixed(1)} (passes ${r.passes})`,
          );
          console.log(
            `shift ${SHIFT} ${n}: ${r.compensatedTotal.toFixed(1)} ticks ` +
              `(${(r.compensatedTotal * instructionsPerTick).toFixed(0)} instructions) ` +
              `vs oracle ${o.inclusiveExcludingInterrupts} instructions, ${r.passes} passes`,
          );
        }
      } finally {
        await gdb.exit();
        await qemu.stop();
      }
    },
  );
});

describe(
  `the adapter under -icount shift=${SHIFT}: the launch's shift sets the ratio, and icount ` +
    `off refuses SysTick injection`,
  { skip, timeout: 300_000 },
  () => {
    it('reports 40/2^S instructions per tick and totals that agree with the oracle', async () => {
      const h = new AdapterHarness();
      try {
        await h.start();
        const args = qemuLaunchArgs('cortex-m4', 'singlepass', { programEnd: 'program_end' });
        await h.launchToEntry({ ...args, server: { type: 'qemu', machine: 'mps2-an386', icount: SHIFT } });
        // As in injectionGroups.test.ts: the timer slowed to one tick in minutes, so the measured run
        // takes no interrupt.
        await h.dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: '*board_timer_start' }] });
        await Promise.all([h.dc.continueRequest({ threadId: 1 }), h.dc.waitForEvent('stopped')]);
        await h.dc.evaluateRequest({ expression: '> set var $r0 = 170000000', context: 'repl' });
        await h.dc.setFunctionBreakpointsRequest({ breakpoints: [] });
        const singlepass = fixtureSource('singlepass.c');
        await h.dc.setBreakpointsRequest({
          source: { path: singlepass },
          breakpoints: [{ line: markerLine(singlepass, '#ROUND') }],
        });
        await Promise.all([h.dc.continueRequest({ threadId: 1 }), h.dc.waitForEvent('stopped')]);
        await h.dc.setBreakpointsRequest({ source: { path: singlepass }, breakpoints: [] });
        const names = ['fir_filter', 'vm_run'];
        const injected = (
          await h.dc.customRequest(CustomRequests.inject, { targets: names.map((n) => ({ function: n })) })
        ).body as InjectResponse;
        assert.equal(injected.injected.length, 2, JSON.stringify(injected.refused));
        for (const i of injected.injected)
          assert.equal(i.instructionsPerUnit, 40 / 2 ** SHIFT, `${i.name}: instructions per SysTick tick`);
        const stopped = h.dc.waitForEvent('stopped') as Promise<DebugProtocol.StoppedEvent>;
        await h.dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: '*program_end' }] });
        await h.dc.continueRequest({ threadId: 1 });
        await stopped;
        const results = ((await h.dc.customRequest(CustomRequests.injectedResults)).body as InjectedResultsResponse)
          .results;
        for (const i of injected.injected) {
          const r = results.find((x) => x.id === i.id)!;
          const o = oracle.functions.find((f) => f.name === i.name)!;
          const expected = o.inclusiveExcludingInterrupts / i.instructionsPerUnit!;
          assert.ok(
            Math.abs(r.compensatedTotal - expected) <= r.passes + 1,
            `${i.name}: ${r.compensatedTotal.toFixed(1)} ticks vs oracle ${expected.toFixed(1)} (passes ${r.passes})`,
          );
          console.log(
            `adapter, shift ${SHIFT} ${i.name}: ${r.compensatedTotal.toFixed(1)} ticks ` +
              `vs oracle ${expected.toFixed(1)}`,
          );
        }
      } finally {
        assert.deepEqual(await h.stop(), []);
      }
    });

    it('with icount off, injecting on Cortex-M is refused with the reason and the fix', async () => {
      const h = new AdapterHarness();
      try {
        await h.start();
        const args = qemuLaunchArgs('cortex-m4', 'singlepass');
        await h.launchToEntry({ ...args, server: { type: 'qemu', machine: 'mps2-an386', icount: null } });
        await assert.rejects(
          h.dc.customRequest(CustomRequests.inject, { targets: [{ function: 'fir_filter' }] }),
          (e: Error) => /SysTick/.test(e.message) && /"server\.icount"/.test(e.message),
        );
      } finally {
        assert.deepEqual(await h.stop(), []);
      }
    });
  },
);
