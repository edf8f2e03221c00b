// `npm install` (the `prepare` script): points git at the project's hooks in .githooks/, so every
// clone checks its commit messages. Does nothing outside a git checkout (a package tarball, a
// clone without git on PATH), and never fails the install.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './lib/root.mjs';

if (existsSync(join(repoRoot, '.git')) && existsSync(join(repoRoot, '.githooks'))) {
  const current = spawnSync('git', ['config', '--get', 'core.hooksPath'], { cwd: repoRoot, encoding: 'utf8' });
  if (current.error === undefined && current.stdout.trim() !== '.githooks') {
    const set = spawnSync('git', ['config', 'core.hooksPath', '.githooks'], { cwd: repoRoot, encoding: 'utf8' });
    if (set.status === 0) console.log('[setup] git hooks: core.hooksPath = .githooks (commit messages are checked)');
  }
}
