import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseArgs } from '../../cli/args';
import { resultSetDocument } from '../../core/analysis/resultSet';
import { emptyProfile } from '../../core/profile/model';
import { definitionLine, linesOf, sourceIdentifier } from '../../lsp/definitionLines';
import { ProfileIndex } from '../../lsp/profileIndex';
import { parseProfileDocument } from '../../core/profile/json';
import { newestProfile } from '../../lsp/profileSource';
import { readSettings } from '../../lsp/server';
import { SourcePathResolver, expandSourceMap, mapSourcePath } from '../../lsp/sourcePaths';

describe('language server: source paths', () => {
  it('maps compiled paths through the longest matching prefix, at path boundaries only', () => {
    const map = { '/build': '/home/me/fw', '/build/src': '/home/me/fw/source', '/build/src2': '/elsewhere' };
    assert.equal(mapSourcePath('/build/src/dsp.c', map, '/ws'), '/home/me/fw/source/dsp.c');
    assert.equal(mapSourcePath('/build/lib/x.c', map, '/ws'), '/home/me/fw/lib/x.c');
    assert.equal(mapSourcePath('/build/src2/y.c', map, '/ws'), '/elsewhere/y.c');
    assert.equal(
      mapSourcePath('/buildings/z.c', map, '/ws'),
      '/buildings/z.c',
      'a prefix that ends inside a name does not match',
    );
    assert.equal(mapSourcePath('src/a.c', {}, '/ws'), '/ws/src/a.c', "relative paths are the workspace's");
    assert.deepEqual(expandSourceMap({ '/b': '${workspaceFolder}/src', '': '/x' }, '/ws'), { '/b': '/ws/src' });
  });

  it('falls back to the base name only when one file of the profile has it', () => {
    const r = new SourcePathResolver(['/ci/src/dsp.c', '/ci/a/main.c', '/ci/b/main.c', '/ws/exact.c'], {}, '/ws');
    assert.equal(r.profilePathFor('/ws/exact.c'), '/ws/exact.c');
    assert.equal(r.profilePathFor('/home/me/project/dsp.c'), '/ci/src/dsp.c');
    assert.equal(r.profilePathFor('/home/me/project/main.c'), undefined, 'two main.c: ambiguous');
    assert.equal(r.profilePathFor('/home/me/other.c'), undefined);
    const mapped = new SourcePathResolver(['/ci/a/main.c', '/ci/b/main.c'], { '/ci/a': '/home/me/a' }, '/ws');
    assert.equal(
      mapped.profilePathFor('/home/me/a/main.c'),
      '/ci/a/main.c',
      'the source map settles what the base name cannot',
    );
  });
});

describe('language server: definition lines', () => {
  const source = [
    '#include "x.h"', //                          0
    '/* fir_filter(): a comment that names it */', // 1
    'static int',
    'fir_filter(const int16_t *in,', //           3
    '           unsigned n)',
    '{',
    '  int acc = 0;', //                          6  (DWARF entry line: first statement)
    '  return acc;',
    '}',
    'loop:', //                                   9
    '  j loop',
    'int Klass::run(int x) { return x; }', //     11
  ].join('\n');
  const doc = linesOf(source);

  it('finds the line that names the function above the entry line', () => {
    assert.equal(definitionLine(doc, 'fir_filter', 6), 3);
    assert.equal(definitionLine(doc, 'loop', 10), 9, 'an assembly label');
    assert.equal(definitionLine(doc, 'Klass::run(int)', 11), 11, 'a C++ name is found by its last component');
    assert.equal(definitionLine(doc, 'absent', 7), 7, 'not found: the entry line itself');
    assert.equal(
      definitionLine(doc, 'fir_filter', 500),
      3,
      'an entry line past the end is clamped to the last line, and the search goes up from there',
    );
    assert.equal(sourceIdentifier('ns::Klass<int>::run(int) const'), 'run');
  });

  it('places profiled functions of a document and leaves other files alone', () => {
    const p = emptyProfile({
      generator: 't',
      program: { executable: 'x' },
      unit: { kind: 'cycles' },
      provenance: { kind: 'exact', counter: 'mcycle' },
    });
    p.functions = [
      { id: 0, name: 'fir_filter', status: 'measured', location: { path: '/ci/dsp.c', line: 7 } },
      { id: 1, name: 'other', status: 'measured', location: { path: '/ci/other.c', line: 2 } },
      { id: 2, name: 'nowhere', status: 'measured' },
    ];
    p.lines = [{ path: '/ci/dsp.c', line: 7, self: { value: 3 } }];
    const index = new ProfileIndex(p, { '/ci': '/ws' }, '/ws');
    assert.deepEqual(
      index.place('/ws/dsp.c', doc).map((x) => [x.fn.name, x.line]),
      [['fir_filter', 3]],
    );
    assert.equal(index.lines('/ws/dsp.c').length, 1);
    assert.deepEqual(index.place('/ws/unrelated.c', doc), []);
  });
});

