import { describe, it, afterEach } from 'node:test';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import type { SamplersResponse, StartSamplingResponse, StopSamplingResponse } from '../../common/dapCustom';
import { CustomRequests } from '../../common/dapCustom';
import { wilsonInterval } from '../../core/profile/wilson';
import { ElfImage } from '../../adapter/elf';
import { runOracle } from '../oracle/oracle';
import { profileError } from '../oracle/profileError';
import { AdapterHarness, qemuLaunchArgs } from '../support/dap';
import type { FixtureTarget } from '../support/paths';
import { fixtureElf } from '../support/paths';
import { byFunction, SampleCollector } from '../support/sampling';
import { TARGET_STATE } from '../support/interruptSampling';

/**
 * The on-target interrupt sampler on both QEMU targets, against the oracle's exact instruction
 * trace of isrload (a main loop beside a timer interrupt doing a fifth of the work): the shares of
 * the hot functions, the interrupt handler's among them, must lie inside the 99.9 % Wilson
 * interval of their sample counts; and after stopping, the code, vectors, interrupt controller
 * and timer registers must read as before sampling. Disconnecting while sampling must leave no
 * sampler journal, which goes only once every register and word read back as before (QEMU ends
 * with the session, so the target cannot be read after the disconnect itself).
 */
/** isrload_vectored: RV32 with mtvec in vectored mode, whose wrong slots end the program (status 3). */
const CASES: { target: FixtureTarget; program: 'isrload' | 'isrload_vectored' }[] = [
  { target: 'rv32', program: 'isrload' },
  { target: 'rv32', program: 'isrload_vectored' },
  { target: 'cortex-m4', program: 'isrload' },
];
const WANTED = 20_000;
/** A failed run prints this much of the adapter's trace (its MI commands and replies). */
const TRACE_LINES_ON_FAILURE = 150;
const HOT = ['isr_checksum', 'loop_heavy', 'loop_light'];

/**
 * RV32: the handler enters the firmware's vectors and returns into interrupted handlers with
 * `jal` (+/-1 MiB), so its RAM must be near the code: 64 KiB right after the code's 1 MiB window
 * on virt would be too far; 64 KiB above the last loaded byte of the code region is not.
 */
const RESERVED: Record<FixtureTarget, (image: ElfImage) => { reservedMemory?: { start: string; size: number } }> = {
  rv32: (image) => {
    const codeEnd = Math.max(
      ...image.loadSegments.filter((p) => p.paddr < 0x8010_0000).map((p) => p.paddr + p.fileSize),
    );
    return {
      reservedMemory: { start: `0x${(Math.ceil(codeEnd / 0x1000) * 0x1000 + 0x1000).toString(16)}`, size: 0x10000 },
    };
  },
  'cortex-m4': () => ({}),
};

