import type { Profile, ProfileFunction, ProfileStack } from './model';

/**
 * Call stacks for the formats that need them (flame graphs, folded stacks, pprof, speedscope) when
 * the source recorded none: injected measurements give each function's inclusive and self totals and
 * the call graph's edges, not the paths they ran on.
 *
 * The derived tree starts at the functions no measured function calls. In each context a function's
 * share is its inclusive total times the fraction of its calls that come from that caller: the
 * edge's call count over all measured callers' counts where every edge's count is known, equal shares
 * otherwise. That split is an assumption (a callee may cost more when called from one caller than
 * from another), so the result says so in `note`, and exporters copy it into the file's notes.
 * Within a context the callee's and the function's own (self) values scale together, so summed over
 * all contexts each function's on-stack value is its inclusive value and its top-of-stack value its
 * inclusive minus its callees' shares (the self, where the profile formed it consistently).
 * Recursion is cut at the first repeat (the repeat's cost stays with the frame that would call it).
 */

export interface CallTree {
  stacks: ProfileStack[];
  /** Whether the stacks were derived from totals (true) or recorded by the source (false). */
  derived: boolean;
  /** What a reader must know about how the stacks were formed, when derived. */
  note?: string;
}

export interface CallTreeOptions {
  /** Stop expanding contexts past this many stacks (a dense graph has exponentially many paths). */
  maxStacks?: number;
  maxDepth?: number;
}

/**
 * A function's own cost in the derived tree: its inclusive value minus its measured callees' shares,
 * so that every function's stacks add up to its measured inclusive value. Where the profile formed
 * self itself this is the same figure; where it differs (a callee shared between callers, measured
 * in another run) the inclusive value, which was measured, wins. Without an inclusive value: the
 * recorded self.
 */
export function selfValue(f: ProfileFunction, allocatedToCallees: number): number {
  if (!f.inclusive) return f.self?.value ?? 0;
  return Math.max(0, f.inclusive.value - allocatedToCallees);
}

export function profileStacks(p: Profile, options: CallTreeOptions = {}): CallTree {
  if (p.stacks.length > 0) return { stacks: p.stacks, derived: false };
  const maxStacks = options.maxStacks ?? 1_000_000;
  const maxDepth = options.maxDepth ?? 256;
  const children = calleeShares(p);
  const equalShares = [...children.values()].some((list) => list.some((k) => k.counted === false && k.callers > 1));
  const called = new Set([...children.values()].flatMap((list) => list.map((k) => k.callee)));
  const roots = p.functions.filter((f) => f.inclusive !== undefined && !called.has(f.id)).map((f) => f.id);

  const stacks: ProfileStack[] = [];
  let truncated = false;
  let recursive = false;
  const path: number[] = [];
  const reached = new Set<number>();
  const overfull = new Set<string>();
  const visit = (id: number, scale: number): void => {
    const f = p.functions[id]!;
    reached.add(id);
    path.push(id);
    const kids = (children.get(id) ?? []).filter((k) => {
      if (!path.includes(k.callee)) return true;
      recursive = true;
      return false;
    });
    const expand = path.length < maxDepth && stacks.length < maxStacks;
    if (!expand && kids.length > 0) truncated = true;
    let allocated = 0;
    const shares = kids.map((k) => {
      const v = (p.functions[k.callee]!.inclusive?.value ?? 0) * k.fraction;
      allocated += v;
      return { callee: k.callee, value: v };
    });
    // Self is the measured self where known; unexpanded callees stay with this frame.
    const own = expand ? selfValue(f, allocated) : (f.inclusive?.value ?? 0);
    if (expand && f.inclusive && allocated > f.inclusive.value * (1 + 1e-9)) overfull.add(f.name);
    if (own * scale > 0) stacks.push({ frames: [...path], value: own * scale });
    if (expand) for (const s of shares) if (s.value > 0) visit(s.callee, (scale * s.value) / (p.functions[s.callee]!.inclusive?.value || 1));
    path.pop();
  };
  for (const r of roots) visit(r, 1);
  // A cycle of measured functions that nothing outside calls has no root: enter it at its largest.
  const unreached = p.functions.filter((f) => f.inclusive !== undefined && !reached.has(f.id)).sort((a, b) => (b.inclusive?.value ?? 0) - (a.inclusive?.value ?? 0));
  for (const f of unreached) if (!reached.has(f.id)) visit(f.id, 1);

  const parts = ['Call stacks derived from per-function inclusive totals and the call graph (the source recorded no stacks); a frame\'s own value is its inclusive minus its callees\' shares.'];
  if (children.size > 0) parts.push(equalShares ? 'A callee shared by several callers is split between them in equal shares where call counts are unknown, by call counts elsewhere.' : 'A callee shared by several callers is split between them by call counts.');
  if (overfull.size > 0) {
    const names = [...overfull].slice(0, 5).join(', ');
    parts.push(`Where callees' shares exceed a function's measured inclusive value (runs differ slightly: interrupts land elsewhere in a patched program), its own value is 0 and its stacks add up to the callees' shares: ${names}${overfull.size > 5 ? ` and ${overfull.size - 5} more` : ''}.`);
  }
  if (recursive) parts.push('Recursive calls are cut at the first repeat.');
  if (truncated) parts.push(`Paths beyond ${maxStacks} stacks or ${maxDepth} frames are folded into their last frame.`);
  return { stacks, derived: true, note: parts.join(' ') };
}

