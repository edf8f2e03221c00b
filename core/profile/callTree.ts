import type { EdgeProvenance, Profile, ProfileFunction, ProfileStack } from './model';

/**
 * The call tree every view and export reads (docs/design.md, "The profile model"): the profile's
 * recorded stacks where the source recorded them (the counting plugin's shadow stack, the oracle,
 * sampling), else stacks derived from the measured values only.
 *
 * Deriving: each measured function's inclusive value is split over the edges to its callees. An
 * edge measured per caller (`ProfileEdge.inclusive`, exact or injected) keeps its value; a callee
 * with one measured caller goes under it whole; a callee shared by several callers is split by
 * call counts (equal shares without them), but never beyond what a caller holds: each caller's
 * measured inclusive value, less its own measured time and what its other callees take, caps its
 * share, and what a capped caller cannot hold goes to the others (a small warm-up caller takes at
 * most its own value, the large caller the rest). Such a split is marked estimated, with the bound
 * the measured values allow. A caller's own (self) value is what measurement supports: its
 * recorded self, or its inclusive less its callees where every callee is measured and it calls
 * nothing through a pointer. Whatever else a caller holds (time in unmeasured or unknown callees)
 * goes to a `[not measured]` frame under it, never to its self. Functions nothing measured calls
 * are the roots; roots that do not fit in the run's total must run inside another root and are
 * placed (estimated) under the functions that call through a pointer, else under the largest root;
 * the run time no root covers is a `[not measured]` root.
 * So every profile's stacks add up to its total, and each function's to its inclusive value.
 * Within a context the callee's and the function's own values scale together. Recursion is cut at
 * the first repeat (the repeat's value stays in the `[not measured]` frame of the one calling it).
 */

export interface CallTree {
  stacks: ProfileStack[];
  /** The functions the stacks' frames index: the profile's, plus the `[not measured]` frame when used. */
  functions: ProfileFunction[];
  /** Whether the stacks were derived from totals (true) or recorded by the source (false). */
  derived: boolean;
  /** Whether a derived split is an estimate somewhere (then the stacks on it carry a bound). */
  estimated: boolean;
  /** What a reader must know about how the stacks were formed, when derived. */
  note?: string;
}

export interface CallTreeOptions {
  /** Stop expanding contexts past this many stacks (a dense graph has exponentially many paths). */
  maxStacks?: number;
  maxDepth?: number;
}

/** The frame that holds time no measurement attributes to a function of the profile. */
export const NOT_MEASURED = '[not measured]';

/** One caller → callee edge of the split: the callee's value through that caller, all contexts together. */
export interface SplitEdge {
  caller: number;
  callee: number;
  value: number;
  provenance: EdgeProvenance;
  /** For an estimate: the interval the measured values allow. */
  bound?: { low: number; high: number };
  calls?: number;
  /** Reached through functions without a measured value (the frames between are not shown). */
  through?: boolean;
}

/** The measured values split over the call graph (what profileStacks lays out per context). */
export interface EdgeSplit {
  /** Per caller, its callees' shares. */
  callees: Map<number, SplitEdge[]>;
  /** Per function: the own value measurement supports (over all its contexts). */
  own: Float64Array;
  /** Per function: what it holds that no measured callee or own value accounts for. */
  unattributed: Float64Array;
  /** Per function: whether its own value is an estimate (a shared callee's split decides it). */
  ownEstimated: Uint8Array;
  roots: number[];
  /** The run time outside every root (the `[not measured]` root), when the profile has a total. */
  outside: number;
  /** Functions part of whose inclusive value no caller could hold (it ran from elsewhere too). */
  unplaced: Set<string>;
  /** Roots that did not fit in the total and were placed under the largest root. */
  nested: string[];
  estimated: boolean;
  equalShares: boolean;
  /** A cycle of measured functions was entered at its largest (the call back into it is cut). */
  cycleEntered: boolean;
}

const EPS = 1e-9;

/** Whether a measured edge value is one the split must keep (not an estimate of an earlier split). */
function measuredEdge(e: Profile['edges'][number]): boolean {
  return e.inclusive !== undefined && (e.provenance === 'exact' || e.provenance === 'injected');
}

