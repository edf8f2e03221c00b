import type { Profile } from '../../core/profile/model';
import { formatNumber, formatShare, unitShort } from '../../core/profile/units';
import { el, labelled, rovingFocus } from '../dom';
import { filterRows, functionRows, lineRows, sortRows, type FunctionRow, type LineRow } from '../layout/table';
import type { PanelContext, PanelView } from '../panelContext';

interface Column<R> {
  key: string;
  title: string;
  numeric: boolean;
  text(r: R): string;
}

/** Rows drawn at most; the rest are reached by filtering or sorting (a table of 20,000 rows stays quick). */
export const MAX_TABLE_ROWS = 1000;

const num = (v: number | undefined): string => (v === undefined ? '' : formatNumber(v));

/** The per-function and per-line table: sortable by any column, filterable, keyboard-navigable. */
export class TableView implements PanelView {
  readonly element = el('section', { class: 'view table-view', role: 'tabpanel', id: 'panel-table', 'aria-labelledby': 'tab-table' });
  private readonly filter = el('input', { type: 'search', placeholder: 'filter: name, status:pruned …', 'aria-label': 'Filter rows' });
  private readonly which = el('select', { 'aria-label': 'Rows' });
  private readonly table = el('table', { class: 'grid' });
  private readonly note = el('p', { class: 'note', 'aria-live': 'polite' });
  private profile: Profile | undefined;
  private functions: FunctionRow[] = [];
  private lines: LineRow[] = [];
  private rowElements: HTMLTableRowElement[] = [];

  constructor(private readonly ctx: PanelContext) {
    this.which.append(el('option', { value: 'functions' }, 'Functions'), el('option', { value: 'lines' }, 'Lines'));
    this.which.value = ctx.state.tableView;
    const bar = el('div', { class: 'toolbar' });
    bar.append(labelled('Show ', this.which), labelled('Filter ', this.filter));
    const scroller = el('div', { class: 'scroller' });
    scroller.append(this.table);
    this.element.append(bar, this.note, scroller);
    this.which.addEventListener('change', () => {
      this.ctx.state.tableView = this.which.value === 'lines' ? 'lines' : 'functions';
      this.ctx.saveState();
      this.render();
    });
    this.filter.addEventListener('input', () => this.render());
    this.table.addEventListener('keydown', (e) => this.onKey(e));
  }

  setProfile(p: Profile): void {
    this.profile = p;
    this.functions = functionRows(p);
    this.lines = lineRows(p);
    this.render();
  }

  selectionChanged(fn: number | undefined): void {
    for (const tr of this.rowElements) tr.classList.toggle('selected', fn !== undefined && tr.dataset['fn'] === String(fn));
  }

  shown(): void {}

  /** Sorts by `key` (a second click on the same column flips the direction). */
  sortBy(key: string): void {
    const s = this.ctx.state.tableSort;
    this.ctx.state.tableSort = s.key === key ? { key, descending: !s.descending } : { key, descending: key !== 'name' && key !== 'path' && key !== 'function' };
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
        { key: 'share', title: 'Share', numeric: true, text: (r) => (r.share !== undefined ? formatShare(r.share) : '') },
        { key: 'bound', title: '±', numeric: false, text: (r) => r.bound },
      ] satisfies Column<LineRow>[];
    }
    return [
      { key: 'name', title: 'Function', numeric: false, text: (r) => r.name },
      { key: 'self', title: `Self (${unit})`, numeric: true, text: (r) => num(r.self) },
      { key: 'inclusive', title: `Inclusive (${unit})`, numeric: true, text: (r) => num(r.inclusive) },
      { key: 'share', title: 'Share', numeric: true, text: (r) => (r.share !== undefined ? formatShare(r.share) : '') },
      { key: 'calls', title: 'Calls', numeric: true, text: (r) => num(r.calls) },
      { key: 'min', title: 'Min', numeric: true, text: (r) => num(r.min) },
      { key: 'max', title: 'Max', numeric: true, text: (r) => num(r.max) },
      { key: 'mean', title: 'Mean', numeric: true, text: (r) => num(r.mean) },
      { key: 'bound', title: '±', numeric: false, text: (r) => r.bound },
      { key: 'status', title: 'Status', numeric: false, text: (r) => r.status },
      { key: 'provenance', title: 'Provenance', numeric: false, text: (r) => r.provenance },
    ] satisfies Column<FunctionRow>[];
  }

  render(): void {
    const { key, descending } = this.ctx.state.tableSort;
    const lines = this.ctx.state.tableView === 'lines';
    const columns = this.columns() as unknown as Column<FunctionRow | LineRow>[];
    const sortKey = columns.some((c) => c.key === key) ? key : lines ? 'self' : 'inclusive';
    const rows: Array<FunctionRow | LineRow> = lines ? sortRows(filterRows(this.lines, this.filter.value), sortKey, descending) : sortRows(filterRows(this.functions, this.filter.value), sortKey, descending);
    const head = el('thead');
    const hr = el('tr');
    for (const c of columns) {
      const th = el('th', { scope: 'col', 'aria-sort': c.key === sortKey ? (descending ? 'descending' : 'ascending') : 'none', class: c.numeric ? 'num' : '' });
      const button = el('button', { type: 'button', class: 'sort' }, c.title + (c.key === sortKey ? (descending ? ' ▼' : ' ▲') : ''));
      button.addEventListener('click', () => this.sortBy(c.key));
      th.append(button);
      hr.append(th);
    }
    head.append(hr);
    const body = el('tbody');
    this.rowElements = [];
    for (const r of rows.slice(0, MAX_TABLE_ROWS)) {
      const tr = el('tr', { tabindex: this.rowElements.length === 0 ? '0' : '-1' });
      if ('id' in r) tr.dataset['fn'] = String(r.id);
      for (const c of columns) tr.append(el('td', c.numeric ? { class: 'num' } : {}, c.text(r)));
      tr.addEventListener('click', () => this.activate(r));
      body.append(tr);
      this.rowElements.push(tr);
    }
    this.table.replaceChildren(head, body);
    this.note.textContent = rows.length > MAX_TABLE_ROWS ? `${formatNumber(rows.length)} rows; the first ${formatNumber(MAX_TABLE_ROWS)} are shown: filter to narrow.` : `${formatNumber(rows.length)} rows`;
  }

  private activate(r: FunctionRow | LineRow): void {
    if ('id' in r) this.ctx.select(r.id, true);
    else this.ctx.post({ type: 'openLocation', path: r.path, line: r.line });
  }

  private onKey(e: KeyboardEvent): void {
    const tr = (e.target as HTMLElement).closest('tr');
    if (!tr || !tr.parentElement || tr.parentElement.tagName !== 'TBODY') return;
    if (e.key === 'Enter') {
      tr.click();
      e.preventDefault();
    } else if (rovingFocus(this.rowElements, tr, e.key)) e.preventDefault();
  }
}
