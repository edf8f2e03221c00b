import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { basename, join, posix } from 'node:path';
import { describe, it } from 'node:test';
import { ElfImage } from '../../adapter/elf';
import { decodeLinePrograms } from '../../adapter/elf/dwarfLine';
import { LineTable } from '../../adapter/elf/lineTable';
import { run, tool } from '../oracle/binutils';
import { TestElf, fixtureElfs, sampleElfs } from '../oracle/testElfs';

// The decoded line table is compared with GNU objdump's decoder row for row, and address-to-line
// lookups with GNU addr2line for every instruction of the program.
const elfs: TestElf[] = [...fixtureElfs(), ...sampleElfs()].filter((e) => e.debug);

interface ObjdumpRow {
  /** The file header objdump printed above the row (dir/name as recorded, not normalised). */
  path: string;
  name: string;
  line: number | undefined;
  address: number;
  isStmt: boolean;
  endSequence: boolean;
}

/** Parses `objdump --dwarf=decodedline -w`. */
function parseDecodedLine(text: string): ObjdumpRow[] {
  const rows: ObjdumpRow[] = [];
  let path = '';
  for (const line of text.split('\n')) {
    // Addresses print as `%#x`, so address 0 (code the linker discarded) is a bare `0`.
    const row = /^(\S+)\s+(\d+|-)\s+(0x[0-9a-f]+|0)(?:\s+\d+)?(\s+x)?\s*$/.exec(line);
    if (row) {
      rows.push({
        path,
        name: row[1]!,
        line: row[2] === '-' ? undefined : Number(row[2]),
        address: parseInt(row[3]!, 16),
        isStmt: row[4] !== undefined,
        endSequence: row[2] === '-',
      });
      continue;
    }
    // `CU: dir/name:` opens a unit, `dir/name:` (with `[++]` when objdump had to join the
    // directory itself) switches file inside it.
    const header = /^(?:CU: )?(.+?):(?:\[\+\+\])?$/.exec(line);
    if (header && !line.startsWith('Contents of') && !line.includes('file format')) path = header[1]!;
  }
  return rows;
}

/** True when `ours` (absolute, normalised) is the file objdump printed as `theirs` (maybe relative). */
function samePath(ours: string, theirs: string): boolean {
  const t = posix.normalize(theirs);
  return t.startsWith('/') ? ours === t : ours.endsWith('/' + t.replace(/^(\.\.\/)+/, ''));
}

function instructionAddresses(e: TestElf): number[] {
  const text = run(tool(e.target, 'objdump'), ['-d', '-w', e.path]);
  return [...text.matchAll(/^\s*([0-9a-f]+):\t[0-9a-f]/gm)].map((m) => parseInt(m[1]!, 16));
}

