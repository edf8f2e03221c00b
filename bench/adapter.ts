/**
 * Adapter benchmark: launch-to-stopped-at-main time, median step latency and readMemory
 * throughput through the built adapter, real GDB and real QEMU, on both no-hardware targets.
 * Prints figures; record them in docs/benchmarks.md with the commit.
 *   npm run bench -- adapter [--runs N]
 */
import { AdapterHarness, fixtureSource, qemuLaunchArgs } from '../test/support/dap';
import { markerLine } from '../test/support/markers';
import type { FixtureTarget } from '../test/support/paths';
import { median, printTable } from './support';

const runs = Number(process.argv[process.argv.indexOf('--runs') + 1] ?? 0) || 5;

async function launchTime(target: FixtureTarget): Promise<number> {
  const h = new AdapterHarness();
  await h.start();
  const t0 = performance.now();
  await h.launchToEntry(qemuLaunchArgs(target));
  const ms = performance.now() - t0;
  await h.stop();
  return ms;
}

async function steppingAndMemory(target: FixtureTarget): Promise<{ stepMs: number; bytesPerSecond: number }> {
  const h = new AdapterHarness();
  await h.start();
  await h.launchToEntry(qemuLaunchArgs(target));
  const dsp = fixtureSource('dsp.c');
  await h.dc.setBreakpointsRequest({
    source: { path: dsp },
    breakpoints: [{ line: markerLine(dsp, '#REGION_START') }],
  });
  await Promise.all([h.dc.continueRequest({ threadId: 1 }), h.dc.waitForEvent('stopped')]);
  await h.dc.setBreakpointsRequest({ source: { path: dsp }, breakpoints: [] });
  // A step as VS Code does it: the request, the stop, then the top of the stack.
  const steps: number[] = [];
  for (let i = 0; i < 30; i++) {
    const t0 = performance.now();
    await Promise.all([h.dc.nextRequest({ threadId: 1 }), h.dc.waitForEvent('stopped')]);
    await h.dc.stackTraceRequest({ threadId: 1, startFrame: 0, levels: 20 });
    steps.push(performance.now() - t0);
  }
  // Memory view reads: 4 KiB requests over 256 KiB of RAM.
  const base = BigInt(target === 'rv32' ? 0x80100000 : 0x20000000);
  const chunk = 4096;
  const total = 256 * 1024;
  const t0 = performance.now();
  for (let off = 0; off < total; off += chunk) {
    const r = await h.dc.customRequest('readMemory', {
      memoryReference: `0x${(base + BigInt(off)).toString(16)}`,
      count: chunk,
    });
    if (Buffer.from(r.body.data, 'base64').length !== chunk) throw new Error('short read');
  }
  const seconds = (performance.now() - t0) / 1000;
  await h.stop();
  return { stepMs: median(steps), bytesPerSecond: total / seconds };
}

async function main(): Promise<void> {
  const rows: string[][] = [];
  for (const target of ['rv32', 'cortex-m4'] as FixtureTarget[]) {
    const launches: number[] = [];
    for (let i = 0; i < runs; i++) launches.push(await launchTime(target));
    const { stepMs, bytesPerSecond } = await steppingAndMemory(target);
    rows.push([
      target,
      `${median(launches).toFixed(0)} ms`,
      `${stepMs.toFixed(1)} ms`,
      `${(bytesPerSecond / 1024).toFixed(0)} KiB/s`,
    ]);
  }
  printTable(
    [
      'target',
      `launch → stopped at main (median of ${runs})`,
      'step over + stack (median of 30)',
      'readMemory, 4 KiB requests',
    ],
    rows,
  );
}

void main();
