import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mayWriteMemory } from '../../adapter/debugger/debuggerBase';
import type { DisassembledInstruction } from '../../adapter/debugger/types';
import { DisassemblyCache } from '../../adapter/session/disassemblyCache';

/** A reader that counts its calls and says which call produced each answer. */
function counter(): { calls: number; read: () => Promise<DisassembledInstruction[]> } {
  const c = {
    calls: 0,
    read: async (): Promise<DisassembledInstruction[]> => {
      c.calls++;
      return [
        {
          address: BigInt(c.calls),
          opcodes: '',
          instruction: `read ${c.calls}`,
          functionName: undefined,
          offset: undefined,
          file: undefined,
          line: undefined,
        },
      ];
    },
  };
  return c;
}

describe('disassembly cache', () => {
  it('answers a range asked again from the cache, and other ranges from the target', async () => {
    const cache = new DisassemblyCache();
    const r = counter();
    assert.equal((await cache.read(0x100n, 0x420n, r.read))[0]!.instruction, 'read 1');
    assert.equal((await cache.read(0x100n, 0x420n, r.read))[0]!.instruction, 'read 1');
    assert.equal((await cache.read(0x100n, 0x424n, r.read))[0]!.instruction, 'read 2');
    assert.equal(r.calls, 2);
  });

  it('reads again after a memory write clears it', async () => {
    const cache = new DisassemblyCache();
    const r = counter();
    await cache.read(0x100n, 0x420n, r.read);
    cache.clear();
    assert.equal((await cache.read(0x100n, 0x420n, r.read))[0]!.instruction, 'read 2');
  });

  it('keeps across a run only the ranges wholly inside read-only code', async () => {
    const cache = new DisassemblyCache();
    const r = counter();
    await cache.read(0x100n, 0x200n, r.read); // inside the read-only segment
    await cache.read(0x0f0n, 0x200n, r.read); // starts before it
    await cache.read(0x900n, 0xa00n, r.read); // writable memory
    cache.keepWithin([{ start: 0x100n, end: 0x800n }]);
    assert.equal(cache.size, 1);
    assert.equal((await cache.read(0x100n, 0x200n, r.read))[0]!.instruction, 'read 1');
    assert.equal((await cache.read(0x0f0n, 0x200n, r.read))[0]!.instruction, 'read 4');
    assert.equal((await cache.read(0x900n, 0xa00n, r.read))[0]!.instruction, 'read 5');
  });

  it('does not keep a failed read', async () => {
    const cache = new DisassemblyCache();
    await assert.rejects(
      cache.read(0n, 0x10n, () => Promise.reject(new Error('Cannot access memory at address 0x0'))),
      /Cannot access memory/,
    );
    const r = counter();
    assert.equal((await cache.read(0n, 0x10n, r.read))[0]!.instruction, 'read 1');
  });

  it('holds at most its size, dropping the least recently used range', async () => {
    const cache = new DisassemblyCache(2);
    const r = counter();
    await cache.read(0n, 1n, r.read);
    await cache.read(1n, 2n, r.read);
    await cache.read(0n, 1n, r.read); // used again: now the newest
    await cache.read(2n, 3n, r.read); // evicts [1, 2)
    assert.equal(cache.size, 2);
    assert.equal((await cache.read(0n, 1n, r.read))[0]!.instruction, 'read 1');
    assert.equal((await cache.read(1n, 2n, r.read))[0]!.instruction, 'read 4');
  });

  it('treats assignments and calls in an expression as possible memory writes, reads as not', () => {
    for (const e of ['x = 5', '$r0=0x20', 'a[i] += 1', 'p->n++', '--n', 'reset_state()', 'memset (buf, 0, 4)'])
      assert.equal(mayWriteMemory(e), true, e);
    for (const e of [
      'x == 5',
      'a != b',
      'i <= n',
      'i >= n',
      '(unsigned long)(&buffer)',
      '*(int *)0x20000000',
      '$pc',
      'st.mean',
    ])
      assert.equal(mayWriteMemory(e), false, e);
  });
});