describe('DWARF .debug_line against GNU objdump and addr2line', () => {
  for (const e of elfs) {
    describe(e.name, () => {
      const img = ElfImage.loadSync(e.path);
      const table = img.lineTable;

      it('decodes the same rows as objdump --dwarf=decodedline, row for row', () => {
        const theirs = parseDecodedLine(run(tool(e.target, 'objdump'), ['--dwarf=decodedline', '-w', e.path]));
        const ours = table.rows;
        assert.ok(theirs.length > 10);
        assert.equal(ours.length, theirs.length, 'row count');
        ours.forEach((r, i) => {
          const t = theirs[i]!;
          const where = `row ${i} (0x${t.address.toString(16)} ${t.name}:${t.line ?? '-'})`;
          assert.equal(r.address, t.address, where);
          assert.equal(r.endSequence, t.endSequence, where);
          if (!t.endSequence) {
            assert.equal(r.line, t.line, where);
            assert.equal(r.isStmt, t.isStmt, where);
          }
          assert.equal(basename(r.file), t.name, where);
          assert.ok(samePath(r.file, t.path), `${where}: ${r.file} is not ${t.path}`);
          assert.ok(r.file.startsWith('/'), `${where}: ${r.file} is absolute`);
        });
      });

      it('maps every instruction address to the file and line addr2line gives', () => {
        const addresses = instructionAddresses(e);
        const out = run(
          tool(e.target, 'addr2line'),
          ['-e', e.path],
          addresses.map((a) => a.toString(16)).join('\n') + '\n',
        )
          .trimEnd()
          .split('\n');
        assert.equal(out.length, addresses.length);
        let known = 0;
        addresses.forEach((a, i) => {
          const m = /^(.*):(\d+|\?)(?: \(discriminator \d+\))?$/.exec(out[i]!)!;
          const loc = table.lookup(a);
          if (m[1] === '??' || m[2] === '?' || m[2] === '0') {
            assert.equal(loc, undefined, `0x${a.toString(16)}: addr2line knows no line`);
            return;
          }
          known++;
          assert.ok(loc, `0x${a.toString(16)}: addr2line says ${out[i]}`);
          assert.equal(`${loc.file}:${loc.line}`, `${posix.normalize(m[1]!)}:${m[2]}`, `0x${a.toString(16)}`);
        });
        assert.ok(known > addresses.length / 2);
      });

      it('gives, for each source line, exactly the is_stmt row addresses objdump lists for it', () => {
        const theirs = parseDecodedLine(run(tool(e.target, 'objdump'), ['--dwarf=decodedline', '-w', e.path]));
        const expected = new Map<string, Set<number>>();
        for (const t of theirs) {
          if (t.endSequence || !t.isStmt || !img.isCode(t.address)) continue;
          const file = table.rows.find(
            (r) => r.address === t.address && basename(r.file) === t.name && samePath(r.file, t.path),
          )!.file;
          const key = `${file}:${t.line}`;
          if (!expected.has(key)) expected.set(key, new Set());
          expected.get(key)!.add(t.address);
        }
        assert.ok(expected.size > 10);
        for (const [key, addresses] of expected) {
          const at = key.lastIndexOf(':');
          const got = table.addressesForLine(key.slice(0, at), Number(key.slice(at + 1)));
          assert.deepEqual(
            got,
            [...addresses].sort((a, b) => a - b),
            key,
          );
        }
      });
    });
  }
});

describe('LineTable queries', () => {
  const samples = sampleElfs().filter((s) => s.sample && s.debug);

  it(
    'finds line addresses by a trailing part of the path, and by another checkout of the same tree',
    { skip: samples.length === 0 },
    () => {
      const s = samples[0]!;
      const table = ElfImage.loadSync(s.path).lineTable;
      const helper = join(s.sample!.dir, 'sub', 'helper.c');
      const line = markerLine(helper, 'helper_acc += s;');
      const exact = table.addressesForLine(helper, line);
      assert.ok(exact.length > 0);
      assert.deepEqual(table.addressesForLine('sub/helper.c', line), exact);
      assert.deepEqual(table.addressesForLine('helper.c', line), exact);
      assert.deepEqual(table.addressesForLine('/elsewhere/checkout/sub/helper.c', line), exact);
      assert.deepEqual(table.addressesForLine('other/helper.c', line), []);
      assert.deepEqual(table.addressesForLine(helper, 100000), []);
    },
  );

  it(
    'gives each sample function the lines between its signature and closing brace',
    { skip: samples.length === 0 },
    () => {
      for (const s of samples) {
        const img = ElfImage.loadSync(s.path);
        const main = join(s.sample!.dir, 'main.c');
        const first = markerLine(main, 'int main(void)');
        const last =
          first +
          readFileSync(main, 'utf8')
            .split('\n')
            .slice(first - 1)
            .findIndex((l) => l === '}');
        const range = img.functionLines('main')!;
        assert.equal(range.file, main, s.name);
        assert.ok(
          range.firstLine >= first && range.lastLine <= last,
          `${s.name}: ${range.firstLine}-${range.lastLine} within ${first}-${last}`,
        );
        assert.ok(range.lines.includes(markerLine(main, 's += fib(12);')), s.name);
        const helper = img.functionLines('helper_sum')!;
        assert.equal(helper.file, join(s.sample!.dir, 'sub', 'helper.c'));
        assert.equal(img.functionLines('no_such_function'), undefined);
      }
    },
  );

  it(
    'drops sequences of code the linker discarded (--gc-sections) from lookups',
    { skip: samples.length === 0 },
    () => {
      for (const s of samples.filter((x) => x.sample!.variant === 'o1-dwarf5-gc')) {
        const img = ElfImage.loadSync(s.path);
        const unused = markerLine(join(s.sample!.dir, 'main.c'), 'return x * x + 42;');
        assert.deepEqual(img.lineTable.addressesForLine('main.c', unused), [], s.name);
        assert.equal(img.functionNamed('unused_fn'), undefined);
      }
    },
  );
});

