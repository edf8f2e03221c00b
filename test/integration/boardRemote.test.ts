import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_PROFILE } from '../doubles/boardProfiles';
import { BoardOnQemu, loadSegments } from '../support/boardOnQemu';
import { AdapterHarness, fixtureSource } from '../support/dap';
import { markerLine } from '../support/markers';
import { fixtureElf, type FixtureTarget } from '../support/paths';

/**
 * The adapter against a board as a probe's gdbserver presents one (the board double,
 * test/doubles/boardDouble.ts, in front of QEMU): a `remote` launch that loads the program
 * programs the part's flash through GDB's vFlash packets, stops at main, steps and lists the
 * stack, with code in flash and hardware breakpoints only. What the adapter cannot yet do there
 * (inject into flash, reset for a profiling run) is measured by bench/board.ts.
 */

const TARGETS: FixtureTarget[] = ['cortex-m4', 'rv32'];
const leftBehind: unknown[] = [];
after(() => assert.deepEqual(leftBehind, [], 'no process may outlive its test'));

for (const target of TARGETS) {
  describe(`CycleLens on the board double (${DEFAULT_PROFILE[target]} on QEMU ${target})`, () => {
    it('loads into flash through vFlash, stops at main, steps and lists the stack', async () => {
      const elf = fixtureElf(target, 'singlepass');
      const board = await BoardOnQemu.start(target, { packetDelayMs: 0, flashTimeScale: 0 });
      const h = new AdapterHarness();
      try {
        await h.start();
        const stopped = await h.launchToEntry({
          executable: elf,
          server: { type: 'remote', address: board.address, load: true },
          // As the README's pyOCD and probe-rs configurations have it.
          postConnectCommands: ['monitor reset halt'],
          stopAtEntry: 'main',
        });
        assert.equal(stopped.body.reason, 'entry');
        const stats = board.board.stats();
        assert.equal(stats.byKind['vFlashDone'], 1, JSON.stringify(stats.byKind));
        // OpenOCD's resets before the erase and after the write, and the configuration's own.
        assert.equal(stats.resets, 3);
        assert.deepEqual(stats.refused, {}, 'nothing a board refuses');
        for (const s of loadSegments(elf).filter((x) => board.board.flash.contains(x.address, x.data.length)))
          assert.deepEqual(board.board.flash.read(s.address, s.data.length), Buffer.from(s.data));
        assert.equal((await h.topFrame()).name, 'main');
        assert.ok(stats.comparators.peakBreakpoints >= 1, 'the stop at main took a hardware breakpoint');

        const dsp = fixtureSource('dsp.c');
        const line = markerLine(dsp, '#REGION_START');
        await h.dc.setBreakpointsRequest({ source: { path: dsp }, breakpoints: [{ line }] });
        await Promise.all([h.dc.continueRequest({ threadId: 1 }), h.dc.waitForEvent('stopped')]);
        assert.equal((await h.topFrame()).line, line);
        await Promise.all([h.dc.nextRequest({ threadId: 1 }), h.dc.waitForEvent('stopped')]);
        const frames = (await h.dc.stackTraceRequest({ threadId: 1, startFrame: 0, levels: 20 })).body.stackFrames;
        assert.equal(frames[0]!.name, 'fir_filter');
        assert.ok(
          frames.some((f) => f.name === 'main'),
          JSON.stringify(frames.map((f) => f.name)),
        );
        assert.equal(board.board.stats().refused.softwareBreakpointInFlash, undefined);
        await h.dc.disconnectRequest({ terminateDebuggee: true });
      } finally {
        leftBehind.push(...(await h.stop()), ...(await board.stop()));
      }
    });
  });
}
