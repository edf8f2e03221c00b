import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { CustomRequests, type InjectResponse } from '../../common/dapCustom';
import { ElfImage } from '../../adapter/elf';
import { elfHash } from '../../adapter/probe/injection/journal';
import { AdapterHarness, qemuLaunchArgs } from '../support/dap';
import { fixtureElf } from '../support/paths';
import { killTagged, processesWithTag, waitForNoTaggedProcesses, type LiveProcess } from '../support/ownedProcesses';
import { QemuBoard } from '../support/qemuBoard';

/**
 * Faults that take a whole process away (the adapter itself, or the channel it depends on) and
 * must leave nothing behind and lose nothing: each one is injected for real.
 */
const scratch = mkdtempSync(join(tmpdir(), 'cyclelens-recovery-'));
let workspaceCount = 0;
/** A fresh workspace folder: the patch journal lives in `<cwd>/.cyclelens/journal`. */
function workspace(): string {
  const dir = join(scratch, `ws${++workspaceCount}`);
  mkdirSync(dir);
  return dir;
}
const journals = (ws: string): string[] =>
  existsSync(join(ws, '.cyclelens', 'journal')) ? readdirSync(join(ws, '.cyclelens', 'journal')).sort() : [];

describe('faults: nothing lost, nothing left behind', () => {
  let h: AdapterHarness | undefined;
  /** Set once the test killed the adapter: a disconnect request would then wait forever for its answer. */
  let adapterKilled = false;

  afterEach(async () => {
    let left: LiveProcess[] = [];
    if (h && adapterKilled) {
      left = await waitForNoTaggedProcesses(h.tag);
      killTagged(h.tag);
    } else if (h) {
      left = await h.stop();
    }
    h = undefined;
    adapterKilled = false;
    assert.deepEqual(left, [], `processes left behind: ${JSON.stringify(left)}`);
  });

  const find = (all: LiveProcess[], pattern: RegExp): LiveProcess => {
    const p = all.find((x) => pattern.test(x.cmdline));
    assert.ok(p, `no process matches ${pattern} among ${JSON.stringify(all)}`);
    return p;
  };

  for (const target of ['rv32', 'cortex-m4'] as const) {
    it(`SIGKILL of the debug adapter takes QEMU and GDB with it (${target})`, async () => {
      h = new AdapterHarness();
      await h.start();
      await h.launchToEntry(qemuLaunchArgs(target, 'cyclic'));
      // Let the target run: a running QEMU is the one that spins at full CPU when orphaned.
      await h.dc.continueRequest({ threadId: 1 });
      const running = processesWithTag(h.tag);
      const adapter = find(running, /dist\/adapter\.js/);
      const qemu = find(running, /qemu-system-/);
      const gdb = find(running, /gdb-multiarch/);
      process.kill(adapter.pid, 'SIGKILL');
      adapterKilled = true;
      const left = await waitForNoTaggedProcesses(h.tag, 4000);
      assert.deepEqual(left, [], `survivors of the adapter (adapter ${adapter.pid}, QEMU ${qemu.pid}, GDB ${gdb.pid})`);
    });
  }

  it(
    'a damaged patch journal: the launch goes on, the message names the file and what happens, ' +
      'the file is kept aside',
    async () => {
      const ws = workspace();
      const elfPath = fixtureElf('rv32', 'singlepass');
      const dir = join(ws, '.cyclelens', 'journal');
      mkdirSync(dir, { recursive: true });
      const damaged = join(dir, `${elfHash(ElfImage.loadSync(elfPath))}.json`);
      // A journal cut off in the middle of a string, as a full disk or a power cut leaves it.
      writeFileSync(damaged, '{ "schema": "cyclelens-patch-journal/1", "elf": "/x/singlepass.elf", "elfHa');
      h = new AdapterHarness();
      await h.start();
      const stopped = await h.launchToEntry(qemuLaunchArgs('rv32', 'singlepass', { cwd: ws }));
      assert.equal(stopped.body.reason, 'entry');
      const escaped = damaged.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      assert.match(
        h.allOutput,
        new RegExp(
          `The patch journal ${escaped} is damaged: it is not valid JSON \\(Unterminated ` +
            `string[^)]*\\)\\. It was moved aside to ${escaped}\\.damaged-\\S+ for inspection; the ` +
            `launch goes on with the program loaded from the ELF`,
        ),
      );
      const kept = journals(ws);
      assert.equal(kept.length, 1, JSON.stringify(kept));
      assert.match(kept[0]!, /\.json\.damaged-/);
    },
  );

  it(
    'two sessions on one workspace and one ELF: each keeps its own journal, and one ending ' + "leaves the other's",
    async () => {
      const ws = workspace();
      const args = qemuLaunchArgs('rv32', 'singlepass', { cwd: ws });
      const first = new AdapterHarness();
      const second = new AdapterHarness();
      // A stopped harness must not be stopped again: its disconnect request would wait for a dead adapter.
      const running = new Set([first, second]);
      const stop = async (a: AdapterHarness): Promise<void> => {
        if (!running.delete(a)) return;
        assert.deepEqual(await a.stop(), []);
      };
      try {
        await Promise.all([first.start(), second.start()]);
        await Promise.all([first.launchToEntry(args), second.launchToEntry(args)]);
        const inject = async (a: AdapterHarness, fn: string): Promise<void> => {
          const r = (await a.dc.customRequest(CustomRequests.inject, { targets: [{ function: fn }] }))
            .body as InjectResponse;
          assert.equal(r.injected.length, 1, JSON.stringify(r.refused));
        };
        await Promise.all([inject(first, 'fir_filter'), inject(second, 'quicksort')]);
        assert.equal(
          journals(ws).filter((n) => n.endsWith('.json')).length,
          2,
          `one journal per session: ${journals(ws).join(', ')}`,
        );
        await stop(first);
        const left = journals(ws);
        assert.equal(left.length, 1, `the second session's journal stays: ${left.join(', ')}`);
        // The second session still measures and ends normally.
        const end = second.dc.waitForEvent('stopped') as Promise<DebugProtocol.StoppedEvent>;
        await second.dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: '*program_end' }] });
        await second.dc.continueRequest({ threadId: 1 });
        await end;
        const results = (await second.dc.customRequest(CustomRequests.injectedResults)).body as {
          results: Array<{ name: string; calls: number }>;
        };
        assert.ok((results.results.find((r) => r.name === 'quicksort')?.calls ?? 0) > 0, JSON.stringify(results));
        await stop(second);
        assert.deepEqual(journals(ws), [], 'nothing patched, no journal');
      } finally {
        await stop(first);
        await stop(second);
      }
    },
  );

  it(
    'relaunch after GDB died with patches live: the message lists what was restored, and the ' +
      "bytes are the ELF's again",
    async () => {
      const ws = workspace();
      const elfPath = fixtureElf('rv32', 'cyclic');
      const image = ElfImage.loadSync(elfPath);
      // The board: a QEMU the sessions do not own (a remote gdbserver), so it runs on, patched, when GDB dies.
      const board = await QemuBoard.start('rv32', elfPath);
      try {
        h = new AdapterHarness();
        const remote = { executable: elfPath, server: { type: 'remote' as const, address: board.address }, cwd: ws };
        await h.start();
        await h.launchToEntry({ ...remote, stopAtEntry: 'main' });
        const r = (
          await h.dc.customRequest(CustomRequests.inject, {
            targets: [{ function: 'process_packet' }, { function: 'frame_seed' }],
          })
        ).body as InjectResponse;
        assert.equal(r.injected.length, 2, JSON.stringify(r.refused));
        await h.dc.continueRequest({ threadId: 1 });
        const gdb = find(processesWithTag(h.tag), /gdb-multiarch/);
        const terminated = h.dc.waitForEvent('terminated');
        process.kill(gdb.pid, 'SIGKILL');
        await terminated;
        const firstOutput = h.allOutput;
        await h.stop();
        assert.equal(journals(ws).length, 1, 'the dead session left its journal');

        h = new AdapterHarness();
        await h.start();
        // The board is halted wherever the connection caught it (an exit stub may be pending), so the
        // program is not run further: the restore happens during launch, with the target halted.
        const restored = new Promise<void>((resolve) =>
          h!.dc.on('output', () => /CycleLens found patches/.test(h!.allOutput) && resolve()),
        );
        await Promise.all([h.dc.launch({ ...remote, stopAtEntry: false }), restored]);
        const addr = (name: string): string => `0x${image.functionNamed(name)!.address.toString(16)}`;
        assert.match(
          h.allOutput,
          new RegExp(
            `CycleLens found patches a previous session left in this program ` +
              `\\([0-9a-f]+\\.\\d+\\.json\\) and restored the original bytes at 2 address\\(es\\): ` +
              `${addr('process_packet')} ` +
              `\\(process_packet\\), ${addr('frame_seed')} \\(frame_seed\\), and the tp register\\.`,
          ),
          `${firstOutput}\n---\n${h.allOutput}`,
        );
        for (const name of ['process_packet', 'frame_seed']) {
          const fn = image.functionNamed(name)!;
          const now: Buffer = Buffer.from(
            (await h!.dc.customRequest('readMemory', { memoryReference: addr(name), count: 8 })).body.data,
            'base64',
          );
          assert.deepEqual(now, Buffer.from(image.file.readMemory(fn.address, 8)!), `${name} holds the ELF's bytes`);
        }
        assert.deepEqual(journals(ws), [], 'journal removed once everything was put back');
      } finally {
        assert.deepEqual(await board.stop(), []);
      }
    },
  );

  /** Launch must fail with a message matching `pattern`, having started nothing that stays. */
  async function launchFails(args: object, pattern: RegExp): Promise<void> {
    h = new AdapterHarness();
    await h.start();
    await assert.rejects(h.dc.launch(args), (err: Error) => {
      assert.match(err.message, pattern);
      return true;
    });
  }

  const virtRam = '0x80000000-0x87ffffff \\(DRAM\\)';
  const example = '"reservedMemory": \\{ "start": "0x8[0-9a-f]{7}", "size": 4096 \\}';

  it('reservedMemory: null names the field, the allowed RAM and an example', () =>
    launchFails(
      qemuLaunchArgs('rv32', 'singlepass', { reservedMemory: null as never }),
      new RegExp(
        `\`reservedMemory\` must be an object .* e\\.g\\. ${example}\\. RAM on this target: ${virtRam}\\. Got null`,
      ),
    ));

  it('reservedMemory outside RAM (0xfffff000) is refused at launch with the RAM ranges', () =>
    launchFails(
      qemuLaunchArgs('rv32', 'singlepass', { reservedMemory: { start: '0xfffff000', size: 4096 } }),
      new RegExp(
        `\`reservedMemory\` \\(0xfffff000-0xffffffff\\) is not inside the target's RAM\\. RAM on ` +
          `this target: ${virtRam}\\. Reserve RAM the program never uses, e\\.g\\. ${example}`,
      ),
    ));

  it('reservedMemory of 1 TiB is refused at launch', () =>
    launchFails(
      qemuLaunchArgs('cortex-m4', 'singlepass', { reservedMemory: { start: '0x20000000', size: 2 ** 40 } }),
      new RegExp(
        /`reservedMemory` \(0x20000000, 1099511627776 bytes\) runs past the end of the 32-bit address space\. /.source +
          /.*RAM on this target: 0x00000000-0x003fffff \(SSRAM1 \(code\)\), 0x20000000-0x203fffff \(SSRAM2\/3\)/.source,
      ),
    ));

  it('a stripped ELF is named, with the fix', async () => {
    const stripped = join(workspace(), 'singlepass-stripped.elf');
    execFileSync('riscv64-unknown-elf-strip', ['-o', stripped, fixtureElf('rv32', 'singlepass')]);
    const escaped = stripped.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    await launchFails(
      qemuLaunchArgs('rv32', 'singlepass', { executable: stripped }),
      new RegExp(`${escaped} has no symbols: pass the unstripped ELF the linker wrote \\(built with -g\\)`),
    );
  });

  it('a remote address that accepts TCP but never answers: "nothing answered as a gdbserver"', async () => {
    const sockets: Socket[] = [];
    // A real listener that accepts and stays silent, as a forwarded port with nothing behind it does.
    const silent: Server = createServer((socket) => {
      sockets.push(socket);
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    try {
      await launchFails(
        { executable: fixtureElf('rv32', 'singlepass'), server: { type: 'remote', address: `127.0.0.1:${port}` } },
        new RegExp(
          `Nothing at 127\\.0\\.0\\.1:${port} answered as a gdbserver: it accepted the connection but ` +
            `did not answer a GDB remote protocol request within 3 s\\. Check \`server\\.address\``,
        ),
      );
      assert.ok(sockets.length >= 1, 'the adapter did connect');
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});
