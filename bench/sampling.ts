/**
 * Sampling benchmark: per sampler on the RV32 and Cortex-M4 hotloop fixture, through the built
 * adapter over DAP: samples per second, target slowdown (hotloop rounds per second of host time
 * against plain QEMU with no sampler), and the TIP error e = (C_total − C_correct) / C_total at
 * function and line level against the oracle's exact instruction counts. Then the pure part of a
 * decoration update (profile → heat → ranges per level) on a 5,000-line file.
 * The DWT_PCSR sampler has no board here: its rows run it against the OpenOCD Tcl RPC double
 * (test/doubles/) serving the Cortex-M4 hotloop's exact trace, so its rate is the adapter's and the
 * socket's (the double's reads take no time) and e is sampling noise plus any counting error.
 *   npm run bench -- sampling [--target rv32|cortex-m4] [--samples N] [--halting-samples N]
 *     [--only NAME-PREFIX] [--decoration-only]
 *   (--only openocd-pcsr runs the PCSR rows alone)
 */
import type { SampleLocation, SamplerId } from '../common/dapCustom';
import { CustomRequests } from '../common/dapCustom';
import type { QemuServerArgs } from '../common/launchArgs';
import { profileFromSamples } from '../core/profile/fromSamples';
import { changedLevels, LineHeatIndex, linesByLevel } from '../core/profile/lineHeat';
import { runOracle, type OracleSummary } from '../test/oracle/oracle';
import { profileError } from '../test/oracle/profileError';
import { PcsrSampler } from '../adapter/sampling/pcsrSampler';
import { resolveSampleLocation } from '../adapter/sampling/samplingService';
import { OpenOcdTclDouble } from '../test/doubles/openOcdTclDouble';
import { PcsrCoreModel, periodicSleep } from '../test/doubles/pcsrCoreModel';
import { traceFixture, type TracedFixture } from '../test/support/pcsrTrace';
import { AdapterHarness, qemuLaunchArgs } from '../test/support/dap';
import type { FixtureTarget } from '../test/support/paths';
import { fixtureElf } from '../test/support/paths';
import { byFunction, byLine, SampleCollector } from '../test/support/sampling';
import { median, option, printTable } from './support';

const wantedSamples = Number(option(process.argv, '--samples') ?? 20_000);
const haltingSamples = Number(option(process.argv, '--halting-samples') ?? 1_000);
const decorationOnly = process.argv.includes('--decoration-only');
/** `--detail`: each sampler row also prints its function shares beside the oracle's, largest gaps first. */
const detail = process.argv.includes('--detail');
const targets = (decorationOnly ? [] : (['rv32', 'cortex-m4'] as FixtureTarget[])).filter(
  (t) => !option(process.argv, '--target') || option(process.argv, '--target') === t,
);

interface Config {
  name: string;
  sampler?: SamplerId;
  server: Partial<QemuServerArgs>;
  rateHz?: number;
  samples: number;
  /**
   * Reserved RAM for the interrupt sampler: hotloop reserves only 4 KiB, and RV32 needs it within
   * 1 MiB of the code.
   */
  reserved?: Record<FixtureTarget, { start: string; size: number }>;
}

