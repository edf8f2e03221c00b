import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { repoRoot } from '../support/paths';

/**
 * The commit-msg hook as git runs it: a scratch repository whose core.hooksPath is this checkout's
 * .githooks/, and real `git commit`s with good and bad messages.
 */
const scratch = mkdtempSync(join(tmpdir(), 'cyclelens-hook-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

function git(...args: string[]): { status: number | null; output: string } {
  const r = spawnSync('git', args, {
    cwd: scratch,
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 'T',
      GIT_AUTHOR_EMAIL: 't@example.invalid',
      GIT_COMMITTER_NAME: 'T',
      GIT_COMMITTER_EMAIL: 't@example.invalid',
    },
  });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

let n = 0;
function commit(message: string): { status: number | null; output: string } {
  writeFileSync(join(scratch, 'f.txt'), String(n++));
  git('add', 'f.txt');
  const file = join(scratch, '.msg');
  writeFileSync(file, message);
  return git('commit', '-q', '-F', file);
}

describe('the commit-msg hook', () => {
  git('init', '-q');
  git('config', 'core.hooksPath', join(repoRoot, '.githooks'));

  test('takes a short subject, a blank line and a body', () => {
    const r = commit('Count SysTick wraps in long passes\n\nA pass over 2^24 ticks wrapped.\n\nTests: unit 3/3.\n');
    assert.equal(r.status, 0, r.output);
  });

  test('refuses a subject over 72 characters and says how long it is', () => {
    const subject = `Make ${'very '.repeat(14)}long`;
    assert.ok(subject.length > 72);
    const r = commit(`${subject}\n\nWhy.\n`);
    assert.notEqual(r.status, 0);
    assert.match(r.output, new RegExp(`subject has ${subject.length} characters; keep it to 72`));
  });

  test('refuses a message without a body, and one whose second line is not blank', () => {
    const bare = commit('Fix the flame graph\n');
    assert.notEqual(bare.status, 0);
    assert.match(bare.output, /body is missing/);
    const joined = commit('Fix the flame graph\nbecause it was wrong\n');
    assert.notEqual(joined.status, 0);
    assert.match(joined.output, /second line must be blank/);
  });

  test('ignores comment lines and what lies under the scissors line', () => {
    const r = commit(
      '# a comment git strips\nFix the table focus\n\nThe row kept focus.\n' +
        '# ------------------------ >8 ------------------------\n' +
        `${'x'.repeat(200)}\n`,
    );
    assert.equal(r.status, 0, r.output);
  });

  test('lets merges and fixup commits through', () => {
    assert.equal(commit(`Merge branch '${'b'.repeat(80)}'\n`).status, 0);
    assert.equal(commit('fixup! Fix the table focus\n').status, 0);
  });
});
