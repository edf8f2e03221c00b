import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { buildPluginFromSource, packagedPluginDir, qemuPluginPath } from '../../adapter/sampling/pluginLocation';
import { repoRoot } from '../support/paths';

/**
 * Where the exact sampler's plugin comes from in an installed package (no checkout): the prebuilt
 * one beside the bundles, else built on first use with the real gcc from the shipped source, else
 * an error that says how to get gcc.
 */
const source = join(repoRoot, 'adapter', 'sampling', 'qemuInsnCount.c');
const scratch = mkdtempSync(join(tmpdir(), 'cyclelens-plugin-test-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** An installed extension's layout: <ext>/dist/adapter.js and dist/qemu-plugin/ with the source only. */
function installedLayout(name: string): { dist: string; cacheDir: string } {
  const dist = join(scratch, name, 'extension', 'dist');
  mkdirSync(join(dist, 'qemu-plugin'), { recursive: true });
  copyFileSync(source, join(dist, 'qemu-plugin', 'qemuInsnCount.c'));
  writeFileSync(join(dist, 'adapter.js'), '');
  return { dist, cacheDir: join(scratch, name, 'cache') };
}

describe('locating the QEMU plugin', () => {
  it('builds it on first use with gcc from the shipped source, once per source version', () => {
    const { dist, cacheDir } = installedLayout('first-use');
    const built = qemuPluginPath({ from: dist, cacheDir, compiler: 'gcc' });
    assert.ok(built.startsWith(cacheDir), built);
    // A shared object exporting the entry points QEMU looks up.
    assert.equal(readFileSync(built).subarray(0, 4).toString('latin1'), '\x7fELF');
    const symbols = execFileSync('nm', ['-D', '--defined-only', built], { encoding: 'utf8' });
    assert.match(symbols, /\bqemu_plugin_install\b/);
    assert.match(symbols, /\bqemu_plugin_version\b/);
    const mtime = statSync(built).mtimeMs;
    assert.equal(qemuPluginPath({ from: dist, cacheDir, compiler: 'gcc' }), built);
    assert.equal(statSync(built).mtimeMs, mtime, 'not compiled twice');
  });

  it('prefers the prebuilt plugin packaged for this platform', () => {
    const { dist, cacheDir } = installedLayout('prebuilt');
    const dir = packagedPluginDir(dist);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'qemuInsnCount.so'), 'prebuilt');
    assert.equal(qemuPluginPath({ from: dist, cacheDir, compiler: 'no-such-compiler' }), join(dir, 'qemuInsnCount.so'));
  });

  it('says how to install gcc when it is missing, and what gcc said when the source does not compile', () => {
    const { dist, cacheDir } = installedLayout('no-gcc');
    assert.throws(
      () => qemuPluginPath({ from: dist, cacheDir, compiler: 'cyclelens-no-such-gcc' }),
      /gcc, which is not installed.*apt-get install gcc/,
    );
    const broken = join(scratch, 'broken.c');
    writeFileSync(broken, 'this is not C;\n');
    assert.throws(
      () => buildPluginFromSource(broken, { cacheDir, compiler: 'gcc' }),
      /gcc could not build .*broken\.c.*error/s,
    );
  });

  it('names the fix when neither the plugin nor its source is there', () => {
    const empty = join(scratch, 'empty', 'extension', 'dist');
    mkdirSync(empty, { recursive: true });
    assert.throws(
      () => qemuPluginPath({ from: empty, cacheDir: join(scratch, 'empty-cache'), compiler: 'gcc' }),
      /reinstall CycleLens, or set CYCLELENS_QEMU_PLUGIN/,
    );
  });
});