/**
 * Splits every measured function's inclusive value over the edges to its measured callees (see the
 * file's comment): measured edges first, then single callers, then shared callees by water-filling
 * under the callers' caps.
 */
export function splitEdges(p: Profile): EdgeSplit {
  const fns = p.functions;
  const n = fns.length;
  const V = (id: number): number => fns[id]?.inclusive?.value ?? 0;
  const valued = (id: number): boolean => fns[id]?.inclusive !== undefined;
  const provenanceKind: EdgeProvenance = p.provenance.kind === 'injected' ? 'injected' : 'exact';

  // Direct callers of each function (every caller, measured or not) and whether each has a value.
  const callersOf = new Map<number, { caller: number; calls?: number; measured?: number }[]>();
  const calleesOfAny = new Map<number, Set<number>>();
  for (const e of p.edges) {
    if (e.caller === e.callee) continue;
    let list = callersOf.get(e.callee);
    if (!list) callersOf.set(e.callee, (list = []));
    const known = list.find((c) => c.caller === e.caller);
    const measured = measuredEdge(e) ? e.inclusive!.value : undefined;
    if (known) {
      if (e.calls !== undefined) known.calls = (known.calls ?? 0) + e.calls;
      if (measured !== undefined) known.measured = (known.measured ?? 0) + measured;
    } else
      list.push({
        caller: e.caller,
        ...(e.calls !== undefined ? { calls: e.calls } : {}),
        ...(measured !== undefined ? { measured } : {}),
      });
    let kids = calleesOfAny.get(e.caller);
    if (!kids) calleesOfAny.set(e.caller, (kids = new Set()));
    kids.add(e.callee);
  }
  // The measured functions above a callee: its measured callers, and through unmeasured ones theirs.
  const measuredCallers = (g: number): { caller: number; calls?: number; measured?: number; through?: boolean }[] => {
    const out: { caller: number; calls?: number; measured?: number; through?: boolean }[] = [];
    const seen = new Set<number>([g]);
    const queue: number[] = [];
    for (const c of callersOf.get(g) ?? []) {
      if (valued(c.caller)) out.push(c);
      else if (!seen.has(c.caller)) {
        seen.add(c.caller);
        queue.push(c.caller);
      }
    }
    for (let i = 0; i < queue.length; i++)
      for (const c of callersOf.get(queue[i]!) ?? []) {
        if (seen.has(c.caller)) continue;
        seen.add(c.caller);
        if (valued(c.caller)) {
          if (!out.some((o) => o.caller === c.caller)) out.push({ caller: c.caller, through: true });
        } else queue.push(c.caller);
      }
    return out;
  };

  // What measurement supports as a function's own time: the recorded self, or the inclusive less
  // the callees where every callee is measured and nothing is called through a pointer.
  const selfKnown = (id: number): boolean => {
    const f = fns[id]!;
    if (f.self !== undefined) return true;
    if (f.indirectCalls) return false;
    for (const k of calleesOfAny.get(id) ?? []) if (!valued(k)) return false;
    return true;
  };

  const sharedTarget = new Map<number, number>();
  const capacity = new Float64Array(n);
  for (let id = 0; id < n; id++) if (valued(id)) capacity[id] = V(id) - (fns[id]!.self?.value ?? 0);
  const callees = new Map<number, SplitEdge[]>();
  const add = (e: SplitEdge): void => {
    let list = callees.get(e.caller);
    if (!list) callees.set(e.caller, (list = []));
    list.push(e);
    capacity[e.caller] -= e.value;
  };
  const unplaced = new Set<string>();
  const nested: string[] = [];
  let estimated = false;
  let equalShares = false;

  const roots: number[] = [];
  const shared: { g: number; callers: ReturnType<typeof measuredCallers> }[] = [];
  const callersCache = new Map<number, ReturnType<typeof measuredCallers>>();
  for (let g = 0; g < n; g++) if (valued(g)) callersCache.set(g, measuredCallers(g));
  for (const [g, callers] of callersCache) if (callers.length === 0) roots.push(g);
  // A cycle of measured functions that nothing outside calls has no root: enter it at its largest.
  const reached = new Uint8Array(n);
  const reach = (from: number): void => {
    const queue = [from];
    reached[from] = 1;
    for (let i = 0; i < queue.length; i++)
      for (const k of calleesOfAny.get(queue[i]!) ?? [])
        if (!reached[k]) {
          reached[k] = 1;
          queue.push(k);
        }
  };
  for (const r of roots) reach(r);
  const unreached = [...callersCache.keys()].filter((g) => !reached[g]).sort((a, b) => V(b) - V(a) || a - b);
  let cycleEntered = false;
  for (const g of unreached) {
    if (reached[g]) continue;
    cycleEntered = true;
    roots.push(g);
    callersCache.set(g, []);
    reach(g);
  }
  for (const [g, callers] of callersCache) {
    if (callers.length === 0) continue;
    // Edges measured per caller keep their value.
    let left = V(g);
    const open: typeof callers = [];
    for (const c of callers) {
      if (c.measured !== undefined) {
        add({ caller: c.caller, callee: g, value: c.measured, provenance: provenanceKind, ...callsOf(c) });
        left -= c.measured;
      } else open.push(c);
    }
    if (open.length === 0) continue;
    // Calls from unmeasured callers (counted) are not under any measured caller directly.
    const all = callersOf.get(g) ?? [];
    const allCounted = all.every((c) => c.calls !== undefined) && open.every((c) => !c.through);
    if (allCounted) {
      const sum = all.reduce((s, c) => s + (c.calls ?? 0), 0);
      const openCalls = open.reduce((s, c) => s + (c.calls ?? 0), 0);
      if (sum > 0 && openCalls < sum) left *= openCalls / sum;
    }
    if (open.length === 1 && callers.length === 1) {
      const c = open[0]!;
      add({ caller: c.caller, callee: g, value: left, provenance: provenanceKind, ...callsOf(c), ...throughOf(c) });
      continue;
    }
    shared.push({ g, callers: open });
    sharedTarget.set(g, left);
  }

  // Roots that do not fit beside the larger ones in the run's total ran inside one of them.
  const total = p.total?.value;
  roots.sort((a, b) => V(b) - V(a) || a - b);
  const placedRoots: number[] = [];
  let used = 0;
  for (const r of roots) {
    if (total === undefined || placedRoots.length === 0 || used + V(r) <= total * (1 + EPS) + 1) {
      placedRoots.push(r);
      used += V(r);
    } else {
      // Nothing calls it directly: where functions call through a pointer, it is most likely one
      // of their callees; else it ran somewhere inside the largest root.
      nested.push(fns[r]!.name);
      const pointers = [...callersCache.keys()].filter((c) => c !== r && fns[c]!.indirectCalls);
      const hosts = pointers.length > 0 ? pointers : [placedRoots[0]!];
      shared.push({ g: r, callers: hosts.map((caller) => ({ caller, through: true })) });
      sharedTarget.set(r, V(r));
    }
  }

  // Shared callees, larger first: water-filling by calls (equal shares without them) under caps.
  shared.sort((a, b) => V(b.g) - V(a.g) || a.g - b.g);
  for (const { g, callers } of shared) {
    const target = sharedTarget.get(g) ?? V(g);
    const counted = callers.every((c) => c.calls !== undefined && c.calls > 0);
    if (!counted && callers.length > 1) equalShares = true;
    const weight = callers.map((c) => (counted ? c.calls! : 1));
    const cap = callers.map((c) => Math.max(0, capacity[c.caller]!));
    const share = waterFill(target, weight, cap);
    const capSum = cap.reduce((s, c) => s + c, 0);
    const placed = share.reduce((s, v) => s + v, 0);
    if (placed < target * (1 - 1e-6) - 1) unplaced.add(fns[g]!.name);
    callers.forEach((c, i) => {
      const low = Math.max(0, Math.min(share[i]!, target - (capSum - cap[i]!)));
      const high = Math.min(cap[i]!, target);
      const determined = high - low <= Math.max(1e-6 * target, 1e-9) && !nested.includes(fns[g]!.name);
      if (!determined) estimated = true;
      if (share[i]! <= 0 && determined) return;
      add({
        caller: c.caller,
        callee: g,
        value: share[i]!,
        provenance: determined ? provenanceKind : 'estimated',
        ...(determined ? {} : { bound: { low, high: Math.max(high, share[i]!) } }),
        ...callsOf(c),
        ...throughOf(c),
      });
    });
  }

  // Callees in the order of the profile's edges (views keep a frame's place by it).
  const order = new Map<number, number>();
  p.edges.forEach((e, i) => {
    const key = e.caller * n + e.callee;
    if (!order.has(key)) order.set(key, i);
  });
  for (const list of callees.values())
    list.sort(
      (a, b) => (order.get(a.caller * n + a.callee) ?? Infinity) - (order.get(b.caller * n + b.callee) ?? Infinity),
    );
  const own = new Float64Array(n);
  const unattributed = new Float64Array(n);
  const ownEstimated = new Uint8Array(n);
  for (let id = 0; id < n; id++) {
    if (!valued(id)) continue;
    const kids = callees.get(id) ?? [];
    let allocated = 0;
    for (const k of kids) allocated += k.value;
    // Callees' shares beyond what the caller holds (runs that differ slightly) shrink to fit.
    const self = fns[id]!.self?.value;
    const room = Math.max(0, V(id) - (self ?? 0));
    if (allocated > room * (1 + EPS) && allocated > 0) {
      const f = room / allocated;
      for (const k of kids) k.value *= f;
      allocated = room;
      for (const k of kids) unplaced.add(fns[k.callee]!.name);
    }
    const rest = Math.max(0, V(id) - allocated);
    if (selfKnown(id)) {
      own[id] = self !== undefined ? Math.min(self, rest) : rest;
      if (self === undefined && kids.some((k) => k.provenance === 'estimated')) ownEstimated[id] = 1;
    }
    unattributed[id] = Math.max(0, rest - own[id]!);
  }
  const outside = total !== undefined ? Math.max(0, total - placedRoots.reduce((s, r) => s + V(r), 0)) : 0;
  return {
    callees,
    own,
    unattributed,
    ownEstimated,
    roots: placedRoots,
    outside,
    unplaced,
    nested,
    estimated: estimated || nested.length > 0,
    equalShares,
    cycleEntered,
  };
}

