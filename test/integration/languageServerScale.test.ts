import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { cliBundle } from '../support/cliWorkspace';
import { RawLspClient } from '../support/rawLspClient';
import { syntheticWorkspace } from '../support/syntheticSource';

/**
 * The profile language server (`cyclelens lsp --stdio`) on a generated file of many profiled
 * functions, and on a workspace whose results folder holds a FIFO. Sizes and counts are compared
 * between a small and a large file in one run; nothing is timed.
 */
const SMALL = 1_000;
const LARGE = 50_000;
const MAX_LENSES = 1_000;

interface Lens {
  range: { start: { line: number } };
  command?: { title: string };
}

async function serve(count: number, prepare?: (root: string) => void) {
  const root = mkdtempSync(join(tmpdir(), `cyclelens-lsp-scale-${count}-`));
  const { source } = await syntheticWorkspace(root, count);
  prepare?.(root);
  const client = RawLspClient.start(process.execPath, [cliBundle, 'lsp', '--stdio'], root, process.env);
  await client.initialize(root);
  await client.waitFor(
    (m) => m.method === 'window/logMessage' && /CycleLens profile: /.test(JSON.stringify(m.params)),
    'the profile loaded',
    120_000,
  );
  const uri = pathToFileURL(source).href;
  client.notify('textDocument/didOpen', {
    textDocument: { uri, languageId: 'c', version: 1, text: readFileSync(source, 'utf8') },
  });
  const lenses = async (): Promise<{ lenses: Lens[]; bytes: number }> => {
    const reply = await client.request('textDocument/codeLens', { textDocument: { uri } }, 120_000);
    return { lenses: reply.result as Lens[], bytes: JSON.stringify(reply.result).length };
  };
  const rssKiB = (): number =>
    Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${client.child.pid}/status`, 'utf8'))![1]);
  return { root, client, uri, lenses, rssKiB };
}

describe('profile language server over stdio, at scale', { timeout: 600_000 }, () => {
  const roots: string[] = [];
  after(() => {
    for (const r of roots) rmSync(r, { recursive: true, force: true });
  });

  it(
    `answers CodeLens for ${LARGE.toLocaleString('en-US')} functions with the hottest ${MAX_LENSES}, ` +
      `no bigger than for ${SMALL.toLocaleString('en-US')}`,
    async () => {
      const small = await serve(SMALL);
      roots.push(small.root);
      const large = await serve(LARGE);
      roots.push(large.root);
      try {
        const a = await small.lenses();
        const b = await large.lenses();
        assert.equal(a.lenses.length, SMALL, 'a file under the limit gets a lens per function');
        assert.equal(b.lenses.length, MAX_LENSES + 1, 'the hottest functions and one lens that says so');
        assert.ok(
          b.bytes <= 1.5 * a.bytes,
          `the answer for ${LARGE} functions (${b.bytes} bytes) is about that for ${SMALL} (${a.bytes} ` +
            `bytes), not ${LARGE / SMALL} times it`,
        );
        const note = b.lenses.find((l) => /hottest of the 50,000 profiled functions/.test(l.command?.title ?? ''));
        assert.ok(note, 'a lens says that only the hottest functions carry lenses');
        // fn_i is defined on line i; every 1,000th is the hottest (inclusive = the whole window).
        for (let i = 0; i < LARGE; i += 1000)
          assert.ok(
            b.lenses.some((l) => l.range.start.line === i && l.command?.title.startsWith('100.0 % incl')),
            `fn_${i}, among the hottest, has its lens on line ${i}`,
          );
        // A hover still answers for a function without a lens.
        const hover = await large.client.request('textDocument/hover', {
          textDocument: { uri: large.uri },
          position: { line: 12_345, character: 0 },
        });
        assert.match(JSON.stringify(hover.result), /fn\\\\_12345/);

        // 20 quick edits (a space typed at the start of fn_0's line each): the diagnostics are
        // formed once the burst ends, not per version, from the last version.
        const before = large.rssKiB();
        const from = large.client.messages.length;
        for (let v = 2; v <= 21; v++)
          large.client.notify('textDocument/didChange', {
            textDocument: { uri: large.uri, version: v },
            contentChanges: [
              { range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, text: ' ' },
            ],
          });
        const moved = await large.lenses();
        assert.equal(moved.lenses.length, MAX_LENSES + 1);
        await large.client.waitFor(
          (m) => m.method === 'textDocument/publishDiagnostics',
          'diagnostics after the edits',
          60_000,
          from,
        );
        await new Promise((r) => setTimeout(r, 1000));
        const published = large.client.messages
          .slice(from)
          .filter((m) => m.method === 'textDocument/publishDiagnostics');
        assert.ok(published.length <= 5, `${published.length} diagnostics publications for 20 edits`);
        const diagnostics = (
          published[published.length - 1]!.params as {
            diagnostics: Array<{ range: { start: { line: number }; end: { character: number } } }>;
          }
        ).diagnostics;
        assert.equal(diagnostics.length, LARGE / 1000, 'a hot diagnostic on each hottest function');
        assert.ok(
          diagnostics.every((d) => d.range.start.line % 1000 === 0),
          'on the hottest functions',
        );
        const first = diagnostics.find((d) => d.range.start.line === 0)!;
        assert.equal(
          first.range.end.character,
          'int fn_0(void) { return 0; }'.length + 20,
          "fn_0's diagnostic spans its line as the last edit left it",
        );
        const afterEdits = large.rssKiB();
        assert.ok(afterEdits <= 1.5 * before, `RSS ${before} KiB before the edits, ${afterEdits} KiB after`);
      } finally {
        assert.equal(await small.client.stop(), 0);
        assert.equal(await large.client.stop(), 0);
      }
    },
  );

  it('passes over a FIFO named *.json in .cyclelens/results, says so, and serves the profile', async () => {
    const s = await serve(50, (root) => {
      mkdirSync(join(root, '.cyclelens', 'results'), { recursive: true });
      execFileSync('mkfifo', [join(root, '.cyclelens', 'results', 'stuck.json')]);
    });
    roots.push(s.root);
    try {
      const { lenses } = await s.lenses();
      assert.equal(lenses.length, 50);
      assert.ok(
        s.client.messages.some((m) =>
          /stuck\.json is not a regular file \(a FIFO\)/.test(JSON.stringify(m.params ?? '')),
        ),
        'the FIFO is named in the log',
      );
    } finally {
      assert.equal(await s.client.stop(), 0);
    }
  });
});
