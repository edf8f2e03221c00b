import type { FunctionStatus, Profile } from '../../core/profile/model';
import { formatBound, formatNumber, formatShare, unitShort } from '../../core/profile/units';

/**
 * The call graph as the panel draws it: pure functions from a profile to nodes with their text,
 * the subgraph on screen (a neighbourhood, nodes below a share collapsed per caller), the DOT text
 * that Graphviz lays out, and the parsing of Graphviz's `plain` output. No DOM: the unit tier runs
 * these under Node.
 */

export interface GraphNode {
  id: number;
  name: string;
  status: FunctionStatus;
  /** Inclusive share of the window (0..1), when measured. */
  share?: number;
  /** What collapse and heat go by: the inclusive share, else the pruning bound, else 0. */
  weight: number;
  /** Self share (0..1): the heat colour. */
  heat: number;
  hot: boolean;
  /** Text lines under the name, as the node shows them (never markup). */
  lines: string[];
}

export interface GraphEdge {
  from: string;
  to: string;
  calls?: number;
}

export interface CallGraphModel {
  nodes: GraphNode[];
  edges: { caller: number; callee: number; calls?: number }[];
  callees: number[][];
  callers: number[][];
}

/** A function's share at or above which it is "hot": the descent's threshold, else 5 %. */
export function hotThreshold(p: Profile): number {
  return p.analysis?.threshold ?? 0.05;
}

export function callGraphModel(p: Profile): CallGraphModel {
  const total = p.total?.value;
  const unit = unitShort(p.unit);
  const threshold = hotThreshold(p);
  const nodes = p.functions.map((f): GraphNode => {
    const share = f.inclusive && total ? f.inclusive.value / total : undefined;
    const selfShare = f.self && total ? f.self.value / total : 0;
    const lines: string[] = [];
    if (f.inclusive)
      lines.push(
        `incl ${share !== undefined ? `${formatShare(share)} · ` : ''}${formatNumber(f.inclusive.value)} ` +
          `${unit}${boundText(f.inclusive, p)}`,
      );
    if (f.self)
      lines.push(
        `self ${total ? `${formatShare(selfShare)} · ` : ''}` +
          `${formatNumber(f.self.value)} ${unit}${boundText(f.self, p)}`,
      );
    if (f.calls !== undefined) lines.push(`${formatNumber(f.calls)} calls`);
    const hot = f.status !== 'pruned' && share !== undefined && share >= threshold;
    lines.push(statusText(f.status, f.boundShare, f.reason, hot));
    return {
      id: f.id,
      name: f.name,
      status: f.status,
      ...(share !== undefined ? { share } : {}),
      weight: share ?? f.boundShare ?? 0,
      heat: selfShare,
      hot,
      lines,
    };
  });
  const callees: number[][] = nodes.map(() => []);
  const callers: number[][] = nodes.map(() => []);
  const edges = p.edges
    .filter((e) => nodes[e.caller] && nodes[e.callee])
    .map((e) => ({ caller: e.caller, callee: e.callee, ...(e.calls !== undefined ? { calls: e.calls } : {}) }));
  for (const e of edges) {
    callees[e.caller]!.push(e.callee);
    callers[e.callee]!.push(e.caller);
  }
  return { nodes, edges, callees, callers };
}

function boundText(m: { value: number; bound?: { low: number; high: number } }, p: Profile): string {
  const b = formatBound(m as Parameters<typeof formatBound>[0], p.unit);
  return b ? ` ${b}` : '';
}

/** The descent's verdict on a function, in words. */
export function statusText(
  status: FunctionStatus,
  boundShare: number | undefined,
  reason: string | undefined,
  hot: boolean,
): string {
  switch (status) {
    case 'measured':
      return hot ? 'measured · hot' : 'measured';
    case 'pruned':
      return `pruned: callers bound it ≤ ${formatShare(boundShare ?? 0)}`;
    case 'unmeasurable':
      return `not measurable: ${reason ?? 'no reason given'}`;
    case 'pending':
      return 'pending (descent stopped first)';
    case 'unreached':
      return 'not reached';
    case 'sampled':
      return hot ? 'sampled · hot' : 'sampled';
  }
}

/** Functions within `depth` calls of `centre`, either way along the edges (centre included). */
export function neighbourhood(model: CallGraphModel, centre: number, depth: number): Set<number> {
  const seen = new Set<number>([centre]);
  let frontier = [centre];
  for (let d = 0; d < depth && frontier.length > 0; d++) {
    const next: number[] = [];
    for (const id of frontier) {
      for (const n of [...(model.callees[id] ?? []), ...(model.callers[id] ?? [])]) {
        if (!seen.has(n)) {
          seen.add(n);
          next.push(n);
        }
      }
    }
    frontier = next;
  }
  return seen;
}

