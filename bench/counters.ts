/**
 * Counter benchmark: time to read every configured slot once, and how many GDB round trips one
 * read costs, through the built adapter on both QEMU targets. Round trips are counted from the
 * adapter's own MI trace (`trace: true`), so the figure is what the adapter really sends.
 *   npm run bench -- counters [--reads N]
 */
import type { CountersResponse, EventsResponse } from '../common/dapCustom';
import { CustomRequests } from '../common/dapCustom';
import { AdapterHarness, qemuLaunchArgs } from '../test/support/dap';
import type { FixtureTarget } from '../test/support/paths';
import { median, printTable } from './support';

const reads = Number(process.argv[process.argv.indexOf('--reads') + 1] ?? 0) || 50;

async function benchTarget(target: FixtureTarget): Promise<string[]> {
  const h = new AdapterHarness();
  await h.start();
  await h.launchToEntry(qemuLaunchArgs(target, 'singlepass', { trace: true }));
  const { events } = (await h.dc.customRequest(CustomRequests.events)).body as EventsResponse;
  // Every fixed-function event the target has, one slot each.
  const units = ((await h.dc.customRequest(CustomRequests.counters)).body as CountersResponse).units;
  const fixed = [
    ...new Set(
      units.filter((u) => u.present).flatMap((u) => u.slots.map((s) => s.fixedEvent).filter((e): e is string => !!e)),
    ),
  ];
  const wanted = fixed.length > 0 ? fixed : [events[0]!.id];
  await h.dc.customRequest(CustomRequests.configure, { events: wanted });
  const times: number[] = [];
  const before = h.output.length;
  for (let i = 0; i < reads; i++) {
    const t0 = performance.now();
    await h.dc.customRequest(CustomRequests.read);
    times.push(performance.now() - t0);
  }
  const commands = h.output
    .slice(before)
    .join('')
    .split('\n')
    .filter((l) => /^-> \d+-/.test(l)).length;
  await h.stop();
  return [target, wanted.join(', '), `${median(times).toFixed(2)} ms`, (commands / reads).toFixed(1)];
}

async function main(): Promise<void> {
  const rows: string[][] = [];
  for (const target of ['rv32', 'cortex-m4'] as FixtureTarget[]) rows.push(await benchTarget(target));
  printTable(['target', 'slots read', `read all slots (median of ${reads})`, 'GDB round trips per read'], rows);
}

void main();
