import type { OracleSummary } from './oracle';

/**
 * The run's window in the trace: main's inclusive count, less the end function's when main calls
 * it; and the functions measured inside it alone (those the end function also reaches are left out
 * of the comparison: their calls after the window are in the trace, not in the run; and so are
 * those the start-up code calls before main).
 */
export function windowOf(oracle: OracleSummary, end: string | undefined): { total: number; inside: Set<string> } {
  const reach = (roots: string[]): Set<string> => {
    const seen = new Set(roots);
    const queue = [...roots];
    while (queue.length > 0) {
      const caller = queue.shift()!;
      for (const e of oracle.edges) {
        if (e.caller !== caller || e.callee === end || seen.has(e.callee)) continue;
        seen.add(e.callee);
        queue.push(e.callee);
      }
    }
    return seen;
  };
  const fromMain = reach(['main']);
  const startup = oracle.functions
    .filter((f) => f.name !== 'main' && !fromMain.has(f.name) && f.inclusive > 0)
    .map((f) => f.name);
  const elsewhere = new Set([
    ...(end ? reach([end]) : []),
    ...[...reach(startup)].filter(
      (n) => !fromMain.has(n) || oracle.edges.some((e) => e.callee === n && startup.includes(e.caller)),
    ),
  ]);
  const inside = new Set([...fromMain].filter((n) => n !== 'main' && !elsewhere.has(n)));
  const main = oracle.functions.find((f) => f.name === 'main')!;
  const endFn = end ? oracle.functions.find((f) => f.name === end) : undefined;
  return { total: main.inclusive - (endFn?.inclusive ?? 0), inside };
}
