import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ElfImage, PF_R, PF_W, PF_X, SHF_ALLOC, SHF_EXECINSTR, SHF_WRITE } from '../../adapter/elf';
import { CycleLensError, ErrorCode } from '../../adapter/errors';
import { COMPILE_FLAGS, run, tool } from '../oracle/binutils';
import { TestElf, fixtureElfs, sampleElfs } from '../oracle/testElfs';

// Every structure the reader returns is compared with what GNU readelf / nm / objdump say about
// the same file: the fixture firmware of both targets and the tests' own sample programs.
const fixtures = fixtureElfs();
const elfs: TestElf[] = [...fixtures, ...sampleElfs()];

describe('ElfImage against GNU binutils', () => {
  it(
    'has fixture firmware to check (make -C test/fixtures)',
    { skip: fixtures.length === 0 ? 'fixtures not built' : false },
    () => {
      assert.ok(fixtures.some((f) => f.target === 'rv32') && fixtures.some((f) => f.target === 'cortex-m4'));
    },
  );

  for (const e of elfs) {
    describe(e.name, () => {
      const img = ElfImage.loadSync(e.path);

      it('header: machine, family, entry and flags equal readelf -h', () => {
        const text = run(tool(e.target, 'readelf'), ['-h', e.path]);
        const entry = parseInt(/Entry point address:\s+0x([0-9a-f]+)/.exec(text)![1]!, 16);
        const flags = parseInt(/Flags:\s+0x([0-9a-f]+)/.exec(text)![1]!, 16);
        assert.equal(img.header.entry + (img.header.entryIsThumb ? 1 : 0), entry);
        assert.equal(img.header.flags, flags);
        assert.equal(img.family, e.target === 'rv32' ? 'riscv' : 'cortex-m');
        assert.match(text, e.target === 'rv32' ? /Machine:\s+RISC-V/ : /Machine:\s+ARM/);
      });

      it('sections equal readelf -S', () => {
        const text = run(tool(e.target, 'readelf'), ['-S', '-W', e.path]);
        const re = new RegExp(
          /^\s*\[\s*(\d+)\]\s+(\S+)\s+(\S+)\s+([0-9a-f]{8})\s+([0-9a-f]{6,})\s+([0-9a-f]{6,})/.source +
            /\s+[0-9a-f]{2}\s+([A-Za-z]*)\s+\d+\s+\d+\s+\d+$/.source,
          'gm',
        );
        const expected = [...text.matchAll(re)].filter((m) => m[1] !== '0');
        assert.equal(img.sections.length - 1, expected.length);
        for (const m of expected) {
          const s = img.sections[Number(m[1])]!;
          assert.deepEqual(
            [
              s.name,
              s.addr,
              s.offset,
              s.size,
              (s.flags & SHF_WRITE) !== 0,
              (s.flags & SHF_ALLOC) !== 0,
              (s.flags & SHF_EXECINSTR) !== 0,
            ],
            [
              m[2],
              parseInt(m[4]!, 16),
              parseInt(m[5]!, 16),
              parseInt(m[6]!, 16),
              m[7]!.includes('W'),
              m[7]!.includes('A'),
              m[7]!.includes('X'),
            ],
            `section ${m[2]}`,
          );
          assert.equal(img.section(s.name), s);
        }
      });

      it('load segments equal readelf -l', () => {
        const text = run(tool(e.target, 'readelf'), ['-l', '-W', e.path]);
        const re = new RegExp(
          /^\s*LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)/.source +
            /\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+([RWE ]+?)\s+0x[0-9a-f]+$/.source,
          'gm',
        );
        const expected = [...text.matchAll(re)].map((m) => ({
          offset: parseInt(m[1]!, 16),
          vaddr: parseInt(m[2]!, 16),
          paddr: parseInt(m[3]!, 16),
          fileSize: parseInt(m[4]!, 16),
          memSize: parseInt(m[5]!, 16),
          flags: (m[6]!.includes('R') ? PF_R : 0) | (m[6]!.includes('W') ? PF_W : 0) | (m[6]!.includes('E') ? PF_X : 0),
        }));
        assert.ok(expected.length > 0);
        assert.deepEqual(
          img.loadSegments.map(({ offset, vaddr, paddr, fileSize, memSize, flags }) => ({
            offset,
            vaddr,
            paddr,
            fileSize,
            memSize,
            flags,
          })),
          expected,
        );
      });

      it('function and object symbols equal readelf -s (value with Thumb bit, size, binding)', () => {
        const text = run(tool(e.target, 'readelf'), ['-s', '-W', e.path]);
        const re = /^\s*\d+:\s+([0-9a-f]{8})\s+(\d+)\s+(FUNC|OBJECT)\s+(LOCAL|GLOBAL|WEAK)\s+\S+\s+(\d+)\s+(\S+)$/gm;
        const key = (name: string, value: number, size: number, kind: string, bind: string): string =>
          `${kind} ${name} ${value.toString(16)} ${size} ${bind}`;
        const expected = [...text.matchAll(re)]
          .map((m) => key(m[6]!, parseInt(m[1]!, 16), Number(m[2]), m[3]!.toLowerCase(), m[4]!.toLowerCase()))
          .sort();
        const ours = img.symbols.symbols
          .filter((s) => (s.kind === 'function' || s.kind === 'object') && s.sectionIndex !== 0)
          .map((s) =>
            key(s.name, s.address + (s.thumb ? 1 : 0), s.size, s.kind === 'function' ? 'func' : 'object', s.binding),
          )
          .sort();
        assert.ok(expected.length > 5);
        assert.deepEqual(ours, expected);
      });

      it('function addresses and sizes equal nm -S (nm clears the Thumb bit too)', () => {
        const text = run(tool(e.target, 'nm'), ['-S', '--defined-only', e.path]);
        const fromNm = new Map<string, { address: number; size: number }[]>();
        for (const m of text.matchAll(/^([0-9a-f]{8}) ([0-9a-f]{8}) [TtWw] (\S+)$/gm)) {
          const list = fromNm.get(m[3]!) ?? [];
          list.push({ address: parseInt(m[1]!, 16), size: parseInt(m[2]!, 16) });
          fromNm.set(m[3]!, list);
        }
        const functions = img.symbols.symbols.filter((s) => s.kind === 'function' && s.size > 0);
        assert.ok(functions.length > 5);
        for (const f of functions) {
          assert.ok(
            (fromNm.get(f.name) ?? []).some((n) => n.address === f.address && n.size === f.size),
            `${f.name} at 0x${f.address.toString(16)} size ${f.size} is not in nm -S`,
          );
          assert.equal(img.functionNamed(f.name)?.name, f.name);
        }
      });

      it('functionContaining agrees with a linear search for every instruction objdump lists', () => {
        const sized = img.symbols.symbols.filter((s) => s.kind === 'function' && s.size > 0);
        const text = run(tool(e.target, 'objdump'), ['-d', '-w', e.path]);
        let checked = 0;
        for (const m of text.matchAll(/^\s*([0-9a-f]+):\t/gm)) {
          const a = parseInt(m[1]!, 16);
          const covering = sized.filter((s) => a >= s.address && a < s.address + s.size);
          const found = img.functionContaining(a);
          if (covering.length === 0) {
            assert.equal(found, undefined, `0x${a.toString(16)}`);
          } else {
            assert.ok(
              found && covering.includes(found),
              `0x${a.toString(16)}: got ${found?.name}, expected one of ${covering.map((s) => s.name)}`,
            );
          }
          checked++;
        }
        assert.ok(checked > 50);
        assert.equal(img.functionContaining(0xfffffff0), undefined);
      });

      it(`debug info is ${e.debug ? 'present' : 'absent'}`, () => {
        assert.equal(img.hasDebugInfo, e.debug);
        if (!e.debug) assert.equal(img.lineTable.rows.length, 0);
      });
    });
  }
});