function markerLine(file: string, text: string): number {
  const i = readFileSync(file, 'utf8')
    .split('\n')
    .findIndex((l) => l.includes(text));
  assert.ok(i >= 0, `${text} in ${file}`);
  return i + 1;
}

/** Builds .debug_line bytes by hand, to reach what GCC 12 does not emit. */
class Bytes {
  readonly out: number[] = [];
  u8(...v: number[]): this {
    this.out.push(...v.map((x) => x & 0xff));
    return this;
  }
  u16(v: number): this {
    return this.u8(v, v >> 8);
  }
  u32(v: number): this {
    return this.u8(v, v >> 8, v >> 16, v >>> 24);
  }
  u64(v: number): this {
    return this.u32(v).u32(0);
  }
  uleb(v: number): this {
    do {
      const b = v & 0x7f;
      v = Math.floor(v / 128);
      this.u8(v ? b | 0x80 : b);
    } while (v);
    return this;
  }
  sleb(v: number): this {
    for (;;) {
      const b = v & 0x7f;
      v >>= 7;
      const done = (v === 0 && (b & 0x40) === 0) || (v === -1 && (b & 0x40) !== 0);
      this.u8(done ? b : b | 0x80);
      if (done) return this;
    }
  }
  str(s: string): this {
    return this.u8(...Buffer.from(s + '\0'));
  }
  bytes(b: Bytes): this {
    this.out.push(...b.out);
    return this;
  }
  get length(): number {
    return this.out.length;
  }
}

const DW_FORM = { string: 0x08, strp: 0x0e, udata: 0x0f, data1: 0x0b, data2: 0x05, data16: 0x1e, line_strp: 0x1f };

/** A line program body exercising special, standard and extended opcodes. */
function program(opcodeBase: number, extraStandard = false): Bytes {
  const p = new Bytes();
  p.u8(0, 5, 2).u32(0x1000); // DW_LNE_set_address 0x1000
  p.u8(3).sleb(9); // advance_line to 10
  p.u8(1); // copy: row 0x1000 line 10
  p.u8(opcodeBase + (1 - -5) + 14 * 2); // special: address += 2 * min_inst_length(2) = 4, line += 1
  p.u8(6); // negate_stmt
  p.u8(5).uleb(7); // set_column 7
  p.u8(0, 2, 4).uleb(3); // DW_LNE_set_discriminator 3
  p.u8(2).uleb(3); // advance_pc 3 * 2
  p.u8(1); // copy: row 0x100a line 11 col 7 !stmt disc 3
  if (extraStandard) p.u8(13).uleb(99999); // a standard opcode unknown to the reader, one ULEB operand
  p.u8(0, 3, 0x80, 1, 2); // an unknown extended opcode (0x80) with two bytes, skipped
  p.u8(4).uleb(2); // set_file 2
  p.u8(9).u16(0x10); // fixed_advance_pc 0x10
  p.u8(8); // const_add_pc: (255 - opcode_base) / 14 * 2
  p.u8(3).sleb(-5); // line 6
  p.u8(1);
  p.u8(2).uleb(1); // advance_pc 2
  p.u8(0, 1, 1); // end_sequence
  return p;
}

