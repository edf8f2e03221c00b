/**
 * Soak: N launch -> inject -> run -> disconnect cycles against ONE debug adapter process (server
 * mode, one session per connection, as a long-lived adapter serves them), on QEMU RV32 with real
 * GDB, then long live-sampling sessions on the running hotloop. Prints failures, processes left
 * behind after each session, and the adapter's RSS and open file descriptors (handles) over the
 * cycles. The adapter runs with --expose-gc and collects after each session, so its RSS is what
 * sessions left alive rather than garbage V8 has not collected yet. Record the figures in
 * docs/benchmarks.md. With `--heap-snapshots 100,1000` the adapter writes a V8 heap snapshot at
 * those cycles (after the session's collection), and the soak prints what the live heap holds at
 * each and which object kinds grew between them: growth that stops is warm-up, growth per cycle a leak.
 *   npm run bench -- soak [--cycles N] [--sampling-sessions N] [--sampling-seconds S] [--heap-snapshots C,C]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, renameSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DebugClient } from '@vscode/debugadapter-testsupport';
import {
  CustomRequests,
  type InjectResponse,
  type SamplingSnapshotResponse,
  type StopSamplingResponse,
} from '../common/dapCustom';
import { freePort } from '../adapter/util/ports';
import { waitForTcp } from '../adapter/servers/readiness';
import { qemuLaunchArgs } from '../test/support/dap';
import { OWNER_TAG_VAR, newOwnerTag, processesWithTag, killTagged } from '../test/support/ownedProcesses';
import { adapterBundle } from '../test/support/paths';
import { option } from './support';
import { heapGrowth, summariseHeapSnapshot, type HeapSummary } from './support/heapSnapshot';

const cycles = Number(option(process.argv, '--cycles') ?? 100);
const samplingSessions = Number(option(process.argv, '--sampling-sessions') ?? 2);
const samplingSeconds = Number(option(process.argv, '--sampling-seconds') ?? 120);
const snapshotCycles = new Set(
  (option(process.argv, '--heap-snapshots') ?? '')
    .split(',')
    .filter((c) => c !== '')
    .map(Number),
);
const snapshotDir = mkdtempSync(join(tmpdir(), 'cyclelens-soak-heap-'));

/**
 * Asks the adapter for a heap snapshot (SIGUSR2, `--heapsnapshot-signal`) and waits until the file
 * is whole: V8 writes it synchronously, so a size that stays put while the adapter answers is final.
 */
async function heapSnapshot(pid: number, name: string): Promise<string> {
  const before = new Set(readdirSync(snapshotDir));
  process.kill(pid, 'SIGUSR2');
  const deadline = Date.now() + 120_000;
  for (;;) {
    await new Promise((r) => setTimeout(r, 1000));
    const made = readdirSync(snapshotDir).find((f) => !before.has(f) && f.endsWith('.heapsnapshot'));
    if (made) {
      const path = join(snapshotDir, made);
      const size = statSync(path).size;
      await new Promise((r) => setTimeout(r, 2000));
      if (size > 0 && statSync(path).size === size) {
        try {
          JSON.parse(readFileSync(path, 'utf8'));
          const named = join(snapshotDir, `${name}.heapsnapshot`);
          renameSync(path, named);
          return named;
        } catch {
          // Still being written.
        }
      }
    }
    if (Date.now() > deadline) throw new Error(`no heap snapshot from the adapter within 120 s (${snapshotDir})`);
  }
}

function rssKiB(pid: number): number {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}
const openFds = (pid: number): number => readdirSync(`/proc/${pid}/fd`).length;

async function cycle(port: number): Promise<void> {
  const dc = new DebugClient('node', '', 'cyclelens');
  dc.defaultTimeout = 30_000;
  await dc.start(port);
  try {
    await Promise.all([
      dc.configurationSequence(),
      dc.launch(qemuLaunchArgs('rv32', 'singlepass', { programEnd: 'program_end' })),
      dc.waitForEvent('stopped'),
    ]);
    const r = (await dc.customRequest(CustomRequests.inject, { targets: [{ function: 'fir_filter' }] }))
      .body as InjectResponse;
    if (r.injected.length !== 1) throw new Error(`inject refused: ${JSON.stringify(r.refused)}`);
    await dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: '*program_end' }] });
    await Promise.all([dc.continueRequest({ threadId: 1 }), dc.waitForEvent('stopped')]);
    const res = (await dc.customRequest(CustomRequests.injectedResults)).body as { results: Array<{ calls: number }> };
    if (!(res.results[0]?.calls && res.results[0].calls > 0))
      throw new Error(`no calls counted: ${JSON.stringify(res)}`);
    await dc.disconnectRequest({ terminateDebuggee: true });
  } finally {
    await dc.stop().catch(() => undefined);
  }
}

/**
 * One long live-sampling session: the hotloop runs while the QEMU monitor sampler reads its PC for
 * `seconds`; the counts must keep growing and the target must never stop. Calls `sample` every 30 s.
 */
