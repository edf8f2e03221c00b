import type { Profile } from '../../core/profile/model';
import { formatNumber, formatShare, unitShort } from '../../core/profile/units';
import { el, labelled } from '../dom';
import {
  filterRows,
  functionRows,
  lineRows,
  shareBasis,
  sortRows,
  type FunctionRow,
  type LineRow,
} from '../layout/table';
import type { PanelContext, PanelView } from '../panelContext';

interface Column<R> {
  key: string;
  title: string;
  numeric: boolean;
  text(r: R): string;
}

/** Rows drawn beyond the visible ones, above and below (scrolling a little draws nothing new). */
const OVERSCAN = 15;
/** A row's height until one is measured. */
const ROW_HEIGHT = 21;

const num = (v: number | undefined): string => (v === undefined ? '' : formatNumber(v));

/** The per-function and per-line table: sortable by any column, filterable, keyboard-navigable. */
export class TableView implements PanelView {
  readonly element = el('section', {
    class: 'view table-view',
    role: 'tabpanel',
    id: 'panel-table',
    'aria-labelledby': 'tab-table',
  });
  private readonly filter = el('input', {
    type: 'search',
    placeholder: 'filter: name, status:pruned …',
    'aria-label': 'Filter rows',
  });
  private readonly which = el('select', { 'aria-label': 'Rows' });
  private readonly table = el('table', { class: 'grid' });
  private readonly note = el('p', { class: 'note', 'aria-live': 'polite' });
  private profile: Profile | undefined;
  private functions: FunctionRow[] = [];
  private lines: LineRow[] = [];
  private readonly scroller = el('div', { class: 'scroller' });
  private readonly spacerAbove: HTMLTableRowElement;
  private readonly head = el('thead');
  private readonly body = el('tbody');
  private readonly foot = el('tfoot');
  /** Spacers standing for the rows above and below the drawn ones (a height attribute: no inline style). */
  private readonly above = el('td', { 'aria-hidden': 'true' });
  private readonly below = el('td', { 'aria-hidden': 'true' });
  private shownColumns: Column<FunctionRow | LineRow>[] = [];
  /** The sorted, filtered rows; only those near the scroll position are elements. */
  private rows: Array<FunctionRow | LineRow> = [];
  private rowElements: HTMLTableRowElement[] = [];
  private firstDrawn = 0;
  private rowHeight = 0;
  /** The row the keyboard is on (index into rows). */
  private cursor = 0;
  private selectedFn: number | undefined;
  private scrollFrame = 0;

  constructor(private readonly ctx: PanelContext) {
    this.which.append(el('option', { value: 'functions' }, 'Functions'), el('option', { value: 'lines' }, 'Lines'));
    this.which.value = ctx.state.tableView;
    const bar = el('div', { class: 'toolbar' });
    bar.append(labelled('Show ', this.which), labelled('Filter ', this.filter));
    const aboveRow = el('tr', { class: 'spacer' });
    aboveRow.append(this.above);
    const belowRow = el('tr', { class: 'spacer' });
    belowRow.append(this.below);
    this.foot.append(belowRow);
    this.spacerAbove = aboveRow;
    this.table.append(this.head, this.body, this.foot);
    this.scroller.append(this.table);
    this.element.append(bar, this.note, this.scroller);
    this.scroller.addEventListener('scroll', () => {
      if (this.scrollFrame === 0)
        this.scrollFrame = requestAnimationFrame(() => {
          this.scrollFrame = 0;
          this.drawRows();
        });
    });
    this.body.addEventListener('click', (e) => {
      const tr = (e.target as Element).closest('tr');
      const index = Number(tr?.dataset['index']);
      const r = tr ? this.rows[index] : undefined;
      if (!r) return;
      // The clicked row becomes the keyboard's: the arrow keys go on from it.
      this.moveTo(index);
      this.activate(r);
    });
    this.which.addEventListener('change', () => {
      this.ctx.state.tableView = this.which.value === 'lines' ? 'lines' : 'functions';
      this.ctx.saveState();
      this.render();
    });
    this.filter.addEventListener('input', () => this.render());
    this.table.addEventListener('keydown', (e) => this.onKey(e));
  }

  setProfile(p: Profile, update: boolean): void {
    this.profile = p;
    this.functions = functionRows(p);
    this.lines = lineRows(p);
    this.render(update);
  }

