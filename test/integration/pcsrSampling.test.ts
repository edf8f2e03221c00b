import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';
import { PcsrSampler } from '../../adapter/sampling/pcsrSampler';
import { OpenOcdServer } from '../../adapter/servers/openocd';
import { TclRpcClient } from '../../adapter/servers/tclRpc';
import { profileError } from '../oracle/profileError';
import { OpenOcdTclDouble } from '../doubles/openOcdTclDouble';
import { DEMCR, PcsrCoreModel, periodicSleep, TRCENA } from '../doubles/pcsrCoreModel';
import { killTagged, newOwnerTag, OWNER_TAG_VAR, waitForNoTaggedProcesses } from '../support/ownedProcesses';
import { fixtureElf, repoRoot } from '../support/paths';
import { countsByFunction, outsideBinomialBound, traceFixture, type TracedFixture } from '../support/pcsrTrace';

/**
 * The DWT_PCSR sampler on a real TCP socket against a double of OpenOCD's Tcl RPC (no board runs
 * here). The double's core serves PCSR values drawn from the exact QEMU trace of the Cortex-M4
 * hotloop, with sleep windows and a halt state that read 0xFFFFFFFF. The sampler's function shares
 * are judged against the oracle's exact counts from the same QEMU run, never against the double.
 * Last, the sampler's burst script runs in a real OpenOCD 0.12's Jim, with read_memory and
 * write_memory replaced by Tcl procs (the dummy adapter has no target memory).
 */
const INSTRUCTIONS = 2_000_000;
const SAMPLES = 20_000;
/** 25 µs of WFI after every 100,000 instructions: a fifth of the time asleep. */
const SLEEP_EVERY = 100_000;
const SLEEP_NS = 25_000;

interface Run {
  counts: Map<number, number>;
  asleepOrHalted: number;
  log: string;
  elapsedMs: number;
}

async function sampleUntil(sampler: PcsrSampler, done: (r: Run) => boolean, timeoutMs: number): Promise<Run> {
  const run: Run = { counts: new Map(), asleepOrHalted: 0, log: '', elapsedMs: 0 };
  const started = performance.now();
  const collect = async (): Promise<void> => {
    for (const [a, n] of await sampler.drain()) run.counts.set(a, (run.counts.get(a) ?? 0) + n);
    run.asleepOrHalted += sampler.drainCountedApart().asleepOrHalted!;
  };
  while (!done(run)) {
    if (performance.now() - started > timeoutMs)
      throw new Error(`timed out: ${total(run.counts)} code samples, ${run.asleepOrHalted} asleep or halted`);
    await new Promise((r) => setTimeout(r, 50));
    await collect();
  }
  await sampler.stop();
  await collect();
  run.elapsedMs = performance.now() - started;
  return run;
}

function total(counts: ReadonlyMap<unknown, number>): number {
  let s = 0;
  for (const n of counts.values()) s += n;
  return s;
}

