import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { CycleLensError, ErrorCode } from '../errors';
import { findUp } from '../util/findUp';

const SO = 'qemuInsnCount.so';
const SOURCE = 'qemuInsnCount.c';

/**
 * Where a prebuilt plugin sits next to the bundles: dist/qemu-plugin/<platform>-<arch>/ (scripts/build.mjs
 * puts it there, so the .vsix has it).
 */
export function packagedPluginDir(distDir: string): string {
  return join(distDir, 'qemu-plugin', `${process.platform}-${process.arch}`);
}

export interface PluginSearch {
  /** Where the adapter's code runs from (dist/ bundled, out/adapter/sampling/ in tests). */
  from: string;
  /** Where a plugin built on first use goes. */
  cacheDir: string;
  /** The C compiler: gcc, found on PATH. */
  compiler: string;
}

function defaultSearch(): PluginSearch {
  return {
    from: __dirname,
    cacheDir: join(process.env['CYCLELENS_CACHE'] ?? join(homedir(), '.cache', 'cyclelens'), 'qemu-plugin'),
    compiler: 'gcc',
  };
}

/**
 * Where the exact sampler's TCG plugin is, in this order: CYCLELENS_QEMU_PLUGIN; the prebuilt one
 * beside the bundles (dist/qemu-plugin/<platform>-<arch>/, in the .vsix for the platform it was
 * packaged on); the checkout's build (.cache/qemu-plugin/); otherwise it is compiled on first use
 * from the shipped C source (dist/qemu-plugin/qemuInsnCount.c, or adapter/sampling/ in a checkout)
 * with gcc into the user's cache, keyed by the source's hash so an update rebuilds it.
 */
export function qemuPluginPath(search: PluginSearch = defaultSearch()): string {
  const override = process.env['CYCLELENS_QEMU_PLUGIN'];
  if (override) return override;
  const prebuilt = findUp(search.from, [
    join('dist', 'qemu-plugin', `${process.platform}-${process.arch}`, SO),
    join('qemu-plugin', `${process.platform}-${process.arch}`, SO),
    join('.cache', 'qemu-plugin', SO),
  ]);
  if (prebuilt) return prebuilt;
  const source = findUp(search.from, [
    join('dist', 'qemu-plugin', SOURCE),
    join('qemu-plugin', SOURCE),
    join('adapter', 'sampling', SOURCE),
  ]);
  if (!source) {
    throw new CycleLensError(
      ErrorCode.ProgramNotFound,
      `The instruction-counting QEMU plugin is missing, and so is its source (${SOURCE}): ` +
        `reinstall CycleLens, or set CYCLELENS_QEMU_PLUGIN to a built ${SO}.`,
    );
  }
  return buildPluginFromSource(source, search);
}

/** Compiles the plugin into the cache (once per source version); the error says how to get gcc. */
export function buildPluginFromSource(source: string, search: Pick<PluginSearch, 'cacheDir' | 'compiler'>): string {
  const text = readFileSync(source);
  const target = join(search.cacheDir, createHash('sha256').update(text).digest('hex').slice(0, 16), SO);
  if (existsSync(target)) return target;
  mkdirSync(dirname(target), { recursive: true });
  const tmp = `${target}.${process.pid}.tmp`;
  try {
    // The flags of scripts/lib/qemuPlugin.mjs: only the plugin's entry points are exported.
    execFileSync(search.compiler, ['-shared', '-fPIC', '-O2', '-fvisibility=hidden', '-pthread', '-o', tmp, source], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: Buffer };
    if (e.code === 'ENOENT') {
      throw new CycleLensError(
        ErrorCode.ProgramNotFound,
        `The exact sampler's QEMU plugin is built on first use with gcc, which is not installed. ` +
          `Install it (Debian/Ubuntu: \`apt-get install gcc\`) and start the session again, or set ` +
          `CYCLELENS_QEMU_PLUGIN to a built ${SO}.`,
      );
    }
    throw new CycleLensError(
      ErrorCode.CommandFailed,
      `gcc could not build the exact sampler's QEMU plugin from ${source}: ${e.stderr?.toString().trim() || e.message}`,
    );
  }
  renameSync(tmp, target);
  return target;
}