function throughOf(c: { through?: boolean }): { through?: boolean } {
  return c.through ? { through: true } : {};
}

function callsOf(c: { calls?: number }): { calls?: number } {
  return c.calls !== undefined ? { calls: c.calls } : {};
}

/**
 * Splits `target` in proportion to `weight`, none above its cap: a capped part's excess goes to the
 * others in proportion to theirs, until everything is placed or every part is full.
 */
export function waterFill(target: number, weight: readonly number[], cap: readonly number[]): number[] {
  const out = weight.map(() => 0);
  const open = new Set(weight.map((_, i) => i).filter((i) => cap[i]! > 0));
  let left = target;
  while (left > EPS * Math.max(1, target) && open.size > 0) {
    let w = 0;
    for (const i of open) w += weight[i]! > 0 ? weight[i]! : 0;
    const equal = w <= 0;
    if (equal) w = open.size;
    let full = false;
    const step = left;
    for (const i of [...open]) {
      const want = (step * (equal ? 1 : Math.max(0, weight[i]!))) / w;
      const room = cap[i]! - out[i]!;
      if (want >= room) {
        out[i] = cap[i]!;
        left -= room;
        open.delete(i);
        full = true;
      }
    }
    if (!full) {
      for (const i of open) out[i]! += (step * (equal ? 1 : Math.max(0, weight[i]!))) / w;
      left = 0;
    }
  }
  return out;
}

