import { scaleLinear } from 'd3-scale';
import type { Profile } from '../../core/profile/model';
import { formatNumber, formatShare, unitLabel } from '../../core/profile/units';
import { el, labelled } from '../dom';
import { labelColourOn } from '../layout/contrast';
import {
  callTreeOf,
  flameRects,
  rectAt,
  rectByPath,
  rectPath,
  zoomedRects,
  type DrawnRect,
  type FlameRect,
} from '../layout/flame';
import { themeColour, type PanelContext, type PanelView } from '../panelContext';

const ROW = 18;
/** Heat colours the flame graph tells apart. */
const HEAT_STEPS = 32;

/**
 * Flame graph as an icicle (root on top) on a canvas: 20,000 frames are one canvas, not 20,000
 * elements. Click zooms (the root or Escape zooms out), hover describes a frame in the line below,
 * the search highlights matching frames; the keyboard walks frames with the arrows.
 */
export class FlameView implements PanelView {
  readonly element = el('section', {
    class: 'view flame-view',
    role: 'tabpanel',
    id: 'panel-flame',
    'aria-labelledby': 'tab-flame',
  });
  readonly canvas = el('canvas', {
    tabindex: '0',
    role: 'img',
    'aria-label': 'Flame graph: arrows move between frames, Enter zooms, Escape zooms out',
  });
  private readonly search = el('input', {
    type: 'search',
    placeholder: 'highlight functions …',
    'aria-label': 'Highlight functions',
  });
  private readonly details = el('p', { class: 'details', 'aria-live': 'polite' });
  private profile: Profile | undefined;
  rects: FlameRect[] = [];
  private shownRects: DrawnRect[] = [];
  private focus = 0;
  private cursor = 0;
  private selectedFn: number | undefined;
  private depth = 0;

  constructor(private readonly ctx: PanelContext) {
    const bar = el('div', { class: 'toolbar' });
    const reset = el('button', { type: 'button' }, 'Zoom out');
    reset.addEventListener('click', () => this.zoom(0));
    bar.append(labelled('Search ', this.search), reset);
    const scroller = el('div', { class: 'scroller' });
    scroller.append(this.canvas);
    this.element.append(bar, this.details, scroller);
    this.search.addEventListener('input', () => this.draw());
    this.canvas.addEventListener('click', (e) => {
      const hit = this.hit(e);
      if (!hit) return;
      this.cursor = hit.index;
      const fn = this.rects[hit.index]!.fn;
      if (fn >= 0) this.ctx.select(fn, false);
      this.zoom(hit.index);
    });
    this.canvas.addEventListener('mousemove', (e) => {
      const hit = this.hit(e);
      this.describe(hit?.index);
    });
    this.canvas.addEventListener('keydown', (e) => this.onKey(e));
    new ResizeObserver(() => this.draw()).observe(scroller);
  }

  setProfile(p: Profile, update: boolean): void {
    // Rect indices change with the counts; the frames' call paths do not.
    const focus = update ? rectPath(this.rects, this.focus) : [];
    const cursor = update ? rectPath(this.rects, this.cursor) : [];
    this.profile = p;
    this.rects = flameRects(callTreeOf(p));
    this.depth = this.rects.reduce((m, r) => Math.max(m, r.depth), 0);
    this.focus = rectByPath(this.rects, focus);
    this.cursor = rectByPath(this.rects, cursor);
    this.scheduleDraw();
  }

  selectionChanged(fn: number | undefined): void {
    this.selectedFn = fn;
    this.scheduleDraw();
  }

  shown(): void {
    this.scheduleDraw();
  }

  private drawQueued = false;
  /** Resolves when the draw scheduled last is done (the bench and tests wait on it). */
  drawn: Promise<void> = Promise.resolve();

  /**
   * One draw in the next frame for everything that happened before it: a new profile is followed
   * at once by its selection, and each used to draw the whole canvas.
   */
  private scheduleDraw(): void {
    if (this.drawQueued) return;
    this.drawQueued = true;
    this.drawn = new Promise<void>((resolve) =>
      requestAnimationFrame(() => {
        this.drawQueued = false;
        this.draw();
        resolve();
      }),
    );
  }

  /** Zooms so rect `index` spans the width, and redraws (one frame). */
  zoom(index: number): void {
    this.focus = index;
    this.draw();
    this.describe(index);
  }

