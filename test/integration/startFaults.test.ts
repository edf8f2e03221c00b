import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { CustomRequests, type InjectResponse } from '../../common/dapCustom';
import { ElfImage } from '../../adapter/elf';
import { AdapterHarness, qemuLaunchArgs } from '../support/dap';
import { cliWorkspace } from '../support/cliWorkspace';
import { killTagged, processesWithTag, waitForNoTaggedProcesses, type LiveProcess } from '../support/ownedProcesses';
import { fixtureElf } from '../support/paths';
import { QemuBoard } from '../support/qemuBoard';

/**
 * Start-up failures and hostile configurations, against the real adapter, GDB and QEMU: a `gdbPath`
 * that is not GDB (it exits, is a directory, is a script without its interpreter, prints anything but
 * MI or nothing at all), an entry function the ELF does not define, and a patch journal whose owner
 * has ended but is not yet reaped. Each one ends in one clear message, and the adapter lives on to
 * answer it.
 */
const scratch = mkdtempSync(join(tmpdir(), 'cyclelens-start-faults-'));

/** An executable script in the scratch directory. */
function script(name: string, text: string): string {
  const path = join(scratch, name);
  writeFileSync(path, text);
  chmodSync(path, 0o755);
  return path;
}

const exits3 = script('exits3.sh', '#!/bin/sh\necho "wrapper: the real gdb is not installed" >&2\nexit 3\n');
const noInterpreter = script('no-interpreter.sh', '#!/no/such/interpreter\n');
const garbage = script('garbage.sh', '#!/bin/sh\nwhile true; do echo "not an MI line"; sleep 0.2; done\n');
const silent = script('silent.sh', '#!/bin/sh\nexec sleep 300\n');
const directory = join(scratch, 'a-directory');
mkdirSync(directory);

describe('start-up failures: a DAP error naming the program, never a crash', () => {
  let h: AdapterHarness;

  afterEach(async () => {
    const left = await h.stop();
    assert.deepEqual(left, [], `processes left behind: ${JSON.stringify(left)}`);
  });

  /** The launch fails with `pattern`; the adapter is still there and answers the next request. */
  async function launchFails(args: object, pattern: RegExp): Promise<void> {
    h = new AdapterHarness();
    await h.start();
    await assert.rejects(h.dc.launch(args), (err: Error) => {
      assert.match(err.message, pattern);
      return true;
    });
    const threads = await h.dc.threadsRequest();
    assert.equal(threads.success, true, 'the adapter still answers after the failed launch');
    assert.doesNotMatch(h.allOutput, /CycleLensError|at .*adapterMain\.js/, 'no stack trace reaches the user');
  }

  it('a gdbPath that exits at start: its exit status and last output', () =>
    launchFails(
      qemuLaunchArgs('rv32', 'singlepass', { gdbPath: exits3 }),
      new RegExp(
        `The debugger '${exits3}' exited with code 3 before it answered as GDB\\. Its last ` +
          `output:\\nwrapper: the real gdb is not installed\\nPoint \`gdbPath\` at gdb-multiarch`,
      ),
    ));

  it('a gdbPath that is a directory', () =>
    launchFails(
      qemuLaunchArgs('rv32', 'singlepass', { gdbPath: directory }),
      new RegExp(`The debugger '${directory}' is a directory, not a program\\. Point \`gdbPath\` at gdb-multiarch`),
    ));

  it('a gdbPath that is a broken wrapper (its interpreter is missing)', () =>
    launchFails(
      qemuLaunchArgs('rv32', 'singlepass', { gdbPath: noInterpreter }),
      new RegExp(
        `The debugger '${noInterpreter}' exited with code 127 \\(it, or the interpreter its \`#!\` ` +
          `line names, was not found\\) before it answered as GDB\\. Its last output:\\n.*not found`,
      ),
    ));

  it('a gdbPath that prints garbage: named as not answering as GDB, with what it printed', () =>
    launchFails(
      qemuLaunchArgs('rv32', 'singlepass', { gdbPath: garbage }),
      new RegExp(
        `The debugger '${garbage}' did not answer as GDB: no MI prompt within 10 s \\(it printed:\\nnot an MI line\\n`,
      ),
    ));

  it('a gdbPath that prints nothing', () =>
    launchFails(
      qemuLaunchArgs('rv32', 'singlepass', { gdbPath: silent }),
      new RegExp(`The debugger '${silent}' did not answer as GDB: no MI prompt within 10 s \\(it printed nothing\\)`),
    ));

  it('stopAtEntry naming no function of the ELF is refused before anything starts', () =>
    launchFails(
      qemuLaunchArgs('rv32', 'singlepass', { stopAtEntry: 'no_such_function' }),
      new RegExp(
        /`stopAtEntry` \(the command line's --start\) names no function of \S+singlepass\.elf: /.source +
          /"no_such_function"\. Name a function the program defines/.source,
      ),
    ));
});

describe('start-up failures on the command line', () => {
  const elf = fixtureElf('rv32', 'singlepass');
  const server = { type: 'qemu' as const, machine: 'virt' };
  const { cli, close } = cliWorkspace('cyclelens-start-faults-cli-', [
    { name: 'exits', executable: elf, server, gdbPath: exits3, programEnd: 'program_end' },
    { name: 'ok', executable: elf, server, programEnd: 'program_end' },
  ]);
  after(close);

  it('a gdbPath that exits: the CLI prints the adapter message, not that the adapter went away', () => {
    const r = cli('profile', '--config', '.vscode/launch.json', '--name', 'exits', '--jobs', '1');
    assert.equal(r.status, 1, r.stderr);
    assert.match(
      r.stderr,
      new RegExp(
        `launch failed: The debugger '${exits3}' exited with code 3 before it answered as GDB\\. ` +
          `Its last output:\\nwrapper: the real gdb is not installed`,
      ),
    );
    assert.doesNotMatch(r.stderr, /closed its output/);
  });

  it('--start no_such_function: checked against the ELF, with a clear message', () => {
    const r = cli(
      'profile',
      '--config',
      '.vscode/launch.json',
      '--name',
      'ok',
      '--jobs',
      '1',
      '--start',
      'no_such_function',
    );
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /names no function of \S+singlepass\.elf: "no_such_function"/);
    assert.doesNotMatch(r.stderr, /the debug session ended during launch/);
  });
});

