import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fixturesDir } from '../test/support/paths';
/** Small helpers shared by the benchmarks: they print figures, they never assert on time. */
export function median(values: number[]): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export function printTable(header: string[], rows: string[][]): void {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]): string => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const r of rows) console.log(line(r));
}

/** The value after `flag` on the command line (`--program firmware`), if given. */
export function option(argv: readonly string[], flag: string): string | undefined {
  const i = argv.indexOf(flag);
  return i >= 0 ? argv[i + 1] : undefined;
}

/**
 * The fixture programs a benchmark runs over, in order, narrowed by `--target` and `--program`;
 * one that is not built is skipped with a line on stderr.
 */
export function fixturePrograms<T extends string>(
  argv: readonly string[],
  targets: readonly T[],
  programs: readonly string[],
): Array<{ target: T; program: string; elf: string }> {
  const out: Array<{ target: T; program: string; elf: string }> = [];
  for (const target of targets) {
    if (option(argv, '--target') && option(argv, '--target') !== target) continue;
    for (const program of programs) {
      if (option(argv, '--program') && option(argv, '--program') !== program) continue;
      const elf = join(fixturesDir, 'build', target, `${program}.elf`);
      if (existsSync(elf)) out.push({ target, program, elf });
      else console.error(`skipped ${target}/${program}: not built (make -C test/fixtures)`);
    }
  }
  return out;
}
