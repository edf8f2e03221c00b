import { select, type Selection } from 'd3-selection';
import { zoom, zoomIdentity, type ZoomBehavior, type ZoomTransform } from 'd3-zoom';
import type { Profile } from '../../core/profile/model';
import { formatNumber } from '../../core/profile/units';
import { el, labelled, svgEl } from '../dom';
import {
  boxInRegion,
  boxLines,
  callGraphModel,
  groupLines,
  LARGE_GRAPH,
  layoutDot,
  LINE_HEIGHT,
  nodeKey,
  parsePlainLayout,
  searchMatches,
  splinePath,
  visibleGraph,
  visibleRegion,
  type CallGraphModel,
  type GraphLayout,
  type PlacedNode,
  type VisibleGraph,
} from '../layout/callGraph';
import { fitAll, fitLegible, wheelZoomExponent, ZOOM_EXTENT, type ViewTransform } from '../layout/graphView';
import { heatLevel } from '../layout/source';
import type { LayoutRequest, LayoutResponse } from '../layout/workerMessages';
import type { PanelContext, PanelView } from '../panelContext';

/**
 * The annotated call graph: Graphviz `dot` (wasm, in a worker) places the boxes, d3 draws them as
 * SVG with zoom and pan. Search highlights, a depth limits the graph to the selected function's
 * neighbourhood, and functions below a share collapse into one box per caller.
 */
export class CallGraphView implements PanelView {
  readonly element = el('section', {
    class: 'view graph-view',
    role: 'tabpanel',
    id: 'panel-graph',
    'aria-labelledby': 'tab-graph',
  });
  private readonly search = el('input', {
    type: 'search',
    placeholder: 'find a function …',
    'aria-label': 'Find a function',
  });
  private readonly depth = el('select', { 'aria-label': 'Neighbourhood depth' });
  private readonly collapse = el('input', {
    type: 'number',
    min: '0',
    max: '100',
    step: '0.5',
    'aria-label': 'Collapse below share (%)',
  });
  private readonly status = el('p', { class: 'note', 'aria-live': 'polite' });
  private readonly svg = svgEl('svg', { class: 'graph', role: 'group', 'aria-label': 'Call graph' });
  private readonly layer = svgEl('g');
  private readonly zoomer: ZoomBehavior<SVGSVGElement, unknown>;
  private readonly svgSelection: Selection<SVGSVGElement, unknown, null, undefined>;
  private model: CallGraphModel | undefined;
  private layout: GraphLayout | undefined;
  private nodeElements = new Map<number, SVGGElement>();
  private selected: number | undefined;
  private transform: ZoomTransform = zoomIdentity;
  private request = 0;
  private readonly waiting = new Map<number, (r: LayoutResponse) => void>();
  /** Resolves when the latest layout has been drawn (the bench and tests wait on it). */
  drawn: Promise<void> = Promise.resolve();