async function samplingSession(port: number, seconds: number, sample: () => void): Promise<number> {
  const dc = new DebugClient('node', '', 'cyclelens');
  dc.defaultTimeout = 30_000;
  await dc.start(port);
  try {
    await Promise.all([
      dc.configurationSequence(),
      dc.launch(qemuLaunchArgs('rv32', 'hotloop')),
      dc.waitForEvent('stopped'),
    ]);
    let stops = 0;
    dc.on('stopped', () => stops++);
    await dc.continueRequest({ threadId: 1 });
    await dc.customRequest(CustomRequests.startSampling, { sampler: 'qemu-monitor' });
    let last = 0;
    for (let t = 0; t < seconds; t += 30) {
      await new Promise((r) => setTimeout(r, Math.min(30, seconds - t) * 1000));
      const snap = (await dc.customRequest(CustomRequests.samplingSnapshot)).body as SamplingSnapshotResponse;
      if (!snap.running || snap.totalSamples <= last)
        throw new Error(`sampling stalled at ${snap.totalSamples} samples (running: ${snap.running})`);
      last = snap.totalSamples;
      sample();
    }
    const stopped = (await dc.customRequest(CustomRequests.stopSampling)).body as StopSamplingResponse;
    if (stops > 0) throw new Error(`the target stopped ${stops} time(s) while sampled`);
    await dc.disconnectRequest({ terminateDebuggee: true });
    return stopped.totalSamples;
  } finally {
    await dc.stop().catch(() => undefined);
  }
}

