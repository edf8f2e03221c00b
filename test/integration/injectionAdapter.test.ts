import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type { DebugProtocol } from '@vscode/debugprotocol';
import type { InjectResponse, InjectedResultsResponse } from '../../common/dapCustom';
import { CustomEvents, CustomRequests } from '../../common/dapCustom';
import { ElfImage } from '../../adapter/elf';
import { runOracle, type OracleSummary } from '../oracle/oracle';
import { AdapterHarness, fixtureSource, qemuLaunchArgs } from '../support/dap';
import { markerLine } from '../support/markers';
import { fixtureElf } from '../support/paths';

/**
 * Injected measurements through the built adapter on QEMU RV32, checked against the oracle: the
 * program runs from its first round to its end with patches in place and never halts in between.
 *
 * Under -icount the timer interrupt fires after a fixed number of instructions, so a patched
 * program (a few more instructions per call) takes its interrupts at other places than the traced
 * one. To compare exactly, the test masks the timer (mie = 0) once the program has started it and
 * compares with the oracle's counts without interrupts; the payload must then account for every
 * instruction. (test/integration/injection.test.ts covers measurements with interrupts arriving.)
 */
const elfPath = fixtureElf('rv32', 'singlepass');
const image = ElfImage.loadSync(elfPath);

describe('injected measurements through the adapter (QEMU RV32, minstret)', () => {
  const h = new AdapterHarness();
  let oracle: OracleSummary;
  let injected: InjectResponse;
  let results: InjectedResultsResponse;
  const codeAt = async (address: number): Promise<Buffer> =>
    Buffer.from(
      (await h.dc.customRequest('readMemory', { memoryReference: `0x${address.toString(16)}`, count: 8 })).body.data,
      'base64',
    );
  const fnBytes = (name: string): Buffer => {
    const f = image.functionNamed(name)!;
    return Buffer.from(image.file.readMemory(f.address, 8)!);
  };

  before(async () => {
    oracle = await runOracle({ elf: elfPath });
    await h.start();
    await h.launchToEntry(qemuLaunchArgs('rv32', 'singlepass', { programEnd: 'program_end' }));
    const singlepass = fixtureSource('singlepass.c');
    await h.dc.setBreakpointsRequest({
      source: { path: singlepass },
      breakpoints: [{ line: markerLine(singlepass, '#ROUND') }],
    });
    await Promise.all([h.dc.continueRequest({ threadId: 1 }), h.dc.waitForEvent('stopped')]);
    await h.dc.setBreakpointsRequest({ source: { path: singlepass }, breakpoints: [] });
    await h.dc.evaluateRequest({ expression: '> set var $mie = 0', context: 'repl' });
  });
  after(async () => assert.deepEqual(await h.stop(), []));

  it('offers the static call graph', async () => {
    const g = await h.custom(CustomRequests.callGraph);
    assert.ok(g.functions.some((f) => f.name === 'fir_filter' && f.path?.endsWith('dsp.c')));
    assert.ok(g.edges.some((e) => e.caller === 'process_packet' && e.callee === 'fir_filter'));
  });

  it('injects functions and a region, refusing what cannot be patched with a reason', async () => {
    const dsp = fixtureSource('dsp.c');
    injected = await h.custom(CustomRequests.inject, {
      targets: [
        { function: 'fir_filter' },
        { function: 'quicksort' },
        { function: 'process_packet' },
        {
          start: { path: dsp, line: markerLine(dsp, '#REGION_START') },
          end: { path: dsp, line: markerLine(dsp, '#REGION_END') },
        },
        { function: 'no_such_function' },
      ],
    });
    assert.deepEqual(injected.injected.map((i) => i.name).slice(0, 3), ['fir_filter', 'quicksort', 'process_packet']);
    assert.equal(injected.injected.length, 4, JSON.stringify(injected.refused));
    assert.equal(injected.refused.length, 1);
    assert.match(injected.refused[0]!.reason, /no_such_function/);
    assert.equal(injected.injected[0]!.source?.path, dsp);
    // The region carries its function and ends as fields (the editor never parses its name).
    const firstAddress = (marker: string): string =>
      `0x${image.lineTable.addressesForLine(dsp, markerLine(dsp, marker))[0]!.toString(16)}`;
    assert.deepEqual(injected.injected[3]!.region, {
      function: 'fir_filter',
      start: firstAddress('#REGION_START'),
      end: firstAddress('#REGION_END'),
    });
    assert.equal(injected.injected[0]!.region, undefined, 'a function measurement has no region fields');
    // Warnings come with their codes: the region's start moves a call into its trampoline.
    assert.deepEqual(
      injected.injected.map((i) => i.warnings.map((w) => w.code)),
      [[], [], [], ['memoryPinned']],
      JSON.stringify(injected.injected.map((i) => i.warnings)),
    );
    // The entry of a measured function no longer holds the program's own bytes.
    const now = Buffer.from(
      (
        await h.dc.customRequest('readMemory', {
          memoryReference: `0x${image.functionNamed('fir_filter')!.address.toString(16)}`,
          count: 8,
        })
      ).body.data,
      'base64',
    );
    assert.notDeepEqual(now, fnBytes('fir_filter'));
  });

  it('counts every call without halting, matching the oracle', async () => {
    const stopped = h.dc.waitForEvent('stopped') as Promise<DebugProtocol.StoppedEvent>;
    await h.dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: '*program_end' }] });
    await h.dc.continueRequest({ threadId: 1 });
    await stopped;
    results = await h.custom(CustomRequests.injectedResults);
    for (const name of ['fir_filter', 'quicksort', 'process_packet']) {
      const r = results.results.find((x) => x.name === name)!;
      const o = oracle.functions.find((f) => f.name === name)!;
      assert.equal(r.calls, o.calls, `${name}: calls`);
      // minstret is exact under -icount: with the payload's own counted instructions removed, the
      // total is the oracle's inclusive count, instruction for instruction.
      assert.equal(
        r.compensatedTotal,
        o.inclusiveExcludingInterrupts,
        `${name}: raw ${r.total}, payload ${r.overheadPerPass}/pass`,
      );
      assert.ok(r.total > r.compensatedTotal, 'the raw total includes the payload');
    }
    const region = results.results.find((x) => x.id === injected.injected[3]!.id)!;
    assert.equal(region.passes, 20 * 128, 'the FIR loop body runs 128 times per call, 20 calls');
    assert.ok(results.elapsed && results.elapsed > 0);
  });

  it('removal restores the exact original bytes and clears the journal', async () => {
    await h.custom(CustomRequests.removeInjections, {});
    for (const name of ['fir_filter', 'quicksort', 'process_packet']) {
      const addr = image.functionNamed(name)!.address;
      const now = Buffer.from(
        (await h.dc.customRequest('readMemory', { memoryReference: `0x${addr.toString(16)}`, count: 8 })).body.data,
        'base64',
      );
      assert.deepEqual(now, fnBytes(name), `${name} restored`);
    }
    assert.equal(
      existsSync(`${process.cwd()}/.cyclelens/journal`)
        ? (await import('node:fs'))
            .readdirSync(`${process.cwd()}/.cyclelens/journal`)
            .filter((f) => f.endsWith('.json')).length
        : 0,
      0,
    );
  });

  it(
    'a profiling run to a patched entry stops after the trampoline, says where, and leaves the ' + 'editor alone',
    async () => {
      const patched = await h.custom(CustomRequests.inject, { targets: [{ function: 'packet_validate' }] });
      assert.equal(patched.injected.length, 1, JSON.stringify(patched.refused));
      const console: string[] = [];
      const listen = (e: DebugProtocol.OutputEvent): void => void console.push(e.body.output);
      h.dc.on('output', listen);
      const stops: DebugProtocol.StoppedEvent[] = [];
      const onStop = (e: DebugProtocol.StoppedEvent): void => void stops.push(e);
      h.dc.on('stopped', onStop);
      // The client already shows the target halted: a profiling run refreshes its stack (an
      // `invalidated` event) rather than reporting a stop of its own per run (docs/design.md, "One
      // hidden run-to").
      const invalidated = h.dc.waitForEvent('invalidated') as Promise<DebugProtocol.InvalidatedEvent>;
      const r = await h.custom(CustomRequests.run, { restart: true, until: { function: 'packet_validate' } });
      const e = await invalidated;
      // A restart removes every measurement first: the stop is on the original entry again.
      assert.deepEqual(r, {
        reached: true,
        until: { function: 'packet_validate' },
        programEnd: { function: 'program_end' },
      });
      assert.ok(e.body.areas?.includes('stacks'), JSON.stringify(e.body));
      const entry = image.functionNamed('packet_validate')!.address;
      const frame = (await h.dc.stackTraceRequest({ threadId: 1 })).body.stackFrames[0]!;
      assert.equal(Number(frame.instructionPointerReference), entry);
      // Patched now, from right there: the program runs the trampoline and stops where it comes back.
      const again = await h.custom(CustomRequests.inject, { targets: [{ function: 'packet_validate' }] });
      const id = again.injected[0]!.id;
      const r2 = await h.custom(CustomRequests.run, { until: { function: 'packet_validate' } });
      assert.equal(r2.reached, true);
      const pc = Number(
        (await h.dc.stackTraceRequest({ threadId: 1 })).body.stackFrames[0]!.instructionPointerReference,
      );
      assert.ok(
        pc > entry && pc < entry + 16,
        `stopped at 0x${pc.toString(16)}, just past the patched entry 0x${entry.toString(16)}`,
      );
      const calls = (await h.custom(CustomRequests.injectedResults)).results.find((x) => x.id === id)!;
      assert.equal(calls.calls, 1, 'the entry payload ran before the stop');
      h.dc.removeListener('output', listen);
      h.dc.removeListener('stopped', onStop);
      assert.deepEqual(stops, [], "the runs' own stops never reach the client as stops");
      assert.deepEqual(
        console.filter((line) => /breakpoint/i.test(line)),
        [],
        "no GDB chatter about the runs' own breakpoints",
      );
      await h.custom(CustomRequests.removeInjections, {});
    },
  );

  it('a reset typed in the Debug Console takes the measurements out first and refreshes the stack', async () => {
    const patched = await h.custom(CustomRequests.inject, { targets: [{ function: 'packet_validate' }] });
    assert.equal(patched.injected.length, 1, JSON.stringify(patched.refused));
    const entry = image.functionNamed('packet_validate')!.address;
    assert.notDeepEqual(await codeAt(entry), fnBytes('packet_validate'), 'the entry is patched');
    const removed = h.dc.waitForEvent(CustomEvents.injectionsRemoved);
    const invalidated = h.dc.waitForEvent('invalidated') as Promise<DebugProtocol.InvalidatedEvent>;
    await h.dc.evaluateRequest({ expression: 'monitor system_reset', context: 'repl' });
    await removed;
    assert.ok((await invalidated).body.areas?.includes('stacks'));
    assert.deepEqual(await codeAt(entry), fnBytes('packet_validate'), 'the original entry is back');
    assert.deepEqual((await h.custom(CustomRequests.injectedResults)).results, []);
    // QEMU virt starts every hart in its boot ROM (0x1000), which jumps to the image.
    const frame = (await h.dc.stackTraceRequest({ threadId: 1 })).body.stackFrames[0]!;
    assert.equal(Number(frame.instructionPointerReference), 0x1000);
  });
});
