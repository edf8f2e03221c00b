import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { cliBundle } from '../support/cliWorkspace';
import { RawLspClient } from '../support/rawLspClient';
import { syntheticWorkspace } from '../support/syntheticSource';
import { readFileSync } from 'node:fs';

/**
 * The profile language server (`cyclelens lsp --stdio`) fed what no well-behaved client sends:
 * frames with a bad header or a body that is not JSON, requests and notifications with params of
 * the wrong type, and random bytes. After each it must still run and answer; a bad request gets a
 * JSON-RPC error that names the field, never the text of an exception from inside the server.
 */
const COUNT = 200;

describe('profile language server over stdio, malformed messages', () => {
  const root = mkdtempSync(join(tmpdir(), 'cyclelens-lsp-faults-'));
  let source = '';
  let uri = '';
  let client: RawLspClient;

  before(async () => {
    ({ source } = await syntheticWorkspace(root, COUNT));
    uri = pathToFileURL(source).href;
    client = RawLspClient.start(process.execPath, [cliBundle, 'lsp', '--stdio'], root, process.env);
    await client.initialize(root);
  });

  after(async () => {
    try {
      assert.equal(await client.stop(), 0, 'the server still exits with 0 after shutdown and exit');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  /** The server answers a good request with lenses on the good document: it is alive and not deaf. */
  const stillAnswers = async (what: string): Promise<void> => {
    const reply = await client.request('textDocument/codeLens', { textDocument: { uri } });
    assert.ok(
      Array.isArray(reply.result),
      `after ${what}, codeLens is answered: ${JSON.stringify(reply).slice(0, 300)}`,
    );
    assert.ok((reply.result as unknown[]).length > 0, `after ${what}, the lenses are there`);
    assert.equal(client.exitStatus, undefined, `the server still runs after ${what}`);
  };

  const noInternals = (text: string): void =>
    assert.doesNotMatch(text, /TypeError|ReferenceError|Cannot read|undefined is not|is not a function|at .*\.js:\d+/);

  it('opens the good document and serves it', async () => {
    client.notify('textDocument/didOpen', {
      textDocument: { uri, languageId: 'c', version: 1, text: readFileSync(source, 'utf8') },
    });
    const lenses = await waitLenses(client, uri);
    assert.ok(lenses > 0);
  });

  it('a didOpen with text: null is reported in the log and ignored; the server stays up', async () => {
    const from = client.messages.length;
    const other = pathToFileURL(join(root, 'src', 'other.c')).href;
    client.notify('textDocument/didOpen', { textDocument: { uri: other, languageId: 'c', version: 1, text: null } });
    const log = await client.waitFor(
      (m) => m.method === 'window/logMessage' && /didOpen/.test(JSON.stringify(m)),
      'a log message about the bad didOpen',
      20_000,
      from,
    );
    const message = (log.params as { message: string }).message;
    assert.match(message, /params\.textDocument\.text must be a string \(found null\)/);
    noInternals(message);
    await stillAnswers('a didOpen with text: null');
  });

  it('a frame with "Content-Length: abc" gets a parse error; the next frame is read', async () => {
    const from = client.messages.length;
    client.raw('Content-Length: abc\r\n\r\n{"jsonrpc":"2.0","id":999,"method":"shutdown"}');
    const error = await client.waitFor((m) => m.id === null && 'error' in m, 'a parse error', 20_000, from);
    assert.equal((error.error as { code: number }).code, -32700);
    assert.match((error.error as { message: string }).message, /Content-Length "abc" is not a byte count/);
    await stillAnswers('a Content-Length: abc frame');
    assert.ok(!client.messages.some((m) => m.id === 999), 'the body of the bad frame was not taken as a request');
  });

  it(
    'a header without Content-Length, a body that is not JSON, and a header that never ends are ' + 'each skipped',
    async () => {
      for (const [bytes, pattern] of [
        ['Content-Type: x\r\n\r\n', /without Content-Length/],
        ['Content-Length: 7\r\n\r\n{"a": }', /not JSON/],
        ['Content-Length: 99999999999\r\n\r\n', /not a byte count|over the/],
        [`X-${'y'.repeat(10_000)}`, /header block of more than/],
        ['Content-Length: 5\r\n\r\n[1,2]', /not a JSON object/],
      ] as const) {
        const from = client.messages.length;
        client.raw(bytes);
        const error = await client.waitFor(
          (m) => m.id === null && 'error' in m,
          `an error for ${bytes.slice(0, 30)}`,
          20_000,
          from,
        );
        assert.match((error.error as { message: string }).message, pattern);
        await stillAnswers(JSON.stringify(bytes.slice(0, 30)));
      }
    },
  );

  it('requests with params of the wrong type get InvalidParams naming the field, with no exception text', async () => {
    const cases: Array<[string, unknown, RegExp]> = [
      ['textDocument/hover', { textDocument: { uri }, position: 'top' }, /params\.position must be an object/],
      ['textDocument/hover', { textDocument: { uri }, position: { line: -1, character: 0 } }, /params\.position\.line/],
      ['textDocument/codeLens', { textDocument: { uri: 42 } }, /params\.textDocument\.uri must be a string/],
      ['textDocument/codeLens', null, /params must be an object \(found null\)/],
      ['textDocument/inlayHint', { textDocument: { uri } }, /params\.range is missing/],
      [
        'textDocument/inlayHint',
        { textDocument: { uri }, range: { start: { line: 0, character: 0 }, end: { line: 1.5, character: 0 } } },
        /params\.range\.end\.line/,
      ],
    ];
    for (const [method, params, pattern] of cases) {
      const reply = await client.request(method, params);
      const error = reply.error as { code: number; message: string } | undefined;
      assert.ok(error, `${method} ${JSON.stringify(params)} is refused: ${JSON.stringify(reply)}`);
      assert.equal(error.code, -32602, 'InvalidParams');
      assert.match(error.message, pattern);
      noInternals(error.message);
    }
    // The envelope: an id that is neither a number nor a string, a missing method, a wrong version.
    for (const [body, pattern] of [
      [
        { jsonrpc: '2.0', id: { x: 1 }, method: 'textDocument/codeLens', params: { textDocument: { uri } } },
        /"id" must be/,
      ],
      [{ jsonrpc: '2.0', id: 5 }, /needs a "method"/],
      [
        { jsonrpc: '1.0', id: 6, method: 'textDocument/codeLens', params: { textDocument: { uri } } },
        /"jsonrpc" must be "2\.0"/,
      ],
    ] as const) {
      const from = client.messages.length;
      client.send(body);
      const error = await client.waitFor((m) => 'error' in m, `an error for ${JSON.stringify(body)}`, 20_000, from);
      assert.equal((error.error as { code: number }).code, -32600, 'InvalidRequest');
      assert.match((error.error as { message: string }).message, pattern);
    }
    await stillAnswers('requests with bad params');
  });

  it('survives random bytes and mutated messages: every request is answered, none with exception text', async () => {
    // A fixed-seed generator: the same bytes each run, so a failure can be replayed.
    let seed = 29;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const values: unknown[] = [null, 0, -1, 1.5, 2 ** 40, '', 'x', true, [], {}, [1], { line: 'a' }, { uri: null }];
    const methods = [
      'textDocument/codeLens',
      'textDocument/hover',
      'textDocument/inlayHint',
      'textDocument/didChange',
      'textDocument/didOpen',
      'textDocument/didClose',
      'workspace/didChangeConfiguration',
      'workspace/didChangeWatchedFiles',
      '$/cancelRequest',
    ];
    const good = (method: string): Record<string, unknown> => ({
      textDocument: { uri, languageId: 'c', version: 2, text: 'int fn_1(void) { return 1; }\n' },
      position: { line: 0, character: 0 },
      range: { start: { line: 0, character: 0 }, end: { line: 10, character: 0 } },
      contentChanges: [{ text: 'x' }],
      changes: [{ uri, type: 2 }],
      settings: { cyclelens: {} },
      id: 1,
      method,
    });
    const mutate = (v: unknown, depth: number): unknown => {
      if (depth > 3 || rand(4) === 0) return values[rand(values.length)];
      if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
        const o: Record<string, unknown> = { ...(v as Record<string, unknown>) };
        const keys = Object.keys(o);
        const k = keys[rand(keys.length)]!;
        if (rand(5) === 0) delete o[k];
        else o[k] = mutate(o[k], depth + 1);
        return o;
      }
      return v;
    };
    let requests = 0;
    for (let i = 0; i < 300; i++) {
      if (i % 25 === 0) {
        const junk = Buffer.from(Array.from({ length: 1 + rand(200) }, () => rand(256)));
        client.raw(junk);
        // Junk may hold a partial header: a well-formed Content-Length header follows to resynchronise.
      }
      const method = methods[rand(methods.length)]!;
      const params = mutate(good(method), 0);
      if (method.startsWith('textDocument/did') || method.startsWith('workspace/') || method === '$/cancelRequest') {
        client.notify(method, params);
      } else {
        requests++;
        const reply = await client.request(method, params);
        assert.ok('result' in reply || 'error' in reply, `a reply to ${method}`);
        if ('error' in reply) noInternals((reply.error as { message: string }).message);
      }
    }
    assert.ok(requests > 50, `${requests} requests were sent`);
    // The good document may have been replaced by a mutated didOpen: open it again.
    client.notify('textDocument/didOpen', {
      textDocument: { uri, languageId: 'c', version: 100, text: readFileSync(source, 'utf8') },
    });
    client.notify('textDocument/didClose', { textDocument: { uri } });
    client.notify('textDocument/didOpen', {
      textDocument: { uri, languageId: 'c', version: 101, text: readFileSync(source, 'utf8') },
    });
    await stillAnswers('300 mutated messages and junk');
    for (const m of client.messages)
      if (m.method === 'window/logMessage' || 'error' in m) noInternals(JSON.stringify(m.error ?? m.params));
  });
});

async function waitLenses(client: RawLspClient, uri: string): Promise<number> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const reply = await client.request('textDocument/codeLens', { textDocument: { uri } });
    const n = Array.isArray(reply.result) ? reply.result.length : 0;
    if (n > 0 || Date.now() > deadline) return n;
    await new Promise((r) => setTimeout(r, 100));
  }
}