/** A placeholder standing for the callees of one caller that were collapsed. */
export interface CollapsedGroup {
  key: string;
  caller: number;
  members: number[];
  /** Largest member weight: "k functions, each < threshold". */
  maxWeight: number;
}

export interface VisibleGraph {
  nodes: GraphNode[];
  groups: CollapsedGroup[];
  edges: GraphEdge[];
}

export interface VisibleOptions {
  /** Show only this function's neighbourhood ... */
  focus?: number;
  /** ... to this many calls away (0 or no focus: the whole graph). */
  depth: number;
  /** Collapse functions whose weight is below this share (0: none). */
  collapseBelow: number;
  /** Never collapsed (the selected function). */
  keep?: number;
}

export const nodeKey = (id: number): string => `n${id}`;

/**
 * The part of the graph on screen. Functions below `collapseBelow` disappear; each visible caller
 * of some of them gets one group node standing for those callees, so the graph says something is
 * there without drawing it.
 */
export function visibleGraph(model: CallGraphModel, options: VisibleOptions): VisibleGraph {
  const inScope =
    options.focus !== undefined && options.depth > 0 ? neighbourhood(model, options.focus, options.depth) : undefined;
  const shown = (id: number): boolean =>
    (inScope === undefined || inScope.has(id)) &&
    (id === options.keep || id === options.focus || model.nodes[id]!.weight >= options.collapseBelow);
  const nodes = model.nodes.filter((n) => shown(n.id));
  const edges: GraphEdge[] = [];
  const groups = new Map<number, CollapsedGroup>();
  for (const e of model.edges) {
    if (!shown(e.caller)) continue;
    if (shown(e.callee)) {
      edges.push({
        from: nodeKey(e.caller),
        to: nodeKey(e.callee),
        ...(e.calls !== undefined ? { calls: e.calls } : {}),
      });
    } else if (inScope === undefined || inScope.has(e.callee)) {
      let g = groups.get(e.caller);
      if (!g) groups.set(e.caller, (g = { key: `c${e.caller}`, caller: e.caller, members: [], maxWeight: 0 }));
      if (!g.members.includes(e.callee)) g.members.push(e.callee);
      g.maxWeight = Math.max(g.maxWeight, model.nodes[e.callee]!.weight);
    }
  }
  for (const g of groups.values()) edges.push({ from: nodeKey(g.caller), to: g.key });
  return { nodes, groups: [...groups.values()], edges };
}

/** Box sizes in CSS pixels, estimated from the text (Graphviz only sees the boxes, never the names). */
export const CHAR_WIDTH = 7;
export const LINE_HEIGHT = 14;
const PADDING = 8;

/** Nodes above which the layout trades a few edge crossings for speed. */
export const LARGE_GRAPH = 300;

/**
 * The most characters a line of a box shows: longer names and reasons (an interrupt handler's
 * "not measurable: …" sentence) end in "…", and the box's tooltip has them whole. One long line
 * used to widen its box, its rank and so the whole layout, and Fit then shrank every name.
 */
export const MAX_LINE_CHARS = 40;

/** `line` cut to `max` characters, the last of them an ellipsis. */
export function elide(line: string, max = MAX_LINE_CHARS): string {
  const chars = [...line];
  return chars.length <= max ? line : `${chars.slice(0, max - 1).join('')}…`;
}

/** The lines a box shows: each elided. */
export function boxLines(lines: readonly string[]): string[] {
  return lines.map((l) => elide(l));
}

export function nodeSize(lines: readonly string[]): { width: number; height: number } {
  const longest = Math.max(...boxLines(lines).map((l) => [...l].length));
  return { width: longest * CHAR_WIDTH + 2 * PADDING, height: lines.length * LINE_HEIGHT + PADDING };
}

export function groupLines(g: CollapsedGroup, collapseBelow: number): string[] {
  return [`${g.members.length} function${g.members.length === 1 ? '' : 's'}`, `each < ${formatShare(collapseBelow)}`];
}

/**
 * DOT for Graphviz to lay out. Nodes are named by id (`n12`, group `c12`) and carry only their size:
 * function names never enter the DOT text, so no name can break its syntax or reach the renderer
 * through it.
 */
