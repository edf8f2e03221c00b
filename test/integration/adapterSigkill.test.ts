import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import type { CycleLensLaunchArgs } from '../../common/launchArgs';
import { AdapterHarness, qemuLaunchArgs } from '../support/dap';
import {
  killTagged,
  newOwnerTag,
  OWNER_TAG_VAR,
  processesWithTag,
  waitForNoTaggedProcesses,
} from '../support/ownedProcesses';
import { adapterBundle, fixtureElf, fixturesDir, repoRoot } from '../support/paths';
import { hintedEnv, newCacheDir, teachStartPlan } from '../support/startAhead';

/**
 * The adapter SIGKILLed at any moment leaves no QEMU, GDB, OpenOCD or LLDB bridge behind. SIGKILL
 * runs none of the adapter's exit hooks: what ends its children is the watchdog
 * (adapter/util/childWatchdog.ts), and before a child is registered with it, the gate the child waits
 * at (adapter/util/guardedSpawn.ts). The moments that matter most are between a child's fork and the
 * return of `spawn`: a killer thread watches the adapter's children in /proc and kills the adapter as
 * soon as the child it waits for is forked. The CLI, SIGKILLed as it starts its adapters, leaves none
 * of them behind either. Real adapter bundle, CLI, QEMU, GDB, OpenOCD and LLDB.
 */
const cache = newCacheDir();
const workspace = newCacheDir();
const hinted = qemuLaunchArgs('cortex-m4', 'singlepass');
const tags: string[] = [];
/** A survivor is gone within this bound (the watchdog's grace is 0.7 s); a condition polled, not a time measured. */
const SURVIVOR_BOUND_MS = 10_000;

/**
 * Run in a thread of its own, started before the adapter: it waits for the adapter's pid, then reads
 * /proc in a tight loop, so that it sees a child between its fork and its exec.
 */
const killerProgram = `
const { workerData, parentPort } = require('node:worker_threads');
const { readFileSync } = require('node:fs');
function run({ shared, known, count, ms }) {
  const slot = new Int32Array(shared);
  parentPort.postMessage('ready');
  Atomics.wait(slot, 0, 0, ms);
  const pid = Atomics.load(slot, 0);
  if (pid === 0) return { killed: false, seen: [] };
  const file = '/proc/' + pid + '/task/' + pid + '/children';
  const deadline = Date.now() + ms;
  for (;;) {
    let children;
    try {
      children = readFileSync(file, 'utf8').split(' ').filter(Boolean).map(Number);
    } catch {
      return { killed: false, seen: [] };
    }
    const fresh = children.filter((c) => !known.includes(c));
    if (fresh.length >= count || Date.now() > deadline) {
      process.kill(pid, 'SIGKILL');
      return { killed: fresh.length === count, seen: fresh };
    }
  }
}
parentPort.postMessage(run(workerData));
`;

interface KillReport {
  /** Whether the adapter was killed with exactly the awaited number of new children (not later, nor at the bound). */
  killed: boolean;
  /** The new children seen at the kill. */
  seen: number[];
}

/**
 * A killer thread, running once this resolves: `arm(pid)` makes it kill `pid` as soon as `pid` has
 * `count` children not in `known` (or after `ms`), and resolves with what it saw.
 */
async function killAtFork(
  count: number,
  known: number[] = [],
  ms = 20_000,
): Promise<(pid: number) => Promise<KillReport>> {
  const shared = new SharedArrayBuffer(4);
  const worker = new Worker(killerProgram, { eval: true, workerData: { shared, known, count, ms } });
  const report = new Promise<KillReport>((resolve, reject) => {
    worker.on('message', (m: KillReport | 'ready') => m !== 'ready' && resolve(m));
    worker.once('error', reject);
  });
  await new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('error', reject);
  });
  return (pid) => {
    const slot = new Int32Array(shared);
    Atomics.store(slot, 0, pid);
    Atomics.notify(slot, 0);
    return report;
  };
}

function childrenOf(pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
}

/**
 * The adapter as the extension's factory spawns it: the bundle under Node, stdio pipes, the hint in its
 * environment.
 */
