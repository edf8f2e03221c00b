import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { staticCallGraph } from '../../adapter/probe/callGraph';
import { ElfImage } from '../../adapter/elf';
import type { ToolTarget } from '../oracle/binutils';
import { runOracle } from '../oracle/oracle';
import { OWNER_TAG_VAR, killTagged, newOwnerTag } from '../support/ownedProcesses';
import { fixtureElf } from '../support/paths';

// The static call graph against the oracle's dynamic call edges: every call QEMU executed (exact
// instruction trace) must be an edge of the graph built from the ELF alone.

const TARGETS: readonly ToolTarget[] = ['cortex-m4', 'rv32'];
const built = TARGETS.flatMap((target) =>
  (['singlepass', 'cyclic_limited'] as const).map((program) => ({
    target,
    program,
    path: fixtureElf(target, program),
  })),
);

const tag = newOwnerTag();
before(() => {
  process.env[OWNER_TAG_VAR] = tag; // every QEMU the oracle starts carries it
});
after(() => killTagged(tag));

describe('static call graph against the oracle', () => {
  for (const f of built) {
    it(`${f.target}/${f.program}: every executed call edge is in the static graph`, { timeout: 180_000 }, async () => {
      assert.ok(existsSync(f.path), `${f.path} is built by the test set-up (make -C test/fixtures)`);
      const graph = staticCallGraph(ElfImage.loadSync(f.path));
      const oracle = await runOracle({ elf: f.path });
      assert.equal(oracle.totals.consistent, true);
      const stat = new Set(graph.edges.map((e) => `${e.caller} -> ${e.callee}`));
      const names = new Set(graph.functions.map((fn) => fn.name));
      const missing: string[] = [];
      for (const e of oracle.edges) {
        if (stat.has(`${e.caller} -> ${e.callee}`) || e.caller === e.callee) continue;
        // QEMU's rv32 reset ROM (0x1000) is not part of the ELF: it jumps to _start.
        if (e.caller === '[outside program]' && !names.has(e.caller)) continue;
        missing.push(`${e.caller} -> ${e.callee} (${e.calls})`);
      }
      assert.deepEqual(missing, [], 'the static graph misses executed edges');
      // Interrupt handlers are entered without a call: the oracle counts them as interrupts, not edges,
      // and the static graph has no caller for them: descent treats them as roots.
      for (const fn of oracle.functions.filter((x) => x.interrupts > 0)) {
        assert.ok(!graph.edges.some((e) => e.callee === fn.name), `${fn.name} is entered by interrupts only`);
      }
      // Every executed function is in the static graph (the reset ROM aside).
      for (const fn of oracle.functions)
        if (fn.name !== '[outside program]')
          assert.ok(names.has(fn.name), `${fn.name} ran but is not a graph function`);
    });
  }
});