  constructor(
    private readonly ctx: PanelContext,
    private readonly worker: Worker,
  ) {
    for (const [value, text] of [
      ['0', 'whole graph'],
      ['1', '1 call away'],
      ['2', '2 calls away'],
      ['3', '3 calls away'],
      ['5', '5 calls away'],
    ] as const) {
      this.depth.append(el('option', { value }, text));
    }
    this.depth.value = String(ctx.state.depth);
    this.collapse.value = String(ctx.state.collapseBelow * 100);
    this.search.value = ctx.state.search;
    const fit = el(
      'button',
      { type: 'button', title: 'The hottest functions, at a size their names can be read' },
      'Fit',
    );
    fit.addEventListener('click', () => this.fit());
    const whole = el('button', { type: 'button', title: 'The whole graph, however small' }, 'Whole graph');
    whole.addEventListener('click', () => this.fit(true));
    const bar = el('div', { class: 'toolbar' });
    bar.append(
      labelled('Find ', this.search),
      labelled('Show ', this.depth),
      labelled('Collapse below % ', this.collapse),
      fit,
      whole,
    );
    this.svg.append(this.layer);
    const box = el('div', { class: 'graph-box' });
    box.append(this.svg);
    this.element.append(bar, this.status, box);
    this.svgSelection = select(this.svg);
    this.zoomer = zoom<SVGSVGElement, unknown>()
      .scaleExtent(ZOOM_EXTENT)
      // Even steps: d3's default turns a wheel event's pixels into zoom, and a notch's pixels vary.
      .wheelDelta((e: WheelEvent) => wheelZoomExponent(e))
      .on('zoom', (e: { transform: ZoomTransform }) => {
        this.transform = e.transform;
        this.layer.setAttribute('transform', e.transform.toString());
        if (this.textOnDemand && this.textFrame === 0)
          this.textFrame = requestAnimationFrame(() => this.addVisibleText());
      });
    // One listener for every node (2,000 nodes were 4,000 listeners to make and drop per draw).
    this.layer.addEventListener('click', (e) => {
      const fn = nodeOf(e.target);
      if (fn !== undefined) this.ctx.select(fn, true);
    });
    this.layer.addEventListener('keydown', (e) => {
      const fn = nodeOf(e.target);
      if (fn !== undefined && (e.key === 'Enter' || e.key === ' ')) {
        this.ctx.select(fn, true);
        e.preventDefault();
      }
    });
    this.svgSelection.call(this.zoomer);
    this.search.addEventListener('input', () => {
      this.ctx.state.search = this.search.value;
      this.ctx.saveState();
      this.highlight();
    });
    this.search.addEventListener('keydown', (e) => {
      if (e.key !== 'Enter' || !this.model) return;
      const first = [...searchMatches(this.model, this.search.value)][0];
      if (first !== undefined) this.ctx.select(first, false);
    });
    this.depth.addEventListener('change', () => {
      this.ctx.state.depth = Number(this.depth.value);
      this.ctx.saveState();
      this.relayout();
    });
    this.collapse.addEventListener('change', () => {
      this.ctx.state.collapseBelow = Math.max(0, Math.min(100, Number(this.collapse.value) || 0)) / 100;
      this.ctx.saveState();
      this.relayout();
    });
    worker.addEventListener('message', (e: MessageEvent<LayoutResponse>) => {
      this.waiting.get(e.data.id)?.(e.data);
      this.waiting.delete(e.data.id);
    });
  }

  setProfile(p: Profile, update: boolean): void {
    this.model = callGraphModel(p);
    // A live update keeps the user's zoom and pan; a new profile is fitted to the view.
    this.keepZoom = update && this.layout !== undefined;
    this.relayout();
  }

  private keepZoom = false;

  selectionChanged(fn: number | undefined): void {
    // A live update gives the same function a new id: that is no reason to pan to it again.
    const name = fn !== undefined ? this.model?.nodes[fn]?.name : undefined;
    const moved = name !== this.selectedName;
    const renumbered = fn !== this.selected;
    this.selected = fn;
    this.selectedName = name;
    if (this.ctx.state.depth > 0) {
      if (moved || renumbered) this.relayout();
    } else this.highlight();
    if (fn !== undefined && moved) this.reveal(fn);
  }

  private selectedName: string | undefined;

  shown(): void {
    if (this.layout && this.svg.clientWidth > 0 && !this.fitted) this.fit();
  }

  private fitted = false;

  /** Lays out what is visible in the worker, then draws; a newer request supersedes older ones. */
  relayout(): void {
    const model = this.model;
    if (!model) return;
    const visible = visibleGraph(model, {
      ...(this.selected !== undefined ? { focus: this.selected, keep: this.selected } : {}),
      depth: this.selected !== undefined ? this.ctx.state.depth : 0,
      collapseBelow: this.ctx.state.collapseBelow,
    });
    const id = ++this.request;
    this.status.textContent = `Laying out ${formatNumber(visible.nodes.length)} functions …`;
    const message: LayoutRequest = { id, dot: layoutDot(visible, this.ctx.state.collapseBelow) };
    this.drawn = new Promise<void>((resolve) => {
      this.waiting.set(id, (response) => {
        if (id === this.request) {
          if ('error' in response) {
            this.status.textContent = response.error;
            this.ctx.post({ type: 'problem', message: response.error });
          } else this.draw(model, visible, parsePlainLayout(response.plain));
        }
        resolve();
      });
    });
    this.worker.postMessage(message);
  }

