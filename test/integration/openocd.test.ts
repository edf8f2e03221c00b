import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, afterEach, describe, test } from 'node:test';
import type { OpenOcdServerArgs } from '../../common/launchArgs';
import { CycleLensError, ErrorCode } from '../../adapter/errors';
import { OpenOcdOptions, OpenOcdServer } from '../../adapter/servers/openocd';
import type { ServerExit } from '../../adapter/servers/strategy';
import { TclCommandError } from '../../adapter/servers/tclRpc';
import {
  killTagged,
  newOwnerTag,
  OWNER_TAG_VAR,
  processesWithTag,
  waitForNoTaggedProcesses,
} from '../support/ownedProcesses';
import { repoRoot } from '../support/paths';

/**
 * A real OpenOCD 0.12 with the `dummy` adapter driver (no probe, no board). What it does there, found
 * by trying (see the .cfg files): with a RISC-V target it fails examination but keeps running, serves
 * Tcl RPC and listens for GDB; with no target it runs without a GDB port; a Cortex-M target makes it
 * exit because the debug port cannot be initialised.
 */
const configDir = join(repoRoot, 'test', 'integration', 'openocd');
const tag = newOwnerTag();
const options: OpenOcdOptions = { env: { ...process.env, [OWNER_TAG_VAR]: tag } };

interface Started {
  server: OpenOcdServer;
  output: () => string;
}

function openocd(server: Partial<OpenOcdServerArgs> = {}, extra: OpenOcdOptions = {}): OpenOcdServer {
  return new OpenOcdServer(
    { type: 'openocd', configFiles: ['dummy-riscv.cfg'], searchDirs: [configDir], ...server },
    { ...options, ...extra },
  );
}

async function start(server: OpenOcdServer): Promise<Started> {
  let output = '';
  await server.start({ executable: '', family: 'riscv', cwd: repoRoot, log: (text) => (output += text) });
  return { server, output: () => output };
}

function failsWith(code: ErrorCode, pattern: RegExp) {
  return (err: unknown): boolean => {
    assert.ok(err instanceof CycleLensError, `not a CycleLensError: ${String(err)}`);
    assert.equal(err.code, code, err.message);
    assert.match(err.message, pattern);
    return true;
  };
}

const limit = { timeout: 30_000 };