describe('language server: settings and profile files', () => {
  it('keeps only settings of the expected types', () => {
    assert.deepEqual(
      readSettings({
        hotThreshold: 2.5,
        sourceMap: { '/a': '/b', '/c': 3 },
        codicons: true,
        profile: 'p.json',
        extra: 1,
      }),
      {
        hotThreshold: 2.5,
        sourceMap: { '/a': '/b' },
        codicons: true,
        profile: 'p.json',
      },
    );
    assert.deepEqual(readSettings({ hotThreshold: '5%', sourceMap: [], codicons: 'yes' }), {});
    assert.deepEqual(readSettings(null), {});
  });

  it('refuses a native profile with a field of the wrong type, naming the field', () => {
    const good = emptyProfile({
      generator: 't',
      program: { executable: 'x' },
      unit: { kind: 'cycles' },
      provenance: { kind: 'exact', counter: 'mcycle' },
    });
    good.functions = [
      { id: 0, name: 'f', status: 'measured', inclusive: { value: 5 }, location: { path: '/a.c', line: 3 } },
    ];
    assert.equal(parseProfileDocument(JSON.parse(JSON.stringify(good)), 'p.json').functions[0]!.name, 'f');
    const bad = (mutate: (j: Record<string, any>) => void): Record<string, unknown> => {
      const j = JSON.parse(JSON.stringify(good)) as Record<string, any>;
      mutate(j);
      return j;
    };
    assert.throws(
      () =>
        parseProfileDocument(
          bad((j) => (j.functions[0].inclusive = { value: '5' })),
          'p.json',
        ),
      /p\.json: \$\.functions\[0\]\.inclusive\.value must be a finite number \(found "5"\)/,
    );
    assert.throws(
      () =>
        parseProfileDocument(
          bad((j) => (j.functions[0].location.line = 0)),
          'p.json',
        ),
      /\$\.functions\[0\]\.location\.line/,
    );
    assert.throws(
      () =>
        parseProfileDocument(
          bad((j) => delete j.lines),
          'p.json',
        ),
      /\$\.lines must be an array/,
    );
    assert.throws(
      () =>
        parseProfileDocument(
          bad((j) => (j.unit = 'cycles')),
          'p.json',
        ),
      /\$\.unit must be an object/,
    );
  });

  it('reads the newest profile of .cyclelens/, passing over other JSON and broken files', async () => {
    const root = mkdtempSync(join(tmpdir(), 'cyclelens-lsp-unit-'));
    try {
      const results = join(root, '.cyclelens', 'results');
      mkdirSync(results, { recursive: true });
      assert.equal((await newestProfile(root)).loaded, undefined);
      const run = {
        kind: 'single-pass' as const,
        event: 'instructions',
        totals: { instructions: 100 },
        method: 'software injection, minstret',
      };
      const older = resultSetDocument([
        {
          id: 'a',
          createdAt: '2026-01-01T00:00:00Z',
          program: { executable: 'fw.elf' },
          run,
          measurements: [{ name: 'old', inclusive: { instructions: 10 }, calls: 1 }],
          refused: [],
        },
      ]);
      const newer = resultSetDocument([
        {
          id: 'b',
          createdAt: '2026-01-02T00:00:00Z',
          program: { executable: 'fw.elf' },
          run,
          measurements: [{ name: 'new', inclusive: { instructions: 20 }, calls: 2 }],
          refused: [],
        },
      ]);
      const at = (file: string, text: string, seconds: number): void => {
        writeFileSync(file, text);
        utimesSync(file, seconds, seconds);
      };
      at(join(results, 'older.json'), JSON.stringify(older), 1000);
      at(join(results, 'newer.json'), JSON.stringify(newer), 2000);
      at(join(results, 'graph.json'), JSON.stringify({ schema: 'cyclelens-callgraph/1' }), 3000);
      at(join(results, '.newest.json.123.tmp.json'), '{', 3500);
      at(join(results, 'broken.json'), '{"schema": "cyclelens-resultset/1", "resultSets": [', 4000);
      const found = await newestProfile(root);
      assert.equal(found.loaded?.file, join(results, 'newer.json'));
      assert.deepEqual(
        found.loaded?.profile.functions.map((f) => f.name),
        ['new'],
      );
      assert.equal(
        found.problems.length,
        1,
        'the broken result set is reported; the call graph and the temporary file are not',
      );
      assert.match(found.problems[0]!, /broken\.json is not valid JSON/);
      const explicit = await newestProfile(root, join(results, 'older.json'));
      assert.deepEqual(
        explicit.loaded?.profile.functions.map((f) => f.name),
        ['old'],
        'a configured profile file wins over the newest',
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('cyclelens lsp: arguments', () => {
  it('runs the server on stdio, and says what is wrong otherwise', () => {
    assert.deepEqual(parseArgs(['lsp', '--stdio']), { kind: 'lsp' });
    assert.deepEqual(parseArgs(['lsp']), {
      kind: 'error',
      message: 'lsp needs --stdio: the server talks LSP on stdin and stdout',
    });
    const extra = parseArgs(['lsp', '--stdio', '--socket=4000']);
    assert.ok(extra.kind === 'error' && /unexpected argument '--socket=4000'/.test(extra.message));
  });
});
