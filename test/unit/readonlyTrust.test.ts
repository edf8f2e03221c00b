import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mayWriteMemory, writesOnlyRegisters } from '../../adapter/debugger/debuggerBase';
import { ReadonlyTrust } from '../../adapter/debugger/gdb/readonlyTrust';
import { ElfImage } from '../../adapter/elf';
import { run, tool } from '../oracle/binutils';
import { fixtureElfs, sampleElfs } from '../oracle/testElfs';

/** Two read-only sections: code at 0x100 (8 bytes) and constants at 0x200 (4 bytes). */
const sections = [
  { address: 0x100, bytes: Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8]) },
  { address: 0x200, bytes: Uint8Array.from([9, 10, 11, 12]) },
];

describe('trust in read-only sections (GDB reads them from the file while the target matches it)', () => {
  it('holds after the image is loaded, and while writes leave the file bytes in place', () => {
    const t = new ReadonlyTrust(sections);
    assert.equal(t.holds, true);
    t.noteWrite(0x102, Uint8Array.from([3, 4]));
    assert.equal(t.holds, true, 'the same bytes as the file');
    t.noteWrite(0x20000000, Uint8Array.from([0xff, 0xff]));
    assert.equal(t.holds, true, 'RAM outside the read-only sections');
  });

  it('ends while any byte differs from the file, and comes back when every byte is restored', () => {
    const t = new ReadonlyTrust(sections);
    // A patched call site: four bytes, two of them different.
    t.noteWrite(0x104, Uint8Array.from([5, 0xaa, 7, 0xbb]));
    assert.equal(t.holds, false);
    t.noteWrite(0x105, Uint8Array.from([6]));
    assert.equal(t.holds, false, 'one byte still differs');
    t.noteWrite(0x107, Uint8Array.from([8]));
    assert.equal(t.holds, true);
  });

  it('sees only the part of a write that lands in a section, on both sides of it', () => {
    const t = new ReadonlyTrust(sections);
    // 0xfe..0x101: two bytes before the section (not tracked), then 1 and a changed 0x101.
    t.noteWrite(0xfe, Uint8Array.from([0xee, 0xee, 1, 0x77]));
    assert.equal(t.holds, false);
    t.noteWrite(0x101, Uint8Array.from([2]));
    assert.equal(t.holds, true);
    // The last byte of the constants and the two after them.
    t.noteWrite(0x203, Uint8Array.from([0x55, 0, 0]));
    assert.equal(t.holds, false);
    t.noteWrite(0x1fc, Uint8Array.from([0, 0, 0, 0, 9, 10, 11, 12]));
    assert.equal(t.holds, true);
  });

  it('ends for good after a write nobody can place, until the image is loaded again', () => {
    const t = new ReadonlyTrust(sections);
    t.noteWrite(0x100, Uint8Array.from([0]));
    t.noteUnplacedWrite();
    t.noteWrite(0x100, Uint8Array.from([1]));
    assert.equal(t.holds, false, 'restoring the one known byte does not undo an unplaced write');
    t.noteReload();
    assert.equal(t.holds, true);
  });

  it('tells whether a range meets a read-only section', () => {
    const t = new ReadonlyTrust(sections);
    assert.equal(t.overlaps(0xfc, 4), false);
    assert.equal(t.overlaps(0xfd, 4), true);
    assert.equal(t.overlaps(0x107, 1), true);
    assert.equal(t.overlaps(0x108, 0x0f8), false);
    assert.equal(t.overlaps(0x1ff, 2), true);
    assert.equal(t.overlaps(0x20000000, 4), false);
  });
});

describe('expressions that set registers only', () => {
  it('tells a register or convenience-variable assignment from a memory write', () => {
    for (const e of ['$pc=0x100', '$r0 = 5', ' $sp =$sp - 8', '$x = counter + 1']) {
      assert.equal(mayWriteMemory(e), true, e);
      assert.equal(writesOnlyRegisters(e), true, e);
    }
    for (const e of ['x = 5', '$r0 = x++', '$r0 = f(1)', '*(int *)$sp = 0', 'arr[$r0] = 1', '$r0 == 5']) {
      assert.equal(writesOnlyRegisters(e), false, e);
    }
  });
});

describe('the read-only contents of an ELF, against readelf and objdump', () => {
  for (const elf of [...fixtureElfs(), ...sampleElfs()]) {
    it(elf.name, () => {
      const want = new Map<string, { address: number; size: number }>();
      for (const line of run(tool(elf.target, 'readelf'), ['-SW', elf.path]).split('\n')) {
        const m = /^\s*\[\s*\d+\]\s+(\S+)\s+(\S+)\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+[0-9a-f]+\s+(\S*)/.exec(
          line,
        );
        if (!m || !m[5]!.includes('A') || m[5]!.includes('W') || parseInt(m[4]!, 16) === 0) continue;
        assert.notEqual(m[2], 'NOBITS', `${m[1]} is read-only without contents: the fixture cannot show the contents`);
        want.set(m[1]!, { address: parseInt(m[3]!, 16), size: parseInt(m[4]!, 16) });
      }
      assert.ok(want.size >= 1, 'the code at least');
      const got = ElfImage.loadSync(elf.path).readOnlyContents();
      assert.ok(got, 'every read-only section has contents');
      assert.deepEqual(
        got.map((s) => [s.address, s.bytes.length]).sort((a, b) => a[0]! - b[0]!),
        [...want.values()].map((s) => [s.address, s.size]).sort((a, b) => a[0]! - b[0]!),
      );
      // The bytes themselves, for the first section, from objdump's hex dump.
      const [name, first] = [...want.entries()].sort((a, b) => a[1].address - b[1].address)[0]!;
      const dumped: number[] = [];
      for (const line of run(tool(elf.target, 'objdump'), ['-s', '-j', name, elf.path]).split('\n')) {
        const m = /^ ([0-9a-f]{4,16})((?: [0-9a-f]{2,8}){1,4}) /.exec(line);
        if (m)
          for (const group of m[2]!.trim().split(' '))
            for (let i = 0; i < group.length; i += 2) dumped.push(parseInt(group.slice(i, i + 2), 16));
      }
      const section = got.find((s) => s.address === first.address)!;
      assert.deepEqual([...section.bytes], dumped);
    });
  }
});
