import type { Profile } from '../core/profile/model';
import type { HostToWebview, PanelState, PanelTab, WebviewToHost } from '../common/webviewMessages';
import { el } from './dom';
import { isUpdateOf, liveBanner, type ShownProfile } from './layout/live';
import type { PanelContext, PanelView } from './panelContext';
import { CallGraphView } from './views/callGraphView';
import { FlameView } from './views/flameView';
import { SourceView } from './views/sourceView';
import { TableView } from './views/tableView';

/** VS Code's handle to the host, typed to our messages and state. */
interface HostApi {
  postMessage(message: WebviewToHost): void;
  getState(): PanelState | undefined;
  setState(state: PanelState): void;
}
declare function acquireVsCodeApi(): HostApi;

const DEFAULT_STATE: PanelState = {
  tab: 'graph',
  search: '',
  depth: 0,
  collapseBelow: 0,
  tableSort: { key: 'inclusive', descending: true },
  tableView: 'functions',
};
const TABS: ReadonlyArray<{ tab: PanelTab; title: string }> = [
  { tab: 'graph', title: 'Call Graph' },
  { tab: 'flame', title: 'Flame Graph' },
  { tab: 'source', title: 'Source' },
  { tab: 'table', title: 'Table' },
];

/** The panel: four tabs over one profile, linked by one selection, talking to the host by messages. */
class ProfilePanel implements PanelContext {
  readonly state: PanelState;
  private profile: Profile | undefined;
  private readonly sources = new Map<string, { text?: string; problem?: string }>();
  private readonly asked = new Set<string>();
  private readonly views: Record<PanelTab, PanelView>;
  private readonly tabButtons = new Map<PanelTab, HTMLButtonElement>();
  /** Tabs that have not seen the latest profile yet, and whether all they missed were updates of what they drew. */
  private readonly stale = new Map<PanelTab, boolean>();
  private shown: ShownProfile | undefined;
  private readonly title = el('h1', { class: 'title' }, 'CycleLens profile');
  /** Live or not: changes rarely, so a screen reader hears it; the count beside it changes every second. */
  private readonly live = el('span', { class: 'live', role: 'status', hidden: '' });
  private readonly liveNote = el('p', { class: 'live-note', hidden: '' });
  readonly graph: CallGraphView;
  readonly flame: FlameView;
  readonly source: SourceView;
  readonly table: TableView;

  constructor(
    private readonly host: HostApi,
    root: HTMLElement,
    worker: Worker,
  ) {
    this.state = { ...DEFAULT_STATE, ...(host.getState() ?? {}) };
    this.graph = new CallGraphView(this, worker);
    this.flame = new FlameView(this);
    this.source = new SourceView(this);
    this.table = new TableView(this);
    this.views = { graph: this.graph, flame: this.flame, source: this.source, table: this.table };
    const header = el('header', { class: 'header' });
    header.append(this.title, this.live);
    const tablist = el('div', { role: 'tablist', class: 'tabs', 'aria-label': 'Profile views' });
    for (const t of TABS) {
      const b = el(
        'button',
        { type: 'button', role: 'tab', id: `tab-${t.tab}`, 'aria-controls': `panel-${t.tab}` },
        t.title,
      );
      b.addEventListener('click', () => this.showTab(t.tab));
      b.addEventListener('keydown', (e) => this.tabKey(e, t.tab));
      tablist.append(b);
      this.tabButtons.set(t.tab, b);
    }
    root.append(header, this.liveNote, tablist, ...TABS.map((t) => this.views[t.tab].element));
    this.showTab(this.state.tab);
    window.addEventListener('message', (e: MessageEvent<HostToWebview>) => this.receive(e.data));
    host.postMessage({ type: 'ready' });
  }

  post(message: WebviewToHost): void {
    this.host.postMessage(message);
  }

  saveState(): void {
    this.host.setState(this.state);
  }

  private selectedId(): number | undefined {
    return this.state.selected !== undefined
      ? this.profile?.functions.find((f) => f.name === this.state.selected)?.id
      : undefined;
  }

  select(fn: number | undefined, open: boolean, options: { keepFocus?: boolean } = {}): void {
    const f = fn !== undefined ? this.profile?.functions[fn] : undefined;
    if (f) this.state.selected = f.name;
    else delete this.state.selected;
    this.saveState();
    for (const t of TABS) if (!this.stale.has(t.tab)) this.views[t.tab].selectionChanged(f?.id);
    if (f && open) {
      this.post({ type: 'selectFunction', name: f.name });
      if (f.location)
        this.post({
          type: 'openLocation',
          path: f.location.path,
          line: f.location.line,
          ...(options.keepFocus ? { keepFocus: true } : {}),
        });
    }
  }

  sourceText(path: string): { text?: string; problem?: string } | undefined {
    const known = this.sources.get(path);
    if (known) return known;
    if (!this.asked.has(path)) {
      this.asked.add(path);
      this.post({ type: 'requestSource', path });
    }
    return undefined;
  }

