import type { CallGraphResponse } from '../../common/dapCustom';

/**
 * The call graph as descent reads it: callers and callees by name (self edges dropped: recursion
 * adds nothing to a bound), strongly connected components (mutual recursion), reachability and
 * breadth-first order from the roots. Indirect calls become edges from each indirect caller to
 * every function that may be their target, so no reachable function is missed.
 */
export interface GraphIndexOptions {
  /** Where the analysis starts; default: every function nobody calls. */
  roots?: readonly string[];
  /**
   * Functions an indirect call may reach. Default: every function but the roots, the only sound
   * choice without knowing which addresses the program takes.
   */
  indirectTargets?: readonly string[];
}

export class GraphError extends Error {
  override name = 'GraphError';
}

export class CallGraphIndex {
  readonly names: readonly string[];
  readonly roots: readonly string[];
  /** Reachable from the roots. */
  readonly reachable: ReadonlySet<string>;
  /** Reachable functions in breadth-first order from the roots (callees in call-site order). */
  readonly bfsOrder: readonly string[];
  readonly depth: ReadonlyMap<string, number>;
  private readonly callersOf = new Map<string, string[]>();
  private readonly calleesOf = new Map<string, string[]>();
  private readonly sccOf = new Map<string, number>();
  private readonly rootsOf = new Map<string, Set<string>>();
  private readonly below = new Map<string, ReadonlySet<string>>();
  private readonly sizes = new Map<string, number>();
  private readonly weights = new Map<string, number>();
  /** Members of each strongly connected component (by component id). */
  readonly components: readonly (readonly string[])[];
  /** Component ids in topological order of the condensation: callers before callees. */
  readonly componentOrder: readonly number[];

  constructor(
    readonly graph: CallGraphResponse,
    options: GraphIndexOptions = {},
  ) {
    this.names = graph.functions.map((f) => f.name);
    for (const f of graph.functions) this.sizes.set(f.name, f.size);
    const known = new Set(this.names);
    for (const n of this.names) {
      this.callersOf.set(n, []);
      this.calleesOf.set(n, []);
    }
    const link = (caller: string, callee: string): void => {
      if (caller === callee || !known.has(caller) || !known.has(callee)) return;
      const out = this.calleesOf.get(caller)!;
      if (!out.includes(callee)) out.push(callee);
      const inn = this.callersOf.get(callee)!;
      if (!inn.includes(caller)) inn.push(caller);
    };
    // Call-site order: what a reader of the caller's code meets first is measured first.
    const edges = [...graph.edges].sort((a, b) => (a.sites[0] ?? 0) - (b.sites[0] ?? 0));
    for (const e of edges) link(e.caller, e.callee);

    const uncalled = this.names.filter((n) => this.callersOf.get(n)!.length === 0);
    const roots = options.roots ? [...options.roots] : uncalled;
    for (const r of roots)
      if (!known.has(r))
        throw new GraphError(
          `'${r}' is not a function of the program's call graph: check the name (static functions may ` +
            `be listed as name@0xADDRESS)`,
        );
    if (roots.length === 0)
      throw new GraphError('the call graph has no function that nobody calls: name a root function');
    this.roots = roots;

    if (graph.indirectCallers.length > 0) {
      const rootSet = new Set(roots);
      const targets = options.indirectTargets ?? this.names.filter((n) => !rootSet.has(n));
      for (const caller of graph.indirectCallers) for (const t of targets) link(caller, t);
    }

    // Breadth-first order and depth.
    const depth = new Map<string, number>();
    const order: string[] = [];
    for (const r of roots) {
      if (depth.has(r)) continue;
      depth.set(r, 0);
      order.push(r);
    }
    for (let i = 0; i < order.length; i++) {
      const f = order[i]!;
      for (const c of this.calleesOf.get(f)!) {
        if (depth.has(c)) continue;
        depth.set(c, depth.get(f)! + 1);
        order.push(c);
      }
    }
    this.bfsOrder = order;
    this.depth = depth;
    this.reachable = new Set(order);
    for (const r of new Set(roots)) {
      const seen = new Set<string>([r]);
      const queue = [r];
      for (let i = 0; i < queue.length; i++) {
        for (const c of this.calleesOf.get(queue[i]!)!) {
          if (seen.has(c)) continue;
          seen.add(c);
          queue.push(c);
        }
      }
      for (const n of seen) {
        const set = this.rootsOf.get(n) ?? new Set<string>();
        set.add(r);
        this.rootsOf.set(n, set);
      }
    }

    const { components, sccOf } = stronglyConnected(order, (n) => this.calleesOf.get(n)!);
    this.components = components;
    for (const [n, id] of sccOf) this.sccOf.set(n, id);
    // Tarjan emits components callees-first; reversed, callers come first.
    this.componentOrder = components.map((_, i) => i).reverse();
  }

