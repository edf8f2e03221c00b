import { hierarchy, partition } from 'd3-hierarchy';
import type { Profile } from '../../core/profile/model';

/**
 * The flame graph (icicle: root on top) as pure data: a call tree from the profile, laid out by a
 * d3-hierarchy partition into rectangles, and the rectangles a zoom shows. No DOM.
 */

export interface CallTreeNode {
  /** Function id; -1 for the synthetic root. */
  fn: number;
  name: string;
  /** Cost of the node's own frame (what the partition sums). */
  self: number;
  children: CallTreeNode[];
}

/** Expanding a call graph into a tree can grow without end on wide DAGs; past this, stop expanding. */
export const MAX_TREE_NODES = 200_000;

/**
 * A call tree: from the profile's stacks when it has them (sampling, the oracle), else from the
 * call edges and inclusive values (injected descent): a callee's inclusive value is split between
 * its callers by their call counts (evenly without counts), never more than the caller holds.
 */
export function callTreeOf(p: Profile): CallTreeNode {
  const root: CallTreeNode = { fn: -1, name: 'all', self: 0, children: [] };
  if (p.stacks.length > 0) {
    for (const s of p.stacks) {
      let node = root;
      for (const fn of s.frames) {
        let child = node.children.find((c) => c.fn === fn);
        if (!child) node.children.push((child = { fn, name: p.functions[fn]?.name ?? `#${fn}`, self: 0, children: [] }));
        node = child;
      }
      node.self += s.value;
    }
    return root;
  }
  const callees = new Map<number, { callee: number; calls?: number }[]>();
  const incoming = new Map<number, { count: number; calls: number; allCounted: boolean }>();
  for (const e of p.edges) {
    if (!callees.has(e.caller)) callees.set(e.caller, []);
    callees.get(e.caller)!.push({ callee: e.callee, ...(e.calls !== undefined ? { calls: e.calls } : {}) });
    const inc = incoming.get(e.callee) ?? { count: 0, calls: 0, allCounted: true };
    inc.count++;
    inc.calls += e.calls ?? 0;
    inc.allCounted &&= e.calls !== undefined;
    incoming.set(e.callee, inc);
  }
  const inclusive = (fn: number): number => p.functions[fn]?.inclusive?.value ?? 0;
  let made = 0;
  const expand = (fn: number, value: number, path: Set<number>): CallTreeNode => {
    made++;
    const node: CallTreeNode = { fn, name: p.functions[fn]!.name, self: 0, children: [] };
    const parts: Array<{ callee: number; value: number }> = [];
    for (const e of callees.get(fn) ?? []) {
      if (path.has(e.callee)) continue; // recursion folds into the outer frame
      const inc = incoming.get(e.callee)!;
      const portion = inc.allCounted && inc.calls > 0 ? (e.calls ?? 0) / inc.calls : 1 / inc.count;
      const v = inclusive(e.callee) * portion;
      if (v > 0) parts.push({ callee: e.callee, value: v });
    }
    const sum = parts.reduce((a, b) => a + b.value, 0);
    // Callees cannot hold more than their caller: scale them down (counter noise, shares of other runs).
    const scale = sum > value && sum > 0 ? value / sum : 1;
    for (const part of parts) {
      if (made >= MAX_TREE_NODES) break;
      path.add(part.callee);
      node.children.push(expand(part.callee, part.value * scale, path));
      path.delete(part.callee);
    }
    node.self = Math.max(0, value - sum * scale);
    return node;
  };
  const called = new Set(p.edges.map((e) => e.callee));
  for (const f of p.functions) {
    if (called.has(f.id) || !f.inclusive) continue;
    root.children.push(expand(f.id, f.inclusive.value, new Set([f.id])));
  }
  return root;
}

export interface FlameRect {
  fn: number;
  name: string;
  /** Inclusive value of this frame. */
  value: number;
  /** The frame's own part of it. */
  self: number;
  depth: number;
  /** Horizontal extent, 0..1 of the root. */
  x0: number;
  x1: number;
  /** Index of the parent rect (-1 for the root). */
  parent: number;
}

/** Rectangles in pre-order (a parent before its children), laid out by a d3-hierarchy partition. */
export function flameRects(tree: CallTreeNode): FlameRect[] {
  const root = hierarchy(tree, (d) => d.children).sum((d) => d.self);
  partition<CallTreeNode>().size([1, 1])(root);
  const rects: FlameRect[] = [];
  const index = new Map<unknown, number>();
  root.each((n) => {
    const laid = n as typeof n & { x0: number; x1: number };
    index.set(n, rects.length);
    rects.push({ fn: n.data.fn, name: n.data.name, value: n.value ?? 0, self: n.data.self, depth: n.depth, x0: laid.x0, x1: laid.x1, parent: n.parent ? index.get(n.parent)! : -1 });
  });
  return rects;
}

export interface DrawnRect {
  index: number;
  x: number;
  width: number;
  row: number;
}

/**
 * What a zoom on `focus` shows at `width` pixels: the focus spans the width, its ancestors stay
 * above it at full width, and rects narrower than `minWidth` pixels are left out (drawing 20,000
 * sub-pixel boxes costs frames and shows nothing).
 */
export function zoomedRects(rects: readonly FlameRect[], focus: number, width: number, minWidth = 0.5): DrawnRect[] {
  const f = rects[focus]!;
  const span = f.x1 - f.x0 || 1;
  const ancestors = new Set<number>();
  for (let a = f.parent; a >= 0; a = rects[a]!.parent) ancestors.add(a);
  const out: DrawnRect[] = [];
  const eps = 1e-12;
  for (let i = 0; i < rects.length; i++) {
    const r = rects[i]!;
    if (ancestors.has(i)) {
      out.push({ index: i, x: 0, width, row: r.depth });
      continue;
    }
    if (r.depth < f.depth || r.x1 <= f.x0 + eps || r.x0 >= f.x1 - eps) continue;
    const x = ((Math.max(r.x0, f.x0) - f.x0) / span) * width;
    const w = ((Math.min(r.x1, f.x1) - Math.max(r.x0, f.x0)) / span) * width;
    if (w < minWidth) continue;
    out.push({ index: i, x, width: w, row: r.depth });
  }
  return out;
}

/** The rect under a point, among the drawn ones. */
export function rectAt(drawn: readonly DrawnRect[], x: number, row: number): DrawnRect | undefined {
  return drawn.find((d) => d.row === row && x >= d.x && x < d.x + d.width);
}