describe('DWT_PCSR sampler against the OpenOCD Tcl RPC double (exact trace of the Cortex-M4 hotloop)', () => {
  let fixture: TracedFixture;
  let double: OpenOcdTclDouble | undefined;

  before(async () => {
    fixture = await traceFixture(fixtureElf('cortex-m4', 'hotloop'), INSTRUCTIONS);
    assert.equal(fixture.oracle.totals.instructions, INSTRUCTIONS);
  });

  afterEach(async () => {
    await double?.close();
    double = undefined;
  });

  test(
    'function shares match the oracle within 4 sigma; sleep reads are counted apart and never as code; nothing halts',
    { timeout: 300_000 },
    async () => {
      const core = new PcsrCoreModel(fixture.trace, periodicSleep(fixture.trace.length, SLEEP_EVERY, SLEEP_NS));
      double = await OpenOcdTclDouble.start(core);
      let log = '';
      const sampler = new PcsrSampler({ tclPort: double.port, isRunning: () => true, log: (t) => (log += t) });
      assert.equal(sampler.identity.halting, false);
      assert.equal(sampler.identity.attribution, 'recently-executed');
      await sampler.start();
      assert.ok((core.demcr & TRCENA) !== 0, 'TRCENA set before sampling');
      const run = await sampleUntil(sampler, (r) => total(r.counts) >= SAMPLES, 240_000);
      assert.equal(log, '');

      // Every 0xFFFFFFFF the double served is counted apart, every other value as code.
      assert.equal(run.counts.has(0xffffffff), false, '0xFFFFFFFF counted as an address');
      assert.equal(run.asleepOrHalted, core.served.asleep);
      assert.equal(total(run.counts), core.served.code);
      assert.equal(core.served.traceDisabled, 0, 'a PCSR read before TRCENA was set');
      // The asleep share is the time line's, within the binomial bound.
      const reads = core.served.code + core.served.asleep;
      const p = core.sleepShare;
      assert.ok(
        Math.abs(run.asleepOrHalted - reads * p) <= 4 * Math.sqrt(reads * p * (1 - p)) + 1,
        `${run.asleepOrHalted} of ${reads} asleep, expected share ${p}`,
      );

      const sampled = countsByFunction(fixture.image, run.counts);
      assert.deepEqual(outsideBinomialBound(sampled, fixture.functionCounts), []);
      const e = profileError(sampled, fixture.functionCounts);
      console.log(
        `# PCSR through the double: ${total(run.counts)} code samples, ${run.asleepOrHalted} asleep ` +
          `(${((run.asleepOrHalted / reads) * 100).toFixed(1)} %), ${Math.round((reads / run.elapsedMs) * 1000)} ` +
          `reads/s, function-level e = ${(e * 100).toFixed(2)} %`,
      );

      // Only memory reads and writes reached OpenOCD: no halt, no resume, no reset.
      const commands = new Set(
        double.received.flatMap((line) => [...line.matchAll(/(?:^|[[;{]\s*)([a-z_]+)/g)].map((m) => m[1]!)),
      );
      for (const intrusive of ['halt', 'resume', 'reset', 'step'])
        assert.equal(commands.has(intrusive), false, `${intrusive} sent`);
      // TRCENA was clear before, so the sampler cleared it again.
      assert.equal(core.demcr & TRCENA, 0);
    },
  );

  test('the same comparison fails if 0xFFFFFFFF were counted as code', () => {
    // The check above can fail: the same samples with the sleep reads taken as an address.
    const core = new PcsrCoreModel(fixture.trace, periodicSleep(fixture.trace.length, SLEEP_EVERY, SLEEP_NS));
    core.demcr = TRCENA;
    const counts = new Map<number, number>();
    for (let i = 0; i < SAMPLES; i++) {
      const v = core.read(0xe000101c)!;
      counts.set(v, (counts.get(v) ?? 0) + 1);
    }
    const withoutSleep = new Map([...counts].filter(([a]) => a !== 0xffffffff));
    assert.deepEqual(outsideBinomialBound(countsByFunction(fixture.image, withoutSleep), fixture.functionCounts), []);
    const failures = outsideBinomialBound(countsByFunction(fixture.image, counts), fixture.functionCounts);
    assert.ok(
      failures.some((f) => f.startsWith('[outside program]')),
      failures.join('\n'),
    );
  });

  test(
    'a halted core reads 0xFFFFFFFF: counted as asleep or halted, never as code, until it resumes',
    { timeout: 120_000 },
    async () => {
      const core = new PcsrCoreModel(fixture.trace);
      core.demcr = TRCENA;
      double = await OpenOcdTclDouble.start(core);
      // The session's own connection halts the core behind the sampler's back.
      const session = await TclRpcClient.connect(double.port);
      try {
        await session.halt();
        let log = '';
        const sampler = new PcsrSampler({ tclPort: double.port, isRunning: () => true, log: (t) => (log += t) });
        await sampler.start();
        const halted = await sampleUntil(sampler, (r) => r.asleepOrHalted >= 2_000, 60_000);
        assert.equal(total(halted.counts), 0, 'a halted core counted as code');
        assert.equal(halted.asleepOrHalted, core.served.halted);
        assert.equal(log, '');
        // Set by someone else, TRCENA stays set when the sampler stops.
        assert.ok((core.demcr & TRCENA) !== 0);

        await session.resume();
        const resumed = new PcsrSampler({ tclPort: double.port, isRunning: () => true, log: (t) => (log += t) });
        await resumed.start();
        const running = await sampleUntil(resumed, (r) => total(r.counts) >= 2_000, 60_000);
        assert.equal(running.asleepOrHalted, 0);
        assert.ok([...running.counts.keys()].every((a) => a !== 0xffffffff));
      } finally {
        await session.close();
      }
    },
  );

  test('while the session says the target is halted, no burst is sent', { timeout: 30_000 }, async () => {
    const core = new PcsrCoreModel(fixture.trace);
    double = await OpenOcdTclDouble.start(core);
    let running = false;
    const sampler = new PcsrSampler({ tclPort: double.port, isRunning: () => running, log: () => undefined });
    await sampler.start();
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(core.served.code + core.served.halted + core.served.asleep + core.served.traceDisabled, 0);
    running = true;
    const run = await sampleUntil(sampler, (r) => total(r.counts) >= 500, 20_000);
    assert.ok(total(run.counts) >= 500);
  });

  test('OpenOCD going away stops sampling with a message naming the lost connection', { timeout: 30_000 }, async () => {
    const core = new PcsrCoreModel(fixture.trace);
    double = await OpenOcdTclDouble.start(core);
    let log = '';
    const sampler = new PcsrSampler({ tclPort: double.port, isRunning: () => true, log: (t) => (log += t) });
    await sampler.start();
    let counted = 0;
    while (counted < 200) {
      await new Promise((r) => setTimeout(r, 20));
      counted += total(await sampler.drain());
    }
    await double.close();
    double = undefined;
    const deadline = Date.now() + 10_000;
    while (!/sampling stopped/.test(log) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.match(log, /DWT_PCSR sampling stopped: .*Tcl RPC connection to OpenOCD .* (was lost|closed)/);
    await sampler.stop();
  });
});

describe('DWT_PCSR sampler against a real OpenOCD 0.12 (dummy adapter; memory access replaced by Tcl procs)', () => {
  const tag = newOwnerTag();
  after(() => killTagged(tag));

  test(
    "the burst script runs in OpenOCD's Jim: one list element per PCSR read, 0xFFFFFFFF counted apart",
    { timeout: 60_000 },
    async () => {
      const server = new OpenOcdServer(
        {
          type: 'openocd',
          configFiles: ['dummy-riscv.cfg'],
          searchDirs: [join(repoRoot, 'test', 'integration', 'openocd')],
        },
        { env: { ...process.env, [OWNER_TAG_VAR]: tag } },
      );
      await server.start({ executable: '', family: 'riscv', cwd: repoRoot, log: () => undefined });
      try {
        // A core cycling through three PCs and one asleep read, DEMCR kept in a variable. OpenOCD
        // shares one interpreter between Tcl connections, so the sampler's connection sees these.
        await server.tcl.command(
          [
            'rename read_memory cyclelens_dummy_read_memory',
            'rename write_memory cyclelens_dummy_write_memory',
            'set ::demcr 0; set ::pcsr_i 0; set ::pcsr_reads 0; set ::ctrl_reads 0',
            `proc read_memory {address width count} {
             if {$address == ${DEMCR}} {return [format 0x%x $::demcr]}
             if {$address == 0xe0001000} {incr ::ctrl_reads; return 0x40000000}
             if {$address == 0xe000101c && $count == 1} {
               incr ::pcsr_reads
               set v [lindex {0x100 0x102 0x104 0xffffffff} [expr {$::pcsr_i % 4}]]
               incr ::pcsr_i
               return $v
             }
             error "read_memory: failed to read memory"
           }`,
            `proc write_memory {address width data} {
             if {$address == ${DEMCR}} {set ::demcr [lindex $data 0]; return}
             error "write_memory: failed to write memory"
           }`,
            'list',
          ].join('\n'),
        );
        let log = '';
        const sampler = new PcsrSampler({ tclPort: server.ports.tcl, isRunning: () => true, log: (t) => (log += t) });
        await sampler.start();
        assert.equal((Number(await server.tcl.command('set ::demcr')) & TRCENA) !== 0, true);
        const run = await sampleUntil(sampler, (r) => total(r.counts) >= 3_000, 45_000);
        assert.equal(log, '');
        const reads = Number(await server.tcl.command('set ::pcsr_reads'));
        assert.equal(total(run.counts) + run.asleepOrHalted, reads, 'every PCSR read reached the sampler once');
        assert.deepEqual([...run.counts.keys()].sort(), [0x100, 0x102, 0x104]);
        // Reads cycle through four values, so each value's count is within one of a quarter.
        for (const n of [...run.counts.values(), run.asleepOrHalted])
          assert.ok(Math.abs(n - reads / 4) <= 1, `${n} of ${reads}`);
        // Spacers ran: some DWT_CTRL reads, fewer than PCSR reads (at most one per read).
        const spacers = Number(await server.tcl.command('set ::ctrl_reads'));
        assert.ok(spacers > 0 && spacers < reads, `${spacers} spacer reads for ${reads} PCSR reads`);
        assert.equal(Number(await server.tcl.command('set ::demcr')) & TRCENA, 0, 'TRCENA cleared again at stop');
      } finally {
        await server.stop();
      }
      assert.deepEqual(await waitForNoTaggedProcesses(tag), []);
    },
  );
});
