import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { DebugProtocol } from '@vscode/debugprotocol';
import type { InjectResponse, InjectedResult, InjectedResultsResponse } from '../../common/dapCustom';
import { CustomRequests } from '../../common/dapCustom';
import { ElfImage } from '../../adapter/elf';
import { runOracle, type OracleSummary } from '../oracle/oracle';
import { AdapterHarness, fixtureSource, qemuLaunchArgs } from '../support/dap';
import { markerLine } from '../support/markers';
import { fixtureElf, type FixtureTarget } from '../support/paths';

/**
 * Group measurements through the built adapter on both QEMU targets, checked against the oracle:
 * one record on the entries of several functions counts the union of their activations.
 *
 * (a) fir_filter (called by process_packet) and crc16_step (called by crc16_block) never call each
 *     other: the group's total is the sum of their inclusive counts, its calls the sum of theirs.
 * (b) quicksort and partition, which only quicksort calls: partition always runs inside quicksort,
 *     so the union is quicksort's inclusive count, counted once (calls still add up).
 *
 * The timer is started with a period of minutes, and on RV32 masked once the program runs its
 * rounds, so the oracle's counts without interrupts apply (QEMU's virtual clock moving while the
 * target is halted can still bring one tick on Cortex-M: a handler's few units, inside the tolerance).
 * RV32 reads minstret, exact; Cortex-M reads SysTick, one unit per 40 instructions, each pass read
 * in whole ticks at both ends: within one tick per pass (test/integration/injectionCortexM.test.ts).
 */
const TARGETS: Array<{ target: FixtureTarget; instructionsPerUnit: number; periodRegister: string }> = [
  { target: 'rv32', instructionsPerUnit: 1, periodRegister: '$a0' },
  { target: 'cortex-m4', instructionsPerUnit: 40, periodRegister: '$r0' },
];
const DISJOINT = ['fir_filter', 'crc16_step'];
const NESTED = ['quicksort', 'partition'];
// The longest period whose reload still fits 32 bits on both boards (25 MHz and 10 MHz timers): QEMU's
// virtual clock also moves while the target is halted between the test's requests.
const QUIET_PERIOD_US = 170_000_000;

