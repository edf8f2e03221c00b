import type { Profile } from '../../core/profile/model';
import { formatNumber, formatShare, unitLabel, unitShort } from '../../core/profile/units';
import { el, rovingFocus } from '../dom';
import { annotateSource, heatLevel, type AnnotatedLine, type AnnotatedSource } from '../layout/source';
import type { PanelContext, PanelView } from '../panelContext';

/**
 * Lines in the first paint (a screenful and more around the hottest line), and in each later chunk:
 * chunks start after the first frame and stay small, so none of them delays the first paint or
 * holds the page for long.
 */
const FIRST_WINDOW = 100;
const CHUNK = 150;

/**
 * The selected function's source with a heat bar and value per line, each line expandable to its
 * instructions; the hottest line is scrolled into view, and a click opens the line in the editor.
 */
export class SourceView implements PanelView {
  readonly element = el('section', {
    class: 'view source-view',
    role: 'tabpanel',
    id: 'panel-source',
    'aria-labelledby': 'tab-source',
  });
  private readonly heading = el('h2', { class: 'source-heading' });
  private readonly note = el('p', { class: 'note', 'aria-live': 'polite' });
  private readonly list = el('ol', { class: 'source', 'aria-label': 'Annotated source lines' });
  private profile: Profile | undefined;
  private selected: number | undefined;
  private items: HTMLLIElement[] = [];
  private pendingScroll: number | undefined;
  private visible = false;
  private generation = 0;
  private shownLines = new Map<number, AnnotatedLine>();
  private shownPath = '';
  /** What the list shows: the profile and function it was drawn or last refreshed for. */
  private drawn: { profile: Profile; fn: number; name: string } | undefined;

  constructor(private readonly ctx: PanelContext) {
    const scroller = el('div', { class: 'scroller' });
    scroller.append(this.list);
    this.element.append(this.heading, this.note, scroller);
    this.list.addEventListener('keydown', (e) => this.onKey(e));
    // One listener for all lines (a 2,000-line function made 4,000 of them).
    this.list.addEventListener('click', (e) => {
      const target = e.target as Element;
      const li = target.closest('li.line') as HTMLLIElement | null;
      const line = li ? this.shownLines.get(Number(li.dataset['line'])) : undefined;
      if (!li || !line || !this.profile) return;
      if (target.closest('button.expand')) this.toggle(li, line, this.profile);
      else if (target.closest('.line-row'))
        this.ctx.post({ type: 'openLocation', path: this.shownPath, line: line.line });
    });
  }

  setProfile(p: Profile, update = false): void {
    this.profile = p;
    if (update && this.refreshInPlace(p)) return;
    this.render();
  }

  selectionChanged(fn: number | undefined): void {
    const drawn = this.drawn;
    if (fn !== undefined && drawn && drawn.profile === this.profile && drawn.fn === fn) return;
    this.selected = fn;
    this.render();
  }

  shown(): void {
    this.visible = true;
    this.scrollToHottest();
  }

  hidden(): void {
    this.visible = false;
  }

  /** Re-renders when the host delivers a file this view asked for. */
  sourceArrived(path: string): void {
    const f = this.selected !== undefined ? this.profile?.functions[this.selected] : undefined;
    if (f?.location?.path === path) this.render();
  }

  /**
   * A newer picture of the function shown (live sampling): the lines take their new values where
   * they are, so the scroll, the focused line and the expanded lines stay. False when it is not
   * the same function and file, or the list is not built yet: then it is drawn anew.
   */
  private refreshInPlace(p: Profile): boolean {
    const drawn = this.drawn;
    const f = drawn ? p.functions.find((x) => x.name === drawn.name) : undefined;
    const source = f?.location ? this.ctx.sourceText(f.location.path) : undefined;
    if (!f?.location || f.location.path !== this.shownPath || source?.text === undefined || this.items.length === 0)
      return false;
    const annotated = annotateSource(p, f.id, f.location.path, source.text);
    this.shownLines = new Map(annotated.lines.map((l) => [l.line, l]));
    this.note.textContent = this.noteText(p, f.location.path, annotated);
    for (const li of this.items) {
      const line = this.shownLines.get(Number(li.dataset['line']));
      if (!line) continue;
      this.fillLine(li, p, annotated, line);
      const expanded = li.querySelector('ul.instructions');
      if (expanded) expanded.replaceWith(this.instructionList(line, p));
    }
    this.selected = f.id;
    this.drawn = { profile: p, fn: f.id, name: f.name };
    return true;
  }