  selectionChanged(fn: number | undefined): void {
    this.selectedFn = fn;
    for (const tr of this.rowElements)
      tr.classList.toggle('selected', fn !== undefined && tr.dataset['fn'] === String(fn));
  }

  shown(): void {
    this.drawRows();
  }

  /** Sorts by `key` (a second click on the same column flips the direction). */
  sortBy(key: string): void {
    const s = this.ctx.state.tableSort;
    this.ctx.state.tableSort =
      s.key === key
        ? { key, descending: !s.descending }
        : { key, descending: key !== 'name' && key !== 'path' && key !== 'function' };
    this.ctx.saveState();
    this.render();
  }

  private columns(): Column<FunctionRow>[] | Column<LineRow>[] {
    const unit = this.profile ? unitShort(this.profile.unit) : '';
    if (this.ctx.state.tableView === 'lines') {
      return [
        { key: 'path', title: 'File', numeric: false, text: (r) => r.path },
        { key: 'line', title: 'Line', numeric: true, text: (r) => String(r.line) },
        { key: 'function', title: 'Function', numeric: false, text: (r) => r.function },
        { key: 'self', title: `Self (${unit})`, numeric: true, text: (r) => num(r.self) },
        {
          key: 'share',
          title: 'Share',
          numeric: true,
          text: (r) => (r.share !== undefined ? formatShare(r.share) : ''),
        },
        { key: 'bound', title: '±', numeric: false, text: (r) => r.bound },
      ] satisfies Column<LineRow>[];
    }
    return [
      { key: 'name', title: 'Function', numeric: false, text: (r) => r.name },
      { key: 'self', title: `Self (${unit})`, numeric: true, text: (r) => num(r.self) },
      { key: 'inclusive', title: `Inclusive (${unit})`, numeric: true, text: (r) => num(r.inclusive) },
      {
        key: 'share',
        title: this.profile && shareBasis(this.profile) === 'self' ? 'Share (self)' : 'Share (incl.)',
        numeric: true,
        text: (r) => (r.share !== undefined ? formatShare(r.share) : ''),
      },
      { key: 'calls', title: 'Calls', numeric: true, text: (r) => num(r.calls) },
      { key: 'min', title: 'Min', numeric: true, text: (r) => num(r.min) },
      { key: 'max', title: 'Max', numeric: true, text: (r) => num(r.max) },
      { key: 'mean', title: 'Mean', numeric: true, text: (r) => num(r.mean) },
      { key: 'bound', title: '±', numeric: false, text: (r) => r.bound },
      { key: 'status', title: 'Status', numeric: false, text: (r) => r.status },
      { key: 'provenance', title: 'Provenance', numeric: false, text: (r) => r.provenance },
    ] satisfies Column<FunctionRow>[];
  }

  /** `keepPlace`: a live update keeps the scroll position and the keyboard's row (and its focus). */
  render(keepPlace = false): void {
    const { key, descending } = this.ctx.state.tableSort;
    const focused = keepPlace && this.body.contains(document.activeElement);
    const lines = this.ctx.state.tableView === 'lines';
    const columns = this.columns() as unknown as Column<FunctionRow | LineRow>[];
    const sortKey = columns.some((c) => c.key === key) ? key : lines ? 'self' : 'inclusive';
    this.rows = lines
      ? sortRows(filterRows(this.lines, this.filter.value), sortKey, descending)
      : sortRows(filterRows(this.functions, this.filter.value), sortKey, descending);
    this.shownColumns = columns;
    const hr = el('tr');
    for (const c of columns) {
      const th = el('th', {
        scope: 'col',
        'aria-sort': c.key === sortKey ? (descending ? 'descending' : 'ascending') : 'none',
        class: c.numeric ? 'num' : '',
      });
      const button = el(
        'button',
        { type: 'button', class: 'sort' },
        c.title + (c.key === sortKey ? (descending ? ' ▼' : ' ▲') : ''),
      );
      button.addEventListener('click', () => this.sortBy(c.key));
      th.append(button);
      hr.append(th);
    }
    this.above.setAttribute('colspan', String(columns.length));
    this.below.setAttribute('colspan', String(columns.length));
    this.head.replaceChildren(hr, this.spacerAbove);
    if (keepPlace) this.cursor = Math.min(this.cursor, Math.max(0, this.rows.length - 1));
    else {
      this.cursor = 0;
      this.scroller.scrollTop = 0;
    }
    this.table.setAttribute('aria-rowcount', String(this.rows.length + 1));
    // New rows: nothing drawn can be kept.
    this.rowElements = [];
    this.drawRows();
    if (focused) this.rowElements[this.cursor - this.firstDrawn]?.focus();
    this.note.textContent = `${formatNumber(this.rows.length)} rows`;
  }