  private draw(model: CallGraphModel, visible: VisibleGraph, layout: GraphLayout): void {
    this.layout = layout;
    const placedEdges = new Map(layout.edges.map((e) => [`${e.from}>${e.to}`, e]));
    const edges = svgEl('g', { class: 'edges' });
    for (const e of layout.edges)
      edges.append(svgEl('path', { d: splinePath(e.points), class: 'edge', 'marker-end': 'url(#arrow)' }));
    const nodes = svgEl('g', { class: 'nodes' });
    this.nodeElements = new Map();
    this.hottest = [];
    this.pendingText = [];
    this.edgeLabels = edges;
    for (const e of visible.edges) {
      const placed = placedEdges.get(`${e.from}>${e.to}`);
      if (!placed || e.calls === undefined) continue;
      const mid = placed.points[Math.floor(placed.points.length / 2)]!;
      this.pendingText.push({
        at: { x: mid[0], y: mid[1], width: 0, height: 0 },
        lines: [`${formatNumber(e.calls)}×`],
      });
    }
    for (const n of visible.nodes) {
      const at = layout.nodes.get(nodeKey(n.id));
      if (!at) continue;
      const classes = ['node', `status-${n.status}`, `heat-${heatLevel(Math.min(1, n.heat * 4))}`];
      if (n.hot) classes.push('hot');
      const g = svgEl('g', {
        class: classes.join(' '),
        transform: boxCorner(at),
        tabindex: '0',
        role: 'button',
        'aria-label': [n.name, ...n.lines].join(', '),
        'data-fn': String(n.id),
      });
      // The tooltip has every line whole; the box shows them elided (boxLines).
      g.append(
        svgEl('title', {}, [n.name, ...n.lines].join('\n')),
        svgEl('rect', { width: at.width.toFixed(1), height: at.height.toFixed(1), rx: '3' }),
      );
      nodes.append(g);
      this.nodeElements.set(n.id, g);
      this.hottest.push({ at, weight: n.weight });
      this.pendingText.push({ at, g, lines: [n.name, ...n.lines], status: true });
    }
    for (const group of visible.groups) {
      const at = layout.nodes.get(group.key);
      if (!at) continue;
      const g = svgEl('g', { class: 'node collapsed', transform: boxCorner(at) });
      g.append(svgEl('rect', { width: at.width.toFixed(1), height: at.height.toFixed(1), rx: '3' }));
      nodes.append(g);
      this.pendingText.push({ at, g, lines: groupLines(group, this.ctx.state.collapseBelow) });
    }
    const defs = svgEl('defs');
    const marker = svgEl('marker', {
      id: 'arrow',
      viewBox: '0 0 10 10',
      refX: '10',
      refY: '5',
      markerWidth: '8',
      markerHeight: '8',
      orient: 'auto-start-reverse',
    });
    marker.append(svgEl('path', { d: 'M0,0L10,5L0,10z', class: 'arrow' }));
    defs.append(marker);
    // Small graphs get their text at once; on large ones the text of 2,000 boxes (six elements
    // each) was most of the first draw, and at the zoom that fits them none of it is readable:
    // text is added for the boxes on screen once the zoom makes it legible (addVisibleText).
    this.textOnDemand = this.pendingText.length > LARGE_GRAPH * 2;
    if (!this.textOnDemand) this.addText(this.pendingText.splice(0));
    this.layer.replaceChildren(defs, edges, nodes);
    this.status.textContent =
      `${formatNumber(visible.nodes.length)} of ${formatNumber(model.nodes.length)} ` +
      'functions' +
      `${visible.groups.length ? `, ${visible.groups.reduce((a, g) => a + g.members.length, 0)} collapsed` : ''}. ` +
      'Click a function to open its source; drag to pan, wheel to zoom' +
      `${this.textOnDemand ? ' (names show when zoomed in)' : ''}.`;
    this.hottest.sort((a, b) => b.weight - a.weight);
    this.highlight();
    if (this.keepZoom) {
      this.keepZoom = false;
      return;
    }
    this.fitted = false;
    if (this.svg.clientWidth > 0) this.fit();
  }

