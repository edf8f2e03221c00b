import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { importCallgrind, importCallgrindStream } from '../../core/import/callgrind';
import { ProfileError } from '../../core/profile/profileError';

/** A callgrind file with name compression, relative positions, inline files and non-ASCII names. */
const sample = [
  '# callgrind format',
  'version: 1',
  'events: Ir Dr',
  'positions: line',
  'cmd: ./firmware',
  'fl=(1) src/main.c',
  'fn=(1) main',
  '10 5 1',
  '+2 7 2',
  'cfl=(2) src/ünïcode.c',
  'cfn=(2) größe_€',
  'calls=3 20',
  '* 30 3',
  'fn=(2)',
  'fi=(2)',
  '20 10 4',
  '-1 4 0',
  'fl=(2)',
  'fn=(3) 日本語_leaf',
  '5 2 0',
  'fn=(1)',
  'cfn=(3)',
  'calls=1 5',
  '12 2 0',
  '',
].join('\r\n');

/** The bytes of `text`, in chunks of `size` bytes: most chunks split a line, some a UTF-8 character. */
function chunked(text: string, size: number): Readable {
  const bytes = Buffer.from(text, 'utf8');
  return Readable.from(
    (function* () {
      for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
    })(),
    { objectMode: false },
  );
}

describe('callgrind import from a stream', () => {
  it('gives the same profile as the text importer, whatever the chunk size', async () => {
    const whole = importCallgrind(sample, { file: 'f.out' });
    assert.ok(whole.functions.some((f) => f.name === 'größe_€'));
    assert.ok(whole.functions.some((f) => f.name === '日本語_leaf'));
    // Chunks of 1, 2, 3, 5 and 7 bytes each end inside a multi-byte character somewhere ("ü", "€", "日").
    const bytes = Buffer.from(sample, 'utf8');
    for (const size of [2, 3, 5, 7]) {
      const cuts = bytes.filter((_, at) => at > 0 && at % size === 0 && (bytes[at]! & 0xc0) === 0x80);
      assert.ok(cuts.length > 0, `size ${size} splits a character`);
    }
    for (const size of [1, 2, 3, 5, 7, 64, 100_000]) {
      const streamed = await importCallgrindStream(chunked(sample, size), { file: 'f.out' });
      assert.deepEqual({ ...streamed, createdAt: whole.createdAt }, whole, `size ${size}`);
    }
  });

  it('reports errors at the line number the text importer gives', async () => {
    const bad = `events: Ir\nfn=main\n1 2\nnot a cost line\n`;
    const message = (() => {
      try {
        importCallgrind(bad, { file: 'f.out' });
      } catch (e) {
        return (e as Error).message;
      }
      return '';
    })();
    assert.match(message, /line 4/);
    await assert.rejects(importCallgrindStream(chunked(bad, 3), { file: 'f.out' }), (e: unknown) => {
      assert.ok(e instanceof ProfileError);
      assert.equal(e.message, message);
      return true;
    });
  });

  it('reads as it goes: a bad line near the start stops it before the rest of a 64 MiB input is pulled', async () => {
    // If the importer gathered its input before parsing, it would pull all 64 MiB before it saw the bad
    // line; streaming, it pulls only what the line reader buffers ahead (its high-water marks).
    const total = 64 * 1024 * 1024;
    const chunk = Buffer.from(`${'1 5\n'.repeat(1023)}7 7\n`); // 4 KiB of cost lines
    let pulled = 0;
    const input = Readable.from(
      (function* () {
        const head = Buffer.from('events: Ir\nfn=main\n');
        pulled += head.length;
        yield head;
        for (let i = 0; pulled < total; i++) {
          const next = i === 100 ? Buffer.from('garbage\n') : chunk;
          pulled += next.length;
          yield next;
        }
      })(),
      { objectMode: false },
    );
    await assert.rejects(importCallgrindStream(input), /line 102403: "garbage"/);
    assert.ok(pulled < 2 * 1024 * 1024, `pulled ${pulled} bytes of ${total}`);
  });
});
