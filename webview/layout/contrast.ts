/**
 * Text colour by contrast (WCAG 2.x relative luminance and contrast ratio, w3.org/TR/WCAG21
 * "contrast ratio"): the flame graph's fills come from the theme's chart colours, and a label in
 * the theme's foreground was dark red on red in the light themes. No DOM: the unit tier runs these.
 */

export interface Rgba {
  r: number;
  g: number;
  b: number;
  /** 0..1 */
  a: number;
}

/** `#rgb`, `#rgba`, `#rrggbb`, `#rrggbbaa`, `rgb(…)` or `rgba(…)` (as computed styles and d3 write them). */
export function parseColour(text: string): Rgba | undefined {
  const s = text.trim().toLowerCase();
  const hex = /^#([0-9a-f]{3,8})$/.exec(s)?.[1];
  if (hex && [3, 4, 6, 8].includes(hex.length)) {
    const short = hex.length <= 4;
    const digits = short ? [...hex].map((c) => c + c) : (hex.match(/../g) ?? []);
    const [r, g, b, a] = digits.map((d) => parseInt(d, 16));
    return { r: r!, g: g!, b: b!, a: a === undefined ? 1 : a / 255 };
  }
  const fn = /^rgba?\(\s*([\d.]+)[\s,]+([\d.]+)[\s,]+([\d.]+)(?:\s*[,/]\s*([\d.]+%?))?\s*\)$/.exec(s);
  if (fn) {
    const alpha = fn[4] === undefined ? 1 : fn[4].endsWith('%') ? parseFloat(fn[4]) / 100 : Number(fn[4]);
    return { r: Number(fn[1]), g: Number(fn[2]), b: Number(fn[3]), a: alpha };
  }
  return undefined;
}

/** `top` painted over the opaque `bottom` (a translucent fill on the page's background). */
export function over(top: Rgba, bottom: Rgba): Rgba {
  const mix = (t: number, b: number): number => t * top.a + b * (1 - top.a);
  return { r: mix(top.r, bottom.r), g: mix(top.g, bottom.g), b: mix(top.b, bottom.b), a: 1 };
}

export function relativeLuminance(c: Rgba): number {
  const channel = (v: number): number => {
    const s = v / 255;
    return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * channel(c.r) + 0.7152 * channel(c.g) + 0.0722 * channel(c.b);
}

/** WCAG contrast ratio of two opaque colours: 1 (none) to 21 (black on white). */
export function contrastRatio(a: Rgba, b: Rgba): number {
  const [hi, lo] = [relativeLuminance(a), relativeLuminance(b)].sort((x, y) => y - x);
  return (hi! + 0.05) / (lo! + 0.05);
}

const BLACK: Rgba = { r: 0, g: 0, b: 0, a: 1 };
const WHITE: Rgba = { r: 255, g: 255, b: 255, a: 1 };

/**
 * The label colour for text on `fill` (seen over `background`): the theme's own text colour when it
 * reaches `minimum` contrast there, else black or white, whichever contrasts more (one of the two
 * always reaches 4.58:1).
 */
export function labelColourOn(fill: string, background: string, themeText: string, minimum = 4.5): string {
  const page = parseColour(background);
  const base = page && page.a > 0 ? { ...page, a: 1 } : WHITE;
  const parsed = parseColour(fill);
  if (!parsed) return themeText;
  const seen = over(parsed, base);
  const text = parseColour(themeText);
  if (text && contrastRatio(over(text, seen), seen) >= minimum) return themeText;
  return contrastRatio(BLACK, seen) >= contrastRatio(WHITE, seen) ? '#000000' : '#ffffff';
}
