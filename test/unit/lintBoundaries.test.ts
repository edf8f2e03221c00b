import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { repoRoot } from '../support/paths';

/** Runs scripts/lintBoundaries.mjs on a tree of the given files, as the build runs it on the repository. */
function lint(files: Record<string, string>): { code: number | null; output: string } {
  const root = mkdtempSync(join(tmpdir(), 'cyclelens-lint-'));
  roots.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  const r = spawnSync(process.execPath, [join(repoRoot, 'scripts', 'lintBoundaries.mjs'), root], { encoding: 'utf8' });
  return { code: r.status, output: `${r.stdout}${r.stderr}` };
}
const roots: string[] = [];
after(() => roots.forEach((r) => rmSync(r, { recursive: true, force: true })));

const branching = `export function pick(config: { family: string }, elf: { family: string }): number {
  if (config.family === 'riscv') return 1;
  if ("arc" !== elf.family) return 3;
  switch (elf.family) {
    case 'cortex-m':
      return 2;
    default:
      return 0;
  }
}
`;

const clean = `export function pick(kind: string, family?: string): number {
  if (family !== undefined) return 4;
  // family === 'riscv' in a comment is not code
  switch (kind) {
    case 'arc':
      return 1;
  }
  return 0;
}
`;

describe('lint: per-family branches', () => {
  test('a family comparison or a switch on the family outside adapter/arch/ fails, naming the line and the fix', () => {
    const { code, output } = lint({ 'adapter/session/pick.ts': branching });
    assert.equal(code, 1, output);
    for (const line of [2, 3, 5])
      assert.match(
        output,
        new RegExp(`adapter/session/pick\\.ts:${line}: .*archPlugin\\(family\\) from adapter/arch/registry\\.ts`),
      );
    assert.match(output, /3 boundary violation/);
  });

  test('the same code inside adapter/arch/, and code that compares no family name, pass', () => {
    const { code, output } = lint({
      'adapter/arch/pick.ts': branching,
      'adapter/session/pick.ts': clean,
      'core/pick.ts': clean,
    });
    assert.equal(code, 0, output);
    assert.match(output, /boundaries hold/);
  });

  test('the repository itself passes', () => {
    const r = spawnSync(process.execPath, [join(repoRoot, 'scripts', 'lintBoundaries.mjs')], { encoding: 'utf8' });
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
  });
});
