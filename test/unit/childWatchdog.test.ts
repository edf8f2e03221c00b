import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';

/**
 * The child watchdog (adapter/util/childWatchdog.ts) with real processes: a parent registers three
 * process groups and forgets one, then dies by SIGKILL, which runs none of its exit hooks. The
 * registered groups must go (SIGTERM, then SIGKILL for one that ignores SIGTERM), the forgotten one
 * must stay, and the watchdog itself must end.
 */
const watchdogModule = join(__dirname, '..', '..', 'adapter', 'util', 'childWatchdog.js');

/** Alive and not a zombie (an orphan's zombie lingers until a reaper collects it). */
function alive(pid: number): boolean {
  const stat = `/proc/${pid}/stat`;
  if (!existsSync(stat)) return false;
  try {
    return readFileSync(stat, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}

async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return cond();
}

describe('the child watchdog', { skip: process.platform !== 'linux' }, () => {
  it('kills the registered groups when its parent is SIGKILLed, and only those', async () => {
    const parentProgram =
      `
      const { spawn } = require('node:child_process');
      const { ChildWatchdog } = require(${JSON.stringify(watchdogModule)});
      const w = new ChildWatchdog();
      const opts = { detached: true, stdio: 'ignore' };
      const plain = spawn('sleep', ['60'], opts);
      const stubborn = spawn('sh', ['-c', 'trap "" TERM; sleep 60'], opts);
      const forgotten = spawn('sleep', ['60'], opts);
      for (const c of [plain, stubborn, forgotten]) w.watch(c.pid);
      w.forget(forgotten.pid);
      console.log(JSON.stringify({ plain: plain.pid, stubborn: stubborn.pid, forgotten: forgotten.pid,` +
      ` watchdog: w.pid }));
      setInterval(() => {}, 1000);`;
    const parent = spawn(process.execPath, ['-e', parentProgram], { stdio: ['ignore', 'pipe', 'inherit'] });
    const line = await new Promise<string>((resolve) =>
      createInterface({ input: parent.stdout! }).once('line', resolve),
    );
    const pids = JSON.parse(line) as { plain: number; stubborn: number; forgotten: number; watchdog: number };
    try {
      for (const pid of Object.values(pids)) assert.ok(alive(pid), `${pid} runs before the parent dies`);
      // The stubborn group ignores SIGTERM; it is still there right after the parent dies.
      parent.kill('SIGKILL');
      assert.ok(await until(() => !alive(pids.plain), 2_000), 'the plain group ends on SIGTERM');
      assert.ok(await until(() => !alive(pids.stubborn), 3_000), 'the group that ignores SIGTERM ends on SIGKILL');
      assert.ok(await until(() => !alive(pids.watchdog), 2_000), 'the watchdog ends');
      assert.ok(alive(pids.forgotten), 'a forgotten group is never signalled');
    } finally {
      for (const pid of Object.values(pids)) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
    }
  });
});
