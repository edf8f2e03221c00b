/**
 * Why the monitor sampler reads as fast as it does: QEMU on the hotloop fixture, read back to back
 * through HMP `info registers` (the line editor's socket) and through QMP `human-monitor-command`,
 * one read in flight or two. Prints reads per second of wall time, and the CPU each read costs
 * QEMU's main thread (from /proc) and this client, so a figure taken on a loaded host can be told
 * apart from what the transport costs: wall rate on a quiet two-core host is bounded by
 * 1e6 / (QEMU µs + client µs) with one read in flight and by 1e6 / max(QEMU µs, client µs) with two.
 * And the function-level TIP error of the reads against the oracle, so a faster channel that reads
 * at correlated moments would show.
 *   npm run bench -- samplingTransport [--target rv32|cortex-m4] [--seconds N]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pcFromMonitorRegisters } from '../adapter/arch/monitorRegisters';
import { HmpMonitor } from '../adapter/sampling/hmpMonitor';
import { ElfImage } from '../adapter/elf/elfImage';
import { QmpMonitor } from '../adapter/sampling/qmpMonitor';
import { runOracle } from '../test/oracle/oracle';
import { profileError } from '../test/oracle/profileError';
import type { FixtureTarget } from '../test/support/paths';
import { fixtureElf } from '../test/support/paths';
import { option, printTable } from './support';

const seconds = Number(option(process.argv, '--seconds') ?? 4);
const targets = (['rv32', 'cortex-m4'] as FixtureTarget[]).filter(
  (t) => !option(process.argv, '--target') || option(process.argv, '--target') === t,
);

/** CPU time (ms) of QEMU's main thread (the one whose tid is the pid: the monitors run there). */
function mainThreadCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

async function withQemu<T>(target: FixtureTarget, fn: (dir: string, pid: number) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'cyclelens-bench-'));
  const argv = [
    ...(target === 'rv32' ? ['-M', 'virt', '-bios', 'none'] : ['-M', 'mps2-an386']),
    '-semihosting-config',
    'enable=on,target=native',
    '-icount',
    'shift=0,sleep=off',
    '-kernel',
    fixtureElf(target, 'hotloop'),
    '-display',
    'none',
    '-serial',
    'null',
    '-monitor',
    `unix:${join(dir, 'hmp.sock')},server=on,wait=off`,
    '-qmp',
    `unix:${join(dir, 'qmp.sock')},server=on,wait=off`,
  ];
  const qemu = spawn(target === 'rv32' ? 'qemu-system-riscv32' : 'qemu-system-arm', argv, { stdio: 'ignore' });
  const exited = new Promise((r) => qemu.once('exit', r));
  try {
    for (let i = 0; i < 100; i++) {
      try {
        readFileSync(join(dir, 'qmp.sock'));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return await fn(dir, qemu.pid!);
  } finally {
    qemu.kill();
    await exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

async function measure(
  read: () => Promise<string>,
  depth: number,
  family: 'riscv' | 'cortex-m',
  pid: number,
  image: ElfImage,
  truth: Map<string, number>,
): Promise<{ rate: number; qemuUs: number; clientUs: number; distinct: number; e: number }> {
  const pcs = new Set<number>();
  const byFunction = new Map<string, number>();
  let n = 0;
  const until = performance.now() + seconds * 1000;
  const q0 = mainThreadCpuMs(pid);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: depth }, async () => {
      while (performance.now() < until) {
        const pc = pcFromMonitorRegisters(family, await read());
        if (pc !== undefined) {
          pcs.add(pc);
          const name = image.functionContaining(pc)?.name ?? '[outside]';
          byFunction.set(name, (byFunction.get(name) ?? 0) + 1);
        }
        n++;
      }
    }),
  );
  const wall = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  return {
    rate: n / wall,
    qemuUs: ((mainThreadCpuMs(pid) - q0) * 1000) / n,
    clientUs: (c.user + c.system) / n,
    distinct: pcs.size,
    e: profileError(byFunction, truth),
  };
}

async function main(): Promise<void> {
  const rows: string[][] = [];
  const load = loadavg()[0]!;
  for (const target of targets) {
    const family = target === 'rv32' ? 'riscv' : 'cortex-m';
    const image = ElfImage.loadSync(fixtureElf(target, 'hotloop'));
    const oracle = await runOracle({ elf: fixtureElf(target, 'hotloop'), maxInstructions: 3_000_000 });
    const truth = new Map(oracle.functions.filter((f) => f.exclusive > 0).map((f) => [f.name, f.exclusive]));
    await withQemu(target, async (dir, pid) => {
      const hmp = await HmpMonitor.connect({ path: join(dir, 'hmp.sock') });
      const qmp = await QmpMonitor.connect(join(dir, 'qmp.sock'));
      const runs: Array<[string, () => Promise<string>, number]> = [
        ['HMP, 1 in flight (the sampler)', () => hmp.command('info registers'), 1],
        ['HMP, 2 in flight', () => hmp.command('info registers'), 2],
        ['QMP human-monitor-command', () => qmp.human('info registers'), 1],
        ['QMP, 2 in flight', () => qmp.human('info registers'), 2],
      ];
      for (const [name, read, depth] of runs) {
        const r = await measure(read, depth, family, pid, image, truth);
        const ceiling = depth === 1 ? 1e6 / (r.qemuUs + r.clientUs) : 1e6 / Math.max(r.qemuUs, r.clientUs);
        rows.push([
          target,
          name,
          Math.round(r.rate).toLocaleString('en-US'),
          r.qemuUs.toFixed(0),
          r.clientUs.toFixed(0),
          Math.round(ceiling).toLocaleString('en-US'),
          String(r.distinct),
          `${(r.e * 100).toFixed(1)} %`,
        ]);
        console.error(`row: ${rows[rows.length - 1]!.join(' | ')}`);
      }
      hmp.close();
      qmp.close();
    });
  }
  printTable(
    [
      'target',
      'transport',
      'reads/s',
      'QEMU µs/read',
      'client µs/read',
      'CPU-bound reads/s',
      'distinct PCs',
      'e function',
    ],
    rows,
  );
  console.log(
    `\nload average at start: ${load.toFixed(1)} on ${cpus().length} cores (reads/s is wall ` +
      `time and follows the load; the µs columns are CPU time)`,
  );
}

void main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
