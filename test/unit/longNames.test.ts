import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { functionsCsv, linesCsv } from '../../core/export/csv';
import { exportFormat } from '../../core/export/formats';
import { importCsv, parseCsv } from '../../core/import/csv';
import { importFolded } from '../../core/import/folded';
import { parseProfileText } from '../../core/profile/json';
import { MAX_NAME_LENGTH } from '../../core/profile/profileError';

/**
 * Names as long as C++ and Rust symbols get (templates, closures), and names a spreadsheet would
 * run as formulas: what one part of CycleLens writes, every other part reads back.
 */
const json = (p: Parameters<NonNullable<ReturnType<typeof exportFormat>>['write']>[0]): string =>
  exportFormat('json')!.write(p) as string;

describe('long function names', () => {
  for (const length of [4_097, 20_000, MAX_NAME_LENGTH]) {
    it(`a ${length}-character name imported from folded stacks survives export --format json and loading`, () => {
      const name = `ns::f<${'x'.repeat(length - 7)}>`;
      assert.equal(name.length, length);
      const p = importFolded(`main;${name} 5\n`);
      const back = parseProfileText(json(p), 'long.profile.json');
      assert.deepEqual(
        back.functions.map((f) => f.name),
        ['main', name],
      );
      assert.deepEqual(back.runs[0]!.measured, ['main', name]);
    });
  }

  it('a name over the limit is refused at import with the length, the limit and the fix', () => {
    const name = 'y'.repeat(MAX_NAME_LENGTH + 1);
    assert.throws(
      () => importFolded(`main;${name} 5\n`, { file: 'big.folded' }),
      /big\.folded names a function of 65537 characters .* over the 65536-character limit .*: shorten the name/,
    );
  });

  it('a loaded profile with a name over the limit names the field', () => {
    const p = importFolded('main;leaf 5\n');
    const text = json(p).replace('"leaf"', `"${'z'.repeat(MAX_NAME_LENGTH + 1)}"`);
    assert.throws(() => parseProfileText(text, 'x.profile.json'), /\$\.functions\[1\]\.name/);
  });
});

describe('CSV cells a spreadsheet would evaluate', () => {
  const names = ['=SUM(A1:A9)', '+cmd|calc', '-2+3', '@HYPERLINK("x")', "'quoted", 'operator-', 'plain'];

  it('names starting with = + - @ (or the apostrophe) are written as text cells, and read back whole', () => {
    const p = importFolded(names.map((n, i) => `main;${n} ${i + 1}`).join('\n'));
    for (const f of p.functions) f.location = { path: `=${f.name}.c`, line: 3 };
    p.lines = [{ path: '@lines.c', line: 4, function: 1, self: { value: 2 } }];
    const csv = functionsCsv(p);
    const cells = parseCsv(csv).slice(1);
    for (const row of cells) {
      // A cell's text as a spreadsheet sees it after unquoting: none starts with a formula character.
      for (const cell of [row[0]!, row[2]!]) assert.doesNotMatch(cell, /^[=+\-@]/, `cell ${cell}`);
    }
    assert.ok(csv.includes(`"'=SUM(A1:A9)"`), 'the formula-like name is quoted, with the apostrophe');
    assert.ok(csv.includes('\r\nplain,'), 'an ordinary name is left as it is');
    assert.doesNotMatch(parseCsv(linesCsv(p))[1]![0]!, /^@/);
    const back = importCsv(csv, { linesText: linesCsv(p) });
    assert.deepEqual(
      back.functions.map((f) => f.name),
      p.functions.map((f) => f.name),
    );
    assert.deepEqual(
      back.functions.map((f) => f.location?.path),
      p.functions.map((f) => f.location?.path),
    );
    assert.equal(back.lines[0]!.path, '@lines.c');
    assert.equal(back.functions[back.lines[0]!.function!]!.name, p.functions[1]!.name);
  });
});