  private noteText(p: Profile, path: string, annotated: AnnotatedSource): string {
    return (
      `${path} · per-line self cost in ${unitLabel(p.unit)}` +
      (annotated.total
        ? `, ${formatNumber(annotated.total)} on these lines`
        : ' (the profile has no per-line values for this function)')
    );
  }

  private render(): void {
    const p = this.profile;
    const f = p && this.selected !== undefined ? p.functions[this.selected] : undefined;
    this.items = [];
    this.drawn = undefined;
    if (!p || !f) {
      this.heading.textContent = 'Annotated source';
      this.note.textContent = 'Select a function in the call graph, flame graph or table.';
      this.list.replaceChildren();
      return;
    }
    this.heading.textContent = f.name;
    if (!f.location) {
      this.note.textContent = `${f.name} has no source location in the profile (no DWARF line information for it).`;
      this.list.replaceChildren();
      return;
    }
    const source = this.ctx.sourceText(f.location.path);
    if (!source) {
      this.note.textContent = `Reading ${f.location.path} …`;
      this.list.replaceChildren();
      return;
    }
    if (source.text === undefined) {
      this.note.textContent = source.problem ?? `${f.location.path} could not be read.`;
      this.list.replaceChildren();
      return;
    }
    const annotated = annotateSource(p, f.id, f.location.path, source.text);
    this.shownLines = new Map(annotated.lines.map((l) => [l.line, l]));
    this.shownPath = annotated.path;
    this.note.textContent = this.noteText(p, f.location.path, annotated);
    this.drawn = { profile: p, fn: f.id, name: f.name };
    // First paint: the lines around the hottest one; the rest follow in chunks, so a long function
    // shows its hot spot at once and the page stays responsive while the others are built.
    const all = annotated.lines;
    const hot = Math.max(
      0,
      all.findIndex((l) => l.line === annotated.hottest),
    );
    const start = Math.max(0, hot - FIRST_WINDOW / 2);
    const end = Math.min(all.length, start + FIRST_WINDOW);
    const generation = ++this.generation;
    const build = (from: number, to: number): DocumentFragment => {
      const fragment = document.createDocumentFragment();
      for (let i = from; i < to; i++) fragment.append(this.lineItem(p, annotated, all[i]!));
      return fragment;
    };
    this.list.replaceChildren(build(start, end));
    this.pendingScroll = annotated.hottest;
    const first = this.items.find((i) => i.dataset['line'] === String(annotated.hottest)) ?? this.items[0];
    first?.setAttribute('tabindex', '0');
    if (this.visible) this.scrollToHottest();
    let before = start;
    let after = end;
    const more = (): void => {
      if (generation !== this.generation || (before === 0 && after === all.length)) return;
      const anchor = this.list.firstChild;
      const from = Math.max(0, before - CHUNK);
      if (from < before) this.list.insertBefore(build(from, before), anchor);
      before = from;
      const to = Math.min(all.length, after + CHUNK);
      if (to > after) this.list.append(build(after, to));
      after = to;
      // Keep the items in line order for the arrow keys.
      this.items = Array.from(this.list.children) as HTMLLIElement[];
      if (this.visible && this.pendingScroll === undefined && first) first.scrollIntoView({ block: 'center' });
      setTimeout(more, 0);
    };
    requestAnimationFrame(() => setTimeout(more, 0));
  }