export function layoutDot(graph: VisibleGraph, collapseBelow: number): string {
  // On large graphs dot spends most of its time in crossing minimisation and network simplex;
  // capping their iterations (mclimit, nslimit) made a 2,000-node tree lay out 6.7× faster here,
  // with a few more crossings, and straight edges (splines=line) instead of routed splines took a
  // further third off (3.2 s against 4.8 s on the loaded machine). Small graphs keep dot's full effort.
  const limits =
    graph.nodes.length + graph.groups.length > LARGE_GRAPH ? 'mclimit=0.1, nslimit=1, nslimit1=1, splines=line, ' : '';
  const out = [
    'digraph G {',
    `  graph [${limits}rankdir=TB, nodesep=0.25, ranksep=0.45];`,
    '  node [shape=box, fixedsize=true, label=""];',
  ];
  const inches = (px: number): string => (px / 72).toFixed(3);
  for (const n of graph.nodes) {
    const s = nodeSize([n.name, ...n.lines]);
    out.push(`  ${nodeKey(n.id)} [width=${inches(s.width)}, height=${inches(s.height)}];`);
  }
  for (const g of graph.groups) {
    const s = nodeSize(groupLines(g, collapseBelow));
    out.push(`  ${g.key} [width=${inches(s.width)}, height=${inches(s.height)}];`);
  }
  for (const e of graph.edges) out.push(`  ${e.from} -> ${e.to};`);
  out.push('}');
  return out.join('\n');
}

export interface PlacedNode {
  key: string;
  /** Centre, in pixels with y growing downwards. */
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface PlacedEdge {
  from: string;
  to: string;
  /** Cubic B-spline control points, in pixels (Graphviz's spline, y flipped). */
  points: Array<[number, number]>;
}

export interface GraphLayout {
  width: number;
  height: number;
  nodes: Map<string, PlacedNode>;
  edges: PlacedEdge[];
}

/**
 * Reads Graphviz's `plain` output (graphviz.org/docs/outputs/plain): `graph scale w h`,
 * `node name x y w h …`, `edge tail head n x1 y1 … xn yn …`, `stop`; inches with y upwards.
 * Our names are bare identifiers, so splitting on spaces is exact.
 */
export function parsePlainLayout(text: string): GraphLayout {
  let width = 0;
  let height = 0;
  const nodes = new Map<string, PlacedNode>();
  const edges: PlacedEdge[] = [];
  const px = (inches: string): number => Number(inches) * 72;
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f[0] === 'graph') {
      width = px(f[2]!);
      height = px(f[3]!);
    } else if (f[0] === 'node') {
      nodes.set(f[1]!, { key: f[1]!, x: px(f[2]!), y: height - px(f[3]!), width: px(f[4]!), height: px(f[5]!) });
    } else if (f[0] === 'edge') {
      const n = Number(f[3]);
      const points: Array<[number, number]> = [];
      for (let i = 0; i < n; i++) points.push([px(f[4 + 2 * i]!), height - px(f[5 + 2 * i]!)]);
      edges.push({ from: f[1]!, to: f[2]!, points });
    }
  }
  return { width, height, nodes, edges };
}

/** An SVG path through Graphviz's B-spline control points (first point, then cubic triples). */
export function splinePath(points: ReadonlyArray<[number, number]>): string {
  if (points.length === 0) return '';
  const [first, ...rest] = points;
  let d = `M${first![0].toFixed(1)},${first![1].toFixed(1)}`;
  for (let i = 0; i + 3 <= rest.length; i += 3) {
    d += `C${rest
      .slice(i, i + 3)
      .map((p) => `${p[0].toFixed(1)},${p[1].toFixed(1)}`)
      .join(' ')}`;
  }
  return d;
}

/** Case-insensitive substring match on names; an empty query matches nothing. */
export function searchMatches(model: CallGraphModel, query: string): Set<number> {
  const q = query.trim().toLowerCase();
  if (!q) return new Set();
  return new Set(model.nodes.filter((n) => n.name.toLowerCase().includes(q)).map((n) => n.id));
}

/** The part of the layout on screen: zoom transform `t` (d3's x, y, k) over a `width` × `height` view. */
export interface Region {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

export function visibleRegion(
  t: { x: number; y: number; k: number },
  width: number,
  height: number,
  margin = 0,
): Region {
  return {
    x0: (-t.x - margin) / t.k,
    y0: (-t.y - margin) / t.k,
    x1: (width - t.x + margin) / t.k,
    y1: (height - t.y + margin) / t.k,
  };
}

/** Whether a placed box (centre and size) overlaps `r`. */
export function boxInRegion(at: { x: number; y: number; width: number; height: number }, r: Region): boolean {
  return (
    at.x + at.width / 2 >= r.x0 &&
    at.x - at.width / 2 <= r.x1 &&
    at.y + at.height / 2 >= r.y0 &&
    at.y - at.height / 2 <= r.y1
  );
}
