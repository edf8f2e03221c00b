// `npm test`: sets up a fresh Debian machine (Debian packages through apt-get when root, npm
// packages), builds the product and the fixture firmware, then runs every test tier with Node's
// test runner. Tiers: unit, integration (real GDB/LLDB, QEMU, OpenOCD), e2e (code-server in Chromium).
// The lint (scripts/lint.mjs) runs before the unit tier; a lint failure fails the run, after the tests.
//   node scripts/test.mjs [--no-setup] [--no-lint] [tier ...] [--grep PATTERN]
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { readdirSync, statSync, mkdirSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { repoRoot } from './lib/root.mjs';
import {
  ensureArcTools,
  ensureDebianPackages,
  arcToolPackages,
  debianPackages,
  fixLldbPythonModule,
  uiPackages,
} from './lib/system.mjs';
import { ensureNpmDependencies } from './lib/npmDeps.mjs';
import { runLint } from './lint.mjs';

const argv = process.argv.slice(2);
const setup = !argv.includes('--no-setup');
const lint = !argv.includes('--no-lint');
const grepAt = argv.indexOf('--grep');
const grep = grepAt >= 0 ? argv[grepAt + 1] : undefined;
const allTiers = ['unit', 'integration', 'e2e'];
const tiers = argv.filter((a, i) => allTiers.includes(a) && argv[i - 1] !== '--grep');
const selected = tiers.length > 0 ? tiers : allTiers;

/** How many test files of a tier run at once: QEMU-backed tiers share 2 cores. */
const concurrency = { unit: 2, integration: 2, e2e: 1 };

if (setup) {
  const packages = [...debianPackages, ...arcToolPackages, ...(selected.includes('e2e') ? uiPackages : [])];
  if (!ensureDebianPackages(packages, 'tests')) process.exit(1);
  fixLldbPythonModule();
  ensureNpmDependencies(repoRoot);
  ensureArcTools(repoRoot);
  if (selected.includes('e2e')) {
    // A real VS Code for the browser; installed here so no test's timeout includes it.
    const { ensureCodeServer } = await import('./lib/codeServer.mjs');
    ensureCodeServer();
  }
}

execFileSync(process.execPath, [join(repoRoot, 'scripts', 'build.mjs')], { stdio: 'inherit', cwd: repoRoot });
execFileSync('make', ['-C', join(repoRoot, 'test', 'fixtures'), '-j2', '--no-print-directory'], { stdio: 'inherit' });

/** out/test/<tier>/x.test.js → test/<tier>/x.test.ts */
function sourceOf(compiled) {
  return join(repoRoot, relative(join(repoRoot, 'out'), compiled)).replace(/\.js$/, '.ts');
}

function* testFiles(dir) {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir).sort()) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) yield* testFiles(full);
    // A compiled test whose source is gone (renamed or deleted since the last build) is stale.
    else if (name.endsWith('.test.js') && existsSync(sourceOf(full))) yield full;
  }
}

const outputDir = join(repoRoot, 'test-output');
mkdirSync(outputDir, { recursive: true });

/**
 * The desktop-VS-Code tier (@vscode/test-electron) can only run where a desktop VS Code is
 * installed; elsewhere its file is left out, so it is neither a pass nor a skip in the counts.
 */
function hasDesktopVsCode() {
  return (
    Boolean(process.env.VSCODE_EXECUTABLE) ||
    spawnSync('sh', ['-c', 'command -v code'], { stdio: 'ignore' }).status === 0
  );
}

/**
 * The failed tests of a TAP report, innermost first within each file, each with the first line of
 * its error and where it failed, so the end of a long log says what broke without scrolling back.
 */
