// The commit-message rule (CONTRIBUTING.md, "Commits"): a subject of at most 72 characters, a blank
// line, then a body that says why, with the figures and the tests run. `.githooks/commit-msg` runs
// this on every commit once `npm install` has pointed git's core.hooksPath at .githooks/.
//   node scripts/commitMessage.mjs FILE      exits 1 and says what is wrong when FILE breaks the rule
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const SUBJECT_LIMIT = 72;

/**
 * What is wrong with a commit message, one sentence per problem (empty: it follows the rule).
 * Lines git strips before committing (comments, everything under the scissors line) are ignored.
 * Messages git writes itself (merges) and fixup!/squash! commits, which an interactive rebase
 * folds into another commit, are exempt.
 */
export function commitMessageProblems(text) {
  const lines = [];
  for (const raw of text.split('\n')) {
    if (/^# -+ >8 -+$/.test(raw)) break;
    if (raw.startsWith('#')) continue;
    lines.push(raw.replace(/\s+$/, ''));
  }
  while (lines.length > 0 && lines[0] === '') lines.shift();
  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  const subject = lines[0] ?? '';
  if (/^(Merge |fixup! |squash! |amend! )/.test(subject)) return [];
  const problems = [];
  if (subject === '') return ['The message is empty: write a subject line, a blank line, and a body.'];
  if (subject.length > SUBJECT_LIMIT) {
    problems.push(
      `The subject has ${subject.length} characters; keep it to ${SUBJECT_LIMIT} and say what changed. ` +
        'Move the why, the figures and the tests run into the body.',
    );
  }
  if (lines.length > 1 && lines[1] !== '') {
    problems.push('The second line must be blank: it separates the subject from the body.');
  }
  if (lines.slice(2).every((l) => l === '')) {
    problems.push(
      'The body is missing: after a blank line, say why the change is made, its figures and the tests run.',
    );
  }
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const file = process.argv[2];
  if (!file) {
    console.error('usage: node scripts/commitMessage.mjs COMMIT_MESSAGE_FILE');
    process.exit(2);
  }
  const problems = commitMessageProblems(readFileSync(file, 'utf8'));
  if (problems.length > 0) {
    console.error(
      `commit message refused (CONTRIBUTING.md, "Commits"):\n${problems.map((p) => `  - ${p}`).join('\n')}`,
    );
    console.error(`Your message is kept in ${file}; fix it with: git commit -e -F ${file}`);
    process.exit(1);
  }
}