export function profileStacks(p: Profile, options: CallTreeOptions = {}): CallTree {
  if (p.stacks.length > 0) return { stacks: p.stacks, functions: p.functions, derived: false, estimated: false };
  const maxStacks = options.maxStacks ?? 1_000_000;
  const maxDepth = options.maxDepth ?? 256;
  const split = splitEdges(p);
  const fns = p.functions;
  const notMeasured = fns.length;
  let usedNotMeasured = false;
  const V = (id: number): number => fns[id]!.inclusive?.value ?? 0;

  const stacks: ProfileStack[] = [];
  const flags = { truncated: false, recursive: false };
  const path: number[] = [];
  const onPath = new Uint8Array(fns.length);
  const push = (frames: number[], value: number, low: number, high: number, estimate: boolean): void => {
    if (!(value > 0)) return;
    const s: ProfileStack = { frames, value };
    if (estimate) s.bound = { low: value * low, high: value * high };
    stacks.push(s);
  };
  // `low`/`high`: the ratios of the context's value its estimated edges allow (1 where exact).
  const visit = (id: number, value: number, low: number, high: number, estimate: boolean): void => {
    onPath[id] = 1;
    path.push(id);
    const scale = V(id) > 0 ? value / V(id) : 0;
    const kids = split.callees.get(id) ?? NO_EDGES;
    const expand = path.length < maxDepth && stacks.length < maxStacks;
    if (!expand && kids.length > 0) flags.truncated = true;
    let held = split.unattributed[id]! * scale;
    const ownEstimate = estimate || split.ownEstimated[id] === 1;
    if (expand) {
      for (const k of kids) {
        if (onPath[k.callee]) {
          flags.recursive = true;
          held += k.value * scale;
        }
      }
      push(path.slice(), split.own[id]! * scale, low, high, ownEstimate);
    } else push(path.slice(), value - held, low, high, ownEstimate);
    if (expand) {
      for (const k of kids) {
        if (onPath[k.callee] || !(k.value > 0)) continue;
        const e = k.provenance === 'estimated';
        const kl = e && k.bound ? k.bound.low / k.value : 1;
        const kh = e && k.bound ? k.bound.high / k.value : 1;
        visit(k.callee, k.value * scale, low * kl, high * kh, estimate || e);
      }
    }
    if (held > 0) {
      usedNotMeasured = true;
      push([...path, notMeasured], held, low, high, estimate);
    }
    path.pop();
    onPath[id] = 0;
  };
  for (const r of split.roots) visit(r, V(r), 1, 1, false);
  if (split.outside > 0) {
    usedNotMeasured = true;
    stacks.push({ frames: [notMeasured], value: split.outside });
  }
  const functions = usedNotMeasured ? [...fns, notMeasuredFunction(notMeasured)] : fns;
  return {
    stacks,
    functions,
    derived: true,
    estimated: split.estimated,
    note: derivationNote(p, split, { ...flags, maxStacks, maxDepth, usedNotMeasured }),
  };
}