  /**
   * Draws the rows near the scroll position and spacers for the rest: a sort or filter of 20,000
   * rows builds a screenful of elements, not 20,000 (or the first 1,000, as the table once did).
   */
  private drawRows(): void {
    const height = this.rowHeight || ROW_HEIGHT;
    const view = this.scroller.clientHeight || 800;
    const first = Math.max(0, Math.min(this.rows.length, Math.floor(this.scroller.scrollTop / height) - OVERSCAN));
    const last = Math.min(this.rows.length, first + Math.ceil(view / height) + 2 * OVERSCAN);
    if (this.rowElements.length > 0 && first === this.firstDrawn && last === first + this.rowElements.length) return;
    this.firstDrawn = first;
    this.rowElements = [];
    for (let i = first; i < last; i++) {
      const r = this.rows[i]!;
      const tr = el('tr', {
        tabindex: i === this.cursor ? '0' : '-1',
        'data-index': String(i),
        'aria-rowindex': String(i + 2),
      });
      if ('id' in r) {
        tr.dataset['fn'] = String(r.id);
        if (r.id === this.selectedFn) tr.classList.add('selected');
      }
      for (const c of this.shownColumns) tr.append(el('td', c.numeric ? { class: 'num' } : {}, c.text(r)));
      this.rowElements.push(tr);
    }
    // No row in the tab order (the cursor's is not drawn): the first drawn one takes it.
    if (this.rowElements.length > 0 && (this.cursor < first || this.cursor >= last))
      this.rowElements[0]!.setAttribute('tabindex', '0');
    this.body.replaceChildren(...this.rowElements);
    this.above.setAttribute('height', String(first * height));
    this.below.setAttribute('height', String((this.rows.length - last) * height));
    this.spacerAbove.hidden = first === 0;
    (this.below.parentElement as HTMLTableRowElement).hidden = last === this.rows.length;
    // Spacers need the real row height: measured once, from the first drawn row.
    if (this.rowHeight === 0 && this.rowElements.length > 0) {
      const measured = this.rowElements[0]!.getBoundingClientRect().height;
      if (measured > 0) this.rowHeight = measured;
    }
  }

  /** Shows the row's source in the editor; the table keeps the keyboard, so the arrows go on moving the row. */
  private activate(r: FunctionRow | LineRow): void {
    if ('id' in r) this.ctx.select(r.id, true, { keepFocus: true });
    else this.ctx.post({ type: 'openLocation', path: r.path, line: r.line, keepFocus: true });
  }

  private onKey(e: KeyboardEvent): void {
    const tr = (e.target as HTMLElement).closest('tr');
    if (!tr || tr.parentElement !== this.body) return;
    if (e.key === 'Enter') {
      tr.click();
      e.preventDefault();
      return;
    }
    const at = Number(tr.dataset['index']);
    const page = Math.max(1, Math.floor((this.scroller.clientHeight || 800) / (this.rowHeight || ROW_HEIGHT)) - 1);
    const next = {
      ArrowDown: at + 1,
      ArrowUp: at - 1,
      Home: 0,
      End: this.rows.length - 1,
      PageDown: at + page,
      PageUp: at - page,
    }[e.key];
    if (next === undefined) return;
    e.preventDefault();
    this.moveTo(Math.max(0, Math.min(this.rows.length - 1, next)));
  }

  /** Moves the keyboard to row `index`: scrolls it into the drawn rows if needed, and focuses it (roving tabindex). */
  private moveTo(index: number): void {
    this.cursor = index;
    let tr = this.rowElements[index - this.firstDrawn];
    if (!tr) {
      this.scroller.scrollTop = Math.max(0, index * (this.rowHeight || ROW_HEIGHT) - this.scroller.clientHeight / 2);
      this.drawRows();
      tr = this.rowElements[index - this.firstDrawn];
    }
    for (const r of this.rowElements) r.setAttribute('tabindex', r === tr ? '0' : '-1');
    tr?.focus();
  }
}
