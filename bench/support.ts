import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fixturesDir } from '../test/support/paths';
import type { CallGraphResponse } from '../common/dapCustom';
import type { OracleSummary } from '../test/oracle/oracle';
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
export function fixturePrograms<T extends string>(argv: readonly string[], targets: readonly T[], programs: readonly string[]): Array<{ target: T; program: string; elf: string }> {
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

/**
 * The dynamic call graph the adapter records (`cyclelens/dynamicCallGraph`: the static graph with
 * the observed calls counted on its edges, plus edges only the run showed), built here from the
 * oracle's caller→callee counts of the same run. test/integration/dynamicCallGraph.test.ts checks
 * that the adapter's recording equals the oracle's counts.
 */
export function dynamicGraphFromOracle(graph: CallGraphResponse, oracle: OracleSummary, windowRoot: string): CallGraphResponse & { interrupts: CallGraphResponse['edges'] } {
  const names = new Set(graph.functions.map((f) => f.name));
  const toGraph = new Map<string, string>();
  for (const f of oracle.functions) for (const n of [f.name, ...f.aliases]) if (names.has(n) && !toGraph.has(f.name)) toGraph.set(f.name, n);
  const counts = new Map<string, number>();
  for (const e of oracle.edges) {
    const caller = toGraph.get(e.caller);
    const callee = toGraph.get(e.callee);
    if (caller && callee) counts.set(`${caller}\u0000${callee}`, (counts.get(`${caller}\u0000${callee}`) ?? 0) + e.calls);
  }
  const edges = graph.edges.map((e) => {
    const key = `${e.caller}\u0000${e.callee}`;
    const count = counts.get(key);
    counts.delete(key);
    return count !== undefined ? { ...e, count } : { ...e };
  });
  for (const [key, count] of counts) {
    const [caller, callee] = key.split('\u0000') as [string, string];
    edges.push({ caller, callee, kind: 'call', sites: [], count });
  }
  const interrupts = oracle.functions
    .filter((f) => f.interrupts + f.traps > 0 && toGraph.has(f.name))
    .map((f) => ({ caller: windowRoot, callee: toGraph.get(f.name)!, kind: 'call' as const, sites: [], count: f.interrupts + f.traps }));
  return { ...graph, edges, interrupts };
}