const NO_EDGES: readonly SplitEdge[] = [];

function notMeasuredFunction(id: number): ProfileFunction {
  return {
    id,
    name: NOT_MEASURED,
    status: 'unmeasurable',
    reason:
      'time no measurement attributes to a function: in callees that were not measured or are ' +
      'called through a pointer, or outside every measured function',
  };
}

/** What a reader of derived stacks (or of a format drawn from them) must know about them. */
export function derivationNote(
  p: Profile,
  split: EdgeSplit,
  found: { recursive: boolean; truncated: boolean; maxStacks?: number; maxDepth?: number; usedNotMeasured: boolean },
): string {
  const parts = [
    'Call stacks derived from the measured values (the source recorded no stacks): each ' +
      "measured function's inclusive value is split over its callers.",
  ];
  let shared = false;
  let measured = false;
  for (const list of split.callees.values())
    for (const k of list) {
      if (k.provenance === 'estimated') shared = true;
      else if (p.edges.some((e) => e.caller === k.caller && e.callee === k.callee && measuredEdge(e))) measured = true;
    }
  if (measured) parts.push('Edges measured per caller keep their measured values.');
  if (shared)
    parts.push(
      'A callee shared by several callers is split ' +
        (split.equalShares
          ? 'in equal shares where call counts are unknown, by call counts elsewhere'
          : 'by call counts') +
        ", never beyond what a caller's measured value holds; such splits are estimates, and their stacks " +
        'carry the bound the measured values allow.',
    );
  if (found.usedNotMeasured)
    parts.push(
      `Time in callees that were not measured or are called through a pointer, and outside every ` +
        `measured function, is under "${NOT_MEASURED}", never in a caller's own value.`,
    );
  if (split.nested.length > 0)
    parts.push(
      `Functions nothing measured calls that do not fit in the run's total beside the larger ` +
        `roots ran inside them, and are placed (estimated) under the functions that call through a ` +
        `pointer, else under the largest root: ${list(split.nested)}.`,
    );
  if (split.unplaced.size > 0)
    parts.push(
      `Part of these functions' values ran from callers without a measured value or did not fit ` +
        `in their callers' (runs may differ slightly where interrupts land), and is not on their ` +
        `stacks: ${list([...split.unplaced])}.`,
    );
  const runOn = p.functions.filter((f) => f.runOnFrom && f.runOnFrom.length > 0);
  if (runOn.length > 0)
    parts.push(
      "Values leave out passes that run on into a function's code without a call; " +
        `they count under the function they run on from: ${runOn
          .slice(0, 5)
          .map((f) => `${f.name} (from ${f.runOnFrom!.join(', ')})`)
          .join(', ')}${runOn.length > 5 ? ` and ${runOn.length - 5} more` : ''}.`,
    );
  if (found.recursive || split.cycleEntered) parts.push('Recursive calls are cut at the first repeat.');
  if (found.truncated)
    parts.push(`Paths beyond ${found.maxStacks} stacks or ${found.maxDepth} frames are folded into their last frame.`);
  return parts.join(' ');
}

