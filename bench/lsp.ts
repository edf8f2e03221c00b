import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { emptyProfile, type ProfileFunction, type ProfileLine } from '../core/profile/model';
import { LspTestClient } from '../test/support/lspClient';
import { repoRoot } from '../test/support/paths';
import { median, printTable } from './support';

/**
 * Profile language server (docs/design.md, "Tests and benchmarks", goal < 50 ms): the CodeLens response on a
 * 5,000-line C file with 500 profiled functions, measured as an editor sees it (request sent to
 * `cyclelens lsp --stdio`, answer parsed), for a freshly opened file (on five freshly started servers),
 * a repeated request, and the request after each edit (every edit makes a new version, whose definition
 * lines are found again).
 * Inlay hints for the whole file (one per line with a cost) and a hover are timed as well.
 *   npm run bench -- lsp
 */
const FUNCTIONS = 500;
const LINES_PER_FUNCTION = 10;
const REPEATS = 50;
const COLD_STARTS = 5;

function sourceFile(): string {
  const lines: string[] = [];
  for (let i = 0; i < FUNCTIONS; i++) {
    lines.push(
      `/* function ${i}: a comment above it */`,
      `static int work_${i}(int a,`,
      '                  int b)',
      '{',
      '  int acc = a;',
      `  for (int k = 0; k < b; k++) acc += k * ${i};`,
      '  if (acc > 1000) acc -= 1000;',
      '  acc ^= b;',
      '  return acc;',
      '}',
    );
  }
  return `${lines.join('\n')}\n`;
}

async function time<T>(run: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = performance.now();
  const value = await run();
  return { ms: performance.now() - start, value };
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'cyclelens-bench-lsp-'));
  const file = join(root, 'src', 'big.c');
  mkdirSync(join(root, 'src'));
  mkdirSync(join(root, '.cyclelens', 'profiles'), { recursive: true });
  const text = sourceFile();
  writeFileSync(file, text);
  const profile = emptyProfile({
    generator: 'bench',
    program: { executable: 'big.elf' },
    unit: { kind: 'cycles' },
    provenance: { kind: 'exact', counter: 'mcycle' },
    total: { value: 50_000_000 },
  });
  const functions: ProfileFunction[] = [];
  const lines: ProfileLine[] = [];
  for (let i = 0; i < FUNCTIONS; i++) {
    const first = i * LINES_PER_FUNCTION + 1;
    // DWARF puts the entry on the first statement, three lines below the name: the server looks up for it.
    functions.push({
      id: i,
      name: `work_${i}`,
      status: 'measured',
      location: { path: file, line: first + 4 },
      inclusive: { value: 50_000 + i * 97 },
      self: { value: 20_000 + i * 31 },
      calls: 100 + i,
    });
    for (let l = first + 4; l <= first + 8; l++)
      lines.push({ path: file, line: l, function: i, self: { value: 4_000 + l } });
  }
  profile.functions = functions;
  profile.lines = lines;
  writeFileSync(join(root, '.cyclelens', 'profiles', 'bench.cyclelens-profile.json'), JSON.stringify(profile));

  const start = async (): Promise<LspTestClient> => {
    const c = await LspTestClient.start(
      process.execPath,
      [join(repoRoot, 'dist', 'cli.js'), 'lsp', '--stdio'],
      root,
      process.env,
    );
    // The profile is read once at start; the first request is timed after that, as an editor opening a file later.
    await c.until(
      () => c.log,
      (l) => l.some((x) => x.startsWith('CycleLens profile:')),
      30_000,
    );
    return c;
  };
  // The first response is one try per server, so it is taken on several freshly started servers.
  const firsts: number[] = [];
  for (let i = 0; i < COLD_STARTS - 1; i++) {
    const c = await start();
    try {
      const opened = await c.open(file);
      const first = await time(() => c.codeLenses(opened));
      if (first.value.length !== FUNCTIONS) throw new Error(`expected ${FUNCTIONS} lenses, got ${first.value.length}`);
      firsts.push(first.ms);
    } finally {
      await c.stop();
    }
  }
  const client = await start();
  try {
    const uri = await client.open(file);
    const first = await time(() => client.codeLenses(uri));
    if (first.value.length !== FUNCTIONS) throw new Error(`expected ${FUNCTIONS} lenses, got ${first.value.length}`);
    firsts.push(first.ms);
    const repeated: number[] = [];
    for (let i = 0; i < REPEATS; i++) repeated.push((await time(() => client.codeLenses(uri))).ms);
    const edited: number[] = [];
    for (let i = 0; i < REPEATS; i++) {
      await client.replace(uri, 2 + i, `${text}// edit ${i}\n`);
      edited.push((await time(() => client.codeLenses(uri))).ms);
    }
    const hints: number[] = [];
    let hintCount = 0;
    for (let i = 0; i < REPEATS; i++) {
      const r = await time(() => client.inlayHints(uri, 0, FUNCTIONS * LINES_PER_FUNCTION));
      hints.push(r.ms);
      hintCount = r.value?.length ?? 0;
    }
    const hovers: number[] = [];
    for (let i = 0; i < REPEATS; i++)
      hovers.push((await time(() => client.hover(uri, ((i * 37) % FUNCTIONS) * LINES_PER_FUNCTION + 1))).ms);
    const ms = (v: number): string => `${v.toFixed(2)} ms`;
    console.log(
      `${text.split('\n').length - 1} lines, ${FUNCTIONS} profiled functions, ${lines.length} ` +
        `line costs; median of ${REPEATS} unless said`,
    );
    printTable(
      ['request', 'response time', 'answer'],
      [
        [
          `CodeLens, first after open (median of ${COLD_STARTS} fresh servers; slowest ${ms(Math.max(...firsts))})`,
          ms(median(firsts)),
          `${first.value.length} lenses`,
        ],
        ['CodeLens, repeated', ms(median(repeated)), `${FUNCTIONS} lenses`],
        ['CodeLens, after each edit (definition lines found again)', ms(median(edited)), `${FUNCTIONS} lenses`],
        ['inlay hints, whole file', ms(median(hints)), `${hintCount} hints`],
        ['hover on a definition line', ms(median(hovers)), '1 hover'],
      ],
    );
  } finally {
    await client.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
