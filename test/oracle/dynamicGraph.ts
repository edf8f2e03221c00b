import type { CallGraphResponse } from '../../common/dapCustom';
import type { OracleSummary } from './oracle';

/**
 * The dynamic call graph the adapter records (`cyclelens/dynamicCallGraph`: the static graph with
 * the observed calls counted on its edges, plus edges only the run showed), built here from the
 * oracle's caller→callee counts of the same run. test/integration/dynamicCallGraph.test.ts checks
 * that the adapter's recording equals the oracle's counts. The benchmarks and the grouped-descent
 * tests use it where recording by breakpoints would take minutes.
 */
export function dynamicGraphFromOracle(
  graph: CallGraphResponse,
  oracle: OracleSummary,
  windowRoot: string,
): CallGraphResponse & { interrupts: CallGraphResponse['edges'] } {
  const names = new Set(graph.functions.map((f) => f.name));
  const toGraph = new Map<string, string>();
  for (const f of oracle.functions)
    for (const n of [f.name, ...f.aliases]) if (names.has(n) && !toGraph.has(f.name)) toGraph.set(f.name, n);
  const counts = new Map<string, number>();
  for (const e of oracle.edges) {
    const caller = toGraph.get(e.caller);
    const callee = toGraph.get(e.callee);
    if (caller && callee)
      counts.set(`${caller}\u0000${callee}`, (counts.get(`${caller}\u0000${callee}`) ?? 0) + e.calls);
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
    .map((f) => ({
      caller: windowRoot,
      callee: toGraph.get(f.name)!,
      kind: 'call' as const,
      sites: [],
      count: f.interrupts + f.traps,
    }));
  return { ...graph, edges, interrupts };
}