function list(names: readonly string[]): string {
  return `${names.slice(0, 5).join(', ')}${names.length > 5 ? ` and ${names.length - 5} more` : ''}`;
}

/** Per function of the tree: its value on top of the stacks (self) and on them (inclusive, each stack once). */
export function treeFigures(tree: CallTree): { self: Float64Array; inclusive: Float64Array } {
  const self = new Float64Array(tree.functions.length);
  const inclusive = new Float64Array(tree.functions.length);
  const seen = new Int32Array(tree.functions.length).fill(-1);
  tree.stacks.forEach((s, i) => {
    if (s.frames.length === 0) return;
    self[s.frames[s.frames.length - 1]!]! += s.value;
    for (const id of s.frames) {
      if (seen[id] === i) continue;
      seen[id] = i;
      inclusive[id]! += s.value;
    }
  });
  return { self, inclusive };
}

/**
 * The tree's caller → callee values (the callee's subtree under that caller, summed over the
 * caller's contexts), for formats that store a call's cost instead of stacks (callgrind), keyed by
 * caller × function count + callee.
 */
export function treeCalls(tree: CallTree): Map<number, number> {
  const n = tree.functions.length;
  const out = new Map<number, number>();
  const seen = new Int32Array(n).fill(-1);
  tree.stacks.forEach((s, index) => {
    // A recorded stack may hold a function twice (recursion): the path of first occurrences, so
    // that a function's own value plus its calls' is its value on the stacks, each stack once.
    let prev = -1;
    for (const id of s.frames) {
      if (seen[id] === index) continue;
      seen[id] = index;
      if (prev >= 0) {
        const key = prev * n + id;
        out.set(key, (out.get(key) ?? 0) + s.value);
      }
      prev = id;
    }
  });
  return out;
}

/** What each function adds up to in the tree (on its stacks). */
export function treeInclusive(p: Profile): Map<number, number> {
  const fig = treeFigures(profileStacks(p));
  const out = new Map<number, number>();
  for (const f of p.functions) if (f.inclusive) out.set(f.id, fig.inclusive[f.id]!);
  return out;
}

/** The profile's notes plus the call tree's, for formats that carry free text. */
export function notesWith(p: Profile, tree: CallTree): string[] {
  return [...(p.notes ?? []), ...(tree.note ? [tree.note] : [])];
}

/** The split's edges written into the profile: each edge with its value per caller and its provenance. */
export function withEdgeValues(p: Profile): Profile {
  if (p.stacks.length > 0 || !p.functions.some((f) => f.inclusive)) return p;
  const split = splitEdges(p);
  const done = new Set<SplitEdge>();
  const bound = (k: SplitEdge): Profile['edges'][number]['inclusive'] => ({
    value: k.value,
    ...(k.bound ? { bound: { low: k.bound.low, high: k.bound.high, kind: 'estimate' as const } } : {}),
  });
  for (const e of p.edges) {
    if (measuredEdge(e)) continue;
    const k = split.callees.get(e.caller)?.find((x) => x.callee === e.callee && !x.through);
    // One value per caller → callee pair, on its first edge (a call and a tail call share it).
    if (!k || done.has(k)) continue;
    done.add(k);
    e.inclusive = bound(k);
    e.provenance = k.provenance;
  }
  return p;
}