const configs: Config[] = [
  { name: 'none (plain QEMU)', server: {}, samples: 0 },
  { name: 'qemu-monitor (TB start)', sampler: 'qemu-monitor', server: {}, samples: wantedSamples },
  { name: 'qemu-monitor -singlestep', sampler: 'qemu-monitor', server: { singlestep: true }, samples: wantedSamples },
  {
    name: 'qemu-monitor nochain',
    sampler: 'qemu-monitor',
    server: { args: ['-d', 'nochain'] },
    samples: wantedSamples,
  },
  {
    name: 'qemu-monitor -singlestep nochain',
    sampler: 'qemu-monitor',
    server: { singlestep: true, args: ['-d', 'nochain'] },
    samples: wantedSamples,
  },
  { name: 'qemu-plugin (exact)', sampler: 'qemu-plugin', server: { instructionCounts: true }, samples: 0 },
  { name: 'gdb-halting 400/s', sampler: 'gdb-halting', server: {}, rateHz: 400, samples: haltingSamples },
  {
    name: 'target-interrupt',
    sampler: 'target-interrupt',
    server: {},
    samples: wantedSamples,
    reserved: { rv32: { start: '0x80080000', size: 0x10000 }, 'cortex-m4': { start: '0x20100000', size: 0x10000 } },
  },
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** hotloop's round counter, read at a pause (two halts per reading: negligible over seconds). */
async function rounds(
  h: AdapterHarness,
  startWhileHalted?: () => Promise<unknown>,
): Promise<{ rounds: number; at: number }> {
  const stopped = h.dc.waitForEvent('stopped');
  await h.dc.pauseRequest({ threadId: 1 });
  await stopped;
  const r = await h.dc.evaluateRequest({ expression: 'hl_rounds', context: 'watch' });
  const at = performance.now();
  await startWhileHalted?.();
  await h.dc.continueRequest({ threadId: 1 });
  return { rounds: Number(r.body.result), at };
}

function oracleMaps(oracle: OracleSummary): { functions: Map<string, number>; lines: Map<string, number> } {
  const lines = new Map<string, number>();
  let withLine = 0;
  for (const l of oracle.lines) {
    const key = `${l.file.split('/').pop()}:${l.line}`;
    lines.set(key, (lines.get(key) ?? 0) + l.count);
    withLine += l.count;
  }
  if (oracle.totals.instructions > withLine) lines.set('[no line]', oracle.totals.instructions - withLine);
  return {
    functions: new Map(oracle.functions.filter((f) => f.exclusive > 0).map((f) => [f.name, f.exclusive])),
    lines,
  };
}

async function measure(
  target: FixtureTarget,
  config: Config,
  truth: ReturnType<typeof oracleMaps>,
): Promise<{ roundsPerSecond: number; samplesPerSecond: number; samples: number; eFunction: number; eLine: number }> {
  const h = new AdapterHarness();
  await h.start();
  try {
    const machine = target === 'rv32' ? 'virt' : 'mps2-an386';
    await h.launchToEntry(
      qemuLaunchArgs(target, 'hotloop', {
        server: { type: 'qemu', machine, ...config.server },
        ...(config.reserved ? { reservedMemory: config.reserved[target] } : {}),
      }),
    );
    await h.dc.continueRequest({ threadId: 1 });
    await sleep(1_000);
    const samples = new SampleCollector(h);
    const start = () =>
      h.dc.customRequest(CustomRequests.startSampling, {
        sampler: config.sampler,
        ...(config.rateHz ? { rateHz: config.rateHz } : {}),
      });
    // The interrupt sampler goes in while the target is halted for the round count (installing it
    // on a running target right after a continue races GDB's report that the target runs).
    const before = await rounds(h, config.reserved ? start : undefined);
    if (config.sampler && !config.reserved) await start();
    const t0 = performance.now();
    if (config.samples > 0)
      await samples.waitFor((c) => c.total >= config.samples, 600_000, `${config.samples} samples`);
    else await sleep(4_000);
    const seconds = (performance.now() - t0) / 1000;
    const after = await rounds(h);
    if (config.sampler) await h.dc.customRequest(CustomRequests.stopSampling);
    const counts = new Map(samples.counts);
    const locations = new Map<number, SampleLocation>(samples.locations);
    if (detail && config.sampler)
      printShares(`${target} ${config.name}`, byFunction(counts, locations), truth.functions);
    if (samples.inExceptionReturn > 0)
      console.log(
        `${target} ${config.name}: ${samples.inExceptionReturn} reads during an exception return, counted apart`,
      );
    return {
      roundsPerSecond: ((after.rounds - before.rounds) * 1000) / (after.at - before.at),
      samplesPerSecond: samples.total / seconds,
      samples: samples.total,
      eFunction: config.sampler ? profileError(byFunction(counts, locations), truth.functions) : NaN,
      eLine: config.sampler ? profileError(byLine(counts, locations), truth.lines) : NaN,
    };
  } finally {
    await h.stop();
  }
}

/** Function shares sampled against the oracle's, in percent, the largest differences first. */
function printShares(what: string, sampled: ReadonlyMap<string, number>, truth: ReadonlyMap<string, number>): void {
  const sum = (m: ReadonlyMap<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
  const [ns, nt] = [sum(sampled), sum(truth)];
  const names = [...new Set([...sampled.keys(), ...truth.keys()])];
  const rows = names
    .map((n) => ({ n, s: ((sampled.get(n) ?? 0) / ns) * 100, t: ((truth.get(n) ?? 0) / nt) * 100 }))
    .sort((a, b) => Math.abs(b.s - b.t) - Math.abs(a.s - a.t))
    .slice(0, 12);
  console.error(`${what}: function, sampled % / oracle % (difference)`);
  for (const r of rows) {
    const difference = (r.s - r.t >= 0 ? '+' : '') + (r.s - r.t).toFixed(2);
    console.error(`  ${r.n.padEnd(24)} ${r.s.toFixed(2).padStart(6)} / ${r.t.toFixed(2).padStart(6)} (${difference})`);
  }
}

/**
 * The error that ideal sampling would show at `n` samples: `n` independent draws from the oracle's
 * own distribution, scored like a sampler (median and 95th percentile of 200 trials). A sampler at
 * this figure has no bias left to find; below it, the goal is tighter than the sample count allows.
 */
function samplingFloor(truth: ReadonlyMap<string, number>, n: number): { median: number; p95: number } {
  const keys = [...truth.keys()];
  const total = [...truth.values()].reduce((a, b) => a + b, 0);
  const cumulative: number[] = [];
  let c = 0;
  for (const k of keys) cumulative.push((c += truth.get(k)! / total));
  let seed = 0x2545f491;
  const random = (): number => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 2 ** 32;
  };
  const errors: number[] = [];
  for (let trial = 0; trial < 200; trial++) {
    const drawn = new Map<string, number>();
    for (let i = 0; i < n; i++) {
      const u = random();
      let lo = 0;
      let hi = cumulative.length - 1;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (cumulative[mid]! < u) lo = mid + 1;
        else hi = mid;
      }
      drawn.set(keys[lo]!, (drawn.get(keys[lo]!) ?? 0) + 1);
    }
    errors.push(profileError(drawn, truth));
  }
  errors.sort((a, b) => a - b);
  return { median: errors[100]!, p95: errors[190]! };
}

