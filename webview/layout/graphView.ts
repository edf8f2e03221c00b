import type { GraphLayout, PlacedNode } from './callGraph';

/**
 * How the call graph is framed and zoomed, as pure functions of the layout and the view's size.
 * Fit keeps the hottest functions' text legible: a layout of 40 boxes side by side, fitted whole
 * into a maximised panel, drew 11 px names at 3 px. Zoom goes in equal steps per wheel notch.
 */

/** Font size of a box's text in the layout's own pixels (media/webview.css, `.node text`). */
export const NODE_TEXT_PX = 11;
/** The smallest on-screen text Fit allows for the functions it frames. */
export const LEGIBLE_TEXT_PX = 10;
/** Fit never enlarges beyond this. */
export const FIT_MAX_SCALE = 2;
/** The zoom factor of one wheel notch (and of the most a single wheel event may zoom). */
export const ZOOM_STEP = 1.25;
export const ZOOM_EXTENT: [number, number] = [0.02, 8];

export interface ViewTransform {
  x: number;
  y: number;
  k: number;
}

type Box = Pick<PlacedNode, 'x' | 'y' | 'width' | 'height'>;

interface Bounds {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

const boundsOf = (b: Box): Bounds => ({
  x0: b.x - b.width / 2,
  y0: b.y - b.height / 2,
  x1: b.x + b.width / 2,
  y1: b.y + b.height / 2,
});

const join = (a: Bounds, b: Bounds): Bounds => ({
  x0: Math.min(a.x0, b.x0),
  y0: Math.min(a.y0, b.y0),
  x1: Math.max(a.x1, b.x1),
  y1: Math.max(a.y1, b.y1),
});

/** The scale that fits `b` into a `width` × `height` view with a margin (capped at FIT_MAX_SCALE). */
function scaleFor(b: Bounds, width: number, height: number): number {
  return Math.min(FIT_MAX_SCALE, 0.95 * Math.min(width / Math.max(1, b.x1 - b.x0), height / Math.max(1, b.y1 - b.y0)));
}

function centred(b: Bounds, k: number, width: number, height: number): ViewTransform {
  return { x: width / 2 - ((b.x0 + b.x1) / 2) * k, y: height / 2 - ((b.y0 + b.y1) / 2) * k, k };
}

/** The whole layout in the view, however small its text gets. */
export function fitAll(layout: Pick<GraphLayout, 'width' | 'height'>, width: number, height: number): ViewTransform {
  const b = { x0: 0, y0: 0, x1: layout.width, y1: layout.height };
  return centred(b, scaleFor(b, width, height), width, height);
}

/**
 * Fit: the whole layout when its text stays legible there; otherwise as many of the hottest boxes
 * (`hottest`, hottest first) as fit at a legible size, the first always, framed together.
 */
export function fitLegible(
  layout: Pick<GraphLayout, 'width' | 'height'>,
  hottest: readonly Box[],
  width: number,
  height: number,
): ViewTransform {
  const legible = LEGIBLE_TEXT_PX / NODE_TEXT_PX;
  const all = fitAll(layout, width, height);
  if (all.k >= legible || hottest.length === 0) return all;
  let framed = boundsOf(hottest[0]!);
  for (const box of hottest.slice(1)) {
    const grown = join(framed, boundsOf(box));
    if (scaleFor(grown, width, height) >= legible) framed = grown;
  }
  return centred(framed, Math.max(legible, scaleFor(framed, width, height)), width, height);
}

/**
 * A wheel event as a power of two of zoom (d3-zoom's `wheelDelta`): in notches, whatever unit the
 * browser reports (pixels, lines or pages), at most one notch per event, ZOOM_STEP per notch. A
 * trackpad's small deltas zoom by the matching part of a step; a pinch (ctrlKey) counts ten times.
 */
export function wheelZoomExponent(e: Pick<WheelEvent, 'deltaY' | 'deltaMode' | 'ctrlKey'>): number {
  const perNotch = e.deltaMode === 1 ? 3 : e.deltaMode === 2 ? 1 : 100;
  const notches = (e.deltaY / perNotch) * (e.ctrlKey ? 10 : 1);
  return -Math.max(-1, Math.min(1, notches)) * Math.log2(ZOOM_STEP);
}