  private lineItem(p: Profile, annotated: AnnotatedSource, line: AnnotatedLine): HTMLLIElement {
    const li = el('li', { class: 'line', tabindex: '-1', 'data-line': String(line.line) });
    const bar = el('span', { class: 'bar', 'aria-hidden': 'true' });
    bar.append(el('span', { class: 'fill' }));
    const row = el('div', { class: 'line-row' });
    const toggle = el(
      'button',
      { type: 'button', class: 'expand', 'aria-expanded': 'false', 'aria-label': `Instructions of line ${line.line}` },
      line.instructions.length ? '▸' : '',
    );
    if (!line.instructions.length) toggle.disabled = true;
    row.append(
      toggle,
      bar,
      el('span', { class: 'value', title: unitLabel(p.unit) }),
      el('span', { class: 'lineno' }, String(line.line)),
      el('code', { class: 'code' }, line.text),
    );
    li.append(row);
    this.fillLine(li, p, annotated, line);
    this.items.push(li);
    return li;
  }

  /** A line's figures: heat level, bar, value and share, and what a screen reader says. */
  private fillLine(li: HTMLLIElement, p: Profile, annotated: AnnotatedSource, line: AnnotatedLine): void {
    const level = heatLevel(line.heat);
    li.className = `line heat-${level}`;
    const fill = li.querySelector('.bar > .fill');
    if (fill) fill.className = `fill heat-${level} w${Math.round(line.heat * 10)}`;
    const value =
      line.value !== undefined
        ? `${formatNumber(line.value)}${annotated.total ? ` (${formatShare(line.value / annotated.total)})` : ''}`
        : '';
    const shown = li.querySelector('.line-row > .value');
    if (shown && shown.textContent !== value) shown.textContent = value;
    li.setAttribute('aria-label', `line ${line.line}${value ? `, ${value} ${unitShort(p.unit)}` : ''}`);
  }

  /** Instructions are built on first expansion only: a 2,000-line file paints without them. */
  private toggle(li: HTMLLIElement, line: AnnotatedLine, p: Profile): void {
    const existing = li.querySelector('ul.instructions');
    const button = li.querySelector('button.expand');
    if (existing) {
      existing.remove();
      button?.setAttribute('aria-expanded', 'false');
      if (button) button.textContent = '▸';
      return;
    }
    const ul = this.instructionList(line, p);
    li.append(ul);
    button?.setAttribute('aria-expanded', 'true');
    if (button) button.textContent = '▾';
  }

  private instructionList(line: AnnotatedLine, p: Profile): HTMLUListElement {
    const ul = el('ul', { class: 'instructions' });
    for (const i of line.instructions) {
      const item = el('li', { class: 'instruction' });
      item.append(
        el('span', { class: 'value' }, `${formatNumber(i.value)} ${unitShort(p.unit)}`),
        el('span', { class: 'address' }, `0x${i.address.toString(16)}`),
        el('code', {}, i.text),
      );
      ul.append(item);
    }
    return ul;
  }

  private scrollToHottest(): void {
    if (this.pendingScroll === undefined) return;
    this.items.find((i) => i.dataset['line'] === String(this.pendingScroll))?.scrollIntoView({ block: 'center' });
    this.pendingScroll = undefined;
  }

  private onKey(e: KeyboardEvent): void {
    const li = (e.target as HTMLElement).closest('li.line') as HTMLLIElement | null;
    if (!li) return;
    if (e.key === 'Enter') {
      (li.querySelector('.line-row') as HTMLElement | null)?.click();
      e.preventDefault();
    } else if (e.key === 'ArrowRight' || e.key === 'ArrowLeft') {
      const expanded = li.querySelector('ul.instructions') !== null;
      if (expanded === (e.key === 'ArrowLeft'))
        (li.querySelector('button.expand') as HTMLButtonElement | null)?.click();
      e.preventDefault();
    } else if (rovingFocus(this.items, li, e.key)) e.preventDefault();
  }
}
