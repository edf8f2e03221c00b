import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

function findRoot(start: string): string {
  let dir = start;
  while (!existsSync(join(dir, 'package.json')) || !existsSync(join(dir, 'adapter'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`repository root not found above ${start}`);
    dir = parent;
  }
  return dir;
}

/** The repository root, whether tests run from out/test or from sources. */
export const repoRoot = findRoot(__dirname);
export const adapterBundle = join(repoRoot, 'dist', 'adapter.js');
export const fixturesDir = join(repoRoot, 'test', 'fixtures');
export const testOutputDir = process.env.CYCLELENS_TEST_OUTPUT ?? join(repoRoot, 'test-output');

/** Tools built from Debian sources (ARC binutils and GDB) live here, outside the repository, so reruns reuse them. */
export const toolCache = process.env.CYCLELENS_CACHE ?? join(homedir(), '.cache', 'cyclelens');

export type FixtureTarget = 'cortex-m4' | 'rv32';

/** Path of a built fixture ELF, e.g. fixtureElf('rv32', 'singlepass'). */
export function fixtureElf(target: FixtureTarget, program: string): string {
  return join(fixturesDir, 'build', target, `${program}.elf`);
}
