import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { DebugProtocol } from '@vscode/debugprotocol';
import type { CallGraphResponse, InjectResponse } from '../../common/dapCustom';
import { CustomRequests } from '../../common/dapCustom';
import type { DebuggerKind } from '../../common/launchArgs';
import { rootsForStart, runDescent } from '../../core/analysis/descent';
import { MetricsEngine } from '../../core/analysis/metrics';
import { DapProfiler } from '../../core/profiling/dapProfiler';
import { AdapterHarness, qemuLaunchArgs } from '../support/dap';
import type { FixtureTarget } from '../support/paths';

/**
 * The adapter's own stops stay its own (docs/design.md, "One hidden run-to"). Injecting a
 * measurement calibrates it by running the core to stubs, and a descent runs the program once per
 * batch to its end: none of those halts may reach the client as a `stopped` event, and the
 * debugger's chatter about them ("Temporary breakpoint 7, program_end () at …") must not reach the
 * Debug Console. The client, which saw the target halted at main, is told to refresh its stack
 * (`invalidated`) instead. LLDB 14 runs the Cortex-M4 leg as well (it has no RISC-V support).
 */
const LEGS: Array<{ target: FixtureTarget; debugger: DebuggerKind }> = [
  { target: 'cortex-m4', debugger: 'gdb' },
  { target: 'rv32', debugger: 'gdb' },
  { target: 'cortex-m4', debugger: 'lldb' },
];
/**
 * What a debugger prints when the target stops: GDB's CLI and MI console forms, and LLDB's
 * ("Process 1 stopped", "* thread #1, stop reason = breakpoint 2.1").
 */
const STOP_CHATTER = new RegExp(
  [
    /Temporary breakpoint \d+|Breakpoint \d+, |Program received signal|Thread \d+ "[^"]*" hit|Run till exit/.source,
    /Process \d+ (stopped|resuming)|stop reason = /.source,
  ].join('|'),
);

for (const { target, debugger: debuggerKind } of LEGS) {
  describe(`hidden stops on QEMU ${target} with ${debuggerKind}`, () => {
    const h = new AdapterHarness();
    const stopped: DebugProtocol.StoppedEvent[] = [];
    const invalidated: DebugProtocol.InvalidatedEvent[] = [];
    let outputBefore = 0;

    before(async () => {
      await h.start();
      await h.launchToEntry(
        qemuLaunchArgs(target, 'singlepass', { debugger: debuggerKind, programEnd: 'program_end' }),
      );
      // From here on the client asks for nothing that stops the target where it can see it.
      outputBefore = h.output.length;
      h.dc.on('stopped', (e: DebugProtocol.StoppedEvent) => stopped.push(e));
      h.dc.on('invalidated', (e: DebugProtocol.InvalidatedEvent) => invalidated.push(e));
    });
    after(async () => assert.deepEqual(await h.stop(), []));

    it('injects a measurement (its calibration runs the core) without a stop the client sees', async () => {
      // The client read the stack at the stop; the hidden runs of the calibration leave the core
      // where it was, so the frame it holds must still answer (the Variables view after "Measure").
      const before = (await h.dc.stackTraceRequest({ threadId: 1, startFrame: 0, levels: 5 })).body.stackFrames[0];
      assert.ok(before, 'a stack at main');
      const injected = (await h.dc.customRequest(CustomRequests.inject, { targets: [{ function: 'fir_filter' }] }))
        .body as InjectResponse;
      assert.equal(injected.injected.length, 1, JSON.stringify(injected.refused));
      const scopes = await h.dc.scopesRequest({ frameId: before.id });
      assert.ok(scopes.body.scopes.length > 0, 'the frame read before the injection still has scopes');
      await h.dc.variablesRequest({ variablesReference: scopes.body.scopes[0]!.variablesReference });
      await h.dc.customRequest(CustomRequests.removeInjections, { ids: injected.injected.map((i) => i.id) });
      assert.deepEqual(
        stopped.map((e) => e.body.reason),
        [],
      );
    });

    it('runs a descent without a stop or debugger chatter reaching the client', async () => {
      const profiler = new DapProfiler(
        { customRequest: async (command, args) => (await h.dc.customRequest(command, args)).body as unknown },
        {
          slots: 4,
          mode: { kind: 'single-pass', end: { function: 'program_end' } },
          executable: qemuLaunchArgs(target).executable,
        },
      );
      const graph: CallGraphResponse = await profiler.callGraph();
      const engine = new MetricsEngine();
      const result = await runDescent(graph, profiler, {
        engine,
        metric: engine.monotone('share'),
        threshold: 0.05,
        roots: rootsForStart(graph, 'main'),
        spanning: ['main'],
      });
      // The descent did its work: it ran the program and measured functions below main.
      assert.ok(result.runs >= 1, 'at least one profiling run');
      assert.ok(
        result.outcomes.some((o) => o.status === 'measured' && o.name !== 'main' && (o.value ?? 0) > 0),
        JSON.stringify(result.outcomes),
      );
      assert.deepEqual(
        stopped.map((e) => `${e.body.reason} ${e.body.description ?? ''}`),
        [],
        'no stopped event during inject and descent',
      );
      // The client saw the target halted at main: it is told to refresh, once per run at least.
      assert.ok(invalidated.length >= result.runs, `invalidated ${invalidated.length} times for ${result.runs} runs`);
      const chatter = h.output.slice(outputBefore).filter((line) => STOP_CHATTER.test(line));
      assert.deepEqual(chatter, [], 'no debugger stop chatter in the Debug Console');
    });

    it('still shows the user where the target stands, with a fresh stack', async () => {
      const frames = (await h.dc.stackTraceRequest({ threadId: 1, startFrame: 0, levels: 5 })).body.stackFrames;
      assert.ok(frames.length > 0);
      assert.equal(frames[0]!.name.replace(/\s*\(.*$/, ''), 'program_end');
    });
  });
}
