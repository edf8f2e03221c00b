import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { AdapterHarness, qemuLaunchArgs } from '../support/dap';
import { processesWithTag } from '../support/ownedProcesses';
import { fixtureElf } from '../support/paths';

/**
 * Every way a launch or a session can go wrong ends with one clear message and no process left
 * behind: the harness tags everything the adapter starts and checks /proc after each case.
 */
describe('debug adapter faults', () => {
  let h: AdapterHarness;
  const scratch = mkdtempSync(join(tmpdir(), 'cyclelens-faults-'));

  async function fresh(): Promise<AdapterHarness> {
    h = new AdapterHarness();
    await h.start();
    return h;
  }

  afterEach(async () => {
    const left = await h.stop();
    assert.deepEqual(left, [], `processes left behind: ${JSON.stringify(left)}`);
  });

  /** Launch must fail with a message matching `pattern`. */
  async function launchFails(args: object, pattern: RegExp): Promise<void> {
    await fresh();
    await assert.rejects(h.dc.launch(args), (err: Error) => {
      assert.match(err.message, pattern);
      return true;
    });
  }

  it('missing executable', () =>
    launchFails(
      qemuLaunchArgs('rv32', 'singlepass', { executable: join(scratch, 'missing.elf') }),
      /does not exist\. Build the firmware first, or correct `executable`/,
    ));

  it('executable that is not an ELF', async () => {
    const bin = join(scratch, 'firmware.bin');
    writeFileSync(bin, Buffer.alloc(256, 0x55));
    await launchFails(
      qemuLaunchArgs('rv32', 'singlepass', { executable: bin }),
      /is not an ELF file \(bad magic\): point `executable` at the linked \.elf/,
    );
  });

  it('debugger not found', () =>
    launchFails(
      qemuLaunchArgs('rv32', 'singlepass', { gdbPath: 'no-such-gdb' }),
      /The debugger 'no-such-gdb' was not found\. Install it .*gdbPath/,
    ));

  it('server executable not found', () =>
    launchFails(
      { ...qemuLaunchArgs('cortex-m4'), server: { type: 'qemu', path: 'no-such-qemu' } },
      /QEMU 'no-such-qemu' was not found\. Install it .*server\.path/,
    ));

  it('server that fails to start', () =>
    launchFails(
      { ...qemuLaunchArgs('cortex-m4'), server: { type: 'qemu', machine: 'no-such-board' } },
      new RegExp(
        /QEMU exited before GDB could connect\. It printed:[\s\S]*unsupported machine type[\s\S]*/.source +
          /Check `server\.machine` \(no-such-board\)/.source,
      ),
    ));

  it('server that exits early on bad arguments', () =>
    launchFails(
      { ...qemuLaunchArgs('rv32'), server: { type: 'qemu', args: ['-no-such-option'] } },
      /QEMU exited before GDB could connect[\s\S]*no-such-option/,
    ));

  it('remote gdbserver that is not there', () =>
    launchFails(
      { executable: fixtureElf('rv32', 'singlepass'), server: { type: 'remote', address: '127.0.0.1:1' } },
      /Nothing accepts connections at 127\.0\.0\.1:1\. Start the gdbserver first/,
    ));

  it('ELF without debug info: debugs anyway, with a warning', async () => {
    await fresh();
    const stopped = await h.launchToEntry(qemuLaunchArgs('rv32', 'nodebug'));
    assert.equal(stopped.body.reason, 'entry');
    const top = await h.topFrame();
    assert.equal(top.name, 'main');
    assert.equal(top.source, undefined);
    assert.match(
      h.allOutput,
      /has no debug information: source lines, locals and stepping by line are unavailable\. Build with -g/,
    );
    await h.dc.disconnectRequest({ terminateDebuggee: true });
  });

  it('GDB that dies mid-session', async () => {
    await fresh();
    await h.launchToEntry(qemuLaunchArgs('rv32'));
    const gdb = processesWithTag(h.tag).find((p) => /gdb-multiarch/.test(p.cmdline));
    assert.ok(gdb, 'gdb is running');
    const terminated = h.dc.waitForEvent('terminated');
    process.kill(gdb.pid, 'SIGKILL');
    await terminated;
    assert.match(h.allOutput, /GDB was killed by SIGKILL/);
  });

  it('QEMU killed while the target runs', async () => {
    await fresh();
    await h.launchToEntry(qemuLaunchArgs('cortex-m4', 'cyclic'));
    await h.dc.continueRequest({ threadId: 1 });
    const qemu = processesWithTag(h.tag).find((p) => /qemu-system-arm/.test(p.cmdline));
    assert.ok(qemu, 'qemu is running');
    const terminated = h.dc.waitForEvent('terminated');
    process.kill(qemu.pid, 'SIGKILL');
    await terminated;
    assert.match(h.allOutput, /QEMU was killed by SIGKILL while the session was running/);
  });

  it('pause and disconnect while the target runs', async () => {
    await fresh();
    await h.launchToEntry(qemuLaunchArgs('rv32', 'cyclic'));
    await h.dc.continueRequest({ threadId: 1 });
    await new Promise((r) => setTimeout(r, 300));
    const [, stopped] = await Promise.all([
      h.dc.pauseRequest({ threadId: 1 }),
      h.dc.waitForEvent('stopped') as Promise<DebugProtocol.StoppedEvent>,
    ]);
    assert.equal(stopped.body.reason, 'pause');
    await h.dc.continueRequest({ threadId: 1 });
    await new Promise((r) => setTimeout(r, 200));
    // Breakpoints can be changed while running: the adapter halts and resumes invisibly.
    // Waited for before asking: the stop can come before the request's answer does.
    const hitting = h.dc.waitForEvent('stopped') as Promise<DebugProtocol.StoppedEvent>;
    const bp = await h.dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: 'idle_point' }] });
    assert.equal(bp.body.breakpoints[0]?.verified, true);
    const hit = await hitting;
    assert.equal(hit.body.reason, 'function breakpoint');
    await h.dc.setFunctionBreakpointsRequest({ breakpoints: [] });
    await h.dc.continueRequest({ threadId: 1 });
    await h.dc.disconnectRequest({ terminateDebuggee: true });
  });

  it('requests after the session ended get a clear error', async () => {
    await fresh();
    await h.launchToEntry(qemuLaunchArgs('rv32'));
    await Promise.all([h.dc.continueRequest({ threadId: 1 }), h.dc.waitForEvent('terminated')]);
    await assert.rejects(h.dc.stackTraceRequest({ threadId: 1 }), /The debug session has ended/);
  });
});