function decorationUpdate(): {
  repaintMs: number;
  changedLevels: number;
  fullHeatMs: number;
  profileMs: number;
  lines: number;
} {
  // 5,000 lines, each with 1-3 sampled addresses, in one file. A throttled repaint sums the window's
  // counts per line (tally), buckets the file's lines by level, and diffs against what the editor
  // shows (only changed levels go to VS Code); between repaints a batch of 2,000 new samples
  // arrives. For comparison, the heat of every line as objects with their intervals (what each
  // repaint used to build), and the whole profile the Hotspots view rebuilds at most once a second.
  const locations = new Map<number, SampleLocation>();
  const index = new LineHeatIndex();
  const counts = new Map<number, number>();
  const addresses: number[] = [];
  let address = 0x1000;
  for (let line = 1; line <= 5_000; line++) {
    for (let k = 0; k < 1 + (line % 3); k++) {
      const loc = { address, function: `f${Math.floor(line / 50)}`, path: '/fw/big.c', line };
      locations.set(address, loc);
      index.locate(address, loc);
      counts.set(address, 1 + ((line * 7919 + k) % 997));
      addresses.push(address);
      address += 2;
    }
  }
  let seed = 12345;
  const random = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  const repaintTimes: number[] = [];
  const heatTimes: number[] = [];
  const profileTimes: number[] = [];
  let shown: number[][] | undefined;
  let changed = 0;
  let lines = 0;
  for (let i = 0; i < 30; i++) {
    for (let k = 0; k < 2_000; k++) {
      const a = addresses[Math.floor(random() * addresses.length)]!;
      counts.set(a, counts.get(a)! + 1);
    }
    const t0 = performance.now();
    index.tally(counts);
    const levels = index.levels('/fw/big.c');
    changed += changedLevels(shown, levels).length;
    shown = levels;
    repaintTimes.push(performance.now() - t0);
    lines = levels.reduce((s, l) => s + l.length, 0);
    const t1 = performance.now();
    linesByLevel(index.heat(counts, true).get('/fw/big.c')!);
    heatTimes.push(performance.now() - t1);
    const t2 = performance.now();
    profileFromSamples({
      executable: 'big.elf',
      sampler: 'qemu-monitor',
      attribution: 'translation-block-start',
      halting: false,
      unit: 'samples',
      counts,
      locations,
    });
    profileTimes.push(performance.now() - t2);
  }
  return {
    repaintMs: median(repaintTimes),
    changedLevels: changed / 30,
    fullHeatMs: median(heatTimes),
    profileMs: median(profileTimes),
    lines,
  };
}