describe('ElfImage details', () => {
  const sample = sampleElfs().filter((s) => s.sample?.variant === 'o2');

  it(
    'keeps the Thumb bit of Arm functions and of the entry point',
    { skip: sample.length < 2 ? 'no cross compilers' : false },
    () => {
      const arm = ElfImage.loadSync(sample.find((s) => s.target === 'cortex-m4')!.path);
      const main = arm.functionNamed('main')!;
      assert.equal(main.thumb, true);
      assert.equal(main.address % 2, 0);
      const rv = ElfImage.loadSync(sample.find((s) => s.target === 'rv32')!.path);
      assert.equal(rv.functionNamed('main')!.thumb, false);
      assert.equal(rv.header.entryIsThumb, false);
    },
  );

  it(
    'picks the global symbol among weak aliases, and lists the aliases',
    { skip: sample.length < 2 ? 'no cross compilers' : false },
    () => {
      const arm = ElfImage.loadSync(sample.find((s) => s.target === 'cortex-m4')!.path);
      const handler = arm.functionNamed('default_handler')!;
      assert.equal(arm.functionContaining(handler.address)!.name, 'default_handler');
      assert.deepEqual(
        arm.symbols
          .aliasesAt(handler.address)
          .map((s) => s.name)
          .sort(),
        ['HardFault_Handler', 'NMI_Handler', 'default_handler'],
      );
      assert.equal(arm.functionNamed('NMI_Handler')!.binding, 'weak');
    },
  );

  it(
    'names an unsized assembly label as the owner of the code after it',
    { skip: sample.length < 2 ? 'no cross compilers' : false },
    () => {
      for (const s of sample) {
        const img = ElfImage.loadSync(s.path);
        const start = img.symbols.named('_start')[0]!;
        assert.equal(start.kind, 'label');
        assert.equal(img.functionContaining(start.address), undefined);
        assert.equal(img.symbols.codeLabelAtOrBefore(start.address + 2)?.name, '_start');
      }
    },
  );

  it(
    'reports load segments of code copied from flash (paddr differs from vaddr for .data)',
    { skip: sample.length < 2 ? 'no cross compilers' : false },
    () => {
      const arm = ElfImage.loadSync(sample.find((s) => s.target === 'cortex-m4')!.path);
      const data = arm.loadSegments.find((p) => p.vaddr === 0x20000000);
      assert.ok(data && data.paddr !== data.vaddr && (data.flags & PF_X) === 0);
      assert.ok(arm.codeSegments.every((p) => (p.flags & PF_X) !== 0));
      assert.equal(arm.isCode(arm.functionNamed('main')!.address), true);
      assert.equal(arm.isCode(0x20000000), false);
      // The initialised image: word 1 of the vector table at 0 is the reset entry with its Thumb bit.
      const word = arm.file.readMemory(4, 4)!;
      assert.equal(Buffer.from(word).readUInt32LE(0), arm.header.entry | 1);
      const dataValues = arm.symbols.objectNamed('data_values')!;
      assert.deepEqual(
        [...arm.file.readMemory(dataValues.address, 8)!],
        [1, 0, 0, 0, 2, 0, 0, 0],
        '.data at its run address',
      );
      assert.equal(
        arm.file.readMemory(arm.symbols.objectNamed('sample_ticks')!.address, 4),
        undefined,
        '.bss has no file contents',
      );
    },
  );
});