/** A callee of a function, with the fraction of the callee's calls (and so of its value) that edge carries. */
export interface CalleeShare {
  callee: number;
  fraction: number;
  /** The edge's call count, when known. */
  calls?: number;
  /** Whether the split came from call counts (false: equal shares). */
  counted: boolean;
  /** How many measured callers the callee has. */
  callers: number;
}

/**
 * The callees of each measured function among the measured ones (a callee shared by several
 * callers split by call counts when every caller's count is known, equal shares otherwise).
 * Self-calls are left out: recursion does not add to a function's inclusive value.
 */
export function calleeShares(p: Profile): Map<number, CalleeShare[]> {
  const valued = (id: number): boolean => p.functions[id]?.inclusive !== undefined;
  const callers = new Map<number, { caller: number; calls?: number }[]>();
  for (const e of p.edges) {
    if (!valued(e.caller) || !valued(e.callee) || e.caller === e.callee) continue;
    const list = callers.get(e.callee) ?? [];
    if (list.some((c) => c.caller === e.caller)) continue;
    list.push({ caller: e.caller, ...(e.calls !== undefined ? { calls: e.calls } : {}) });
    callers.set(e.callee, list);
  }
  const out = new Map<number, CalleeShare[]>();
  for (const [callee, list] of callers) {
    const sum = list.reduce((s, c) => s + (c.calls ?? 0), 0);
    const counted = list.every((c) => c.calls !== undefined) && sum > 0;
    for (const c of list) {
      const kids = out.get(c.caller) ?? [];
      kids.push({ callee, fraction: counted ? (c.calls ?? 0) / sum : 1 / list.length, ...(c.calls !== undefined ? { calls: c.calls } : {}), counted, callers: list.length });
      out.set(c.caller, kids);
    }
  }
  return out;
}

/**
 * What each function adds up to in the derived tree (its own value plus its callees' shares of
 * theirs): the measured inclusive value, or more where callees' shares exceed it. Formats that store
 * a call's cost instead of stacks (callgrind) use it so they show the same tree as the stacks.
 */
export function treeInclusive(p: Profile): Map<number, number> {
  const children = calleeShares(p);
  const done = new Map<number, number>();
  const onPath = new Set<number>();
  const value = (id: number): number => {
    const known = done.get(id);
    if (known !== undefined) return known;
    const f = p.functions[id]!;
    onPath.add(id);
    const kids = (children.get(id) ?? []).filter((k) => !onPath.has(k.callee) && onPath.size < 256);
    const allocated = kids.reduce((s, k) => s + (p.functions[k.callee]!.inclusive?.value ?? 0) * k.fraction, 0);
    const total = selfValue(f, allocated) + kids.reduce((s, k) => s + value(k.callee) * k.fraction, 0);
    onPath.delete(id);
    done.set(id, total);
    return total;
  };
  for (const f of p.functions) if (f.inclusive) value(f.id);
  return done;
}

/** The profile's notes plus the call tree's, for formats that carry free text. */
export function notesWith(p: Profile, tree: CallTree): string[] {
  return [...(p.notes ?? []), ...(tree.note ? [tree.note] : [])];
}