/** One PCSR run through the double: reads until `samples` code samples, then e against the oracle. */
async function measurePcsr(
  fixture: TracedFixture,
  truth: ReturnType<typeof oracleMaps>,
  sleepShare: number,
  samples: number,
): Promise<string[]> {
  // Sleep windows of 25 µs, as many as give the asked share of the time line.
  const every = sleepShare > 0 ? Math.round((25_000 * (1 - sleepShare)) / sleepShare) : Infinity;
  const core = new PcsrCoreModel(
    fixture.trace,
    Number.isFinite(every) ? periodicSleep(fixture.trace.length, every, 25_000) : [],
  );
  const double = await OpenOcdTclDouble.start(core);
  try {
    const sampler = new PcsrSampler({
      tclPort: double.port,
      isRunning: () => true,
      log: (t) => process.stderr.write(t),
    });
    const counts = new Map<number, number>();
    let total = 0;
    let asleep = 0;
    await sampler.start();
    const t0 = performance.now();
    while (total < samples) {
      await sleep(50);
      for (const [a, n] of await sampler.drain()) {
        counts.set(a, (counts.get(a) ?? 0) + n);
        total += n;
      }
      asleep += sampler.drainCountedApart().asleepOrHalted!;
    }
    const seconds = (performance.now() - t0) / 1000;
    await sampler.stop();
    const locations = new Map<number, SampleLocation>(
      [...counts.keys()].map((a) => [a, resolveSampleLocation(fixture.image, a)]),
    );
    return [
      'cortex-m4',
      `openocd-pcsr via Tcl double, ${Math.round(core.sleepShare * 100)} % asleep`,
      total.toLocaleString('en-US'),
      `${Math.round(total / seconds).toLocaleString('en-US')} ` +
        `(${Math.round((total + asleep) / seconds).toLocaleString('en-US')} reads/s)`,
      '-',
      '-',
      `${(profileError(byFunction(counts, locations), truth.functions) * 100).toFixed(2)} %`,
      `${(profileError(byLine(counts, locations), truth.lines) * 100).toFixed(2)} %`,
    ];
  } finally {
    await double.close();
  }
}

async function main(): Promise<void> {
  const rows: string[][] = [];
  const floors: string[] = [];
  const only = option(process.argv, '--only');
  if (
    !decorationOnly &&
    (!only || only.startsWith('openocd')) &&
    (!option(process.argv, '--target') || option(process.argv, '--target') === 'cortex-m4')
  ) {
    const fixture = await traceFixture(fixtureElf('cortex-m4', 'hotloop'), 3_000_000);
    const truth = oracleMaps(fixture.oracle);
    for (const share of [0, 0.2]) {
      const row = await measurePcsr(fixture, truth, share, wantedSamples);
      rows.push(row);
      console.error(`row: ${row.join(' | ')}`);
    }
  }
  for (const target of only?.startsWith('openocd') ? [] : targets) {
    const oracle = await runOracle({ elf: fixtureElf(target, 'hotloop'), maxInstructions: 3_000_000 });
    const truth = oracleMaps(oracle);
    const [fn, line] = [samplingFloor(truth.functions, wantedSamples), samplingFloor(truth.lines, wantedSamples)];
    floors.push(
      `${target}: ideal random sampling at ${wantedSamples.toLocaleString('en-US')} samples would ` +
        `read e function ${(fn.median * 100).toFixed(2)} % ` +
        (`(95th percentile ${(fn.p95 * 100).toFixed(2)} %), e line ${(line.median * 100).toFixed(2)} ` +
          `% (${(line.p95 * 100).toFixed(2)} %)`),
    );
    let plain = NaN;
    for (const config of configs) {
      if (only && config.sampler && !config.name.startsWith(only)) continue;
      const r = await measure(target, config, truth);
      if (!config.sampler) plain = r.roundsPerSecond;
      const row = [
        target,
        config.name,
        config.sampler ? r.samples.toLocaleString('en-US') : '-',
        config.sampler ? Math.round(r.samplesPerSecond).toLocaleString('en-US') : '-',
        r.roundsPerSecond.toFixed(1),
        config.sampler ? `${(plain / r.roundsPerSecond).toFixed(2)}x` : '1.00x',
        config.sampler ? `${(r.eFunction * 100).toFixed(2)} %` : '-',
        config.sampler ? `${(r.eLine * 100).toFixed(2)} %` : '-',
      ];
      rows.push(row);
      // Each row as soon as it is measured: a full run takes many minutes on a loaded machine.
      console.error(`row: ${row.join(' | ')}`);
    }
  }
  if (rows.length > 0)
    printTable(['target', 'sampler', 'samples', 'samples/s', 'rounds/s', 'slowdown', 'e function', 'e line'], rows);
  for (const f of floors) console.log(`statistical floor, ${f}`);
  const d = decorationUpdate();
  console.log(
    `\ndecoration update, 5,000-line file, ${d.lines} decorated lines, 2,000 new samples per ` +
      `repaint: tally + levels + diff ${d.repaintMs.toFixed(2)} ms ` +
      (`(${d.changedLevels.toFixed(1)} of 8 levels handed to VS Code per repaint); every line's ` +
        `heat with intervals ${d.fullHeatMs.toFixed(2)} ms; whole profile (view, ≤ 1/s) ${d.profileMs.toFixed(2)} ` +
        `ms (medians of 30)`),
  );
}

void main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