function spawnAdapter(env: Record<string, string>): { child: ChildProcess; tag: string } {
  const tag = newOwnerTag();
  tags.push(tag);
  const child = spawn(process.execPath, [adapterBundle], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, ...env, [OWNER_TAG_VAR]: tag },
  });
  child.stdout?.resume();
  child.stderr?.resume();
  return { child, tag };
}

async function assertNothingLeft(tag: string, moment: string): Promise<void> {
  const left = await waitForNoTaggedProcesses(tag, SURVIVOR_BOUND_MS);
  assert.deepEqual(
    left.map((p) => p.cmdline),
    [],
    `SIGKILL of ${moment}: nothing it started may outlive it`,
  );
}

/**
 * A hinted adapter (its loader starts the watchdog, GDB and QEMU) killed at its `n`-th fork. A killer
 * thread kept off the CPU for a moment may see the fork only later: each try checks that nothing
 * survives, and one of a few tries must hit the moment itself.
 */
async function killHintedAtFork(n: number, what: string): Promise<void> {
  const seen: number[] = [];
  for (let attempt = 0; attempt < 5; attempt++) {
    const arm = await killAtFork(n);
    const { child, tag } = spawnAdapter(hintedEnv(hinted, cache));
    const report = await arm(child.pid!);
    seen.push(report.seen.length);
    await assertNothingLeft(tag, `the adapter as its loader forked ${what} (${report.seen.length} children seen)`);
    if (report.killed) return;
  }
  assert.fail(
    `the adapter was never killed as its loader forked ${what} (its child #${n}); children seen ` +
      `at each kill: ${seen.join(', ')}`,
  );
}

/** An adapter with a launch in flight, killed as the launch forks its `n`-th process (tried a few times, as above). */
async function killAtLaunchFork(args: CycleLensLaunchArgs, n: number, what: string): Promise<void> {
  const seen: number[] = [];
  for (let attempt = 0; attempt < 3; attempt++) {
    const h = new AdapterHarness();
    tags.push(h.tag);
    await h.start();
    await h.dc.initializeRequest();
    const adapter = processesWithTag(h.tag).find((p) => /dist\/adapter\.js/.test(p.cmdline));
    assert.ok(adapter, 'the adapter runs');
    // GDB starts with the adapter, before any launch: the launch's own processes come after it.
    const ready = Date.now() + SURVIVOR_BOUND_MS;
    while (!processesWithTag(h.tag).some((p) => /gdb-multiarch/.test(p.cmdline)) && Date.now() < ready)
      await new Promise((r) => setTimeout(r, 10));
    const arm = await killAtFork(n, childrenOf(adapter.pid));
    const killing = arm(adapter.pid);
    h.dc.launch(args).catch(() => undefined);
    const report = await killing;
    seen.push(report.seen.length);
    await assertNothingLeft(
      h.tag,
      `the adapter as the launch forked ${what} (${report.seen.length} new children seen)`,
    );
    if (report.killed) return;
  }
  assert.fail(
    `the adapter was never killed as the launch forked ${what} (its child #${n}); new children ` +
      `seen at each kill: ${seen.join(', ')}`,
  );
}

