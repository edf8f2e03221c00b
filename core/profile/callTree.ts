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
  const fns = p.functions;
  const inclusiveOf = (id: number): number => fns[id]!.inclusive?.value ?? 0;
  const called = new Uint8Array(fns.length);
  for (const list of children.values()) for (const k of list) called[k.callee] = 1;
  const roots = fns.filter((f) => f.inclusive !== undefined && !called[f.id]).map((f) => f.id);

  // One pass over the paths: each step costs its callee list, and each stack one copy of its path
  // (the output itself), so the derivation is linear in what it writes. The path's membership is a
  // flag per function, not a search of the path.
  const stacks: ProfileStack[] = [];
  const flags = { truncated: false, recursive: false };
  const path: number[] = [];
  const onPath = new Uint8Array(fns.length);
  const reached = new Uint8Array(fns.length);
  const overfull = new Set<string>();
  const visit = (id: number, scale: number): void => {
    const f = fns[id]!;
    reached[id] = 1;
    onPath[id] = 1;
    path.push(id);
    const kids = children.get(id) ?? NO_SHARES;
    let allocated = 0;
    let expandable = 0;
    for (const k of kids) {
      if (onPath[k.callee]) {
        flags.recursive = true;
        continue;
      }
      expandable++;
      allocated += inclusiveOf(k.callee) * k.fraction;
    }
    const expand = path.length < maxDepth && stacks.length < maxStacks;
    if (!expand && expandable > 0) flags.truncated = true;
    // Self is the measured self where known; unexpanded callees stay with this frame.
    const own = expand ? selfValue(f, allocated) : (f.inclusive?.value ?? 0);
    if (expand && f.inclusive && allocated > f.inclusive.value * (1 + 1e-9)) overfull.add(f.name);
    if (own * scale > 0) stacks.push({ frames: path.slice(), value: own * scale });
    if (expand) {
      for (const k of kids) {
        if (onPath[k.callee]) continue;
        const value = inclusiveOf(k.callee) * k.fraction;
        if (value > 0) visit(k.callee, (scale * value) / (inclusiveOf(k.callee) || 1));
      }
    }
    path.pop();
    onPath[id] = 0;
  };
  for (const r of roots) visit(r, 1);
  // A cycle of measured functions that nothing outside calls has no root: enter it at its largest.
  const unreached = fns
    .filter((f) => f.inclusive !== undefined && !reached[f.id])
    .sort((a, b) => (b.inclusive?.value ?? 0) - (a.inclusive?.value ?? 0));
  for (const f of unreached) if (!reached[f.id]) visit(f.id, 1);
  return { stacks, derived: true, note: derivationNote(children, { overfull, ...flags, maxStacks, maxDepth }) };
}

const NO_SHARES: readonly CalleeShare[] = [];