function header(version: number, opcodeBase: number): Bytes {
  const h = new Bytes();
  h.u8(2); // minimum_instruction_length
  if (version >= 4) h.u8(1); // maximum_operations_per_instruction
  h.u8(1, -5, 14, opcodeBase); // default_is_stmt, line_base, line_range, opcode_base
  const lengths = [0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1, 1];
  h.u8(...lengths.slice(0, opcodeBase - 1));
  return h;
}

describe('hand-made line programs (forms and opcodes GCC 12 does not emit)', () => {
  it('decodes a 64-bit DWARF 5 program with string, strp, line_strp, udata, data1/2 and MD5 (data16) entries', () => {
    const lineStr = Buffer.from('\0/work/proj\0src\0');
    const str = Buffer.from('\0b.c\0');
    const h = header(5, 13);
    // directory table: format (path: line_strp), 2 entries
    h.u8(1).uleb(1).uleb(DW_FORM.line_strp).uleb(2).u64(1).u64(12);
    // file table: path, directory index, MD5, size (data2), a vendor content type (data1)
    h.u8(5)
      .uleb(1)
      .uleb(DW_FORM.string)
      .uleb(2)
      .uleb(DW_FORM.udata)
      .uleb(5)
      .uleb(DW_FORM.data16)
      .uleb(4)
      .uleb(DW_FORM.data2)
      .uleb(0x2001)
      .uleb(DW_FORM.data1);
    h.uleb(3);
    h.str('a.c')
      .uleb(1)
      .u8(...new Array(16).fill(0xab))
      .u16(100)
      .u8(1);
    h.str('/abs/inc.h')
      .uleb(0)
      .u8(...new Array(16).fill(0))
      .u16(7)
      .u8(2);
    h.str('x')
      .uleb(1)
      .u8(...new Array(16).fill(1))
      .u16(1)
      .u8(3);
    const body = program(13);
    const unit = new Bytes().u16(5).u8(4, 0).u64(h.length).bytes(h).bytes(body);
    const section = new Bytes().u32(0xffffffff).u64(unit.length).bytes(unit);
    // A second, 32-bit unit whose file names use DW_FORM_strp (.debug_str).
    const h2 = header(5, 13);
    h2.u8(1).uleb(1).uleb(DW_FORM.string).uleb(1).str('/w');
    h2.u8(2).uleb(1).uleb(DW_FORM.strp).uleb(2).uleb(DW_FORM.udata).uleb(1).u32(1).uleb(0);
    const unit2 = new Bytes().u16(5).u8(4, 0).u32(h2.length).bytes(h2).u8(0, 5, 2).u32(0x3000).u8(1).u8(0, 1, 1);
    section.u32(unit2.length).bytes(unit2);

    const programs = decodeLinePrograms({ line: Uint8Array.from(section.out), lineStr, str }, new Map());
    assert.equal(programs.length, 2);
    assert.deepEqual(programs[0]!.files, ['/work/proj/src/a.c', '/abs/inc.h', '/work/proj/src/x']);
    assert.deepEqual(
      programs[0]!.rows.map((r) => [r.address, r.file, r.line, r.column, r.isStmt, r.endSequence, r.discriminator]),
      [
        // The file register starts at 1 in every version, so in DWARF 5 at the second entry.
        [0x1000, '/abs/inc.h', 10, 0, true, false, 0],
        [0x1004, '/abs/inc.h', 11, 0, true, false, 0],
        [0x100a, '/abs/inc.h', 11, 7, false, false, 3],
        [0x101a + 2 * Math.floor((255 - 13) / 14), '/work/proj/src/x', 6, 7, false, false, 0],
        [0x101a + 2 * Math.floor((255 - 13) / 14) + 2, '/work/proj/src/x', 6, 7, false, true, 0],
      ],
    );
    assert.deepEqual(programs[1]!.files, ['/w/b.c']);
    assert.deepEqual(
      programs[1]!.rows.map((r) => [r.address, r.file]),
      [
        [0x3000, '<file 1>'],
        [0x3000, '<file 1>'],
      ],
    );
    const table = new LineTable(programs);
    assert.deepEqual(table.lookup(0x1006), { file: '/abs/inc.h', line: 11, column: 0 });
    assert.equal(table.lookup(0x0fff), undefined);
    assert.deepEqual(table.addressesForLine('/abs/inc.h', 11), [0x1004]);
  });

  it(
    'decodes DWARF 2 file tables with DW_LNE_define_file, comp_dir-relative directories and an ' +
      'extra standard opcode',
    () => {
      const h = header(2, 14); // opcode_base 14: opcode 13 is standard, with one ULEB operand
      h.str('inc').str('/opt/sys').u8(0); // include_directories 1, 2
      h.str('m.c').uleb(0).uleb(0).uleb(0).str('h.h').uleb(1).uleb(0).uleb(0).u8(0);
      const body = new Bytes()
        .u8(0, 1 + 7 + 3, 3)
        .str('late.c')
        .uleb(2)
        .uleb(0)
        .uleb(0); // define_file: file 3
      body.bytes(program(14, true));
      body.u8(0, 5, 2).u32(0x2000).u8(4).uleb(3).u8(1).u8(0, 1, 1);
      const unit = new Bytes().u16(2).u32(h.length).bytes(h).bytes(body);
      const section = new Bytes().u32(unit.length).bytes(unit);
      const programs = decodeLinePrograms(
        { line: Uint8Array.from(section.out) },
        new Map([[0, { compDir: '/build' }]]),
      );
      assert.deepEqual(programs[0]!.files, ['', '/build/m.c', '/build/inc/h.h', '/opt/sys/late.c']);
      const rows = programs[0]!.rows;
      assert.deepEqual(
        rows.map((r) => r.line),
        [10, 11, 11, 6, 6, 1, 1],
      );
      assert.equal(rows[3]!.file, '/build/inc/h.h');
      assert.equal(rows[5]!.file, '/opt/sys/late.c');
      assert.equal(rows[5]!.address, 0x2000);
    },
  );

  it('rejects a corrupt header and a truncated program with a clear RangeError (wrapped by ElfImage)', () => {
    const h = header(3, 13);
    h.u8(0).u8(0);
    const bad = new Bytes().u16(3).u32(h.length).bytes(h);
    bad.out[2 + 4 + 3] = 0; // line_range = 0
    assert.throws(
      () => decodeLinePrograms({ line: Uint8Array.from(new Bytes().u32(bad.length).bytes(bad).out) }, new Map()),
      /line_range 0/,
    );
    const ok = new Bytes().u16(3).u32(header(3, 13).u8(0, 0).length).bytes(header(3, 13).u8(0, 0)).bytes(program(13));
    const section = new Bytes().u32(ok.length).bytes(ok).out;
    assert.throws(
      () => decodeLinePrograms({ line: Uint8Array.from(section.slice(0, section.length - 5)) }, new Map()),
      /past the end/,
    );
    const lying = Uint8Array.from(section);
    lying[section.length - 2] = 0x7f; // the end_sequence's extended length now runs past the unit
    assert.throws(() => decodeLinePrograms({ line: lying }, new Map()), /runs past the end|needed/);
    assert.throws(
      () => decodeLinePrograms({ line: Uint8Array.from([5, 0, 0, 0, 9, 0, 0, 0, 0]) }, new Map()),
      /unsupported version 9/,
    );
    // A DWARF 5 file table with no entry format and an absurd entry count must not spin.
    const h5 = header(5, 13)
      .u8(0)
      .uleb(0)
      .u8(0)
      .uleb(2 ** 40);
    const v5 = new Bytes().u16(5).u8(4, 0).u32(h5.length).bytes(h5);
    assert.throws(
      () => decodeLinePrograms({ line: Uint8Array.from(new Bytes().u32(v5.length).bytes(v5).out) }, new Map()),
      /claims 1099511627776 entries/,
    );
  });
});
