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
 * all contexts each function's top-of-stack value is its self and its on-stack value its inclusive.
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

/** A function's own cost: the measured self, else inclusive minus what its measured callees take here. */
export function selfValue(f: ProfileFunction, allocatedToCallees: number): number {
  if (f.self) return f.self.value;
  return Math.max(0, (f.inclusive?.value ?? 0) - allocatedToCallees);
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
    if (own * scale > 0) stacks.push({ frames: [...path], value: own * scale });
    if (expand) for (const s of shares) if (s.value > 0) visit(s.callee, (scale * s.value) / (p.functions[s.callee]!.inclusive?.value || 1));
    path.pop();
  };
  for (const r of roots) visit(r, 1);
  // A cycle of measured functions that nothing outside calls has no root: enter it at its largest.
  const unreached = p.functions.filter((f) => f.inclusive !== undefined && !reached.has(f.id)).sort((a, b) => (b.inclusive?.value ?? 0) - (a.inclusive?.value ?? 0));
  for (const f of unreached) if (!reached.has(f.id)) visit(f.id, 1);

  const parts = ['Call stacks derived from per-function inclusive and self totals and the call graph (the source recorded no stacks).'];
  if (children.size > 0) parts.push(equalShares ? 'A callee shared by several callers is split between them in equal shares where call counts are unknown, by call counts elsewhere.' : 'A callee shared by several callers is split between them by call counts.');
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

/** The profile's notes plus the call tree's, for formats that carry free text. */
export function notesWith(p: Profile, tree: CallTree): string[] {
  return [...(p.notes ?? []), ...(tree.note ? [tree.note] : [])];
}
