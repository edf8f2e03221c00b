import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ElfImage } from '../../adapter/elf';
import { staticCallGraph, type StaticCallGraph } from '../../adapter/probe/callGraph';
import {
  asynchronousHandlers,
  attributeCounts,
  executionCountsRequest,
  type CountingSession,
} from '../../adapter/probe/executionCounts';
import type { CountingRunResult } from '../../adapter/servers/qemuCounting';
import { computeTargetFacts } from '../../adapter/target/targetFacts';
import { fixtureElf, fixturesDir } from '../support/paths';
import { join } from 'node:path';

// The adapter's side of `cyclelens/executionCounts`: counts by address to counts by function, the
// refusals, and the facts the bounds rest on (handlers, code that runs on into other functions).
// The counts themselves are checked against the oracle in test/integration/executionCounts.test.ts.

describe('counts by function', () => {
  const functions = [
    { name: 'r12', address: 0x100, size: 0x24 },
    { name: 'r10', address: 0x104, size: 0x20 },
    { name: 'f', address: 0x200, size: 0x10 },
    { name: 'idle', address: 0x300, size: 0x10 },
  ];

  it('gives an address to the innermost symbol, counts what ran in the whole range, and what fell outside', () => {
    const counts = new Map([
      [0x100, 3],
      [0x102, 3],
      [0x104, 5],
      [0x110, 5],
      [0x200, 7],
      [0x208, 70],
      [0x400, 2],
    ]);
    const r = attributeCounts(functions, { counts, dropped: 0 });
    const by = new Map(r.functions.map((f) => [f.name, f]));
    assert.deepEqual(by.get('r12'), { name: 'r12', instructions: 6, entries: 3, inRange: 16 });
    assert.deepEqual(by.get('r10'), { name: 'r10', instructions: 10, entries: 5 });
    assert.deepEqual(by.get('f'), { name: 'f', instructions: 77, entries: 7 });
    assert.equal(by.has('idle'), false, 'a function that never ran is not listed');
    assert.equal(r.outside, 2);
    assert.equal(r.total, 95);
  });
});

describe('when there are no counts', () => {
  const graph: StaticCallGraph = {
    functions: [],
    edges: [],
    indirectCallers: [],
    incomplete: [],
    crossJumps: [],
    fallThrough: [],
  };
  const session = (over: Partial<CountingSession>): CountingSession => ({
    facts: computeTargetFacts('riscv', { type: 'qemu' }),
    countInstructions: async (): Promise<CountingRunResult> => ({
      counted: true,
      snapshot: { counts: new Map(), dropped: 0 },
      exitCode: 0,
      elapsedMs: 1,
    }),
    graph,
    entryAddress: 0,
    handlers: () => [],
    end: async () => undefined,
    ...over,
  });

  it('says why: not QEMU, no -icount, a full table, a run that did not end', async () => {
    const reason = async (s: CountingSession): Promise<string> => {
      const r = await executionCountsRequest(s, {});
      assert.equal(r.counted, false);
      return r.counted ? '' : r.reason;
    };
    assert.match(await reason(session({ countInstructions: undefined })), /need a QEMU server/);
    assert.match(
      await reason(session({ facts: computeTargetFacts('riscv', { type: 'qemu', icount: null }) })),
      /without -icount/,
    );
    assert.match(
      await reason(
        session({
          countInstructions: async () => ({
            counted: true,
            snapshot: { counts: new Map(), dropped: 3 },
            exitCode: 0,
            elapsedMs: 1,
          }),
        }),
      ),
      /table was full \(3 instructions not counted\)/,
    );
    assert.match(
      await reason(
        session({
          countInstructions: async () => ({ counted: false, reason: 'the program did not end', elapsedMs: 9 }),
        }),
      ),
      /did not end/,
    );
    const ok = await executionCountsRequest(session({}), {});
    assert.ok(ok.counted && ok.units['instructions']?.instructionsPerUnit === 1 && ok.units['ticks'] === undefined);
  });
});

describe('the facts the bounds rest on', () => {
  it("names Cortex-M's vector table handlers, the reset handler left out", () => {
    const image = ElfImage.loadSync(fixtureElf('cortex-m4', 'singlepass'));
    const handlers = asynchronousHandlers('cortex-m', image, staticCallGraph(image).functions);
    assert.ok(handlers.includes('TIMER0_IRQHandler'), handlers.join(', '));
    assert.ok(handlers.includes('Fault_Handler'), handlers.join(', '));
    assert.ok(!handlers.includes('Reset_Handler'), 'the reset handler runs once, from reset: it is the program');
  });

  it('names RISC-V trap handlers by their mret', () => {
    const image = ElfImage.loadSync(fixtureElf('rv32', 'singlepass'));
    assert.deepEqual(asynchronousHandlers('riscv', image, staticCallGraph(image).functions), ['trap_entry']);
  });

  const sha256 = join(fixturesDir, 'build', 'rv32', 'programs', 'sha256.elf');
  it("sees libgcc's millicode run on from one entry into the next", () => {
    const g = staticCallGraph(ElfImage.loadSync(sha256));
    const runsOn = (a: string, b: string): boolean => g.fallThrough.some((f) => f.caller === a && f.callee === b);
    assert.ok(runsOn('__riscv_restore_12', '__riscv_restore_10'), 'a symbol inside the range of another');
    assert.ok(runsOn('__riscv_restore_10', '__riscv_restore_3'));
    assert.ok(
      !g.fallThrough.some((f) => f.caller === 'sha256_transform'),
      'a function that ends in a return runs on into nothing',
    );
  });
});
