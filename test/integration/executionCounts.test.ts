import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ExecutionCountsResponse } from '../../common/dapCustom';
import { CustomRequests } from '../../common/dapCustom';
import { runOracle, type OracleSummary } from '../oracle/oracle';
import { AdapterHarness, qemuLaunchArgs } from '../support/dap';
import { join } from 'node:path';
import { fixtureElf, fixturesDir, type FixtureTarget } from '../support/paths';

/**
 * `cyclelens/executionCounts` through the built adapter on QEMU: the counting run's instructions per
 * function against the oracle's exact trace of the same program from reset to the end the measured
 * runs stop at (the counting plugin ends QEMU there). singlepass
 * takes timer interrupts all along (RV32: a trap handler ending in mret; Cortex-M4: TIMER0 from the
 * vector table), so the handlers must be named, and under -icount the free run executes exactly
 * the traced instructions.
 */
const HANDLERS: Record<FixtureTarget, string> = { rv32: 'trap_entry', 'cortex-m4': 'TIMER0_IRQHandler' };

for (const target of ['rv32', 'cortex-m4'] as const) {
  describe(`instruction counts through the adapter (QEMU ${target})`, () => {
    const h = new AdapterHarness();
    let oracle: OracleSummary;
    let r: ExecutionCountsResponse;

    before(async () => {
      await h.start();
      await h.launchToEntry(qemuLaunchArgs(target, 'singlepass'));
      r = await h.custom(CustomRequests.executionCounts, {});
      // The counting run stops where the measured runs end (the end found in the code), before
      // QEMU's exit: the trace's first r.total instructions must be exactly what it counted.
      oracle = await runOracle({
        elf: fixtureElf(target, 'singlepass'),
        ...(r.counted ? { maxInstructions: r.total } : {}),
      });
    });
    after(async () => assert.deepEqual(await h.stop(), [], 'no process is left, the counting QEMU included'));

    it('counts every function as the trace does, to the instruction', () => {
      assert.ok(r.counted, JSON.stringify(r));
      assert.equal(r.total, oracle.totals.instructions, 'every instruction of the run');
      assert.equal(r.outside, oracle.totals.outsideProgram, 'the ones outside every function');
      const byName = new Map(r.functions.map((f) => [f.name, f]));
      let compared = 0;
      // The oracle's pseudo-function for code outside the program is `outside` above.
      for (const o of oracle.functions.filter((f) => f.exclusive > 0 && !f.name.startsWith('['))) {
        const mine = [o.name, ...o.aliases].map((n) => byName.get(n)).find((f) => f !== undefined);
        assert.ok(mine, `${o.name} ran ${o.exclusive} instructions in the trace, but the counts do not list it`);
        assert.equal(mine.instructions, o.exclusive, `${o.name}: instructions`);
        compared++;
      }
      assert.equal(compared, r.functions.length, 'no function counted that the trace does not run');
      assert.ok(compared > 10, `${compared} functions compared`);
    });

    it('counts the calls along each direct edge, and names the handlers', () => {
      assert.ok(r.counted);
      const traced = new Map(oracle.edges.map((e) => [`${e.caller}->${e.callee}`, e.calls]));
      const counted = new Map<string, number>();
      for (const c of r.calls)
        counted.set(`${c.caller}->${c.callee}`, (counted.get(`${c.caller}->${c.callee}`) ?? 0) + c.count);
      // A direct call or tail-call instruction executed is a call in the trace, as the trace counts
      // a tail call for its caller (a conditional one not taken, or Thumb's conditional `bl` in an IT
      // block, would count more: singlepass has none).
      // The run ends at board_exit's entry (main's last call): its call instruction ran, its callee
      // did not, so the trace (cut at the same instruction) has no such call yet.
      assert.equal(counted.get('main->board_exit'), 1, 'the call into the end ran once');
      for (const [edge, n] of counted)
        if (edge !== 'main->board_exit') assert.equal(n, traced.get(edge), `${edge}: calls`);
      assert.equal(counted.get('main->process_packet'), traced.get('main->process_packet'));
      assert.ok(counted.size > 10, `${counted.size} edges compared`);
      assert.ok(r.handlers.includes(HANDLERS[target]), `handlers: ${r.handlers.join(', ')}`);
      const handler = r.functions.find((f) => f.name === HANDLERS[target]);
      const entered = oracle.functions.find((f) => f.name === HANDLERS[target]);
      assert.ok(
        handler && entered && handler.entries === entered.interrupts && handler.entries > 0,
        `${HANDLERS[target]} entered ${handler?.entries} times`,
      );
      assert.ok(r.units['instructions']?.instructionsPerUnit === 1);
      if (target === 'cortex-m4') assert.deepEqual(r.units['ticks'], { instructionsPerUnit: 40, quantised: true });
    });
  });
}

describe('instruction counts of a program that does not end', () => {
  const h = new AdapterHarness();
  after(async () => assert.deepEqual(await h.stop(), [], 'the counting QEMU given up on is gone'));

  it('gives up at the timeout and says why', async () => {
    await h.start();
    // superloop never reaches the end found in its code (the return from main): nothing ends QEMU.
    const superloop = join(fixturesDir, 'build', 'rv32', 'programs', 'superloop.elf');
    await h.launchToEntry({ ...qemuLaunchArgs('rv32'), executable: superloop });
    const r = await h.custom(CustomRequests.executionCounts, { timeoutMs: 1500 });
    assert.equal(r.counted, false);
    assert.match(!r.counted ? r.reason : '', /did not end within 2 s/);
  });
});
