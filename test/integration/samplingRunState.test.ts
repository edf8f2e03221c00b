import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { DebugProtocol } from '@vscode/debugprotocol';
import type { RunResponse, StartSamplingResponse } from '../../common/dapCustom';
import { CustomRequests } from '../../common/dapCustom';
import { AdapterHarness, qemuLaunchArgs } from '../support/dap';
import { SampleCollector } from '../support/sampling';

/** How long a step may take before the test pauses it, as a user would. */
const STEP_PATIENCE_MS = 5_000;
/** The fixtures' interrupt and exception handlers. */
const HANDLER = /^(trap_entry|\w+_Handler|\w+_IRQHandler)$/;
const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Heat only from a running program, against real GDB and QEMU: the monitor sampler (which never
 * halts the core, and so would count whatever QEMU's vCPU is at) counts while the user's program
 * runs, nothing while the target is halted, and nothing while the adapter runs the program for its
 * own purposes (a run from reset to the program's end).
 */
describe('PC sampling counts only the running user program', () => {
  let h: AdapterHarness;

  afterEach(async () => {
    const left = await h.stop();
    assert.deepEqual(left, [], 'processes left behind');
  });

  it('rv32 hotloop: halted for half of the wall time, nothing is counted during the halt', async () => {
    h = new AdapterHarness();
    await h.start();
    const samples = new SampleCollector(h);
    await h.launchToEntry(qemuLaunchArgs('rv32', 'hotloop'));
    const started = (
      await h.dc.customRequest(CustomRequests.startSampling, { sampler: 'qemu-monitor', eventIntervalMs: 100 })
    ).body as StartSamplingResponse;
    assert.equal(started.sampler.halting, false);
    // Halted at main from the start: the first events carry nothing.
    await samples.waitFor((c) => c.events.length >= 5, 30_000, 'events while halted at entry');
    assert.equal(samples.total, 0, `counted ${samples.total} samples while halted at main`);
    const phases = 3;
    // Equal numbers of events (equal wall time) running and halted, in turns.
    for (let round = 0; round < phases; round++) {
      const fromRun = samples.total;
      const runEvents = samples.events.length;
      await h.dc.continueRequest({ threadId: 1 });
      await samples.waitFor((c) => c.events.length >= runEvents + 5, 30_000, 'events while running');
      const paused = h.dc.waitForEvent('stopped') as Promise<DebugProtocol.StoppedEvent>;
      await h.dc.pauseRequest({ threadId: 1 });
      assert.equal((await paused).body.reason, 'pause');
      const ranFor = samples.total - fromRun;
      // The events up to the pause's answer may still carry samples taken before it.
      const atPause: number = samples.events.length;
      await samples.waitFor((c) => c.events.length >= atPause + 1, 30_000, 'the flush after the pause');
      const atHalt: number = samples.total;
      const haltEvents = samples.events.length;
      await samples.waitFor((c) => c.events.length >= haltEvents + 5, 30_000, 'events while halted');
      console.log(`# round ${round}: ${ranFor} samples while running, ${samples.total - atHalt} while halted`);
      assert.ok(ranFor > 0, 'the running program was sampled');
      assert.equal(samples.total, atHalt, `counted ${samples.total - atHalt} samples while halted`);
    }
  });

  it("rv32 singlepass: the adapter's own run from reset to the program's end counts nothing", async () => {
    h = new AdapterHarness();
    await h.start();
    const samples = new SampleCollector(h);
    await h.launchToEntry(qemuLaunchArgs('rv32', 'singlepass', { programEnd: 'program_end' }));
    await h.dc.customRequest(CustomRequests.startSampling, { sampler: 'qemu-monitor', eventIntervalMs: 100 });
    let stops = 0;
    h.dc.on('stopped', () => stops++);
    for (let i = 0; i < 3; i++) {
      const run = (await h.dc.customRequest(CustomRequests.run, { restart: true })).body as RunResponse;
      assert.equal(run.reached, true, JSON.stringify(run));
    }
    const after = samples.events.length;
    await samples.waitFor((c) => c.events.length >= after + 2, 30_000, 'the flushes after the runs');
    assert.equal(samples.total, 0, `counted ${samples.total} samples in the adapter's own runs`);
    assert.equal(stops, 0, 'the runs were hidden');
  });

  for (const target of ['cortex-m4', 'rv32'] as const)
    it(
      `${target}: rapid steps and pauses with halting sampling on: stack and variables valid at ` + `every stop`,
      async () => {
        h = new AdapterHarness();
        await h.start();
        await h.launchToEntry(qemuLaunchArgs(target, 'hotloop', { trace: true }));
        await h.dc.continueRequest({ threadId: 1 });
        await h.dc.customRequest(CustomRequests.startSampling, {
          sampler: 'gdb-halting',
          rateHz: 200,
          eventIntervalMs: 50,
        });
        const samples = new SampleCollector(h);
        await samples.waitFor((c) => c.total >= 10, 60_000, '10 halting samples');
        /** Stack, scopes and the first scope's variables, as the client reads them at a stop. */
        const inspect = async (what: string): Promise<void> => {
          const st = await h.dc.stackTraceRequest({ threadId: 1, startFrame: 0, levels: 20 });
          const top = st.body.stackFrames[0];
          assert.ok(top, `${what}: a stack`);
          const scopes = await h.dc.scopesRequest({ frameId: top.id });
          assert.ok(scopes.body.scopes.length > 0, `${what}: scopes`);
          await h.dc.variablesRequest({ variablesReference: scopes.body.scopes[0]!.variablesReference });
        };
        /**
         * Pauses where the next steps are ordinary ones: a pause that lands in an interrupt handler
         * is continued and paused again, since a step off the handler's end returns into the middle
         * of the interrupted line and GDB then single-steps the rest of that line, which can be a
         * whole loop and takes minutes over the remote protocol (GDB's rule, not the run-state's).
         */
        const pauseOutsideHandlers = async (round: number): Promise<void> => {
          for (let attempt = 0; attempt < 20; attempt++) {
            const paused = h.dc.waitForEvent('stopped');
            await h.dc.pauseRequest({ threadId: 1 });
            await paused;
            const st = await h.dc.stackTraceRequest({ threadId: 1, startFrame: 0, levels: 20 });
            const handler = st.body.stackFrames.find((f) => HANDLER.test(f.name));
            if (!handler) return;
            console.log(`# round ${round}: paused in ${handler.name}; continued and paused again`);
            const from = samples.total;
            await h.dc.continueRequest({ threadId: 1 });
            await samples.waitFor((c) => c.total >= from + 2, 60_000, 'samples after continuing');
          }
          assert.fail(`round ${round}: 20 pauses all landed in an interrupt handler`);
        };
        try {
          for (let round = 0; round < 3; round++) {
            await pauseOutsideHandlers(round);
            await inspect(`round ${round}, pause`);
            for (let step = 0; step < 8; step++) {
              const stepped = h.dc.waitForEvent('stopped', 60_000) as Promise<DebugProtocol.StoppedEvent>;
              await h.dc.nextRequest({ threadId: 1 });
              // A step that ends an interrupt handler returns into the middle of a line, and GDB then
              // single-steps the rest of it, which may be a whole loop: minutes over the remote
              // protocol. A user would press Pause; so does the test, and the stop must come.
              const slow = await Promise.race([stepped.then(() => false), delay(STEP_PATIENCE_MS).then(() => true)]);
              if (slow) {
                console.log(`# round ${round}, step ${step}: still stepping after ${STEP_PATIENCE_MS} ms; paused`);
                await h.dc.pauseRequest({ threadId: 1 });
              }
              // The step may still end by itself between the wait and the pause.
              const reason = (await stepped).body.reason;
              assert.ok(reason === 'step' || (slow && reason === 'pause'), `stopped for ${reason}`);
              await inspect(`round ${round}, step ${step}`);
            }
            const from = samples.total;
            await h.dc.continueRequest({ threadId: 1 });
            await samples.waitFor((c) => c.total >= from + 5, 60_000, 'samples after continuing');
          }
        } catch (err) {
          h.printTraceTail(200);
          throw err;
        }
      },
    );
});