describe('ElfImage errors', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cyclelens-elf-errors-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const anElf = elfs.find((e) => e.debug && e.target === 'cortex-m4') ?? elfs[0];

  const expectError = (path: string, code: ErrorCode, pattern: RegExp): void => {
    assert.throws(
      () => ElfImage.loadSync(path),
      (err: unknown) => {
        assert.ok(err instanceof CycleLensError, `expected a CycleLensError, got ${String(err)}`);
        assert.equal(err.code, code);
        assert.match(err.message, pattern);
        assert.ok(err.message.includes(path), 'the message names the file');
        return true;
      },
    );
  };

  it(
    'a .bin, a .hex or a text file is not an ELF file (bad magic) and the message says what to use',
    { skip: !anElf },
    () => {
      const bin = join(dir, 'fw.bin');
      const hex = join(dir, 'fw.hex');
      run(tool(anElf!.target, 'gcc').replace(/gcc$/, 'objcopy'), ['-O', 'binary', anElf!.path, bin]);
      run(tool(anElf!.target, 'gcc').replace(/gcc$/, 'objcopy'), ['-O', 'ihex', anElf!.path, hex]);
      for (const f of [bin, hex])
        expectError(f, ErrorCode.NotAnElf, /not an ELF file \(bad magic\).*linked \.elf, not the \.bin\/\.hex/);
      const empty = join(dir, 'empty.elf');
      writeFileSync(empty, '');
      expectError(empty, ErrorCode.NotAnElf, /bad magic/);
    },
  );

  it('a 64-bit host program is rejected as 64-bit', () => {
    expectError(process.execPath, ErrorCode.UnsupportedArchitecture, /64-bit ELF/);
  });

  it('an unsupported e_machine is named, and so is a big-endian file', { skip: !anElf }, () => {
    const bytes = Buffer.from(readFileSync(anElf!.path));
    bytes.writeUInt16LE(62, 18);
    const x86 = join(dir, 'x86.elf');
    writeFileSync(x86, bytes);
    expectError(
      x86,
      ErrorCode.UnsupportedArchitecture,
      /e_machine 62 \(x86-64 \(EM_X86_64\)\).*Cortex-M, RISC-V and ARC/,
    );
    for (const [machine, family] of [
      [195, 'arc'],
      [93, 'arc'],
      [243, 'riscv'],
      [40, 'cortex-m'],
    ] as const) {
      bytes.writeUInt16LE(machine, 18);
      assert.equal(ElfImage.fromBytes(bytes, 'patched').family, family, `e_machine ${machine}`);
    }
    bytes.writeUInt16LE(0x1234, 18);
    writeFileSync(x86, bytes);
    expectError(x86, ErrorCode.UnsupportedArchitecture, /e_machine 4660/);
    const be = Buffer.from(readFileSync(anElf!.path));
    be[5] = 2;
    const bePath = join(dir, 'be.elf');
    writeFileSync(bePath, be);
    expectError(bePath, ErrorCode.UnsupportedArchitecture, /big-endian/);
  });

  it('a relocatable object is rejected with a hint to use the linked program', { skip: !anElf }, () => {
    const src = join(dir, 'one.c');
    writeFileSync(src, 'int one(void) { return 1; }\n');
    const obj = join(dir, 'one.o');
    run(tool(anElf!.target, 'gcc'), [...COMPILE_FLAGS[anElf!.target], '-c', src, '-o', obj]);
    expectError(obj, ErrorCode.NotAnElf, /relocatable object \(\.o\)/);
  });

  it('a missing file or a directory gives ExecutableNotFound', () => {
    expectError(join(dir, 'nope.elf'), ErrorCode.ExecutableNotFound, /does not exist/);
    expectError(dir, ErrorCode.ExecutableNotFound, /is a directory/);
  });

  /** Loads and fully exercises an image; returns 'ok' or rethrows anything that is not ours. */
  const exercise = (bytes: Uint8Array, name: string): 'ok' | 'rejected' => {
    try {
      const img = ElfImage.fromBytes(bytes, name);
      void img.symbols.functions.length;
      img.functionContaining(img.header.entry);
      const table = img.lineTable;
      table.lookup(img.header.entry);
      for (const f of img.symbols.functions.slice(0, 5)) img.functionLines(f);
      if (table.files.length > 0) table.addressesForLine(table.files[0]!, 10);
      return 'ok';
    } catch (err) {
      if (err instanceof CycleLensError && err.message.includes(name)) return 'rejected';
      throw err;
    }
  };

  it('every truncation of a real ELF gives a clear error or a usable image, never a crash', { skip: !anElf }, () => {
    const whole = readFileSync(anElf!.path);
    const started = Date.now();
    const cuts = new Set<number>();
    for (let n = 0; n < 80; n++) cuts.add(n);
    for (let n = 0; n < whole.length; n += Math.max(1, Math.floor(whole.length / 400))) cuts.add(n);
    const img = ElfImage.fromBytes(whole, 'whole');
    for (const s of img.sections)
      for (const d of [-1, 0, 1, 7]) cuts.add(Math.max(0, Math.min(whole.length - 1, s.offset + s.size + d)));
    let rejected = 0;
    for (const n of cuts) {
      const outcome = exercise(whole.subarray(0, n), `cut-at-${n}.elf`);
      if (outcome === 'rejected') rejected++;
    }
    assert.ok(rejected > cuts.size / 2, `${rejected} of ${cuts.size} truncations rejected`);
    assert.ok(Date.now() - started < 20_000, 'no truncation makes the reader slow');
  });

  it('random corruption of headers, symbols and DWARF never crashes or hangs the reader', { skip: !anElf }, () => {
    const whole = readFileSync(anElf!.path);
    const img = ElfImage.fromBytes(whole, 'whole');
    const targets = [
      '.symtab',
      '.strtab',
      '.debug_line',
      '.debug_info',
      '.debug_abbrev',
      '.debug_line_str',
      '.shstrtab',
    ]
      .map((n) => img.section(n))
      .filter((s) => s !== undefined);
    const shoff = whole.readUInt32LE(32);
    const regions: Array<[number, number]> = [
      [0, 52],
      [shoff, whole.length - shoff],
      ...targets.map((s): [number, number] => [s.offset, Math.min(s.size, 4096)]),
    ];
    let seed = 0x2545f491;
    const rand = (n: number): number => {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return (seed >>> 0) % n;
    };
    const started = Date.now();
    const outcomes = { ok: 0, rejected: 0 };
    for (let i = 0; i < 600; i++) {
      const bytes = Buffer.from(whole);
      const [at, len] = regions[rand(regions.length)]!;
      for (let k = 0; k < 1 + rand(4); k++) bytes[at + rand(Math.max(1, len))] = rand(256);
      outcomes[exercise(bytes, `fuzz-${i}.elf`)]++;
    }
    assert.ok(outcomes.ok + outcomes.rejected === 600);
    assert.ok(Date.now() - started < 30_000, 'corrupt input does not make the reader slow');
  });

  it('a copy keeps working after its source is gone (the reader keeps its own bytes)', { skip: !anElf }, () => {
    const copy = join(dir, 'copy.elf');
    copyFileSync(anElf!.path, copy);
    const img = ElfImage.loadSync(copy);
    writeFileSync(copy, 'overwritten');
    assert.ok(img.symbols.functions.length > 0);
  });
});
