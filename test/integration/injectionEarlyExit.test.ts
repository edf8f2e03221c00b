import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { InjectedResult } from '../../common/dapCustom';
import { CustomRequests } from '../../common/dapCustom';
import { runOracle, type OracleSummary } from '../oracle/oracle';
import { AdapterHarness } from '../support/dap';
import { fixturesDir } from '../support/paths';

/**
 * A Cortex-M entry patch over `if (n < 2) return` (merge_sort's `cmp r1, #1; ble`): the relocated
 * branch leaves the stub on every leaf of the recursion, and falls through to the jump back on
 * every other call. Both ways must cost the payload the same, or every measurement around it (the
 * run's window, main) is compensated by the wrong amount: before both paths ran one jump, the
 * window came out 576 instructions short over 600 leaves. SysTick counts 40 instructions a tick on
 * QEMU, so values agree with the trace within a tick per pass.
 */
const ELF = join(fixturesDir, 'build', 'cortex-m4', 'programs', 'sorting.elf');
const UNIT = 40;

describe('an entry patch over an early return (QEMU Cortex-M4, SysTick)', () => {
  const h = new AdapterHarness();
  let oracle: OracleSummary;
  let window: InjectedResult;
  let sort: InjectedResult;

  before(async () => {
    oracle = await runOracle({ elf: ELF });
    await h.start();
    await h.launchToEntry({ executable: ELF, server: { type: 'qemu', machine: 'mps2-an386' }, stopAtEntry: 'main' });
    const w = await h.custom(CustomRequests.inject, { targets: [{ function: 'main' }], callSitesIfTooShort: false });
    const m = await h.custom(CustomRequests.inject, { targets: [{ function: 'merge_sort.constprop.0' }] });
    assert.equal(m.injected[0]?.kind, 'function', JSON.stringify(m.refused));
    await h.custom(CustomRequests.run, {});
    const results = (await h.custom(CustomRequests.injectedResults)).results;
    window = results.find((r) => r.id === w.injected[0]!.id)!;
    sort = results.find((r) => r.id === m.injected[0]!.id)!;
  });
  after(async () => assert.deepEqual(await h.stop(), []));

  const truth = (name: string): number =>
    oracle.functions.find((f) => f.name === name || f.aliases.includes(name))!.inclusive;

  it('leaves the measurements around it exact: main within a tick of the trace', () => {
    assert.equal(sort.calls, 1199, 'every call, 600 of them leaves that return at once');
    assert.ok(
      Math.abs(window.compensatedTotal * UNIT - truth('main')) <= UNIT,
      `main: ${window.compensatedTotal * UNIT} instructions measured, ${truth('main')} in the trace`,
    );
  });

  it('measures the recursive function itself within a tick per pass', () => {
    assert.ok(
      Math.abs(sort.compensatedTotal * UNIT - truth('merge_sort.constprop.0')) <= UNIT * (sort.passes + 1),
      `merge_sort: ${sort.compensatedTotal * UNIT} instructions measured, ${truth('merge_sort.constprop.0')} ` +
        `in the trace`,
    );
  });
});
