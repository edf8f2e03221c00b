import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import type { Socket } from 'node:net';
import { after, afterEach, describe, it } from 'node:test';
import { CONTROL_FD, SPARE_ARG, startHintKey } from '../../common/startHint';
import { SpareAdapter, SpareKeeper } from '../../core/dap/adapterSpare';
import { AdapterHarness, qemuLaunchArgs } from '../support/dap';
import {
  killTagged,
  newOwnerTag,
  OWNER_TAG_VAR,
  processesWithTag,
  waitForNoTaggedProcesses,
  type LiveProcess,
} from '../support/ownedProcesses';
import { adapterBundle, repoRoot } from '../support/paths';
import { finishSession, newCacheDir, teachStartPlan } from '../support/startAhead';

/**
 * Adapters started ahead of their session (core/dap/adapterSpare.ts, adapter/spareHold.ts), as the
 * extension's factory keeps them: the real built adapter, QEMU and GDB. A spare loads and waits with
 * nothing started; handed a session, it starts what the session's hint remembers and serves the
 * launch on it; a spare nobody hands a session, or whose keeper dies, ends with nothing left; and a
 * spare SIGKILLed in its session leaves no QEMU or GDB.
 */
const caches: string[] = [];
const tags: string[] = [];
/** A process is gone within this bound: a condition polled, not a time measured. */
const GONE_BOUND_MS = 10_000;

function cacheDir(): string {
  const dir = newCacheDir();
  caches.push(dir);
  return dir;
}

/** A harness whose adapter is a spare, loaded and waiting, with its own cache directory. */
async function spareHarness(cache: string): Promise<AdapterHarness> {
  const h = new AdapterHarness(undefined, { CYCLELENS_CODE_CACHE: cache }, true);
  tags.push(h.tag);
  await h.start();
  return h;
}

function describeAll(processes: LiveProcess[]): string {
  return processes.map((p) => `${p.pid} ${p.cmdline}`).join('; ') || 'none';
}

