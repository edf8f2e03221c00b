import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { InjectResponse } from '../../common/dapCustom';
import { CustomRequests } from '../../common/dapCustom';
import { ElfImage } from '../../adapter/elf';
import { AdapterHarness, qemuLaunchArgs } from '../support/dap';
import { fixtureElf } from '../support/paths';
import { QemuBoard } from '../support/qemuBoard';

/**
 * GDB answers reads of the program's read-only sections from the ELF only while the target holds
 * them as the file does (adapter/debugger/gdb/readonlyTrust.ts, docs/design.md). Real QEMU and GDB.
 * Each check reads, through the adapter, code where the target and the file differ: a trust left on
 * would show the file's bytes and fail it.
 */
const TRUST = /^-> \d*-gdb-set trust-readonly-sections (on|off)$/;

/** The MI commands the adapter sent, in order (its trace: `-> ` lines). */
function sentCommands(h: AdapterHarness): string[] {
  return h.allOutput
    .split('\n')
    .filter((l) => l.startsWith('-> '))
    .map((l) => l.trimEnd());
}

/** `on`/`off` as the adapter last told GDB, and where it did among the commands sent. */
function trustChanges(h: AdapterHarness): Array<{ value: string; at: number }> {
  return sentCommands(h).flatMap((l, at) => {
    const m = TRUST.exec(l);
    return m ? [{ value: m[1]!, at }] : [];
  });
}

const hex = (n: number | bigint): string => `0x${n.toString(16)}`;

describe('read-only sections read from the file while the target matches it (QEMU Cortex-M4, GDB)', () => {
  const elf = fixtureElf('cortex-m4', 'singlepass');
  const image = ElfImage.loadSync(elf);
  const h = new AdapterHarness();

  const read = async (address: number, count: number): Promise<Buffer> =>
    Buffer.from((await h.dc.customRequest('readMemory', { memoryReference: hex(address), count })).body.data, 'base64');
  const write = (address: number, bytes: Uint8Array): Promise<unknown> =>
    h.dc.customRequest('writeMemory', { memoryReference: hex(address), data: Buffer.from(bytes).toString('base64') });

  before(async () => {
    await h.start();
    await h.launchToEntry(qemuLaunchArgs('cortex-m4', 'singlepass', { trace: true }));
  });

  after(async () => {
    assert.deepEqual(await h.stop(), []);
  });

  it('is turned on once QEMU has loaded the image', () => {
    assert.deepEqual(
      trustChanges(h).map((c) => c.value),
      ['on'],
    );
  });

  it('is off while a write into the code differs from the file, and on again once the bytes are back', async () => {
    const fn = image.functionNamed('fir_filter')!;
    const original = Buffer.from(image.file.readMemory(fn.address, 4)!);
    // Two Thumb `nop`s (0xbf00) over the function's first four bytes.
    const nops = Uint8Array.from([0x00, 0xbf, 0x00, 0xbf]);
    assert.notDeepEqual(original, Buffer.from(nops));
    const before = sentCommands(h).length;
    await write(fn.address, nops);
    assert.deepEqual(await read(fn.address, 4), Buffer.from(nops), 'GDB read the target, not the file');
    const sent = sentCommands(h).slice(before);
    const off = sent.findIndex((l) => TRUST.exec(l)?.[1] === 'off');
    const written = sent.findIndex((l) => l.includes('-data-write-memory-bytes'));
    assert.ok(off >= 0 && off < written, `turned off before the write:\n${sent.join('\n')}`);

    await write(fn.address, original);
    assert.deepEqual(await read(fn.address, 4), original);
    assert.equal(trustChanges(h).at(-1)?.value, 'on');
  });

  it('is off while an injected measurement patches the code, and on again after it is removed', async () => {
    const r = (await h.dc.customRequest(CustomRequests.inject, { targets: [{ function: 'fir_filter' }] }))
      .body as InjectResponse;
    assert.equal(r.injected.length, 1, JSON.stringify(r.refused));
    const fn = image.functionNamed('fir_filter')!;
    const file = Buffer.from(image.file.readMemory(fn.address, 8)!);
    assert.equal(trustChanges(h).at(-1)?.value, 'off');
    assert.notDeepEqual(await read(fn.address, 8), file, 'the patch is what the target holds');
    await h.dc.customRequest(CustomRequests.removeInjections, {});
    assert.deepEqual(await read(fn.address, 8), file);
    assert.equal(trustChanges(h).at(-1)?.value, 'on');
  });

  it('steps by line with it on, as without', async () => {
    const line = async (): Promise<number> => (await h.topFrame()).line;
    const lines: number[] = [await line()];
    for (let i = 0; i < 3; i++) {
      await Promise.all([h.dc.nextRequest({ threadId: 1 }), h.dc.waitForEvent('stopped')]);
      lines.push(await line());
    }
    assert.equal(trustChanges(h).at(-1)?.value, 'on');
    assert.equal(new Set(lines).size, lines.length, `each next reached a new line: ${lines.join(', ')}`);
  });

  it('ends for good after a command typed for GDB, which may write anywhere', async () => {
    await h.dc.evaluateRequest({ expression: '>print 1', context: 'repl' });
    assert.equal(trustChanges(h).at(-1)?.value, 'off');
    const fn = image.functionNamed('fir_filter')!;
    const original = Buffer.from(image.file.readMemory(fn.address, 2)!);
    await write(fn.address, original);
    assert.equal(trustChanges(h).at(-1)?.value, 'off');
  });
});

describe('read-only sections when the user sets the trust', () => {
  it('are left to the setting of an initCommand that names it', async () => {
    const h = new AdapterHarness();
    try {
      await h.start();
      await h.launchToEntry(
        qemuLaunchArgs('cortex-m4', 'singlepass', { trace: true, initCommands: ['set trust-readonly-sections off'] }),
      );
      await Promise.all([h.dc.nextRequest({ threadId: 1 }), h.dc.waitForEvent('stopped')]);
      assert.ok(
        sentCommands(h).some((l) => l.includes('set trust-readonly-sections off')),
        'the trace holds the initCommand',
      );
      assert.deepEqual(trustChanges(h), []);
    } finally {
      assert.deepEqual(await h.stop(), []);
    }
  });
});

describe('read-only sections on a target the launch did not load (remote gdbserver, load off)', () => {
  it('are always read from the target', async () => {
    const elf = fixtureElf('cortex-m4', 'singlepass');
    // A board the session does not own and does not load: it may run another build.
    const board = await QemuBoard.start('cortex-m4', elf);
    const h = new AdapterHarness();
    try {
      await h.start();
      await h.launchToEntry({
        executable: elf,
        server: { type: 'remote', address: board.address },
        stopAtEntry: 'main',
        trace: true,
      });
      await Promise.all([h.dc.nextRequest({ threadId: 1 }), h.dc.waitForEvent('stopped')]);
      assert.ok(
        sentCommands(h).some((l) => l.includes('-exec-next')),
        'the trace holds the session',
      );
      assert.deepEqual(trustChanges(h), []);
    } finally {
      assert.deepEqual(await h.stop(), []);
      assert.deepEqual(await board.stop(), []);
    }
  });
});
