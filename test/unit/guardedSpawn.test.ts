import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, describe, it } from 'node:test';
import { spawnGuarded } from '../../adapter/util/guardedSpawn';
import { findExecutable } from '../../adapter/util/processes';

/**
 * adapter/util/guardedSpawn.ts with real processes: a parent spawns `sleep` through it and is then
 * SIGKILLed, which runs none of its exit hooks. The child waits at the gate until the watchdog has
 * it, and runs nothing if the parent dies first.
 */
const modules = join(__dirname, '..', '..', 'adapter', 'util');
const sleep = findExecutable('sleep');
const scratch = mkdtempSync(join(tmpdir(), 'cyclelens-guard-test-'));

/** Alive and not a zombie (an orphan's zombie lingers until a reaper collects it). */
function alive(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}

async function until(cond: () => boolean, ms = 10_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return cond();
}

/**
 * A Node parent that spawns `sleep 60` through spawnGuarded with `watchdog` (a JavaScript expression)
 * and prints the child's pid; resolves with both pids.
 */
async function parentSpawningSleep(watchdog: string): Promise<{ parent: ReturnType<typeof spawn>; child: number }> {
  const program = `
    const { spawnGuarded } = require(${JSON.stringify(join(modules, 'guardedSpawn.js'))});
    const { ChildWatchdog } = require(${JSON.stringify(join(modules, 'childWatchdog.js'))});
    const child = spawnGuarded(${JSON.stringify(sleep)}, ['60'], { detached: true, stdio: 'ignore' }, ${watchdog});
    console.log(child.pid);
    setInterval(() => {}, 1000);`;
  const parent = spawn(process.execPath, ['-e', program], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve) => createInterface({ input: parent.stdout! }).once('line', resolve));
  return { parent, child: Number(line) };
}

/** Runs `check` on such a parent and its child, then kills both whatever happened. */
async function withParentSpawningSleep(
  watchdog: string,
  check: (parent: ReturnType<typeof spawn>, child: number) => Promise<void>,
): Promise<void> {
  const { parent, child } = await parentSpawningSleep(watchdog);
  try {
    await check(parent, child);
  } finally {
    parent.kill('SIGKILL');
    killGroup(child);
  }
}

const cmdline = (pid: number): string =>
  existsSync(`/proc/${pid}/cmdline`) ? readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0')[0]! : '';

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // gone
  }
}

describe('spawning a child that dies with the adapter', { skip: process.platform !== 'linux' || !sleep }, () => {
  after(() => rmSync(scratch, { recursive: true, force: true }));

  it(
    'the command runs once the watchdog has it, ' +
      'without the gate’s pipe, ' +
      'and the watchdog ends it with its parent',
    async () => {
      await withParentSpawningSleep('new ChildWatchdog()', async (parent, child) => {
        assert.ok(await until(() => cmdline(child) === sleep), 'the gate opens once the child is registered');
        assert.ok(
          !readdirSync(`/proc/${child}/fd`).includes('3'),
          'the gate’s pipe (fd 3) is closed before the command runs',
        );
        parent.kill('SIGKILL');
        assert.ok(await until(() => !alive(child)), 'the watchdog ends the child');
      });
    },
  );

  it('a parent that dies before the registration leaves a gate that runs nothing', async () => {
    // A watchdog that never confirms the registration: the gate stays shut until the parent dies.
    await withParentSpawningSleep('{ ready: () => true, watch: () => undefined }', async (parent, child) => {
      assert.ok(alive(child), 'the gate waits');
      assert.notEqual(cmdline(child), sleep, 'nothing runs before the registration');
      parent.kill('SIGKILL');
      assert.ok(await until(() => !alive(child)), 'the gate exits with its parent');
    });
  });

  it('a command that is not there fails as spawn reports it', async () => {
    const child = spawnGuarded(join(scratch, 'no-such-program'), [], { stdio: 'ignore' }, undefined);
    const err = await new Promise<NodeJS.ErrnoException>((resolve) => child.once('error', resolve));
    assert.equal(err.code, 'ENOENT');
  });
});
