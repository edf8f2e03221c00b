/**
 * The importers against input size: folded stacks and callgrind (each from text, and streamed from a file)
 * and gmon.out-free CSV, each at growing numbers of call edges, in a child process per run so that
 * the peak RSS is that run's own. Prints time and peak RSS per size; linear work shows as a time
 * ratio near the size ratio. Record the figures in docs/benchmarks.md.
 *   npm run bench -- import [--edges 10000,40000,160000]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { importCallgrind, importCallgrindFile } from '../core/import/callgrind';
import { importFolded, importFoldedFile } from '../core/import/folded';
import { option, printTable } from './support';

type Kind = 'folded' | 'folded-stream' | 'callgrind' | 'callgrind-stream';

function foldedInput(edges: number): string {
  const lines: string[] = [];
  for (let i = 0; i < edges; i++) lines.push(`main;caller_${i % 997};callee_${i} ${1 + (i % 7)}`);
  return `${lines.join('\n')}\n`;
}

function callgrindInput(edges: number): string {
  const out = ['events: Ir', 'positions: line', ''];
  for (let i = 0; i < edges; i++)
    out.push(`fn=caller_${i % 997}`, '1 5', `cfn=callee_${i}`, 'calls=3 1', '2 30', `fn=callee_${i}`, '3 10');
  return `${out.join('\n')}\n`;
}

async function child(kind: Kind, file: string): Promise<void> {
  const started = process.hrtime.bigint();
  const p =
    kind === 'folded-stream'
      ? await importFoldedFile(file)
      : kind === 'folded'
        ? importFolded(readFileSync(file, 'utf8'), { file })
        : kind === 'callgrind-stream'
          ? await importCallgrindFile(file)
          : importCallgrind(readFileSync(file, 'utf8'), { file });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  console.log(JSON.stringify({ ms, edges: p.edges.length, maxRssKiB: process.resourceUsage().maxRSS }));
}

function main(): void {
  const sizes = (option(process.argv, '--edges') ?? '10000,40000,160000').split(',').map(Number);
  const dir = mkdtempSync(join(tmpdir(), 'cyclelens-bench-import-'));
  const rows: string[][] = [];
  try {
    for (const kind of ['folded', 'folded-stream', 'callgrind', 'callgrind-stream'] as const) {
      let first: { ms: number; n: number } | undefined;
      for (const n of sizes) {
        const file = join(dir, `${kind}-${n}.txt`);
        writeFileSync(file, kind.startsWith('callgrind') ? callgrindInput(n) : foldedInput(n));
        const r = JSON.parse(
          execFileSync(process.execPath, [__filename, '--child', kind, file], { encoding: 'utf8' }).trim(),
        ) as { ms: number; edges: number; maxRssKiB: number };
        first ??= { ms: r.ms, n };
        rows.push([
          kind,
          n.toLocaleString('en-US'),
          `${(statSync(file).size / 1048576).toFixed(1)} MiB`,
          r.edges.toLocaleString('en-US'),
          `${r.ms.toFixed(0)} ms`,
          `${(r.ms / first.ms).toFixed(1)} (size ×${(n / first.n).toFixed(0)})`,
          `${(r.maxRssKiB / 1024).toFixed(0)} MiB`,
        ]);
        rmSync(file);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  printTable(['importer', 'input edges', 'file', 'profile edges', 'time', 'time ratio', 'peak RSS'], rows);
}

const at = process.argv.indexOf('--child');
if (at >= 0) void child(process.argv[at + 1] as Kind, process.argv[at + 2]!);
else main();
