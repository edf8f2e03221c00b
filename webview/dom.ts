/**
 * The one way the panel makes elements: tag, attributes and text through the DOM API. Profile data
 * (function names, paths, source text) reaches the page only as `textContent` or attribute values,
 * never parsed as markup; there is no innerHTML anywhere in webview/.
 */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  text?: string,
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

const SVG = 'http://www.w3.org/2000/svg';

export function svgEl<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  text?: string,
): SVGElementTagNameMap[K] {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

/** A labelled form control: the label's text is data-safe. */
export function labelled(text: string, control: HTMLElement): HTMLLabelElement {
  const label = el('label', { class: 'control' }, text);
  label.append(control);
  return label;
}

/** Moves focus among `items` with the arrow keys (roving tabindex: one item in the tab order). */
export function rovingFocus(items: readonly HTMLElement[], current: HTMLElement, key: string): HTMLElement | undefined {
  const i = items.indexOf(current);
  if (i < 0) return undefined;
  const next =
    key === 'ArrowDown'
      ? items[i + 1]
      : key === 'ArrowUp'
        ? items[i - 1]
        : key === 'Home'
          ? items[0]
          : key === 'End'
            ? items[items.length - 1]
            : undefined;
  if (!next) return undefined;
  current.setAttribute('tabindex', '-1');
  next.setAttribute('tabindex', '0');
  next.focus();
  return next;
}