/** Waits (on the condition) for `pid` to be gone. */
async function gone(pid: number): Promise<boolean> {
  const deadline = Date.now() + GONE_BOUND_MS;
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch {
      return true;
    }
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('debug adapters started ahead of their session', () => {
  afterEach(() => {
    for (const tag of tags.splice(0)) killTagged(tag);
  });
  after(() => {
    for (const dir of caches) rmSync(dir, { recursive: true, force: true });
  });

  it(
    'a spare waits with nothing started, then takes the QEMU and GDB its hint remembers and ' + 'stops at main',
    async () => {
      const cache = cacheDir();
      const args = qemuLaunchArgs('cortex-m4', 'singlepass');
      await teachStartPlan(args, cache);
      const h = await spareHarness(cache);
      // Loaded and ready: the spare is one process, titled as a spare, with no child.
      await new Promise((r) => setTimeout(r, 200));
      const waiting = processesWithTag(h.tag);
      assert.deepEqual(
        waiting.map((p) => p.pid),
        [h.spareProcess!.pid],
        `a waiting spare starts nothing: ${describeAll(waiting)}`,
      );
      assert.match(waiting[0]!.cmdline, /dist\/adapter\.js --spare$/);
      h.handOver(args);
      const stopped = await h.launchToEntry(args);
      assert.equal(stopped.body.reason, 'entry');
      assert.equal((await h.topFrame()).name, 'main');
      assert.match(
        h.allOutput,
        /^Started ahead of the launch: \S*qemu-system-arm /m,
        'the hint handed over found the remembered QEMU command',
      );
      const serving = processesWithTag(h.tag).find((p) => p.pid === h.spareProcess!.pid);
      assert.ok(
        serving && !/--spare/.test(serving.cmdline),
        `handed a session, its title no longer says spare: ${serving?.cmdline}`,
      );
      await finishSession(h);
    },
  );

  it('a spare handed a configuration never launched starts its own QEMU, and counters and stepping work', async () => {
    const h = await spareHarness(cacheDir());
    const args = qemuLaunchArgs('rv32', 'singlepass');
    h.handOver(args);
    await h.launchToEntry(args);
    assert.match(h.allOutput, /^Starting \S*qemu-system-riscv32 /m);
    const line = (await h.topFrame()).line;
    await Promise.all([h.dc.nextRequest({ threadId: 1 }), h.dc.waitForEvent('stopped')]);
    assert.notEqual((await h.topFrame()).line, line, 'a step moved to another line');
    const counters = await h.custom('cyclelens/counters');
    assert.ok(counters.units.length > 0, 'the counter units are discovered');
    await finishSession(h);
  });

  it('a spare whose keeper lets it go, or writes anything but a handover, ends with nothing started', async () => {
    const tag = newOwnerTag();
    tags.push(tag);
    const env = { ...process.env, CYCLELENS_CODE_CACHE: cacheDir(), [OWNER_TAG_VAR]: tag };
    const discarded = SpareAdapter.spawn({ adapterPath: adapterBundle, env });
    assert.ok(await discarded.ready, 'the spare said ready');
    discarded.discard();
    assert.ok(await gone(discarded.child.pid!), 'a discarded spare ends');
    assert.equal(discarded.child.exitCode, 0, 'by itself, not killed');

    for (const line of ['nonsense\n', '{"hint":"../../etc/passwd"}\n', 'x'.repeat(8192)]) {
      const spare = SpareAdapter.spawn({ adapterPath: adapterBundle, env });
      assert.ok(await spare.ready);
      (spare.child.stdio[CONTROL_FD] as Socket).write(line);
      assert.ok(await gone(spare.child.pid!), `a spare sent ${JSON.stringify(line.slice(0, 40))} ends`);
      assert.equal(spare.child.exitCode, 0);
    }
    assert.deepEqual(await waitForNoTaggedProcesses(tag, GONE_BOUND_MS), [], 'nothing outlives the spares');
  });

  it('started as a spare with no control pipe, the adapter says so and exits', async () => {
    const child = spawn(process.execPath, [adapterBundle, SPARE_ARG], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    assert.equal(code, 2);
    assert.match(stderr, /--spare, but descriptor 3 is not a control pipe.*start it without --spare/);
  });

  it(
    "SIGKILL of the spare's keeper ends the spare; SIGKILL of a spare in its session leaves no " + 'QEMU or GDB',
    async () => {
      const tag = newOwnerTag();
      tags.push(tag);
      // A keeper of its own, as the extension host is: it prints its spare's pid once the spare is ready.
      const keeperProgram = `
      const { SpareAdapter } = require(${JSON.stringify(`${repoRoot}/out/core/dap/adapterSpare.js`)});
      const spare = SpareAdapter.spawn({ adapterPath: ${JSON.stringify(adapterBundle)} });
      spare.ready.then((ok) => process.stdout.write((ok ? spare.child.pid : 0) + '\\n'));
      setInterval(() => undefined, 1000);`;
      const keeper = spawn(process.execPath, ['-e', keeperProgram], {
        stdio: ['ignore', 'pipe', 'inherit'],
        env: { ...process.env, [OWNER_TAG_VAR]: tag },
      });
      const sparePid = await new Promise<number>((resolve) =>
        keeper.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))),
      );
      assert.ok(sparePid > 0, 'the keeper had a spare ready');
      keeper.kill('SIGKILL');
      assert.ok(await gone(sparePid), 'the spare ended with its keeper');
      assert.deepEqual(await waitForNoTaggedProcesses(tag, GONE_BOUND_MS), []);

      const h = await spareHarness(cacheDir());
      const args = qemuLaunchArgs('cortex-m4', 'singlepass');
      h.handOver(args);
      await h.launchToEntry(args);
      assert.ok(
        processesWithTag(h.tag).some((p) => /qemu-system-arm/.test(p.cmdline)),
        'the session runs QEMU',
      );
      h.spareProcess!.kill('SIGKILL');
      const left = await waitForNoTaggedProcesses(h.tag, GONE_BOUND_MS);
      assert.deepEqual(
        left.map((p) => p.cmdline),
        [],
        'nothing the killed adapter started outlives it',
      );
    },
  );

  it('the keeper hands out its spare, spawns the next one later, and ends an idle one', async () => {
    const tag = newOwnerTag();
    tags.push(tag);
    const env = { ...process.env, CYCLELENS_CODE_CACHE: cacheDir(), [OWNER_TAG_VAR]: tag };
    let wanted = true;
    const keeper = new SpareKeeper({
      adapterPath: adapterBundle,
      env,
      refillAfterMs: 100,
      idleMs: 60_000,
      wanted: () => wanted,
    });
    const adapters = (): LiveProcess[] => processesWithTag(tag).filter((p) => /dist\/adapter\.js/.test(p.cmdline));
    const until = async (what: string, ok: () => boolean): Promise<void> => {
      const deadline = Date.now() + GONE_BOUND_MS;
      while (!ok()) {
        if (Date.now() > deadline) assert.fail(`${what}; adapters: ${describeAll(adapters())}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    try {
      const hint = startHintKey({ ...qemuLaunchArgs('rv32', 'singlepass') });
      const first = keeper.take(hint);
      assert.equal(first.fromSpare, false, 'the first session has no spare to take');
      await until('a spare follows the first session', () => adapters().some((p) => p.cmdline.endsWith(SPARE_ARG)));
      const spare = keeper.prepare()!;
      assert.ok(await spare.ready);
      const second = keeper.take(hint);
      assert.equal(second.fromSpare, true, 'the second session takes the spare');
      assert.equal(second.child.pid, spare.child.pid);
      for (const { child } of [first, second]) {
        // A session's adapter whose client goes away ends by itself.
        child.stdin!.end();
        assert.ok(await gone(child.pid!), 'a session adapter whose stdin closed ends');
      }
      await until('another spare follows the second session', () =>
        adapters().some((p) => p.cmdline.endsWith(SPARE_ARG)),
      );
      wanted = false;
      assert.equal(keeper.prepare(), undefined, 'no spare when spares are not wanted');
      await until('a spare no longer wanted ends', () => adapters().length === 0);
    } finally {
      keeper.dispose();
    }
    const idle = new SpareKeeper({ adapterPath: adapterBundle, env, refillAfterMs: 100, idleMs: 300 });
    try {
      assert.ok(await idle.prepare()!.ready);
      await until('an idle spare ends after its idle time', () => adapters().length === 0);
    } finally {
      idle.dispose();
    }
    assert.deepEqual(await waitForNoTaggedProcesses(tag, GONE_BOUND_MS), []);
  });
});
