// Builds CycleLens: boundary lint, TypeScript type check (emitting out/ for the tests), and esbuild
// bundles in dist/: the extension host code, the debug adapter (a standalone Node program), the
// command-line program, the profile language server and the webview script.
//   node scripts/build.mjs [--watch] [--no-typecheck] [--production]
import * as esbuild from 'esbuild';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './lib/root.mjs';
import { checkBoundaries } from './lintBoundaries.mjs';
import { stageQemuPlugin } from './lib/qemuPlugin.mjs';

const args = new Set(process.argv.slice(2));
const production = args.has('--production');

const violations = checkBoundaries(repoRoot);
if (violations.length > 0) {
  for (const v of violations) console.error(v);
  process.exit(1);
}

if (!args.has('--no-typecheck')) {
  execFileSync(process.execPath, [join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', repoRoot], {
    stdio: 'inherit',
  });
}

// The exact sampler's TCG plugin (C, gcc): compiled when out of date, staged in dist/ for the .vsix.
stageQemuPlugin(repoRoot);
// The LLDB bridge is a Python program the adapter runs beside its bundle (adapter/debugger/lldb/bridgeLocation.ts).
mkdirSync(join(repoRoot, 'dist', 'lldb'), { recursive: true });
copyFileSync(join(repoRoot, 'adapter', 'debugger', 'lldb', 'bridge.py'), join(repoRoot, 'dist', 'lldb', 'bridge.py'));

const node = { platform: 'node', target: 'node20', format: 'cjs', bundle: true, sourcemap: true, minify: production };
const bundles = [
  { ...node, entryPoints: ['extension/extension.ts'], outfile: 'dist/extension.js', external: ['vscode'] },
  // The adapter: dist/adapter.js is its loader (V8's code cache, adapter/codeCache.ts), adapterMain.js the program.
  { ...node, entryPoints: ['adapter/loader.ts'], outfile: 'dist/adapter.js' },
  { ...node, entryPoints: ['adapter/main.ts'], outfile: 'dist/adapterMain.js' },
  { ...node, entryPoints: ['cli/main.ts'], outfile: 'dist/cli.js', banner: { js: '#!/usr/bin/env node' } },
  { ...node, entryPoints: ['lsp/main.ts'], outfile: 'dist/lsp.js' },
  {
    platform: 'browser',
    target: 'es2022',
    format: 'iife',
    bundle: true,
    sourcemap: true,
    minify: production,
    entryPoints: ['webview/main.ts'],
    outfile: 'dist/webview.js',
  },
  // Graphviz (wasm) lays out the call graph in a worker, away from the panel's thread.
  {
    platform: 'browser',
    target: 'es2022',
    format: 'iife',
    bundle: true,
    sourcemap: false,
    minify: production,
    entryPoints: ['webview/layoutWorker.ts'],
    outfile: 'dist/webviewLayout.js',
  },
].filter((b) => existsSync(join(repoRoot, b.entryPoints[0])));

if (args.has('--watch')) {
  for (const b of bundles) await (await esbuild.context({ ...b, absWorkingDir: repoRoot, logLevel: 'info' })).watch();
} else {
  await Promise.all(bundles.map((b) => esbuild.build({ ...b, absWorkingDir: repoRoot, logLevel: 'warning' })));
  console.log(`[build] ${bundles.map((b) => b.outfile).join(', ')}`);
}
