import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import Module from 'node:module';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { Script } from 'node:vm';

/**
 * Runs a CommonJS bundle with V8's code cache. Node 20 compiles every script from source on each
 * start: for the adapter's bundle that is about 12 ms of parsing, plus the lazy compilation of each
 * function the launch path calls for the first time, all of it between "Start Debugging" and the
 * first stop. The cache holds V8's compiled code for the bundle as it stood after a session started,
 * so a later start deserialises it instead. V8 checks the cache against the source and its own
 * version and flags, and ignores a cache that does not match; the key adds the bundle's size and
 * time and the Node version, so a rebuilt bundle gets a cache of its own.
 */
export interface CodeCacheResult {
  /** What the cache did: `accepted` (code came from it), `rejected` (V8 refused it), `absent`, or `off`. */
  status: 'accepted' | 'rejected' | 'absent' | 'off';
  /** The cache file, unless the cache is off. */
  file: string | undefined;
  /** Writes the cache from the code compiled so far (atomically); a no-op once accepted. Never throws. */
  save(): void;
  /** What the bundle exports. */
  exports: unknown;
}

/** Where caches live: `$CYCLELENS_CODE_CACHE`, else the user's cache directory; `off` turns the cache off. */
export function codeCacheDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const setting = env.CYCLELENS_CODE_CACHE;
  if (setting === 'off') return undefined;
  if (setting) return setting;
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'cyclelens', 'code-cache');
}

/** Caches kept per directory: one per bundle and Node in use (an update or a rebuild starts a new one). */
export const CODE_CACHES_KEPT = 4;
const CACHE_FILE = /^adapter-[0-9a-f]{24}\.v8cache$/;

/** The cache file's name for a bundle as built now, under this Node. */
export function codeCacheKey(bundle: string, size: number, mtimeMs: number): string {
  const key = createHash('sha256')
    // V8 flags (--expose-gc, for one) are part of what a cache is valid for.
    .update([bundle, size, mtimeMs, process.version, process.arch, ...process.execArgv].join('\0'))
    .digest('hex')
    .slice(0, 24);
  return `adapter-${key}.v8cache`;
}

/**
 * A cache directory is used only if it belongs to this user and nobody else may write it: cached code
 * is code, and a file planted there would run in the adapter.
 */
export function privateDir(dir: string): boolean {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (process.platform === 'win32' || typeof process.getuid !== 'function') return true;
  const st = statSync(dir);
  return st.uid === process.getuid() && (st.mode & 0o022) === 0;
}

/** Runs `bundle` as the module `host` would require it, with the cache in `cacheDir` when given. */
export function runWithCodeCache(bundle: string, cacheDir: string | undefined, host: NodeJS.Module): CodeCacheResult {
  const source = readFileSync(bundle, 'utf8');
  let file: string | undefined;
  let cached: Buffer | undefined;
  if (cacheDir) {
    try {
      const st = statSync(bundle);
      if (privateDir(cacheDir)) file = join(cacheDir, codeCacheKey(bundle, st.size, st.mtimeMs));
      if (file) cached = readFileSync(file);
    } catch {
      cached = undefined; // no cache yet, or none can be kept here: compile from source
    }
  }
  const script = new Script(Module.wrap(source), { filename: bundle, ...(cached ? { cachedData: cached } : {}) });
  const status: CodeCacheResult['status'] = !file
    ? 'off'
    : !cached
      ? 'absent'
      : script.cachedDataRejected
        ? 'rejected'
        : 'accepted';
  const mod = new Module(bundle, host);
  mod.filename = bundle;
  mod.paths = (Module as unknown as { _nodeModulePaths(dir: string): string[] })._nodeModulePaths(dirname(bundle));
  const wrapper = script.runInThisContext() as (...args: unknown[]) => void;
  wrapper.call(mod.exports, mod.exports, (id: string) => mod.require(id), mod, bundle, dirname(bundle));
  mod.loaded = true;
  return {
    status,
    file,
    exports: mod.exports,
    save(): void {
      if (!file || status === 'accepted') return;
      const partial = `${file}.${process.pid}.partial`;
      try {
        writeFileSync(partial, script.createCachedData(), { mode: 0o600 });
        renameSync(partial, file);
        pruneOldCaches(dirname(file));
      } catch {
        try {
          unlinkSync(partial);
        } catch {
          // nothing was written
        }
      }
    },
  };
}

/** Keeps the newest CODE_CACHES_KEPT caches: those of bundles replaced since are never read again. */
function pruneOldCaches(dir: string): void {
  const caches = readdirSync(dir)
    .filter((name) => CACHE_FILE.test(name))
    .map((name) => ({ path: join(dir, name), mtime: statSync(join(dir, name)).mtimeMs }))
    .sort((a, b) => b.mtime - a.mtime);
  for (const old of caches.slice(CODE_CACHES_KEPT)) unlinkSync(old.path);
}