/** OpenOCD's log reaches us through a pipe, possibly after the Tcl reply that caused it. */
async function eventuallyMatches(text: () => string, pattern: RegExp): Promise<void> {
  const deadline = Date.now() + 3000;
  while (!pattern.test(text()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  assert.match(text(), pattern);
}

describe('OpenOcdServer with the dummy adapter', () => {
  afterEach(async () => {
    // Every case, passed or failed, must leave no OpenOCD behind.
    assert.deepEqual(await waitForNoTaggedProcesses(tag), []);
  });
  after(() => killTagged(tag));

  test('starts, and answers Tcl RPC: results, errors, quoting', limit, async () => {
    const { server, output } = await start(openocd());
    try {
      assert.match(server.gdbAddress, /^127\.0\.0\.1:\d+$/);
      assert.match(output(), new RegExp(`Listening on port ${server.ports.gdb} for gdb connections`));
      assert.equal(processesWithTag(tag).length, 1);
      const tcl = server.tcl;

      assert.match(await tcl.command('version'), /^Open On-Chip Debugger 0\.\d+/);
      assert.equal(await tcl.command('expr {6 * 7}'), '42');
      assert.equal(await tcl.command('set ::cyclelens_test ""'), '');
      assert.equal(await tcl.command('target names'), 'dummy.cpu');
      // ocd_-free command names of 0.12: `capture` returns what a command logged.
      assert.equal(await tcl.command('capture {echo hello}'), 'hello\n');

      // A Tcl error is told apart from a result.
      await assert.rejects(tcl.command('no_such_command 1'), (err: unknown) => {
        assert.ok(err instanceof TclCommandError);
        assert.equal(err.code, ErrorCode.TclError);
        assert.equal(err.returnCode, 1);
        assert.equal(err.openOcdMessage, 'invalid command name "no_such_command"');
        return true;
      });
      await assert.rejects(tcl.command('error {custom failure}'), failsWith(ErrorCode.TclError, /custom failure/));

      // The target exists but was never examined: OpenOCD's own failures come back with the message
      // it only logs (`halt` returns code -4, ERROR_TARGET_NOT_EXAMINED, and an empty result).
      assert.equal(await tcl.targetState(), 'unknown');
      await assert.rejects(tcl.halt(), (err: unknown) => {
        assert.ok(err instanceof TclCommandError);
        assert.equal(err.returnCode, -4);
        assert.equal(err.openOcdMessage, 'Target not examined yet');
        return true;
      });
      await assert.rejects(
        tcl.readMemory(0x20000000, 32, 4),
        failsWith(ErrorCode.TclError, /read_memory: failed to read memory\nTarget not examined yet/),
      );
      await assert.rejects(
        tcl.writeMemory(0x20000000, 32, [1, 2]),
        failsWith(ErrorCode.TclError, /write_memory: failed to write memory/),
      );

      // Quoting round-trips through OpenOCD's Jim, and results are binary-safe (0x1a, NUL included).
      for (const s of [
        '',
        'a b',
        '{',
        '}x{',
        '$x [y] "z";',
        'back\\slash\\',
        'tab\tnew\nline',
        'é',
        'ctrl-z \x1a here',
        'nul\x00byte',
      ]) {
        assert.equal(await tcl.call('set', '::cyclelens_test', s), s, JSON.stringify(s));
      }

      // Results are not echoed into OpenOCD's log (they would flood the Debug Console when sampling).
      await tcl.call('set', '::cyclelens_test', 'marker-7f3a');
      await tcl.call('echo', 'sync-7f3a');
      await eventuallyMatches(output, /sync-7f3a/);
      assert.doesNotMatch(output(), /marker-7f3a/);

      await tcl.enableNotifications();
      await eventuallyMatches(output, /Target Notification output\s+is enabled/);
    } finally {
      await server.stop();
    }
    await eventuallyMatches(output, /shutdown command invoked/);
    await server.stop();
    assert.throws(() => server.tcl, failsWith(ErrorCode.NotRunning, /not open/));
  });

  test('a configuration without a target is reported as such', limit, async () => {
    await assert.rejects(
      start(openocd({ configFiles: ['dummy-no-target.cfg'] })),
      failsWith(
        ErrorCode.ServerFailedToStart,
        new RegExp(
          /^OpenOCD started but configured no target: check your -f target\/… file\./.source +
            /.*"gdb services need one or more targets defined"/.source,
          's',
        ),
      ),
    );
  });

  test('a target OpenOCD cannot reach: it exits, and its last lines are quoted', limit, async () => {
    await assert.rejects(
      start(openocd({ configFiles: ['dummy-cortex-m.cfg'] })),
      failsWith(
        ErrorCode.ServerFailedToStart,
        new RegExp(
          /OpenOCD exited with code 1 before it was ready for GDB\. Its last output:/.source +
            /\n.*Invalid ACK \(7\) in DAP response/.source,
          's',
        ),
      ),
    );
  });

  test('a missing configuration file is named with the folders searched, before anything starts', limit, async () => {
    await assert.rejects(
      start(openocd({ configFiles: ['dummy-riscv.cfg', 'target/does-not-exist.cfg'] })),
      failsWith(
        ErrorCode.InvalidLaunchArgs,
        new RegExp(
          `'target/does-not-exist.cfg' was not found\\. Looked in: ${repoRoot}, ${configDir}, .*share/openocd/scripts`,
        ),
      ),
    );
    assert.deepEqual(processesWithTag(tag), []);
  });

  test('a missing executable says how to install it', limit, async () => {
    await assert.rejects(
      start(openocd({ path: '/nonexistent/openocd' })),
      failsWith(
        ErrorCode.ProgramNotFound,
        /'\/nonexistent\/openocd' was not found.*apt-get install openocd.*server\.path/,
      ),
    );
  });

  test('a fixed port in use is refused before starting', limit, async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    try {
      await assert.rejects(
        start(openocd({}, { ports: { gdb: port } })),
        failsWith(ErrorCode.PortInUse, new RegExp(`Port ${port} \\(OpenOCD gdb port\\) is already in use`)),
      );
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  });

  test('a port OpenOCD itself cannot bind is reported (it would otherwise run without GDB)', limit, async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    try {
      // A user command after ours moves the gdb port onto the taken one.
      await assert.rejects(
        start(openocd({ commands: [`gdb_port ${port}`] })),
        failsWith(ErrorCode.PortInUse, new RegExp(`could not listen on port ${port} \\(its gdb port\\)`)),
      );
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  });

  test('an OpenOCD that dies is reported, and pending Tcl requests fail', limit, async () => {
    const { server } = await start(openocd());
    const exits: ServerExit[] = [];
    server.onUnexpectedExit((e) => exits.push(e));
    const tcl = server.tcl;
    const [proc] = processesWithTag(tag);
    assert.ok(proc);
    process.kill(proc.pid, 'SIGKILL');
    await assert.rejects(tcl.command('sleep 2000'), failsWith(ErrorCode.TclConnectionLost, /was lost/));
    await waitForNoTaggedProcesses(tag);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(exits.length, 1);
    assert.equal(exits[0]!.programEnded, false);
    assert.match(exits[0]!.message, /^OpenOCD was killed by SIGKILL while the session was running\. Its last output:/);
    await server.stop();
  });
});