/** Pid of a process that has ended and that its parent never reaps (state Z), and that parent. */
async function zombie(): Promise<{ pid: number; parent: ChildProcess }> {
  // The shell starts a short child, then becomes `sleep`, which never waits for it.
  const parent = spawn('/bin/sh', ['-c', 'sleep 0.05 & exec sleep 120'], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    for (const name of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
      let stat: string;
      try {
        stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      } catch {
        continue;
      }
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z' && Number(fields[1]) === parent.pid) return { pid: Number(name), parent };
    }
  }
  parent.kill('SIGKILL');
  throw new Error('no zombie appeared');
}

describe('the patch journal and an owner not yet reaped', () => {
  it('a journal whose owner is a zombie is restored at the next launch, with its message', async () => {
    const ws = mkdtempSync(join(scratch, 'ws-'));
    const journalDir = join(ws, '.cyclelens', 'journal');
    const elfPath = fixtureElf('rv32', 'cyclic');
    const image = ElfImage.loadSync(elfPath);
    // A board the sessions do not own: it keeps the patched code when the session's adapter dies.
    const board = await QemuBoard.start('rv32', elfPath);
    const undead = await zombie();
    let h: AdapterHarness | undefined;
    let left: LiveProcess[] = [];
    try {
      const remote = { executable: elfPath, server: { type: 'remote' as const, address: board.address }, cwd: ws };
      h = new AdapterHarness();
      await h.start();
      await h.launchToEntry({ ...remote, stopAtEntry: 'main' });
      const r = (await h.dc.customRequest(CustomRequests.inject, { targets: [{ function: 'process_packet' }] }))
        .body as InjectResponse;
      assert.equal(r.injected.length, 1, JSON.stringify(r.refused));
      const adapter = processesWithTag(h.tag).find((p) => /dist\/adapter\.js/.test(p.cmdline));
      assert.ok(adapter, 'the adapter runs');
      process.kill(adapter.pid, 'SIGKILL');
      left = await waitForNoTaggedProcesses(h.tag);
      killTagged(h.tag);
      assert.deepEqual(left, [], 'the dead adapter took its GDB with it');
      const files = existsSync(journalDir) ? readdirSync(journalDir) : [];
      assert.equal(files.length, 1, `the dead session left its journal: ${files.join(', ')}`);
      // The journal now names the zombie as its owner, with the zombie's own start time (as written
      // by a session whose adapter has ended and waits to be reaped).
      const file = join(journalDir, files[0]!);
      const journal = JSON.parse(readFileSync(file, 'utf8')) as { owner: { pid: number; startTime?: string } };
      const stat = readFileSync(`/proc/${undead.pid}/stat`, 'latin1');
      journal.owner = { pid: undead.pid, startTime: stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]! };
      writeFileSync(file, JSON.stringify(journal));

      h = new AdapterHarness();
      await h.start();
      // The launch restores the journal before it answers: its message comes first.
      await h.dc.launch({ ...remote, stopAtEntry: false });
      const fn = image.functionNamed('process_packet')!;
      const addr = `0x${fn.address.toString(16)}`;
      assert.match(
        h.allOutput,
        new RegExp(`CycleLens found patches a previous session left in this program .* ${addr} \\(process_packet\\)`),
      );
      const now = Buffer.from(
        (await h.dc.customRequest('readMemory', { memoryReference: addr, count: 8 })).body.data,
        'base64',
      );
      assert.deepEqual(now, Buffer.from(image.file.readMemory(fn.address, 8)!), "process_packet holds the ELF's bytes");
      assert.equal(existsSync(file), false, 'the journal is removed once everything is put back');
      left = await h.stop();
      h = undefined;
      assert.deepEqual(left, []);
    } finally {
      if (h) await h.stop();
      undead.parent.kill('SIGKILL');
      assert.deepEqual(await board.stop(), []);
    }
  });
});

