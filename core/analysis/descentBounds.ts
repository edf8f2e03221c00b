import type { CallGraphEdge, CallGraphResponse } from '../../common/dapCustom';
import type { CallGraphIndex } from './callGraphIndex';
import type { Ledger } from './analysisRun';

// Descent's numbers: the upper bound of every function from what the ledger holds (the argument is
// in descent.ts, "The bound" and its refinements) and the prior estimates from a dynamic call
// graph's counts, which order the work but never bound anything.

/**
 * Upper bounds of every reachable function from the current ledger; `given` holds bounds known
 * otherwise (CountBounds, from instruction counts), each taken where it is lower and carried to the
 * callees like any other.
 */
export function computeBounds(
  index: CallGraphIndex,
  ledger: Ledger,
  residual: boolean,
  given?: ReadonlyMap<string, number>,
): Map<string, number> {
  const whole = ledger.whole ?? Number.POSITIVE_INFINITY;
  const bounds = new Map<string, number>();
  const U = {
    get: (f: string): number | undefined => bounds.get(f),
    set: (f: string, v: number): void => void bounds.set(f, Math.min(v, given?.get(f) ?? Number.POSITIVE_INFINITY)),
  };
  // A caller counts with a value that bounds from above; a sibling is subtracted with a value the
  // truth is not below: on a quantising counter its lower end, otherwise its measured value (one
  // that may be low subtracts too little, which keeps the bound).
  const known = (p: string): number => ledger.upperValue(p) ?? U.get(p) ?? whole;
  const privateOf = (p: string): string[] =>
    index.callees(p).filter((s) => !index.isRoot(s) && index.reachable.has(s) && onlyCaller(index, s) === p);
  const eligible = (p: string): boolean => residual && !index.inCycle(p) && index.rootsReaching(p) === 1;
  const contribution = (p: string, excluded: (s: string) => boolean): number => {
    let v = known(p);
    if (!eligible(p) || !Number.isFinite(v)) return v;
    for (const s of privateOf(p)) {
      const m = ledger.lowerValue(s);
      if (m !== undefined && !excluded(s)) v -= m;
    }
    return Math.max(0, v);
  };
  // Callers known only through one group count once, with the group's value: every instant one of
  // them is directly below f, the group is on the stack.
  const sumOverCallers = (callers: readonly string[], part: (p: string) => number): number => {
    let sum = 0;
    const used = new Set<string>();
    for (const g of ledger.groups) {
      const together = callers.filter(
        (p) => !used.has(p) && ledger.upperValue(p) === undefined && g.members.includes(p),
      );
      if (together.length < 2) continue;
      const apart = together.reduce((acc, p) => acc + part(p), 0);
      const upper = g.upper ?? g.value;
      if (upper >= apart) continue;
      sum += upper;
      for (const p of together) used.add(p);
    }
    for (const p of callers) if (!used.has(p)) sum += part(p);
    return sum;
  };
  // A group bounds each member by its whole value. (Taking off members measured alone would be
  // exact only with exact counters: the difference of two measurements doubles their error, and a
  // counter that quantises, such as SysTick on QEMU, then prunes functions just above the threshold.)
  const groupBound = (f: string): number => {
    let best = Number.POSITIVE_INFINITY;
    for (const g of ledger.groups) if (g.members.includes(f)) best = Math.min(best, g.upper ?? g.value);
    return best;
  };
  for (const id of index.componentOrder) {
    const members = index.components[id]!;
    if (members.length === 1) {
      const f = members[0]!;
      if (ledger.spanning.has(f)) {
        U.set(f, whole);
        continue;
      }
      const fromCallers = index.isRoot(f)
        ? whole
        : sumOverCallers(index.callers(f), (p) => contribution(p, (s) => s === f));
      U.set(f, Math.min(whole, fromCallers, groupBound(f)));
      continue;
    }
    const inS = new Set(members);
    const external = new Set<string>();
    for (const m of members) for (const p of index.callers(m)) if (!inS.has(p)) external.add(p);
    const outside = members.some((m) => index.isRoot(m))
      ? whole
      : sumOverCallers([...external], (p) => contribution(p, (s) => inS.has(s)));
    const bound = Math.min(whole, outside);
    for (const f of members) {
      if (ledger.spanning.has(f)) {
        U.set(f, whole);
        continue;
      }
      if (index.isRoot(f)) {
        U.set(f, Math.min(whole, groupBound(f)));
        continue;
      }
      let direct = 0;
      for (const p of index.callers(f))
        direct += inS.has(p) ? (ledger.upperValue(p) ?? bound) : contribution(p, (s) => s === f);
      U.set(f, Math.min(bound, direct, groupBound(f)));
    }
  }
  return bounds;
}

function onlyCaller(index: CallGraphIndex, s: string): string | undefined {
  const callers = index.callers(s);
  return callers.length === 1 ? callers[0] : undefined;
}

/**
 * Prior estimates of each function's share of the run from a dynamic call graph's counts: its own
 * code once per call (the size stands in for the path taken; `own`, where a counting run gave it,
 * is the instructions it executed itself), plus its callees' estimates in proportion to the calls
 * it made to them, relative to the heaviest root. Only the order of measurement and the packing of
 * groups use them, never a bound: a poor estimate costs runs, it cannot lose a function. Undefined
 * when the graph has no counts.
 */
export function callCountEstimates(
  graph: CallGraphResponse & { interrupts?: readonly CallGraphEdge[] },
  index: CallGraphIndex,
  spanning: ReadonlySet<string> = new Set(),
  own?: ReadonlyMap<string, number>,
): Map<string, number> | undefined {
  const counted = graph.edges.filter((e) => e.count !== undefined);
  const handlerEntries = graph.interrupts ?? [];
  if (counted.length === 0) return undefined;
  const calls = new Map<string, number>();
  const along = new Map<string, number>();
  for (const e of [...counted, ...handlerEntries]) calls.set(e.callee, (calls.get(e.callee) ?? 0) + (e.count ?? 0));
  for (const e of counted)
    if (e.caller !== e.callee)
      along.set(`${e.caller}\u0000${e.callee}`, (along.get(`${e.caller}\u0000${e.callee}`) ?? 0) + (e.count ?? 0));
  const size = new Map(graph.functions.map((f) => [f.name, f.size]));
  const raw = new Map<string, number>();
  // Callees first: the condensation's reverse topological order.
  for (const id of [...index.componentOrder].reverse()) {
    for (const f of index.components[id]!) {
      const entered = calls.get(f) ?? 0;
      let v = own
        ? (own.get(f) ?? 0)
        : Math.max(entered, index.isRoot(f) || spanning.has(f) ? 1 : 0) * (size.get(f) ?? 0);
      for (const c of index.callees(f)) {
        if (index.component(c) === id) continue;
        const n = along.get(`${f}\u0000${c}`) ?? 0;
        const total = calls.get(c) ?? 0;
        if (n > 0 && total > 0) v += (raw.get(c) ?? 0) * (n / total);
      }
      raw.set(f, v);
    }
  }
  const scale = Math.max(0, ...[...index.roots, ...spanning].map((r) => raw.get(r) ?? 0));
  if (!(scale > 0)) return undefined;
  return new Map([...raw].map(([f, v]) => [f, v / scale]));
}