  /** Reachable callers (self excluded). */
  callers(name: string): readonly string[] {
    return (this.callersOf.get(name) ?? []).filter((p) => this.reachable.has(p));
  }

  callees(name: string): readonly string[] {
    return this.calleesOf.get(name) ?? [];
  }

  component(name: string): number {
    return this.sccOf.get(name) ?? -1;
  }

  /** True when the function is part of mutual recursion (a component of more than one function). */
  inCycle(name: string): boolean {
    const id = this.sccOf.get(name);
    return id !== undefined && this.components[id]!.length > 1;
  }

  /**
   * Code bytes reachable from the function (itself and everything it may call): a static guess at
   * how much of the run it can hold, used to measure heavy siblings first.
   */
  reachableBytes(name: string): number {
    let w = this.weights.get(name);
    if (w !== undefined) return w;
    w = this.sizes.get(name) ?? 0;
    for (const d of this.descendants(name)) if (d !== name) w += this.sizes.get(d) ?? 0;
    this.weights.set(name, w);
    return w;
  }

  /** How many roots reach the function: more than one means its frames may nest (an interrupt over main). */
  rootsReaching(name: string): number {
    return this.rootsOf.get(name)?.size ?? 0;
  }

  /** Everything the function may call, directly or not (itself only through recursion). */
  descendants(name: string): ReadonlySet<string> {
    let set = this.below.get(name);
    if (set) return set;
    const seen = new Set<string>();
    const queue = [name];
    for (let i = 0; i < queue.length; i++) {
      for (const c of this.calleesOf.get(queue[i]!) ?? []) {
        if (seen.has(c)) continue;
        seen.add(c);
        queue.push(c);
      }
    }
    this.below.set(name, seen);
    return seen;
  }

  /** Whether one of the two may call the other, directly or not. */
  related(a: string, b: string): boolean {
    return a === b || this.descendants(a).has(b) || this.descendants(b).has(a);
  }

  isRoot(name: string): boolean {
    return this.roots.includes(name);
  }
}

/** Tarjan's algorithm, iterative (call chains of thousands of functions must not overflow the stack). */
function stronglyConnected(
  nodes: readonly string[],
  next: (n: string) => readonly string[],
): { components: string[][]; sccOf: Map<string, number> } {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  const sccOf = new Map<string, number>();
  let counter = 0;
  const inGraph = new Set(nodes);
  for (const start of nodes) {
    if (index.has(start)) continue;
    const work: Array<{ node: string; i: number }> = [{ node: start, i: 0 }];
    index.set(start, counter);
    low.set(start, counter++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      const succ = next(top.node).filter((s) => inGraph.has(s));
      if (top.i < succ.length) {
        const s = succ[top.i++]!;
        if (!index.has(s)) {
          index.set(s, counter);
          low.set(s, counter++);
          stack.push(s);
          onStack.add(s);
          work.push({ node: s, i: 0 });
        } else if (onStack.has(s)) {
          low.set(top.node, Math.min(low.get(top.node)!, index.get(s)!));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1]!.node;
        low.set(parent, Math.min(low.get(parent)!, low.get(top.node)!));
      }
      if (low.get(top.node) === index.get(top.node)) {
        const comp: string[] = [];
        let n: string;
        do {
          n = stack.pop()!;
          onStack.delete(n);
          sccOf.set(n, components.length);
          comp.push(n);
        } while (n !== top.node);
        components.push(comp);
      }
    }
  }
  return { components, sccOf };
}
