// `npm run lint`: the rooms of docs/design.md checked by reading the imports (scripts/lintBoundaries.mjs),
// then ESLint (eslint.config.mjs: the same rooms as import rules that know `import type`, and the
// rules that catch real bugs), then the one formatter's check (Prettier, .prettierrc.json; `npm run
// format` rewrites what it flags), then the syntax of the Python the adapter ships (the LLDB bridge).
// scripts/test.mjs runs it before the unit tier.
//   node scripts/lint.mjs
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { checkBoundaries } from './lintBoundaries.mjs';
import { repoRoot } from './lib/root.mjs';

/** The Python files the adapter ships, parsed (not run) by python3: a syntax error fails the lint. */
const pythonFiles = ['adapter/debugger/lldb/bridge.py'];

function checkPython() {
  const parse = 'import ast, sys\nfor f in sys.argv[1:]:\n    ast.parse(open(f, encoding="utf-8").read(), f)';
  const r = spawnSync('python3', ['-c', parse, ...pythonFiles], { cwd: repoRoot, encoding: 'utf8' });
  if (r.error) {
    console.error(
      `[lint] python3 did not run (${r.error.message}): install python3 to check ${pythonFiles.join(', ')}.`,
    );
    return false;
  }
  if (r.status !== 0) console.error(`[lint] Python syntax:\n${r.stderr}`);
  return r.status === 0;
}

/** Runs the checks with their output on this process's stdout/stderr; true when all pass. */
export function runLint() {
  const started = Date.now();
  const problems = checkBoundaries(repoRoot);
  for (const p of problems) console.error(p);
  console.log(problems.length === 0 ? '[lint] boundaries hold' : `[lint] ${problems.length} boundary violation(s)`);
  // Type-aware rules build one TypeScript program of the whole repository: a single process.
  const eslint = spawnSync(
    process.execPath,
    [join(repoRoot, 'node_modules', 'eslint', 'bin', 'eslint.js'), '--max-warnings=0', '.'],
    {
      cwd: repoRoot,
      stdio: 'inherit',
    },
  );
  const prettier = spawnSync(
    process.execPath,
    [join(repoRoot, 'node_modules', 'prettier', 'bin', 'prettier.cjs'), '--check', '--log-level=warn', '.'],
    {
      cwd: repoRoot,
      stdio: 'inherit',
    },
  );
  if (prettier.status !== 0 && !prettier.error)
    console.error('[lint] files above are not formatted: run `npm run format`');
  const python = checkPython();
  const ok = problems.length === 0 && eslint.status === 0 && prettier.status === 0 && python;
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (eslint.error)
    console.error(`[lint] ESLint did not run: ${eslint.error.message}. Install the dev dependencies (npm ci).`);
  if (prettier.error)
    console.error(`[lint] Prettier did not run: ${prettier.error.message}. Install the dev dependencies (npm ci).`);
  console.log(ok ? `[lint] clean (${seconds} s)` : `[lint] failed (${seconds} s): see the problems above`);
  return ok;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exit(runLint() ? 0 : 1);
}
