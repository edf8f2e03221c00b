import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CoreExecutedStore } from '../../adapter/arch/cortex-m/sysTickCoreStore';
import type { Debugger } from '../../adapter/debugger/debugger';
import { startDebugger } from '../../adapter/debugger/factory';
import { DebuggerTargetAccess } from '../../adapter/probe/targetAccess';
import { QemuServer } from '../../adapter/servers/qemu';
import type { DebuggerKind } from '../../common/launchArgs';
import { killTagged, newOwnerTag, OWNER_TAG_VAR, waitForNoTaggedProcesses } from '../support/ownedProcesses';
import { fixtureElf, repoRoot } from '../support/paths';

/**
 * A reset behind the debugger's back (`monitor system_reset`, as every profiling run and restart
 * does), then `flushCaches()`: the debugger must read the core as the reset left it, or whatever
 * the adapter does next runs on a PC that is no longer there. LLDB kept the registers of its last
 * stop until the next one, so the SysTick set-up after a reset stepped the reset handler instead of
 * its store. The same scenario with each debugger, on QEMU mps2-an386.
 */

/**
 * ARMv7-M ARM B1.5.5 (TakeReset): the core loads SP_main from vector table entry 0 and the PC from
 * entry 1 (its bit 0 is the Thumb bit), and sets LR to 0xFFFFFFFF. The flags are UNKNOWN.
 */
const INITIAL_SP_VECTOR = 0n;
const RESET_VECTOR = 4n;
const LR_AT_RESET = 0xffff_ffffn;
const SYST_RVR = 0xe000e014;

for (const kind of ['gdb', 'lldb'] as DebuggerKind[]) {
  describe(`reset behind ${kind}'s back on QEMU cortex-m4`, () => {
    const tag = newOwnerTag();
    const qemu = new QemuServer({ type: 'qemu' });
    let debug: Debugger;
    let access: DebuggerTargetAccess;
    let resetEntry = 0n;
    let initialSp = 0n;

    const continueToStop = async (): Promise<void> => {
      const stopped = debug.waitForStop(30_000);
      await debug.continue();
      assert.ok(await stopped, 'the target stopped');
    };
    const stepInstruction = async (): Promise<void> => {
      const stopped = debug.waitForStop(10_000);
      await debug.stepIn(true);
      assert.ok(await stopped, 'the single step stopped');
    };

    before(async () => {
      process.env[OWNER_TAG_VAR] = tag;
      const elf = fixtureElf('cortex-m4', 'singlepass');
      await qemu.start({ executable: elf, family: 'cortex-m', cwd: repoRoot, log: () => undefined });
      debug = await startDebugger({
        kind,
        family: 'cortex-m',
        gdbPath: 'gdb-multiarch',
        lldbPython: 'python3',
        cwd: repoRoot,
      });
      await debug.loadProgram(elf);
      await debug.connectRemote(qemu.gdbAddress);
      access = new DebuggerTargetAccess(debug);
      resetEntry = BigInt(await access.readU32(RESET_VECTOR)) & ~1n;
      initialSp = BigInt(await access.readU32(INITIAL_SP_VECTOR));
    });

    after(async () => {
      await debug?.exit();
      await qemu.stop();
      const left = await waitForNoTaggedProcesses(tag);
      killTagged(tag);
      assert.deepEqual(left, [], `processes left behind: ${JSON.stringify(left)}`);
    });

    it('reads the reset state after a reset and flushCaches, not the last stop', async () => {
      const end = await debug.insertBreakpoint({ location: { kind: 'function', name: 'program_end' } });
      await continueToStop();
      assert.equal(await debug.readRegister('pc'), end.address, 'stopped at program_end');
      assert.notEqual(await debug.readRegister('sp'), initialSp, 'program_end runs on a frame below the initial stack');
      await debug.monitor(qemu.resetCommand);
      await debug.flushCaches();
      const pc = await debug.readRegister('pc');
      assert.equal(pc, resetEntry, `pc 0x${pc.toString(16)}, reset entry 0x${resetEntry.toString(16)}`);
      assert.equal(await debug.readRegister('sp'), initialSp);
      assert.equal(await debug.readRegister('lr'), LR_AT_RESET);
      const [top] = await debug.stackFrames(1, 0, 0);
      assert.equal(top?.address, resetEntry);
      assert.equal(top?.func, 'Reset_Handler');
    });

    it('runs a store on the core at the reset entry, and comes back to it', async () => {
      // QEMU drops the debugger's writes to SysTick: only a store the core executes reaches it.
      await new CoreExecutedStore(access, stepInstruction).store32(SYST_RVR, 0xff_ffff);
      assert.equal(await access.readU32(BigInt(SYST_RVR)), 0xff_ffff);
      assert.equal(await debug.readRegister('pc'), resetEntry);
    });

    it('keeps its breakpoints through the flush: the next run stops at main', async () => {
      const main = await debug.insertBreakpoint({ location: { kind: 'function', name: 'main' } });
      const stopped = debug.waitForStop(30_000);
      await debug.continue();
      const stop = await stopped;
      assert.ok(stop, 'the target stopped');
      assert.equal(stop.frame?.func, 'main');
      assert.deepEqual(stop.breakpointIds, [main.id]);
    });
  });
}