describe('an adapter SIGKILLed at any moment leaves no process behind', () => {
  before(async () => {
    assert.ok(
      existsSync(`/proc/${process.pid}/task/${process.pid}/children`),
      'this test reads /proc/PID/task/PID/children (Linux, CONFIG_PROC_CHILDREN)',
    );
    await teachStartPlan(hinted, cache);
  });
  afterEach(() => {
    for (const tag of tags.splice(0)) killTagged(tag);
  });
  after(() => {
    rmSync(cache, { recursive: true, force: true });
    rmSync(workspace, { recursive: true, force: true });
  });

  it('killed 0, 5, 10, 20, 40 and 80 ms after its spawn, while its loader starts QEMU and GDB', async () => {
    for (const ms of [0, 5, 10, 20, 40, 80]) {
      const { child, tag } = spawnAdapter(hintedEnv(hinted, cache));
      if (ms > 0) await new Promise((r) => setTimeout(r, ms));
      child.kill('SIGKILL');
      await assertNothingLeft(tag, `the adapter ${ms} ms after its spawn`);
    }
  });

  it('killed as its loader forks the watchdog, GDB and QEMU, before the watchdog knows them', async () => {
    await killHintedAtFork(1, 'the watchdog');
    await killHintedAtFork(2, 'GDB');
    // QEMU does not end when its stdin closes, as GDB does: this moment left it running at full speed.
    for (let i = 0; i < 3; i++) await killHintedAtFork(3, 'QEMU');
  });

  it('killed right after initialize, with the QEMU and GDB started ahead running', async () => {
    const h = new AdapterHarness(undefined, hintedEnv(hinted, cache));
    tags.push(h.tag);
    await h.start();
    await h.dc.initializeRequest();
    const adapter = processesWithTag(h.tag).find((p) => /dist\/adapter\.js/.test(p.cmdline));
    assert.ok(adapter, 'the adapter runs');
    process.kill(adapter.pid, 'SIGKILL');
    await assertNothingLeft(h.tag, 'the adapter after initialize');
  });

  it('killed right after the launch answered, with the session on its QEMU and GDB', async () => {
    const h = new AdapterHarness(undefined, hintedEnv(hinted, cache));
    tags.push(h.tag);
    await h.start();
    await h.launchToEntry(hinted);
    const adapter = processesWithTag(h.tag).find((p) => /dist\/adapter\.js/.test(p.cmdline));
    assert.ok(adapter, 'the adapter runs');
    process.kill(adapter.pid, 'SIGKILL');
    await assertNothingLeft(h.tag, 'the adapter after the launch');
  });

  it('killed as a launch forks its own QEMU (no start hint), OpenOCD, or the LLDB bridge', async () => {
    await killAtLaunchFork(qemuLaunchArgs('rv32', 'singlepass'), 1, 'QEMU');
    const openocd = join(repoRoot, 'test', 'integration', 'openocd');
    const onOpenOcd: CycleLensLaunchArgs = {
      executable: fixtureElf('rv32', 'singlepass'),
      server: { type: 'openocd', configFiles: ['dummy-riscv.cfg'], searchDirs: [openocd] },
      stopAtEntry: 'main',
    };
    await killAtLaunchFork(onOpenOcd, 1, 'OpenOCD');
    // With LLDB the launch starts QEMU, then the bridge (Python with LLDB's module).
    await killAtLaunchFork(qemuLaunchArgs('cortex-m4', 'singlepass', { debugger: 'lldb' }), 2, 'the LLDB bridge');
  });

  // The CLI's adapters are not killed with it: an adapter whose client vanishes (its stdin closed)
  // ends its session itself, putting the target back as it was, and then its children.
  it(
    'the CLI killed as it forks its first adapter and its parallel worker leaves no adapter, ' + 'QEMU or GDB',
    async () => {
      mkdirSync(join(workspace, '.vscode'), { recursive: true });
      const elf = join(fixturesDir, 'build', 'rv32', 'programs', 'json.elf');
      const configuration = {
        type: 'cyclelens',
        request: 'launch',
        name: 'json',
        executable: elf,
        server: { type: 'qemu', machine: 'virt' },
        stopAtEntry: 'main',
      };
      writeFileSync(
        join(workspace, '.vscode', 'launch.json'),
        JSON.stringify({ version: '0.2.0', configurations: [configuration] }),
      );
      for (const [n, what] of [
        [1, 'its first adapter'],
        [2, 'the adapter of its second job'],
      ] as const) {
        const tag = newOwnerTag();
        tags.push(tag);
        const arm = await killAtFork(n);
        const argv = [
          join(repoRoot, 'dist', 'cli.js'),
          'profile',
          '--slots',
          '1',
          '--jobs',
          '2',
          '--config',
          '.vscode/launch.json',
          '--name',
          'json',
          '--out',
          join(workspace, 'out.json'),
        ];
        const cli = spawn(process.execPath, argv, {
          cwd: workspace,
          stdio: ['ignore', 'ignore', 'ignore'],
          env: { ...process.env, CYCLELENS_CODE_CACHE: cache, [OWNER_TAG_VAR]: tag },
        });
        const report = await arm(cli.pid!);
        await assertNothingLeft(tag, `the CLI as it forked ${what}`);
        assert.ok(report.seen.length >= n, `the CLI forked ${what}`);
      }
    },
  );
});
