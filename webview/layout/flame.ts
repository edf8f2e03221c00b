import { profileStacks } from '../../core/profile/callTree';
import type { Profile } from '../../core/profile/model';

/**
 * The flame graph (icicle: root on top) as pure data: a call tree from the profile, laid out by a
 * d3-hierarchy partition into rectangles, and the rectangles a zoom shows. No DOM.
 */

export interface CallTreeNode {
  /** Function id; -1 for the synthetic root, -2 for the `[not measured]` frame. */
  fn: number;
  name: string;
  /** Cost of the node's own frame (what the partition sums). */
  self: number;
  children: CallTreeNode[];
}

/** Expanding a call graph into a tree can grow without end on wide DAGs; past this, stop expanding. */
export const MAX_TREE_NODES = 200_000;

/**
 * The flame graph's call tree: the one every view and export reads (core/profile/callTree.ts), from
 * the profile's stacks when it has them (the counting plugin, the oracle, sampling), else derived from
 * the measured values only. Stacks past MAX_TREE_NODES nodes fold into their last frame.
 */
export function callTreeOf(p: Profile): CallTreeNode {
  const root: CallTreeNode = { fn: -1, name: 'all', self: 0, children: [] };
  const tree = profileStacks(p, { maxStacks: MAX_TREE_NODES });
  // Each node's children by function, so a stack costs its depth, not depth × siblings.
  const childIndex = new Map<CallTreeNode, Map<number, CallTreeNode>>();
  for (const s of tree.stacks) {
    let node = root;
    for (const fn of s.frames) {
      let byFn = childIndex.get(node);
      if (!byFn) childIndex.set(node, (byFn = new Map()));
      let child = byFn.get(fn);
      if (!child) {
        // The `[not measured]` frame is no function of the profile: nothing to select (-2).
        const id = fn < p.functions.length ? fn : -2;
        node.children.push((child = { fn: id, name: tree.functions[fn]?.name ?? `#${fn}`, self: 0, children: [] }));
        byFn.set(fn, child);
      }
      node = child;
    }
    node.self += s.value;
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

/**
 * Rectangles in pre-order (a parent before its children): the icicle partition of d3-hierarchy
 * (`hierarchy(tree).sum(self)` then `partition().size([1, 1])`), computed in two flat passes. d3's
 * version builds a node object per frame and walks the tree four times; on 20,000 frames that was
 * most of the flame graph's first paint. The unit tier checks both give the same rectangles.
 */
export function flameRects(tree: CallTreeNode): FlameRect[] {
  const rects: FlameRect[] = [];
  const nodes: CallTreeNode[] = [];
  // Pre-order with an explicit stack (deep call chains must not overflow the JS stack).
  const stack: Array<{ node: CallTreeNode; depth: number; parent: number }> = [{ node: tree, depth: 0, parent: -1 }];
  while (stack.length > 0) {
    const { node, depth, parent } = stack.pop()!;
    const index = rects.length;
    rects.push({ fn: node.fn, name: node.name, value: 0, self: node.self, depth, x0: 0, x1: 0, parent });
    nodes.push(node);
    for (let c = node.children.length - 1; c >= 0; c--)
      stack.push({ node: node.children[c]!, depth: depth + 1, parent: index });
  }
  // Values: each frame's own cost plus its descendants' (children come after their parent).
  for (let i = rects.length - 1; i >= 0; i--) {
    const r = rects[i]!;
    r.value += r.self;
    if (r.parent >= 0) rects[r.parent]!.value += r.value;
  }
  // Extents: children side by side inside their parent, in order, widths by value (d3's treemapDice).
  const next = new Float64Array(rects.length);
  const root = rects[0]!;
  root.x0 = 0;
  root.x1 = 1;
  next[0] = 0;
  for (let i = 1; i < rects.length; i++) {
    const r = rects[i]!;
    const p = rects[r.parent]!;
    const k = p.value > 0 ? (p.x1 - p.x0) / p.value : 0;
    r.x0 = next[r.parent]! + p.x0;
    r.x1 = r.x0 + r.value * k;
    next[r.parent]! += r.value * k;
    next[i] = 0;
  }
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

/**
 * The functions from the root's child down to rect `index` (a frame's identity across profiles: ids of
 * rects are not).
 */
export function rectPath(rects: readonly FlameRect[], index: number): number[] {
  const path: number[] = [];
  for (let i = index; i > 0 && rects[i]; i = rects[i]!.parent) path.push(rects[i]!.fn);
  return path.reverse();
}

/**
 * The rect at `path` in a newer layout of the same program (a live update), or the deepest one of
 * its ancestors the newer profile still has: a zoom stays where it was while the counts change.
 */
export function rectByPath(rects: readonly FlameRect[], path: readonly number[]): number {
  let at = 0;
  for (const fn of path) {
    let found = -1;
    // Children come after their parent, in pre-order: scan until the parent's subtree ends.
    for (let i = at + 1; i < rects.length && rects[i]!.depth > rects[at]!.depth; i++) {
      if (rects[i]!.parent === at && rects[i]!.fn === fn) {
        found = i;
        break;
      }
    }
    if (found < 0) break;
    at = found;
  }
  return at;
}
