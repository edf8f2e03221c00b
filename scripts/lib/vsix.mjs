// Packages CycleLens as a .vsix with @vscode/vsce. The esbuild bundles in dist/ carry every runtime
// dependency, so the package holds only dist/, media/, package.json, README and LICENSE
// (.vscodeignore says so) and vsce runs with --no-dependencies.
//
//   node scripts/lib/vsix.mjs [--typecheck] [--out FILE]     build for production and package
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { repoRoot } from './root.mjs';

export const defaultVsixPath = join(repoRoot, '.cache', 'vsix', 'cyclelens.vsix');
const vsceBin = join(repoRoot, 'node_modules', '@vscode', 'vsce', 'vsce');

/** What ends up in the package; a change to any of these makes a cached .vsix stale. */
const packageInputs = [
  'dist',
  'media',
  'package.json',
  'README.md',
  'LICENSE',
  'LICENSE.md',
  'LICENSE.txt',
  'CHANGELOG.md',
  '.vscodeignore',
];

function newestMtime(path) {
  if (!existsSync(path)) return 0;
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = st.mtimeMs;
  for (const name of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, name)));
  return newest;
}

/** Modification times of the package's inputs: equal fingerprints mean nothing was rebuilt or edited. */
function inputsFingerprint() {
  return packageInputs.map((p) => `${p}:${newestMtime(join(repoRoot, p))}`).join(';');
}

function readManifest() {
  return JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8'));
}

/**
 * Flags for what package.json or the tree lacks, so that vsce never stops at an interactive
 * "Do you want to continue? [y/N]" (in CI nobody answers).
 */
function vsceFlags(manifest) {
  const flags = ['--no-dependencies'];
  if (!manifest.repository) flags.push('--allow-missing-repository');
  if (!['LICENSE', 'LICENSE.md', 'LICENSE.txt'].some((f) => existsSync(join(repoRoot, f))))
    flags.push('--skip-license');
  return flags;
}

/**
 * Builds the production bundles (`scripts/build.mjs --production`, type check only when asked: the
 * test run has type-checked already) and packages them. Returns the .vsix path.
 */
export function packageExtension({ out = defaultVsixPath, typecheck = false } = {}) {
  const buildArgs = [join(repoRoot, 'scripts', 'build.mjs'), '--production', ...(typecheck ? [] : ['--no-typecheck'])];
  try {
    execFileSync(process.execPath, buildArgs, { cwd: repoRoot, stdio: 'inherit' });
  } catch {
    throw new Error(
      'the production build failed (its messages are above); ' +
        `retry with: node scripts/build.mjs ${buildArgs.slice(1).join(' ')}`,
    );
  }
  const manifest = readManifest();
  const main = manifest.main ? join(repoRoot, manifest.main) : undefined;
  if (main && !existsSync(main) && !existsSync(`${main}.js`)) {
    throw new Error(
      `package.json "main" is ${manifest.main}, which the build did not produce: does extension/extension.ts exist?`,
    );
  }
  // The extension starts these as programs of their own (the debug adapter, the profile language server).
  for (const program of ['dist/adapter.js', 'dist/lsp.js']) {
    if (!existsSync(join(repoRoot, program)))
      throw new Error(`the build did not produce ${program}, which the extension starts: check scripts/build.mjs`);
  }
  // The repository README shows screenshots by relative path; a package has no repository to
  // resolve them against, so the packaged README is the same text without the image lines.
  // vsce resolves --readme-path against the package's folder.
  const readme = join(repoRoot, '.cache', 'vsix', 'README.md');
  mkdirSync(dirname(readme), { recursive: true });
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(
    readme,
    readFileSync(join(repoRoot, 'README.md'), 'utf8')
      .split('\n')
      .filter((l) => !/^!\[[^\]]*\]\([^)]*\)\s*$/.test(l))
      .join('\n'),
  );
  const args = [vsceBin, 'package', ...vsceFlags(manifest), '--readme-path', relative(repoRoot, readme), '--out', out];
  console.log(`[vsix] vsce ${args.slice(1).join(' ')}`);
  try {
    execFileSync(process.execPath, args, { cwd: repoRoot, stdio: ['ignore', 'inherit', 'inherit'] });
  } catch {
    throw new Error(
      `vsce could not package CycleLens (its message is above); retry with: node ${relative(repoRoot, vsceBin)} ` +
        `${args.slice(1).join(' ')}`,
    );
  }
  writeFileSync(`${out}.stamp`, inputsFingerprint());
  return out;
}

/**
 * The packaged extension, packaged again only when dist/ (or another input) changed since the last
 * packaging. `npm test` rebuilds dist/ first, so this packages once per test run and every e2e test
 * file after the first reuses it.
 */
export function ensureVsix({ out = defaultVsixPath } = {}) {
  const stamp = `${out}.stamp`;
  if (existsSync(out) && existsSync(stamp) && readFileSync(stamp, 'utf8') === inputsFingerprint()) return out;
  return packageExtension({ out });
}

/** `publisher.name@version` of the extension this tree packages, as code-server lists it. */
export function extensionId() {
  const m = readManifest();
  return { id: `${m.publisher}.${m.name}`.toLowerCase(), version: m.version, displayName: m.displayName ?? m.name };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const at = process.argv.indexOf('--out');
  try {
    const out = packageExtension({
      typecheck: process.argv.includes('--typecheck'),
      ...(at > 0 ? { out: process.argv[at + 1] } : {}),
    });
    console.log(`[vsix] ${relative(process.cwd(), out)}`);
  } catch (e) {
    console.error(e instanceof Error ? e.message : e);
    process.exitCode = 1;
  }
}
