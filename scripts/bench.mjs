// `npm run bench -- NAME [args]`: builds, then runs bench/NAME.ts (compiled to out/bench/NAME.js).
// Benchmarks print figures; record them in docs/benchmarks.md with the commit they came from.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './lib/root.mjs';

const [name, ...rest] = process.argv.slice(2);
const available = readdirSync(join(repoRoot, 'bench'))
  .filter((f) => f.endsWith('.ts') && f !== 'support.ts')
  .map((f) => f.slice(0, -3));
if (!name || !available.includes(name)) {
  console.error(`usage: npm run bench -- <${available.join('|')}> [args]`);
  process.exit(2);
}
execFileSync(process.execPath, [join(repoRoot, 'scripts', 'build.mjs')], { stdio: 'inherit' });
execFileSync('make', ['-C', join(repoRoot, 'test', 'fixtures'), '-j2', '--no-print-directory'], { stdio: 'inherit' });
const script = join(repoRoot, 'out', 'bench', `${name}.js`);
if (!existsSync(script)) throw new Error(`${script} was not built`);
execFileSync(process.execPath, [script, ...rest], { stdio: 'inherit', cwd: repoRoot });