for (const { target, program } of CASES) {
  describe(`the interrupt sampler on ${target}${program === 'isrload' ? '' : ` (${program})`}`, () => {
    let h: AdapterHarness;

    afterEach(async () => {
      const left = await h.stop();
      assert.deepEqual(left, [], 'processes left behind');
    });

    it(
      'samples inside the timer interrupt handler, agrees with the oracle, and leaves the target ' + 'as it was',
      async () => {
        try {
          const elf = fixtureElf(target, program);
          const image = ElfImage.loadSync(elf);
          // The steady state: the timer period is exactly 100,000 instructions (-icount shift=0), so the
          // instructions from 4 M to 8 M hold exactly 40 interrupts, and no start-up code.
          const early = await runOracle({ elf, maxInstructions: 4_000_000 });
          const late = await runOracle({ elf, maxInstructions: 8_000_000 });
          h = new AdapterHarness();
          await h.start();
          const samples = new SampleCollector(h);
          await h.launchToEntry(qemuLaunchArgs(target, program, { ...RESERVED[target](image), trace: true }));
          // Once the firmware's own timer runs: its vectors, enables and timer are what must come back.
          await runThenPause(h);
          const state = TARGET_STATE[target];
          const before = await state.read(h);
          if (program === 'isrload_vectored')
            assert.equal(Number(before.mtvec) & 3, 1, `mtvec ${before.mtvec} is in vectored mode`);
          const offered = (await h.dc.customRequest(CustomRequests.samplers)).body as SamplersResponse;
          const described = offered.samplers.find((s) => s.id === 'target-interrupt');
          assert.ok(described?.available, JSON.stringify(described));
          assert.equal(described.halting, false);
          assert.ok(described.semantics && /interrupt/.test(described.semantics), described.semantics);
          // Started while halted at main (the handler goes in with the target halted either way).
          const started = (await h.dc.customRequest(CustomRequests.startSampling, { sampler: 'target-interrupt' }))
            .body as StartSamplingResponse;
          assert.equal(started.sampler.id, 'target-interrupt');
          let stops = 0;
          h.dc.on('stopped', () => stops++);
          await h.dc.continueRequest({ threadId: 1 });
          await samples.waitFor((c) => c.total >= WANTED, 300_000, `${WANTED} samples`);
          const stopped = (await h.dc.customRequest(CustomRequests.stopSampling)).body as StopSamplingResponse;
          assert.ok(stopped.totalSamples >= WANTED);
          assert.equal(stops, 0, 'the target never stopped for the user');
          const rate = samples.events.filter((e) => !e.final).map((e) => e.samplesPerSecond);
          console.log(
            `# ${target} interrupt sampler: ${samples.total} samples in ${stopped.elapsedMs} ms, ` +
              `${Math.round((samples.total * 1000) / stopped.elapsedMs)} samples/s (events: ${rate.join(' ')})`,
          );

          const sampled = byFunction(samples.counts, samples.locations);
          const truth = new Map(late.functions.map((f) => [f.name, f.exclusive]));
          for (const f of early.functions) truth.set(f.name, (truth.get(f.name) ?? 0) - f.exclusive);
          for (const [name, n] of truth) if (n <= 0) truth.delete(name);
          const oracleTotal = [...truth.values()].reduce((a, b) => a + b, 0);
          console.log(`#   function-level e = ${(profileError(sampled, truth) * 100).toFixed(2)} %`);
          for (const name of HOT) {
            const k = sampled.get(name) ?? 0;
            const share = (truth.get(name) ?? 0) / oracleTotal;
            const ci = wilsonInterval(k, samples.total, 3.29);
            console.log(
              `#   ${name}: oracle ${(share * 100).toFixed(2)} %, sampled ${((k / samples.total) * 100).toFixed(2)} ` +
                `% [${(ci.low * 100).toFixed(2)}, ${(ci.high * 100).toFixed(2)}]`,
            );
            assert.ok(
              share >= ci.low && share <= ci.high,
              `${name}: oracle share ${share} outside [${ci.low}, ${ci.high}]`,
            );
          }
          // The handler's function is a real part of the profile, not noise.
          assert.ok((sampled.get('isr_checksum') ?? 0) / samples.total > 0.1, 'isr_checksum sampled');

          // After stopping: everything the sampler touched reads as before, the code as in the ELF.
          // Halted at a breakpoint rather than by a pause sent right after the stop's hidden resume.
          // Waited for before asking: the breakpoint can be hit, and its stop reported, before the
          // request's answer arrives (the adapter halts, inserts it and resumes inside the request).
          await Promise.all([
            h.dc.waitForEvent('stopped'),
            h.dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: 'loop_light' }] }),
          ]);
          assert.deepEqual(await state.read(h), before);
          console.log(`#   restored: ${JSON.stringify(before)}`);
          for (const s of image.sections.filter((x) => (x.flags & 0x4) !== 0 && x.size > 0)) {
            const now = Buffer.from(
              (await h.dc.customRequest('readMemory', { memoryReference: `0x${s.addr.toString(16)}`, count: s.size }))
                .body.data,
              'base64',
            );
            assert.ok(
              now.equals(Buffer.from(image.file.readMemory(s.addr, s.size)!)),
              `${s.name} holds the ELF's bytes`,
            );
          }
        } catch (err) {
          h.printTraceTail(TRACE_LINES_ON_FAILURE);
          throw err;
        }
      },
    );

    if (program !== 'isrload') return;
    it(
      'disconnecting while it samples takes it out: its journal is written before anything ' +
        'changes and gone after a verified restore',
      async () => {
        const elf = fixtureElf(target, 'isrload');
        const image = ElfImage.loadSync(elf);
        const ws = mkdtempSync(join(tmpdir(), 'cyclelens-isr-'));
        const journal = join(ws, '.cyclelens', 'journal');
        const samplerJournals = (): string[] =>
          existsSync(journal) ? readdirSync(journal).filter((n) => n.endsWith('.sampler.json')) : [];
        h = new AdapterHarness();
        await h.start();
        const samples = new SampleCollector(h);
        await h.launchToEntry(qemuLaunchArgs(target, 'isrload', { ...RESERVED[target](image), cwd: ws, trace: true }));
        await runThenPause(h);
        await h.dc.customRequest(CustomRequests.startSampling, { sampler: 'target-interrupt' });
        const files = samplerJournals();
        assert.equal(files.length, 1, 'one sampler journal while sampling');
        const saved = JSON.parse(readFileSync(join(journal, files[0]!), 'utf8')) as {
          registers?: Record<string, unknown>;
          patches: unknown[];
        };
        // Device words as patches on both targets; RV32 also journals its CSRs (mtvec, mscratch, mie).
        assert.ok(saved.patches.length > 0, JSON.stringify(saved));
        if (target === 'rv32')
          assert.deepEqual(Object.keys(saved.registers ?? {}).sort(), ['mie', 'mscratch', 'mtvec']);
        await h.dc.continueRequest({ threadId: 1 });
        await samples.waitFor((c) => c.total >= 2_000, 120_000, '2,000 samples');
        await h.dc.disconnectRequest({ terminateDebuggee: true });
        try {
          assert.ok(samples.final, 'a final samples event before the session ended');
          assert.deepEqual(samplerJournals(), [], 'the journal goes once every register and word read back as before');
          assert.doesNotMatch(h.output.join(''), /could not restore/i);
        } catch (err) {
          h.printTraceTail(TRACE_LINES_ON_FAILURE);
          throw err;
        }
      },
    );
  });
}

/** Lets the program run into its main loop (its timer started) and halts it there, at a breakpoint. */
async function runThenPause(h: AdapterHarness): Promise<void> {
  await h.dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: 'loop_light' }] });
  await Promise.all([h.dc.waitForEvent('stopped'), h.dc.continueRequest({ threadId: 1 })]);
  await h.dc.setFunctionBreakpointsRequest({ breakpoints: [] });
}