function failedTests(tap) {
  const failures = [];
  const lines = tap.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const m = /^(\s*)not ok \d+ - (.*)$/.exec(lines[i]);
    if (!m) continue;
    let error = '';
    let location = '';
    for (let j = i + 1; j < lines.length && !/^\s*\.\.\.$/.test(lines[j]); j++) {
      const field = /^\s*(error|location): (.*)$/.exec(lines[j]);
      // A multi-line error is a YAML block scalar (`error: |-`): its text starts on the next line.
      const text = field && /^[|>][-+]?$/.test(field[2]) ? (lines[j + 1] ?? '').trim() : field?.[2];
      if (field?.[1] === 'error' && !error) error = text.replace(/^['"]|['"]$/g, '');
      if (field?.[1] === 'location' && !location) location = field[2].replace(/^'|'$/g, '');
    }
    // a suite: its failing test is listed
    if (error === '1 subtest failed' || /^\d+ subtests failed$/.test(error)) continue;
    failures.push({ name: m[2], error: error.slice(0, 400), location: relative(repoRoot, location) });
  }
  return failures;
}

function runTier(tier) {
  let files = [...testFiles(join(repoRoot, 'out', 'test', tier))];
  if (tier === 'e2e' && !hasDesktopVsCode()) {
    files = files.filter((f) => !f.includes(`${sep}electron${sep}`));
    console.log(
      '\n*** electron tier NOT RUN: no desktop VS Code (`code` is not on PATH, VSCODE_EXECUTABLE ' +
        'is not set); the code-server tier covers the packaged extension. ***',
    );
  }
  if (files.length === 0) {
    console.log(`\n=== ${tier}: no test files`);
    return Promise.resolve({ tier, pass: 0, fail: 0, skipped: 0, failures: [] });
  }
  const tap = join(outputDir, `${tier}.tap`);
  rmSync(tap, { force: true });
  const args = [
    '--test',
    `--test-concurrency=${concurrency[tier]}`,
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    '--test-reporter=tap',
    `--test-reporter-destination=${tap}`,
    ...(grep ? ['--test-name-pattern', grep] : []),
    ...files,
  ];
  console.log(
    `\n=== ${tier}: ${files.length} file(s): ${files.map((f) => relative(join(repoRoot, 'out', 'test'), f)).join(' ')}`,
  );
  return new Promise((resolvePromise) => {
    const child = spawn(process.execPath, args, {
      stdio: 'inherit',
      cwd: repoRoot,
      env: { ...process.env, CYCLELENS_TEST_OUTPUT: outputDir },
    });
    child.on('exit', (code) => {
      const text = existsSync(tap) ? readFileSync(tap, 'utf8') : '';
      const count = (key) => Number((text.match(new RegExp(`^# ${key} (\\d+)$`, 'm')) ?? [])[1] ?? 0);
      const result = {
        tier,
        pass: count('pass'),
        fail: count('fail') + count('cancelled'),
        skipped: count('skipped') + count('todo'),
        failures: failedTests(text),
      };
      if (code !== 0 && result.fail === 0) result.fail = 1; // the runner itself failed (crash, bad file)
      resolvePromise(result);
    });
  });
}

/** undefined when the lint did not run (no unit tier, or --no-lint). */
let lintClean;
if (lint && selected.includes('unit')) {
  console.log('\n=== lint');
  lintClean = runLint();
}
const results = [];
for (const tier of selected) results.push(await runTier(tier));
console.log('\n=== summary');
if (lintClean !== undefined)
  console.log(`lint: ${lintClean ? 'clean' : 'FAILED (see the === lint section): npm run lint'}`);
for (const r of results)
  console.log(`${r.tier}: ${r.pass} passed, ${r.fail} failed${r.skipped ? `, ${r.skipped} skipped` : ''}`);
for (const r of results) {
  for (const f of r.failures) console.log(`  ✖ ${r.tier}: ${f.name}\n      ${f.location}\n      ${f.error}`);
}
const pass = results.reduce((s, r) => s + r.pass, 0);
const fail = results.reduce((s, r) => s + r.fail, 0) + (lintClean === false ? 1 : 0);
const skipped = results.reduce((s, r) => s + r.skipped, 0);
console.log(`total: ${pass} passed, ${fail} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(fail === 0 && pass > 0 ? 0 : 1);