  showTab(tab: PanelTab): void {
    this.state.tab = tab;
    this.saveState();
    for (const t of TABS) {
      const active = t.tab === tab;
      const b = this.tabButtons.get(t.tab)!;
      b.setAttribute('aria-selected', String(active));
      b.setAttribute('tabindex', active ? '0' : '-1');
      this.views[t.tab].element.hidden = !active;
    }
    if (tab !== 'source') this.source.hidden();
    const update = this.stale.get(tab);
    if (update !== undefined && this.profile) {
      this.stale.delete(tab);
      this.views[tab].setProfile(this.profile, update);
      this.views[tab].selectionChanged(this.selectedId());
    }
    this.views[tab].shown();
  }

  private tabKey(e: KeyboardEvent, tab: PanelTab): void {
    const i = TABS.findIndex((t) => t.tab === tab);
    const next =
      e.key === 'ArrowRight'
        ? TABS[(i + 1) % TABS.length]
        : e.key === 'ArrowLeft'
          ? TABS[(i + TABS.length - 1) % TABS.length]
          : undefined;
    if (!next) return;
    this.showTab(next.tab);
    this.tabButtons.get(next.tab)!.focus();
    e.preventDefault();
  }

  private showLive(message: ShownProfile): void {
    const banner = message.live ? liveBanner(message.profile, message.live) : undefined;
    this.live.hidden = this.liveNote.hidden = !banner;
    if (!banner) return;
    if (this.live.textContent !== banner.badge) this.live.textContent = banner.badge;
    this.live.classList.toggle('stopped', !banner.running);
    this.liveNote.textContent = banner.text;
  }

  private receive(message: HostToWebview): void {
    switch (message.type) {
      case 'profile': {
        const update = isUpdateOf(this.shown, message);
        this.shown = message;
        this.profile = message.profile;
        this.title.textContent = message.title;
        this.showLive(message);
        if (message.file !== undefined) this.state.file = message.file;
        else delete this.state.file;
        this.saveState();
        // Hidden tabs take the profile when shown: a live update or a 20,000-function profile
        // costs the visible tab only.
        for (const t of TABS) {
          if (t.tab === this.state.tab) this.views[t.tab].setProfile(message.profile, update);
          else this.stale.set(t.tab, update && (this.stale.get(t.tab) ?? true));
        }
        const selected = this.selectedId() ?? hottest(message.profile);
        this.select(selected, false);
        break;
      }
      case 'source':
        this.sources.set(message.path, {
          ...(message.text !== undefined ? { text: message.text } : {}),
          ...(message.problem !== undefined ? { problem: message.problem } : {}),
        });
        this.source.sourceArrived(message.path);
        break;
      case 'cursorFunction': {
        const f = message.name !== undefined ? this.profile?.functions.find((x) => x.name === message.name) : undefined;
        if (f && f.name !== this.state.selected) this.select(f.id, false);
        break;
      }
      case 'showTab':
        this.showTab(message.tab);
        break;
      default: {
        const unknown: never = message;
        this.post({ type: 'problem', message: `The panel got a message it does not know: ${JSON.stringify(unknown)}` });
      }
    }
  }
}

/** The function with the largest self value: what the panel selects first. */
function hottest(p: Profile): number | undefined {
  let best: number | undefined;
  let value = -1;
  for (const f of p.functions) {
    const v = f.self?.value ?? -1;
    if (v > value) {
      value = v;
      best = f.id;
    }
  }
  return best;
}

/**
 * A worker from our own script: a webview's resources are served from another origin than the page,
 * and `new Worker` accepts same-origin URLs only, so the script is fetched and started from a blob
 * (the CSP allows `worker-src blob:` for this, and `connect-src` the webview's own resources).
 */
async function startLayoutWorker(url: string): Promise<Worker> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`the layout worker script ${url} could not be loaded (${response.status})`);
  const blob = new Blob([await response.text()], { type: 'text/javascript' });
  return new Worker(URL.createObjectURL(blob));
}

async function main(): Promise<void> {
  const host = acquireVsCodeApi();
  const root = document.getElementById('app');
  const workerUrl = document.querySelector('meta[name="cyclelens-layout-worker"]')?.getAttribute('content');
  if (!root || !workerUrl) {
    host.postMessage({
      type: 'problem',
      message: 'The profile panel page is incomplete (no #app or worker address): rebuild CycleLens.',
    });
    return;
  }
  // Set once per page load: a test tells a redraw in place from a reloaded page by it.
  root.dataset['pageLoad'] = `${performance.timeOrigin}-${Math.random().toString(36).slice(2)}`;
  try {
    const panel = new ProfilePanel(host, root, await startLayoutWorker(workerUrl));
    // Tests and the bench reach the panel through this handle (the page has no other globals).
    (window as unknown as { cyclelensPanel: ProfilePanel }).cyclelensPanel = panel;
  } catch (err) {
    host.postMessage({ type: 'problem', message: err instanceof Error ? err.message : String(err) });
  }
}

void main();