for (const { target, instructionsPerUnit, periodRegister } of TARGETS) {
  describe(`group measurements through the adapter (QEMU ${target})`, { timeout: 300_000 }, () => {
    const elfPath = fixtureElf(target, 'singlepass');
    const image = ElfImage.loadSync(elfPath);
    const h = new AdapterHarness();
    let oracle: OracleSummary;
    let injected: InjectResponse;
    let ticksAtInjection: number;
    const ticks = async (): Promise<number> =>
      Number(
        (await h.dc.evaluateRequest({ expression: 'g_ticks', frameId: (await h.topFrame()).id, context: 'watch' })).body
          .result,
      );
    const o = (name: string): OracleSummary['functions'][number] => {
      const f = oracle.functions.find((x) => x.name === name);
      assert.ok(f, `${name} in the oracle`);
      return f;
    };
    const entryBytes = async (name: string): Promise<Buffer> => {
      const address = image.functionNamed(name)!.address;
      return Buffer.from(
        (await h.dc.customRequest('readMemory', { memoryReference: `0x${address.toString(16)}`, count: 8 })).body.data,
        'base64',
      );
    };
    const original = (name: string): Buffer =>
      Buffer.from(image.file.readMemory(image.functionNamed(name)!.address, 8)!);
    /** Both ends of every pass are read in whole counter units: one unit per pass at most, exact on minstret. */
    const assertTotal = (r: InjectedResult, instructions: number, what: string): void => {
      const expected = instructions / instructionsPerUnit;
      const tolerance = instructionsPerUnit === 1 ? 0 : r.passes + 1;
      assert.ok(
        Math.abs(r.compensatedTotal - expected) <= tolerance,
        `${what}: ${r.compensatedTotal.toFixed(1)} vs oracle ${expected.toFixed(1)} (passes ${r.passes}, ` +
          `raw ${r.total}, payload ${r.overheadPerPass}/pass)`,
      );
    };

    before(async () => {
      oracle = await runOracle({ elf: elfPath });
      await h.start();
      await h.launchToEntry(qemuLaunchArgs(target, 'singlepass', { programEnd: 'program_end' }));
      // The timer slowed to one tick a second: the patched run takes no interrupt at all.
      await h.dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: '*board_timer_start' }] });
      await Promise.all([h.dc.continueRequest({ threadId: 1 }), h.dc.waitForEvent('stopped')]);
      await h.dc.evaluateRequest({ expression: `> set var ${periodRegister} = ${QUIET_PERIOD_US}`, context: 'repl' });
      await h.dc.setFunctionBreakpointsRequest({ breakpoints: [] });
      const singlepass = fixtureSource('singlepass.c');
      await h.dc.setBreakpointsRequest({
        source: { path: singlepass },
        breakpoints: [{ line: markerLine(singlepass, '#ROUND') }],
      });
      await Promise.all([h.dc.continueRequest({ threadId: 1 }), h.dc.waitForEvent('stopped')]);
      await h.dc.setBreakpointsRequest({ source: { path: singlepass }, breakpoints: [] });
      // RV32 as in injectionAdapter.test.ts: the timer masked outright (mie = 0) from here on.
      if (target === 'rv32') await h.dc.evaluateRequest({ expression: '> set var $mie = 0', context: 'repl' });
      ticksAtInjection = await ticks();
    });
    after(async () => assert.deepEqual(await h.stop(), []));

    it('injects two groups, each one measurement, and refuses a group with an unknown member naming it', async () => {
      injected = (
        await h.dc.customRequest(CustomRequests.inject, {
          targets: [{ group: DISJOINT }, { group: NESTED, name: 'sorting' }, { group: ['vm_run', 'no_such_function'] }],
        })
      ).body as InjectResponse;
      assert.equal(injected.injected.length, 2, JSON.stringify(injected.refused));
      assert.deepEqual(
        injected.injected.map((i) => [i.kind, i.name, i.members]),
        [
          ['group', 'fir_filter + crc16_step', DISJOINT],
          ['group', 'sorting', NESTED],
        ],
      );
      assert.equal(injected.refused.length, 1);
      assert.deepEqual(injected.refused[0]!.target, { group: ['vm_run', 'no_such_function'] });
      assert.match(
        injected.refused[0]!.reason,
        new RegExp(
          /^Group member no_such_function cannot be entry-patched, so nothing of the group was injected: /.source +
            /There is no function named 'no_such_function'/.source,
        ),
      );
      assert.deepEqual(await entryBytes('vm_run'), original('vm_run'), 'the refused group left vm_run alone');
      for (const name of [...DISJOINT, ...NESTED])
        assert.notDeepEqual(await entryBytes(name), original(name), `${name} patched`);
    });

    it("counts the union of the members' activations to the program end, matching the oracle", async () => {
      const stopped = h.dc.waitForEvent('stopped') as Promise<DebugProtocol.StoppedEvent>;
      await h.dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: '*program_end' }] });
      await h.dc.continueRequest({ threadId: 1 });
      await stopped;
      const results = ((await h.dc.customRequest(CustomRequests.injectedResults)).body as InjectedResultsResponse)
        .results;
      assert.equal(results.length, 2, 'one result per group');
      const disjoint = results.find((r) => r.id === injected.injected[0]!.id)!;
      const nested = results.find((r) => r.id === injected.injected[1]!.id)!;

      // (a) Never one inside the other: the sum of both, pass for pass.
      assert.equal(
        disjoint.calls,
        o('fir_filter').calls + o('crc16_step').calls,
        'calls: every entry through either patch',
      );
      assert.equal(disjoint.passes, disjoint.calls, 'every call is an outermost pass');
      assertTotal(
        disjoint,
        o('fir_filter').inclusiveExcludingInterrupts + o('crc16_step').inclusiveExcludingInterrupts,
        'fir_filter + crc16_step',
      );

      // (b) partition only inside quicksort: the union is quicksort's own inclusive count.
      assert.deepEqual(
        oracle.edges.filter((e) => e.callee === 'partition').map((e) => e.caller),
        ['quicksort'],
        'partition is only called from quicksort',
      );
      assert.equal(
        nested.calls,
        o('quicksort').calls + o('partition').calls,
        'calls: every entry through either patch',
      );
      assert.ok(nested.passes < o('quicksort').calls, `recursion and partition count once: ${nested.passes} passes`);
      assertTotal(nested, o('quicksort').inclusiveExcludingInterrupts, 'quicksort + partition');
      for (const r of [disjoint, nested]) assert.equal(r.untracked, 0);
      // Cortex-M: a tick the slowed timer still delivers costs a handler of a few SysTick units,
      // inside the tolerance; RV32 has the timer masked and must see none.
      const late = (await ticks()) - ticksAtInjection;
      assert.ok(target === 'rv32' ? late === 0 : late <= 1, `${late} timer interrupt(s) while the groups counted`);
    });

    it("removal restores every member's bytes, and the program ends with its usual checksum", async () => {
      await h.dc.customRequest(CustomRequests.removeInjections, { ids: injected.injected.map((i) => i.id) });
      for (const name of [...DISJOINT, ...NESTED])
        assert.deepEqual(await entryBytes(name), original(name), `${name} restored`);
      assert.equal(
        ((await h.dc.customRequest(CustomRequests.injectedResults)).body as InjectedResultsResponse).results.length,
        0,
      );
      await h.dc.setFunctionBreakpointsRequest({ breakpoints: [] });
      await Promise.all([h.dc.continueRequest({ threadId: 1 }), h.dc.waitForEvent('terminated')]);
      assert.match(h.allOutput, /checksum=0xe420b5dd/, 'the program computed what it always computes');
    });
  });
}