describe("the adapter's own expressions never fail visibly", () => {
  let h: AdapterHarness;
  afterEach(async () => {
    const left = await h.stop();
    assert.deepEqual(left, [], `processes left behind: ${JSON.stringify(left)}`);
  });

  /** The raw response to a request, success or not. */
  function raw(command: string, args: object): Promise<DebugProtocol.Response> {
    const client = h.dc as unknown as {
      doSend(command: string, args: object, done: (r: DebugProtocol.Response) => void): void;
    };
    return new Promise((resolve) => client.doSend(command, args, resolve));
  }

  it(
    'memory and disassembly at references that are not addresses (Cortex-M4): answered in the ' +
      'view, no message, no GDB syntax error',
    async () => {
      h = new AdapterHarness();
      await h.start();
      await h.launchToEntry(qemuLaunchArgs('cortex-m4', 'singlepass'));
      // An empty reference (a disassembly view left open from the session before), references whose
      // parentheses do not pair, and one GDB cannot evaluate.
      for (const memoryReference of ['', '  ', 'g_ticks)', '(g_ticks', 'no_such_symbol']) {
        for (const [command, args] of [
          ['readMemory', { memoryReference, count: 16 }],
          ['disassemble', { memoryReference, instructionCount: 8 }],
        ] as const) {
          const r = (await raw(command, args)) as DebugProtocol.ErrorResponse;
          const what = `${command} at ${JSON.stringify(memoryReference)}: ${JSON.stringify(r)}`;
          assert.equal(r.success, false, what);
          assert.notEqual(r.body?.error?.showUser, true, `no message of its own: ${what}`);
          assert.doesNotMatch(r.message ?? '', /syntax error/i, what);
          assert.match(r.body?.error?.format ?? r.message ?? '', /^No memory at /, what);
        }
      }
      // A real reference still reads, and a hover that GDB cannot parse answers in the hover only.
      const ok = (await h.dc.customRequest('readMemory', { memoryReference: '&(g_ticks)', count: 4 }))
        .body as DebugProtocol.ReadMemoryResponse['body'];
      assert.equal(Buffer.from(ok?.data ?? '', 'base64').length, 4);
      const frame = (await h.dc.stackTraceRequest({ threadId: 1, levels: 1 })).body.stackFrames[0]!;
      const hover = (await raw('evaluate', {
        expression: '(g_ticks',
        context: 'hover',
        frameId: frame.id,
      })) as DebugProtocol.ErrorResponse;
      assert.equal(hover.success, false);
      assert.notEqual(hover.body?.error?.showUser, true, JSON.stringify(hover));
      await h.dc.disconnectRequest({ terminateDebuggee: true });
    },
  );
});
