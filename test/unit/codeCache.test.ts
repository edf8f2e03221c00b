import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { CODE_CACHES_KEPT, codeCacheDir } from '../../adapter/codeCache';

/**
 * The adapter's start with V8's code cache (adapter/codeCache.ts), each start a fresh Node process as
 * the adapter's is: the program runs as a module of its own either way, the cache is used only when
 * V8 takes it, and a damaged, stale or unsafe cache costs nothing but the compile it would have saved.
 */
const scratch = mkdtempSync(join(tmpdir(), 'cyclelens-code-cache-test-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
const codeCacheModule = join(__dirname, '..', '..', 'adapter', 'codeCache.js');

interface Start {
  status: string;
  file: string | undefined;
  seen: { dirname: string; filename: string; join: string; exportsOk: boolean };
}

/** Starts `bundle` as dist/adapter.js starts the adapter, saves the cache, and reports what happened. */
function start(bundle: string, cacheDir: string | undefined): Start {
  const program = `
    const { runWithCodeCache } = require(${JSON.stringify(codeCacheModule)});
    const r = runWithCodeCache(${JSON.stringify(bundle)}, ${JSON.stringify(cacheDir ?? null)} ?? undefined, module);
    r.save();
    process.stdout.write(JSON.stringify({ status: r.status, file: r.file, seen: globalThis.seen }));`;
  return JSON.parse(execFileSync(process.execPath, ['-e', program], { encoding: 'utf8' })) as Start;
}

/** A bundle that records the module scope it ran in. */
function writeBundle(dir: string, extra = ''): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'adapterMain.js');
  writeFileSync(
    file,
    `'use strict';
     exports.answer = 42;
     globalThis.seen = { dirname: __dirname, filename: __filename, join: require('node:path').join('a', 'b'),` +
      ` exportsOk: module.exports.answer === 42 };
     function work(n) { let s = 0; for (let i = 0; i < n; i++) s += i; return s; }
     work(1000);${extra}\n`,
  );
  return file;
}

function assertRan(s: Start, bundle: string, dir: string): void {
  assert.deepEqual(s.seen, { dirname: dir, filename: bundle, join: join('a', 'b'), exportsOk: true });
}

describe('the adapter start with V8 code cache', () => {
  it('compiles from source the first time, then runs from the cache V8 accepts', () => {
    const dir = join(scratch, 'first');
    const cache = join(scratch, 'first-cache');
    const bundle = writeBundle(dir);
    const first = start(bundle, cache);
    assert.equal(first.status, 'absent');
    assertRan(first, bundle, dir);
    assert.ok(first.file && existsSync(first.file), 'the cache was written');
    assert.equal(statSync(first.file).mode & 0o777, 0o600);
    assert.equal(statSync(cache).mode & 0o777, 0o700);
    const second = start(bundle, cache);
    assert.equal(second.status, 'accepted');
    assert.equal(second.file, first.file);
    assertRan(second, bundle, dir);
    assert.deepEqual(
      readdirSync(cache).filter((f) => f.includes('.partial')),
      [],
      'no partial file is left',
    );
  });

  it('a rebuilt program gets a cache of its own', () => {
    const dir = join(scratch, 'rebuilt');
    const cache = join(scratch, 'rebuilt-cache');
    const bundle = writeBundle(dir);
    const before = start(bundle, cache);
    writeBundle(dir, '\nexports.more = 1;');
    const after = start(bundle, cache);
    assert.equal(after.status, 'absent');
    assert.notEqual(after.file, before.file);
    assertRan(after, bundle, dir);
  });

  it('keeps the newest caches only: those of replaced bundles go when a new one is saved', () => {
    const dir = join(scratch, 'pruned');
    const cache = join(scratch, 'pruned-cache');
    const bundle = writeBundle(dir);
    const files: string[] = [];
    for (let build = 0; build <= CODE_CACHES_KEPT; build++) {
      writeBundle(dir, `\nexports.build = ${'1'.repeat(build + 1)};`);
      files.push(start(bundle, cache).file!);
      // Each earlier cache a second older than the next: the order does not rest on the file system's time resolution.
      files.forEach((f, i) => {
        const t = new Date(Date.now() - (files.length - 1 - i) * 1000);
        if (existsSync(f)) utimesSync(f, t, t);
      });
    }
    assert.equal(new Set(files).size, CODE_CACHES_KEPT + 1, 'every build had a cache of its own');
    assert.deepEqual(
      files.map((f) => existsSync(f)),
      [false, ...Array<boolean>(CODE_CACHES_KEPT).fill(true)],
      'the oldest is gone, the newest are kept',
    );
    writeFileSync(join(cache, 'notes.txt'), 'not a cache');
    writeBundle(dir, '\nexports.build = 0;');
    start(bundle, cache);
    assert.ok(existsSync(join(cache, 'notes.txt')), 'files that are not caches are left alone');
  });

  it('a damaged cache is refused by V8, the program runs from source, and the cache is rewritten', () => {
    const dir = join(scratch, 'damaged');
    const cache = join(scratch, 'damaged-cache');
    const bundle = writeBundle(dir);
    const { file } = start(bundle, cache);
    writeFileSync(file!, Buffer.alloc(4096, 0xa5));
    const damaged = start(bundle, cache);
    assert.equal(damaged.status, 'rejected');
    assertRan(damaged, bundle, dir);
    assert.equal(start(bundle, cache).status, 'accepted');
  });

  it('a cache directory others may write is not used', { skip: process.platform === 'win32' }, () => {
    const dir = join(scratch, 'shared');
    const cache = join(scratch, 'shared-cache');
    mkdirSync(cache);
    chmodSync(cache, 0o777);
    const bundle = writeBundle(dir);
    const s = start(bundle, cache);
    assert.equal(s.status, 'off');
    assertRan(s, bundle, dir);
    assert.deepEqual(readdirSync(cache), []);
  });

  it('CYCLELENS_CODE_CACHE turns it off or moves it; the user cache directory is the default', () => {
    assert.equal(codeCacheDir({ CYCLELENS_CODE_CACHE: 'off' }), undefined);
    assert.equal(codeCacheDir({ CYCLELENS_CODE_CACHE: '/x/y' }), '/x/y');
    assert.equal(codeCacheDir({ XDG_CACHE_HOME: '/c' }), join('/c', 'cyclelens', 'code-cache'));
    const dir = join(scratch, 'off');
    const bundle = writeBundle(dir);
    const s = start(bundle, undefined);
    assert.equal(s.status, 'off');
    assert.equal(s.file, undefined);
    assertRan(s, bundle, dir);
  });
});