  draw(): void {
    const width = this.canvas.parentElement?.clientWidth ?? 0;
    if (width === 0 || this.rects.length === 0) return;
    const ratio = window.devicePixelRatio || 1;
    const height = (this.depth + 1) * ROW;
    // Attributes, not style: the canvas's CSS width is 100 %, its height follows the aspect ratio.
    if (this.canvas.width !== Math.round(width * ratio)) this.canvas.width = Math.round(width * ratio);
    if (this.canvas.height !== Math.round(height * ratio)) this.canvas.height = Math.round(height * ratio);
    const g = this.canvas.getContext('2d');
    if (!g) return;
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, width, height);
    this.shownRects = zoomedRects(this.rects, this.focus, width);
    // A palette of HEAT_STEPS colours, not one interpolated colour string per frame drawn.
    const scale = scaleLinear<string>()
      .domain([0, 0.5, 1])
      .range([
        themeColour('--cl-heat-low', '#d7b600'),
        themeColour('--cl-heat-mid', '#d18616'),
        themeColour('--cl-heat-high', '#e51400'),
      ]);
    const palette = Array.from({ length: HEAT_STEPS + 1 }, (_, i) => scale(i / HEAT_STEPS));
    const colour = (share: number): string => palette[Math.round(share * HEAT_STEPS)]!;
    const text = themeColour('--cl-flame-text', '#000000');
    const dim = themeColour('--cl-flame-dim', '#888888');
    const match = themeColour('--cl-match', '#3794ff');
    const background = themeColour('--cl-bg', '#ffffff');
    // Each fill's label colour, by contrast: the theme's text colour was dark on the light themes' red.
    const labels = new Map<string, string>();
    const labelOn = (fill: string): string => {
      let label = labels.get(fill);
      if (label === undefined) labels.set(fill, (label = labelColourOn(fill, background, text)));
      return label;
    };
    const outline = themeColour('--cl-focus', '#007fd4');
    const query = this.search.value.trim().toLowerCase();
    g.font = '11px var(--vscode-editor-font-family, monospace)';
    g.textBaseline = 'middle';
    for (const d of this.shownRects) {
      const r = this.rects[d.index]!;
      const y = d.row * ROW;
      const matched = query !== '' && r.name.toLowerCase().includes(query);
      // Heat: how much of the frame is its own code (a frame that only calls others stays cool).
      const ownShare = r.value > 0 ? r.self / r.value : 0;
      const fill = query !== '' && !matched ? dim : matched ? match : colour(Math.max(0, Math.min(1, ownShare)));
      g.fillStyle = fill;
      g.fillRect(d.x, y, Math.max(0.5, d.width - 0.5), ROW - 1);
      if ((this.selectedFn !== undefined && r.fn === this.selectedFn) || d.index === this.cursor) {
        g.strokeStyle = outline;
        g.lineWidth = 2;
        g.strokeRect(d.x + 1, y + 1, Math.max(0, d.width - 2), ROW - 3);
      }
      if (d.width > 30) {
        g.fillStyle = labelOn(fill);
        g.fillText(fit(g, r.name, d.width - 6), d.x + 3, y + ROW / 2);
      }
    }
  }

  private hit(e: MouseEvent): DrawnRect | undefined {
    const box = this.canvas.getBoundingClientRect();
    const scale = box.width / (this.canvas.width / (window.devicePixelRatio || 1));
    return rectAt(this.shownRects, (e.clientX - box.left) / scale, Math.floor((e.clientY - box.top) / scale / ROW));
  }

  private describe(index: number | undefined): void {
    const p = this.profile;
    if (index === undefined || !p) return;
    const r = this.rects[index]!;
    const total = this.rects[0]!.value;
    this.details.textContent =
      `${r.name}: ${formatNumber(r.value)} ${unitLabel(p.unit)}` +
      `${total ? ` (${formatShare(r.value / total)} of all)` : ''}, depth ${r.depth}`;
  }

  private onKey(e: KeyboardEvent): void {
    const r = this.rects[this.cursor];
    if (!r) return;
    let next: number | undefined;
    if (e.key === 'ArrowUp') next = r.parent >= 0 ? r.parent : undefined;
    else if (e.key === 'ArrowDown') next = this.rects.findIndex((c) => c.parent === this.cursor);
    else if (e.key === 'ArrowLeft' || e.key === 'ArrowRight') {
      const siblings = this.rects
        .map((c, i) => ({ c, i }))
        .filter(({ c }) => c.parent === r.parent && c.depth === r.depth);
      const at = siblings.findIndex((s) => s.i === this.cursor);
      next = siblings[at + (e.key === 'ArrowRight' ? 1 : -1)]?.i;
    } else if (e.key === 'Enter') {
      if (r.fn >= 0) this.ctx.select(r.fn, false);
      this.zoom(this.cursor);
    } else if (e.key === 'Escape') this.zoom(0);
    else return;
    e.preventDefault();
    if (next !== undefined && next >= 0) {
      this.cursor = next;
      this.draw();
      this.describe(next);
    }
  }
}

function fit(g: CanvasRenderingContext2D, text: string, width: number): string {
  if (g.measureText(text).width <= width) return text;
  const chars = Math.max(0, Math.floor(width / 7) - 1);
  return chars > 0 ? `${text.slice(0, chars)}…` : '';
}
