import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProfileBuilder } from '../../core/import/common';
import { importFolded, importFoldedFile } from '../../core/import/folded';

/**
 * The importers' cost in call edges. Counted, not timed: the builder's edge table is watched for
 * reads of its entries, which a search of the list per edge does (n²/2 for n edges) and an index
 * does not; and two input sizes are compared in one run, by the work they cause.
 */
function countingEdges(b: ProfileBuilder): { reads: number } {
  const counter = { reads: 0 };
  const edges = b.profile.edges;
  b.profile.edges = new Proxy(edges, {
    get(target, key, receiver) {
      if (typeof key === 'string' && /^\d+$/.test(key)) counter.reads++;
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
  return counter;
}

function foldedText(edges: number): string {
  const lines: string[] = [];
  // Each stack adds one new edge (main -> f_i) and one repeated one (f_i -> leaf is new, main -> f_i again).
  for (let i = 0; i < edges; i++) lines.push(`main;f_${i};leaf ${1 + (i % 5)}`, `main;f_${i} 1`);
  return `${lines.join('\n')}\n`;
}

describe('importers: linear in call edges', () => {
  it(
    'ProfileBuilder.edge reads no edge entries to find an edge: the work per edge does not grow ' + 'with the table',
    () => {
      for (const n of [1_000, 8_000]) {
        const b = new ProfileBuilder('test', 'x', { kind: 'samples' }, { kind: 'exact', counter: 'x' });
        const ids = Array.from({ length: n + 1 }, (_, i) => b.fn(`f${i}`).id);
        const counter = countingEdges(b);
        for (let i = 1; i <= n; i++) b.edge(ids[0]!, ids[i]!, 1);
        for (let i = 1; i <= n; i++) b.edge(ids[0]!, ids[i]!, 2);
        assert.equal(b.profile.edges.length, n, `${n} distinct edges`);
        assert.ok(
          b.profile.edges.every((e) => e.calls === 3),
          'repeated edges are merged, their calls summed',
        );
        // A list search would read n²/2 + n² entries here (1.5 M for n = 1,000); an index reads none.
        assert.ok(counter.reads <= 2 * n, `${counter.reads} edge reads for ${2 * n} edge() calls`);
      }
    },
  );

  it('the folded importer merges identical stacks and sums their counts; 8x the edges gives 8x the profile', () => {
    const small = importFolded(foldedText(1_000));
    const large = importFolded(foldedText(8_000));
    assert.equal(small.edges.length, 2_000);
    assert.equal(large.edges.length, 16_000);
    assert.equal(large.stacks.length, 16_000);
    const twice = importFolded(`${foldedText(10)}${foldedText(10)}`);
    assert.equal(twice.stacks.length, 20, 'each distinct stack once');
    assert.equal(
      twice.stacks.reduce((s, x) => s + x.value, 0),
      2 * importFolded(foldedText(10)).stacks.reduce((s, x) => s + x.value, 0),
    );
  });

  it('reads a folded file as a stream, with the same profile as from its text', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cyclelens-folded-'));
    try {
      const file = join(dir, 'stacks.folded');
      const text = foldedText(500).replace(/\n/g, '\r\n');
      writeFileSync(file, text);
      const streamed = await importFoldedFile(file);
      const whole = importFolded(text, { file });
      assert.deepEqual({ ...streamed, createdAt: '' }, { ...whole, createdAt: '' });
      await assert.rejects(
        importFoldedFile(join(dir, 'missing.folded')),
        /ENOENT|no such file/,
        'a missing file is an error, not an empty profile',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