async function main(): Promise<void> {
  const tag = newOwnerTag();
  const port = await freePort();
  const heapFlags = snapshotCycles.size > 0 ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${snapshotDir}`] : [];
  const adapter = spawn(process.execPath, ['--expose-gc', ...heapFlags, adapterBundle, `--server=${port}`], {
    stdio: 'ignore',
    env: { ...process.env, [OWNER_TAG_VAR]: tag },
  });
  await waitForTcp('127.0.0.1', port, Date.now() + 10_000, () =>
    adapter.exitCode !== null ? 'adapter exited' : undefined,
  );
  const pid = adapter.pid!;
  const failures: string[] = [];
  let leaked = 0;
  const samples: Array<{ cycle: number; rss: number; fds: number }> = [];
  const heaps: Array<{ cycle: number; summary: HeapSummary; rss: number }> = [];
  const started = Date.now();
  for (let i = 1; i <= cycles; i++) {
    try {
      await cycle(port);
    } catch (err) {
      failures.push(`cycle ${i}: ${err instanceof Error ? err.message : String(err)}`);
    }
    // QEMU and GDB of a finished session must be gone (the adapter and its watchdog stay).
    await new Promise((r) => setTimeout(r, 150));
    const left = processesWithTag(tag).filter((p) => /qemu-system|gdb-multiarch/.test(p.cmdline));
    if (left.length > 0) {
      leaked += left.length;
      failures.push(`cycle ${i}: left ${left.map((p) => p.cmdline.split(' ')[0]).join(', ')}`);
      for (const p of left) process.kill(p.pid, 'SIGKILL');
    }
    if (i === 1 || i === 10 || i % 25 === 0 || i === cycles) {
      const s = { cycle: i, rss: rssKiB(pid), fds: openFds(pid) };
      samples.push(s);
      // A long soak reports as it goes, so an interrupted run still leaves its figures.
      console.log(
        `[progress] cycle ${s.cycle}: ${((Date.now() - started) / 1000).toFixed(0)} s, failures ${failures.length}, ` +
          `left behind ${leaked}, RSS ${(s.rss / 1024).toFixed(1)} MiB, fds ${s.fds}`,
      );
    }
    if (snapshotCycles.has(i)) {
      try {
        const file = await heapSnapshot(pid, `cycle-${i}`);
        const summary = summariseHeapSnapshot(file);
        heaps.push({ cycle: i, summary, rss: rssKiB(pid) });
        console.log(
          `[progress] heap snapshot at cycle ${i}: ${file}, ${(summary.bytes / 1048576).toFixed(2)} ` +
            `MiB live in ${summary.nodes} objects`,
        );
      } catch (err) {
        failures.push(`heap snapshot at cycle ${i}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }
  const samplingRss: number[] = [];
  let sampled = 0;
  for (let i = 1; i <= samplingSessions; i++) {
    try {
      sampled += await samplingSession(port, samplingSeconds, () => samplingRss.push(rssKiB(pid)));
    } catch (err) {
      failures.push(`sampling session ${i}: ${err instanceof Error ? err.message : String(err)}`);
    }
    await new Promise((r) => setTimeout(r, 300));
    const left = processesWithTag(tag).filter((p) => /qemu-system|gdb-multiarch/.test(p.cmdline));
    if (left.length > 0) {
      leaked += left.length;
      failures.push(`sampling session ${i}: left ${left.map((p) => p.cmdline.split(' ')[0]).join(', ')}`);
      for (const p of left) process.kill(p.pid, 'SIGKILL');
    }
    const s = { cycle: cycles + i, rss: rssKiB(pid), fds: openFds(pid) };
    console.log(
      `[progress] sampling session ${i} (${samplingSeconds} s): ${sampled} samples so far, ` +
        `failures ${failures.length}, left behind ${leaked}, RSS ${(s.rss / 1024).toFixed(1)} MiB, ` +
        `fds ${s.fds}`,
    );
  }
  let sampledHeap: HeapSummary | undefined;
  if (snapshotCycles.size > 0 && samplingSessions > 0) {
    try {
      sampledHeap = summariseHeapSnapshot(await heapSnapshot(pid, 'after-sampling'));
    } catch (err) {
      failures.push(`heap snapshot after sampling: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  const seconds = (Date.now() - started) / 1000;
  const afterSampling = { rss: rssKiB(pid), fds: openFds(pid) };
  adapter.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 1500));
  killTagged(tag);
  const ref = samples.find((s) => s.cycle === 10) ?? samples[0]!;
  const last = samples[samples.length - 1]!;
  console.log(
    `soak: ${cycles} cycles (launch rv32 singlepass -> inject fir_filter -> run to program_end ` +
      `-> disconnect) in ${seconds.toFixed(0)} s, one adapter process`,
  );
  console.log(`failures: ${failures.length}`);
  for (const f of failures.slice(0, 20)) console.log(`  ${f}`);
  console.log(`QEMU/GDB processes left behind: ${leaked}`);
  console.log('cycle  adapter RSS (MiB)  open fds');
  for (const s of samples)
    console.log(
      `${String(s.cycle).padStart(5)}  ${(s.rss / 1024).toFixed(1).padStart(17)}  ${String(s.fds).padStart(8)}`,
    );
  console.log(
    `RSS growth from cycle ${ref.cycle} to ${last.cycle}: ${(((last.rss - ref.rss) / ref.rss) * 100).toFixed(1)} ` +
      `%; fds ${ref.fds} -> ${last.fds}`,
  );
  for (let h = 1; h < heaps.length; h++) {
    const a = heaps[h - 1]!;
    const b = heaps[h]!;
    const mib = (bytes: number): string => (bytes / 1048576).toFixed(2);
    console.log(
      `live heap (V8 snapshot) cycle ${a.cycle} -> ${b.cycle}: ${mib(a.summary.bytes)} -> ${mib(b.summary.bytes)} ` +
        `MiB (${(((b.summary.bytes - a.summary.bytes) / a.summary.bytes) * 100).toFixed(1)} %), ${a.summary.nodes} ` +
        `-> ${b.summary.nodes} objects; ` +
        `per cycle ${((b.summary.bytes - a.summary.bytes) / (b.cycle - a.cycle)).toFixed(0)} ` +
        `bytes`,
    );
    console.log('  grew most (bytes, count change, count after):');
    for (const g of heapGrowth(a.summary, b.summary))
      console.log(
        `  ${String(g.bytes).padStart(10)}  ${String(g.countDelta).padStart(7)}  ${String(g.count).padStart(7)} ` +
          ` ${g.key}`,
      );
  }
  const lastHeap = heaps[heaps.length - 1];
  if (sampledHeap && lastHeap) {
    console.log(
      `live heap (V8 snapshot) cycle ${lastHeap.cycle} -> after sampling: ` +
        `${(lastHeap.summary.bytes / 1048576).toFixed(2)} ` +
        `-> ${(sampledHeap.bytes / 1048576).toFixed(2)} MiB ` +
        `(${(((sampledHeap.bytes - lastHeap.summary.bytes) / lastHeap.summary.bytes) * 100).toFixed(1)} %)`,
    );
    for (const g of heapGrowth(lastHeap.summary, sampledHeap, 8))
      console.log(
        `  ${String(g.bytes).padStart(10)}  ${String(g.countDelta).padStart(7)}  ${String(g.count).padStart(7)} ` +
          ` ${g.key}`,
      );
  }
  if (samplingSessions > 0) {
    const mib = (k: number): string => (k / 1024).toFixed(1);
    console.log(
      `live sampling: ${samplingSessions} session(s) of ${samplingSeconds} s, ${sampled} samples; ` +
        `adapter RSS while sampling ${mib(Math.min(...samplingRss))}-${mib(Math.max(...samplingRss))} ` +
        `MiB, after ${mib(afterSampling.rss)} MiB (${(((afterSampling.rss - last.rss) / last.rss) * 100).toFixed(1)} ` +
        `% against the last cycle); fds ${last.fds} -> ${afterSampling.fds}`,
    );
  }
  process.exitCode = failures.length > 0 ? 1 : 0;
}

void main();