  private pendingText: PendingText[] = [];
  /** The drawn functions' boxes, by inclusive share, hottest first: what Fit frames. */
  private hottest: Array<{ at: PlacedNode; weight: number }> = [];
  private textOnDemand = false;
  private edgeLabels: SVGGElement | undefined;
  private textFrame = 0;

  /** Text for the boxes and edge labels on screen, when the zoom makes it legible (one frame's worth). */
  private addVisibleText(): void {
    this.textFrame = 0;
    if (!this.textOnDemand || this.pendingText.length === 0 || this.transform.k < MIN_TEXT_SCALE) return;
    const region = visibleRegion(this.transform, this.svg.clientWidth, this.svg.clientHeight, 100);
    const now: PendingText[] = [];
    const later: PendingText[] = [];
    for (const p of this.pendingText) (boxInRegion(p.at, region) ? now : later).push(p);
    this.pendingText = later;
    this.addText(now);
  }

  private addText(items: readonly PendingText[]): void {
    for (const item of items) {
      if (!item.g) {
        this.edgeLabels?.append(
          svgEl('text', { x: String(item.at.x + 4), y: String(item.at.y), class: 'edge-label' }, item.lines[0]),
        );
        continue;
      }
      const text = svgEl('text', { x: '8', y: String(LINE_HEIGHT) });
      boxLines(item.lines).forEach((line, i) => {
        const cls = !item.status ? '' : i === 0 ? 'name' : i === item.lines.length - 1 ? 'status' : '';
        text.append(
          svgEl('tspan', { x: '8', dy: i === 0 ? '0' : String(LINE_HEIGHT), ...(cls ? { class: cls } : {}) }, line),
        );
      });
      item.g.append(text);
    }
  }

  private highlight(): void {
    const matches = this.model ? searchMatches(this.model, this.search.value) : new Set<number>();
    for (const [id, g] of this.nodeElements) {
      g.classList.toggle('match', matches.has(id));
      g.classList.toggle('selected', id === this.selected);
    }
  }

  /**
   * Fits the layout into the view: the whole of it where its text stays legible, else the hottest
   * functions that fit at a legible size (graphView.ts). `whole`: the whole layout, however small.
   */
  fit(whole = false): void {
    const l = this.layout;
    const w = this.svg.clientWidth;
    const h = this.svg.clientHeight;
    if (!l || w === 0 || h === 0) return;
    const t: ViewTransform = whole
      ? fitAll(l, w, h)
      : fitLegible(
          l,
          this.hottest.map((b) => b.at),
          w,
          h,
        );
    this.svgSelection.call(this.zoomer.transform, zoomIdentity.translate(t.x, t.y).scale(t.k));
    this.fitted = true;
  }

  /** Centres a node, keeping the zoom level (the editor's cursor moved into its function). */
  private reveal(fn: number): void {
    const at = this.layout?.nodes.get(nodeKey(fn));
    const w = this.svg.clientWidth;
    const h = this.svg.clientHeight;
    if (!at || w === 0) return;
    this.svgSelection.call(this.zoomer.translateTo, at.x, at.y, [w / 2, h / 2]);
  }
}

/** Zoom below which node text is too small to read (11 px text at 0.5 is 5.5 px). */
const MIN_TEXT_SCALE = 0.5;

/** A box's text (or an edge's call count, without `g`) not drawn yet. */
interface PendingText {
  at: Pick<PlacedNode, 'x' | 'y' | 'width' | 'height'>;
  g?: SVGGElement;
  lines: string[];
  /** A function's box: its first line is the name, the last its status. */
  status?: boolean;
}

function boxCorner(at: PlacedNode): string {
  return `translate(${(at.x - at.width / 2).toFixed(1)},${(at.y - at.height / 2).toFixed(1)})`;
}

/** The function id of the node an event happened in. */
function nodeOf(target: EventTarget | null): number | undefined {
  const g = target instanceof Element ? target.closest('g.node[data-fn]') : null;
  const fn = g?.getAttribute('data-fn');
  return fn ? Number(fn) : undefined;
}
