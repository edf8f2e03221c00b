import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { CallGraphResponse, DynamicCallGraphResponse } from '../../common/dapCustom';
import { CustomRequests } from '../../common/dapCustom';
import { runOracle, type OracleSummary } from '../oracle/oracle';
import { AdapterHarness, fixtureSource, qemuLaunchArgs } from '../support/dap';
import { markerLine } from '../support/markers';
import { fixtureElf } from '../support/paths';

/**
 * The dynamic call graph through the built adapter on QEMU RV32, checked against the oracle over
 * one round of singlepass: from the first `#ROUND` (process_packet's first call) to the second,
 * where a user breakpoint ends the recording. A whole run is ~40k calls at ~5 ms a halt, too long
 * for a test.
 *
 * Under -icount each GDB halt lets QEMU's virtual clock jump to the next timer deadline, so with the
 * timer enabled nearly every resume takes an interrupt and the program barely advances. The test
 * masks the timer (mie = 0) and compares with the oracle's calls outside the handler.
 */
const elfPath = fixtureElf('rv32', 'singlepass');
const singlepass = fixtureSource('singlepass.c');
const roundLine = markerLine(singlepass, '#ROUND');
const HANDLER = 'trap_entry';

/** Calls per caller→callee in the oracle's trace between its N0-th and N1-th instruction. */
async function oracleWindow(): Promise<Map<string, number>> {
  const round = `singlepass.c:${roundLine}`;
  const full = await runOracle({
    elf: elfPath,
    regions: [
      { name: 'boot', start: '_start', end: round },
      { name: 'round', start: round, end: round },
    ],
  });
  const boot = full.regions.find((r) => r.name === 'boot')!;
  const oneRound = full.regions.find((r) => r.name === 'round')!;
  // A call is counted at the callee's first instruction, and #ROUND is none: the window's ends
  // need not be exact to the instruction.
  const first = full.totals.outsideProgram + boot.passes[0]!;
  const second = first + oneRound.passes[0]!;
  const [before0, before1]: OracleSummary[] = await Promise.all([
    runOracle({ elf: elfPath, maxInstructions: first }),
    runOracle({ elf: elfPath, maxInstructions: second }),
  ]);
  const counts = new Map<string, number>();
  for (const e of before1.edges) counts.set(`${e.caller}->${e.callee}`, e.calls);
  for (const e of before0.edges)
    counts.set(`${e.caller}->${e.callee}`, (counts.get(`${e.caller}->${e.callee}`) ?? 0) - e.calls);
  for (const [k, v] of counts)
    if (v === 0 || k.startsWith(`${HANDLER}->`) || k.endsWith(`->${HANDLER}`)) counts.delete(k);
  return counts;
}

describe('dynamic call graph through the adapter (QEMU RV32)', () => {
  const h = new AdapterHarness();
  let oracle: Map<string, number>;
  let staticGraph: CallGraphResponse;
  let graph: DynamicCallGraphResponse;
  let seconds = 0;

  before(async () => {
    oracle = await oracleWindow();
    await h.start();
    await h.launchToEntry(qemuLaunchArgs('rv32', 'singlepass', { programEnd: 'program_end' }));
    await h.dc.setBreakpointsRequest({ source: { path: singlepass }, breakpoints: [{ line: roundLine }] });
    await Promise.all([h.dc.continueRequest({ threadId: 1 }), h.dc.waitForEvent('stopped')]);
    await h.dc.evaluateRequest({ expression: '> set var $mie = 0', context: 'repl' });
    staticGraph = await h.custom(CustomRequests.callGraph);
    h.dc.defaultTimeout = 150_000; // one halt per call: seconds, not milliseconds
    const started = Date.now();
    const stopped = h.dc.waitForEvent('stopped');
    graph = await h.custom(CustomRequests.dynamicCallGraph, { maxHits: 10_000, timeoutMs: 120_000 });
    seconds = (Date.now() - started) / 1000;
    await stopped;
  });
  after(async () => assert.deepEqual(await h.stop(), []));

  it('ends at the user breakpoint on the next round, halted there', async () => {
    assert.equal(graph.ended, 'otherStop');
    const top = await h.topFrame();
    assert.equal(top.name, 'main');
    assert.equal(top.line, roundLine);
    console.log(
      `dynamic call graph: ${graph.hits} calls in ${seconds.toFixed(1)} s ` +
        `(${((seconds * 1000) / graph.hits).toFixed(2)} s per 1000 calls)`,
    );
  });

  it('counts every observed edge as the oracle does', () => {
    const observed = new Map(
      graph.edges.filter((e) => e.count !== undefined).map((e) => [`${e.caller}->${e.callee}`, e.count!]),
    );
    assert.ok(observed.get('main->process_packet') === 1 && observed.size > 20, JSON.stringify([...observed]));
    assert.deepEqual(new Map([...observed].sort()), new Map([...oracle].sort()));
    assert.equal(
      graph.hits,
      [...observed.values()].reduce((a, b) => a + b, 0),
    );
    // Tail calls count for the tail caller, as in the oracle.
    assert.equal(graph.edges.find((e) => e.caller === 'calibrate_sample' && e.callee === 'clamp_s16')?.count, 128);
    assert.deepEqual(graph.interrupts, []);
  });

  it('keeps every static edge', () => {
    for (const s of staticGraph.edges) {
      assert.ok(
        graph.edges.some(
          (e) =>
            e.caller === s.caller && e.callee === s.callee && e.kind === s.kind && e.sites.join() === s.sites.join(),
        ),
        `${s.caller}->${s.callee}`,
      );
    }
    assert.equal(graph.functions.length, staticGraph.functions.length);
  });

  it('leaves none of its breakpoints behind', async () => {
    const listed = (await h.dc.evaluateRequest({ expression: '> info breakpoints', context: 'repl' })).body.result;
    const lines = listed.split('\n').filter((l) => /^\d+\s+breakpoint/.test(l));
    assert.equal(lines.length, 1, listed);
    assert.match(lines[0]!, /singlepass\.c:\d+/);
  });
});