/** What a reader of derived stacks (or of a format drawn from the same split) must know about them. */
export function derivationNote(
  children: Map<number, CalleeShare[]>,
  found: {
    overfull: ReadonlySet<string>;
    recursive: boolean;
    truncated: boolean;
    maxStacks?: number;
    maxDepth?: number;
  },
): string {
  const parts = [
    "Call stacks derived from per-function inclusive totals and the call graph (the source recorded no stacks); a frame's own value is its inclusive minus its callees' shares.",
  ];
  let equalShares = false;
  for (const list of children.values()) for (const k of list) if (!k.counted && k.callers > 1) equalShares = true;
  if (children.size > 0)
    parts.push(
      equalShares
        ? 'A callee shared by several callers is split between them in equal shares where call counts are unknown, by call counts elsewhere.'
        : 'A callee shared by several callers is split between them by call counts.',
    );
  if (found.overfull.size > 0) {
    const names = [...found.overfull].slice(0, 5).join(', ');
    parts.push(
      `Where callees' shares exceed a function's measured inclusive value (a shared callee's split between its callers is an estimate where call counts are unknown, and runs may differ slightly where interrupts land elsewhere in a patched program), its own value is 0 and its stacks add up to the callees' shares: ${names}${found.overfull.size > 5 ? ` and ${found.overfull.size - 5} more` : ''}.`,
    );
  }
  if (found.recursive) parts.push('Recursive calls are cut at the first repeat.');
  if (found.truncated)
    parts.push(`Paths beyond ${found.maxStacks} stacks or ${found.maxDepth} frames are folded into their last frame.`);
  return parts.join(' ');
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
  const fns = p.functions;
  const valued = (id: number): boolean => fns[id]?.inclusive !== undefined;
  // Callers of each callee, in edge order, each caller once (a call graph lists one edge per call site kind).
  const callers = new Map<number, { caller: number; calls: number | undefined }[]>();
  for (const e of p.edges) {
    if (e.caller === e.callee || !valued(e.caller) || !valued(e.callee)) continue;
    let list = callers.get(e.callee);
    if (!list) callers.set(e.callee, (list = []));
    let seen = false;
    for (const c of list) if (c.caller === e.caller) seen = true;
    if (!seen) list.push({ caller: e.caller, calls: e.calls });
  }
  const out = new Map<number, CalleeShare[]>();
  for (const [callee, list] of callers) {
    let sum = 0;
    let allCounted = true;
    for (const c of list) {
      sum += c.calls ?? 0;
      if (c.calls === undefined) allCounted = false;
    }
    const counted = allCounted && sum > 0;
    for (const c of list) {
      let kids = out.get(c.caller);
      if (!kids) out.set(c.caller, (kids = []));
      const share: CalleeShare = {
        callee,
        fraction: counted ? (c.calls ?? 0) / sum : 1 / list.length,
        counted,
        callers: list.length,
      };
      if (c.calls !== undefined) share.calls = c.calls;
      kids.push(share);
    }
  }
  return out;
}

/**
 * What each function adds up to in the derived tree (its own value plus its callees' shares of
 * theirs): the measured inclusive value, or more where callees' shares exceed it. Formats that store
 * a call's cost instead of stacks (callgrind) use it so they show the same tree as the stacks.
 */
export function treeInclusive(p: Profile, children: Map<number, CalleeShare[]> = calleeShares(p)): Map<number, number> {
  return treeTotals(p, children).inclusive;
}

/**
 * treeInclusive's figures with what the note of a format drawn from them must say: the functions
 * whose callees' shares exceed their measured value, and whether recursion was cut. Each function
 * is formed once (memoised), so this is linear in the call graph.
 */
export function treeTotals(
  p: Profile,
  children: Map<number, CalleeShare[]> = calleeShares(p),
): { inclusive: Map<number, number>; overfull: Set<string>; recursive: boolean } {
  const fns = p.functions;
  const done = new Map<number, number>();
  const onPath = new Set<number>();
  const overfull = new Set<string>();
  let recursive = false;
  const value = (id: number): number => {
    const known = done.get(id);
    if (known !== undefined) return known;
    const f = fns[id]!;
    onPath.add(id);
    let allocated = 0;
    let below = 0;
    for (const k of children.get(id) ?? NO_SHARES) {
      if (onPath.has(k.callee)) {
        recursive = true;
        continue;
      }
      if (onPath.size >= 256) continue;
      allocated += (fns[k.callee]!.inclusive?.value ?? 0) * k.fraction;
      below += value(k.callee) * k.fraction;
    }
    if (f.inclusive && allocated > f.inclusive.value * (1 + 1e-9)) overfull.add(f.name);
    const total = selfValue(f, allocated) + below;
    onPath.delete(id);
    done.set(id, total);
    return total;
  };
  for (const f of fns) if (f.inclusive) value(f.id);
  return { inclusive: done, overfull, recursive };
}

/** The profile's notes plus the call tree's, for formats that carry free text. */
export function notesWith(p: Profile, tree: CallTree): string[] {
  return [...(p.notes ?? []), ...(tree.note ? [tree.note] : [])];
}
