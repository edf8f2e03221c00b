import * as vscode from 'vscode';
import type {
  CallGraphFunction,
  InjectResponse,
  InjectedMeasurementInfo,
  InjectedResult,
  InjectionTarget,
} from '../../common/dapCustom';
import { CustomEvents, CustomRequests } from '../../common/dapCustom';
import { customRequest } from '../../common/dapCustomClient';
import {
  passCountsOf,
  passFigures,
  passLines,
  passShare,
  passSummary,
  passUnit,
  programTotal,
  type PassUnit,
} from '../../core/analysis/passes';
import { distribution, histogramBars } from '../../core/analysis/statistics';
import type { SessionTracker } from '../debug/sessionTracker';
import { measurementLabel, warningNeedsAttention } from './injectedPresentation';

interface Live {
  info: InjectedMeasurementInfo;
  result?: InjectedResult;
  /** Share of the program's own run, fixed when its run ended. */
  share?: number;
}

/**
 * One measurement as the view lists it. `share`: of the program's own run; `ended`: the results
 * outlived their run, and how it ended; `key`: tells apart the entries of ended runs.
 */
export interface InjectedEntry {
  info: InjectedMeasurementInfo;
  result?: InjectedResult;
  share?: number;
  ended?: string;
  key?: number;
}

/** A measurement whose run ended or was reset: its last results stay, marked so. */
interface Ended extends Live {
  /** Ids of ended entries never collide with a live session's. */
  key: number;
  ended: string;
}

/**
 * Injected measurements of the active session, as the editor shows them: gutter markers at a
 * region's ends, the result at the end of its first line, a hover with the distribution, and
 * CodeLens "Measure" above functions. Results are read at every stop of the target. A saved
 * profile's figures are the profile language server's lenses (lsp/), drawn beside these.
 */
export class InjectedMeasurements implements vscode.CodeLensProvider, vscode.HoverProvider, vscode.Disposable {
  private live = new Map<number, Live>();
  private ended: Ended[] = [];
  private nextEndedKey = 1;
  private functions: CallGraphFunction[] = [];
  private pendingStart: { uri: vscode.Uri; line: number } | undefined;
  /** The status-bar hint that says how to finish the pending region: it lives exactly as long as the pending start. */
  private pendingHint: vscode.Disposable | undefined;
  private totalOfRun: number | undefined;
  private readonly codeLensChanged = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.codeLensChanged.event;
  private readonly resultsChanged = new vscode.EventEmitter<void>();
  /** Results were read or measurements added/removed (views refresh from this). */
  readonly onDidChangeResults = this.resultsChanged.event;
  private readonly subscriptions: vscode.Disposable[] = [];
  private readonly startMarker: vscode.TextEditorDecorationType;
  private readonly endMarker: vscode.TextEditorDecorationType;
  private readonly pendingMarker: vscode.TextEditorDecorationType;
  private readonly resultText: vscode.TextEditorDecorationType;

  constructor(
    private readonly tracker: SessionTracker,
    extensionUri: vscode.Uri,
    private readonly log: vscode.LogOutputChannel,
  ) {
    const icon = (name: string): vscode.Uri => vscode.Uri.joinPath(extensionUri, 'media', name);
    // Decoration types are created once and disposed with the extension.
    this.startMarker = vscode.window.createTextEditorDecorationType({
      gutterIconPath: icon('region-start.svg'),
      gutterIconSize: 'contain',
      overviewRulerColor: new vscode.ThemeColor('charts.orange'),
      overviewRulerLane: vscode.OverviewRulerLane.Left,
    });
    this.endMarker = vscode.window.createTextEditorDecorationType({
      gutterIconPath: icon('region-end.svg'),
      gutterIconSize: 'contain',
      overviewRulerColor: new vscode.ThemeColor('charts.orange'),
      overviewRulerLane: vscode.OverviewRulerLane.Left,
    });
    this.pendingMarker = vscode.window.createTextEditorDecorationType({
      gutterIconPath: icon('region-pending.svg'),
      gutterIconSize: 'contain',
      isWholeLine: true,
      backgroundColor: new vscode.ThemeColor('editor.rangeHighlightBackground'),
    });
    this.resultText = vscode.window.createTextEditorDecorationType({
      after: { margin: '0 0 0 2em', color: new vscode.ThemeColor('editorCodeLens.foreground'), fontStyle: 'italic' },
    });
    this.subscriptions.push(
      this.startMarker,
      this.endMarker,
      this.pendingMarker,
      this.resultText,
      this.codeLensChanged,
      this.resultsChanged,
      tracker.onDidStop(() => void this.refresh()),
      tracker.onDidChange(() => {
        if (!tracker.active) this.forgetSession();
        else void this.loadFunctions();
      }),
      vscode.window.onDidChangeVisibleTextEditors(() => this.decorate()),
      vscode.debug.onDidReceiveDebugSessionCustomEvent((e) => {
        if (e.session.id !== tracker.active?.id) return;
        if (e.event === CustomEvents.injectionsRemoved) {
          this.retire('from the run before the reset');
          this.changed();
        } else if (e.event === CustomEvents.injectionsApplied) {
          // A restart applied the measurements asked for before it again.
          for (const info of (e.body as InjectResponse).injected) this.live.set(info.id, { info });
          this.changed();
        }
      }),
    );
  }

  /** The live measurements, then those of ended runs (newest first), with `ended` saying which run. */
  all(): InjectedEntry[] {
    const live = [...this.live.values()].map((l) => {
      const share = l.result ? this.share(l.result) : undefined;
      return { ...l, ...(share !== undefined ? { share } : {}) };
    });
    return [...live, ...this.ended];
  }

  /** Drops the results of an ended run's measurement (they are the window's only copy). */
  forgetEnded(key: number): void {
    this.ended = this.ended.filter((e) => e.key !== key);
    this.changed();
  }

  /**
   * The live measurements leave (the run ended or was reset): their last results stay, marked as
   * from that run. One never read says so.
   */
  private retire(which: string): void {
    const at = new Date().toLocaleTimeString();
    const retired = [...this.live.values()].map((l): Ended => ({
      ...l,
      ...(l.result && this.share(l.result) !== undefined ? { share: this.share(l.result)! } : {}),
      key: this.nextEndedKey++,
      ended: l.result ? `${which} (ended ${at})` : `${which}: no result was read before it ended`,
    }));
    this.ended = [...retired, ...this.ended];
    this.live.clear();
  }

  // ---- user actions ------------------------------------------------------------------------------

  /** "Measure Region from Here": remembers the start until "… to Here" names the end. */
  markStart(uri: vscode.Uri, line: number): void {
    this.setPendingStart({ uri, line });
  }

  async markEnd(uri: vscode.Uri, line: number): Promise<void> {
    const start = this.pendingStart;
    if (!start || start.uri.toString() !== uri.toString()) {
      throw new Error('Choose "Measure Region from Here" on the first line of the region first (in the same file).');
    }
    if (line <= start.line)
      throw new Error(`The region's end (line ${line}) must come after its start (line ${start.line}).`);
    this.setPendingStart(undefined);
    await this.inject([{ start: { path: uri.fsPath, line: start.line }, end: { path: uri.fsPath, line } }]);
  }

  async measureFunction(name: string): Promise<void> {
    await this.inject([{ function: name }]);
  }

  async remove(id: number): Promise<void> {
    await customRequest(this.requireSession(), CustomRequests.removeInjections, { ids: [id] });
    this.live.delete(id);
    this.changed();
  }

  async removeAll(): Promise<void> {
    await customRequest(this.requireSession(), CustomRequests.removeInjections, {});
    this.live.clear();
    this.changed();
  }

  /** Reads every injected measurement's record from the target. */
  async refresh(): Promise<void> {
    const session = this.tracker.active;
    if (!session || this.live.size === 0) return;
    try {
      const { results, elapsed } = await customRequest(session, CustomRequests.injectedResults);
      this.totalOfRun = elapsed;
      for (const r of results) {
        const l = this.live.get(r.id);
        if (l) l.result = r;
      }
      this.changed();
    } catch {
      // The session ended between the stop and the request.
    }
  }

  private async inject(targets: InjectionTarget[]): Promise<void> {
    const r = await customRequest(this.requireSession(), CustomRequests.inject, { targets, callSitesIfTooShort: true });
    for (const info of r.injected) this.live.set(info.id, { info });
    this.changed();
    if (r.refused.length > 0) {
      void vscode.window.showWarningMessage(`CycleLens could not measure: ${r.refused.map((x) => x.reason).join(' ')}`);
    }
    for (const info of r.injected) {
      for (const w of info.warnings) {
        // Every warning is logged (under the adapter's own name for the measurement) and shown in
        // the hover; only one that changes what the figures mean interrupts the user.
        this.log.warn(`${info.name}: ${w.message}`);
        if (warningNeedsAttention(w))
          void vscode.window.showWarningMessage(`CycleLens: ${measurementLabel(info)}: ${w.message}`);
      }
    }
  }

  // ---- editor presentation -----------------------------------------------------------------------

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    // Cheap: the function list is loaded once per session; titles come from what is already read.
    if (!this.tracker.active) return [];
    const path = document.uri.fsPath;
    return this.functions
      .filter((f) => f.path === path && f.line !== undefined)
      .map((f) => {
        const line = definitionLine(document, f.name, f.line! - 1);
        const range = new vscode.Range(line, 0, line, 0);
        const measured = [...this.live.values()].find((l) => l.info.kind !== 'region' && l.info.name === f.name);
        if (measured) {
          return new vscode.CodeLens(range, {
            title: `$(pulse) ${this.summary(measured)}`,
            command: 'cyclelens.removeInjected',
            arguments: [measured.info.id],
            tooltip: 'Click to stop measuring this function',
          });
        }
        return new vscode.CodeLens(range, {
          title: 'Measure',
          command: 'cyclelens.measureFunction',
          arguments: [f.name],
          tooltip: `Inject a measurement into ${f.name}: it runs at full speed and every call is counted`,
        });
      });
  }

  provideHover(document: vscode.TextDocument, position: vscode.Position): vscode.Hover | undefined {
    const l = [...this.live.values()].find(
      (x) => x.info.source?.path === document.uri.fsPath && x.info.source.line - 1 === position.line,
    );
    if (!l) return undefined;
    const md = new vscode.MarkdownString();
    const label = measurementLabel(l.info);
    md.appendMarkdown(`**${escapeMarkdown(label)}** — ${l.result?.counter ?? l.info.counter}\n\n`);
    // The adapter's name carries the patch addresses, which the disassembly view shows.
    if (label !== l.info.name) md.appendMarkdown(`patched as ${escapeMarkdown(l.info.name)}\n\n`);
    const notes = l.info.warnings.map((w) => `- ${escapeMarkdown(w.message)}`).join('\n');
    const r = l.result;
    if (!r) {
      md.appendMarkdown('Injected: counting at full speed; results are read at the next stop.\n\n');
      if (notes) md.appendMarkdown(`${notes}\n`);
      return new vscode.Hover(md);
    }
    md.appendMarkdown(`calls ${r.calls} · passes ${r.passes}${r.untracked ? ` · untracked ${r.untracked}` : ''}\n\n`);
    const unit = unitOf(l.info, r);
    const f = passFigures(passCountsOf(r));
    for (const line of passLines(f, unit, this.share(r))) md.appendMarkdown(`${escapeMarkdown(line)}\n\n`);
    const d = f ? distribution(f.last) : undefined;
    if (d) md.appendCodeblock(histogramBars(d).join('\n'), 'text');
    if (notes) md.appendMarkdown(`\n${notes}\n`);
    return new vscode.Hover(md);
  }

  private decorate(): void {
    for (const editor of vscode.window.visibleTextEditors) {
      const path = editor.document.uri.fsPath;
      const starts: vscode.DecorationOptions[] = [];
      const ends: vscode.DecorationOptions[] = [];
      const texts: vscode.DecorationOptions[] = [];
      for (const l of this.live.values()) {
        const src = l.info.source;
        if (!src || src.path !== path) continue;
        const line = editor.document.lineAt(Math.min(src.line - 1, editor.document.lineCount - 1));
        starts.push({ range: line.range });
        if (src.endLine !== undefined)
          ends.push({ range: editor.document.lineAt(Math.min(src.endLine - 1, editor.document.lineCount - 1)).range });
        texts.push({
          range: new vscode.Range(line.range.end, line.range.end),
          renderOptions: { after: { contentText: this.summary(l) } },
        });
      }
      editor.setDecorations(this.startMarker, starts);
      editor.setDecorations(this.endMarker, ends);
      editor.setDecorations(this.resultText, texts);
      const pending =
        this.pendingStart && this.pendingStart.uri.toString() === editor.document.uri.toString()
          ? [editor.document.lineAt(this.pendingStart.line - 1).range]
          : [];
      editor.setDecorations(this.pendingMarker, pending);
    }
  }

  /** The one-line result: every figure from the same compensated passes (core/analysis/passes.ts). */
  private summary(l: Live): string {
    const r = l.result;
    if (!r) return 'measuring… (results at the next stop)';
    return passSummary(r.calls, passFigures(passCountsOf(r)), unitOf(l.info, r), this.share(r));
  }

  /** The share of the program's own run (payloads out), as a profile's rows form it. */
  private share(r: InjectedResult): number | undefined {
    const results = [...this.live.values()].flatMap((x) => (x.result ? [x.result] : []));
    const f = passFigures(passCountsOf(r));
    return f ? passShare(f.total, programTotal(this.totalOfRun, results)) : undefined;
  }

  private changed(): void {
    this.decorate();
    this.codeLensChanged.fire();
    this.resultsChanged.fire();
  }

  private async loadFunctions(): Promise<void> {
    const session = this.tracker.active;
    if (!session) return;
    try {
      this.functions = (await customRequest(session, CustomRequests.callGraph)).functions;
      this.codeLensChanged.fire();
    } catch {
      this.functions = [];
    }
  }

  /** Everything tied to a live session goes when it ends (patches are gone with it); results read stay. */
  private forgetSession(): void {
    if (this.live.size > 0) this.retire('from the ended run');
    this.functions = [];
    this.setPendingStart(undefined);
    this.totalOfRun = undefined;
    this.changed();
  }

  /** Sets or clears the pending region start, with its gutter marker and its status-bar hint. */
  private setPendingStart(start: { uri: vscode.Uri; line: number } | undefined): void {
    this.pendingStart = start;
    this.pendingHint?.dispose();
    this.pendingHint = start
      ? vscode.window.setStatusBarMessage(
          `CycleLens: region starts at line ${start.line}; choose "Measure Region to Here" on its last line.`,
        )
      : undefined;
    this.decorate();
  }

  private requireSession(): vscode.DebugSession {
    const session = this.tracker.active;
    if (!session)
      throw new Error('Start a CycleLens debug session first: measurements are injected into the running target.');
    return session;
  }

  dispose(): void {
    this.pendingHint?.dispose();
    for (const s of this.subscriptions) s.dispose();
  }
}

/** Markdown's own characters in a name or a message (`*`, `_`, `[` …) are text, not formatting. */
function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, '\\$&');
}

/**
 * The line table puts a function's entry address on its first statement; the lens belongs above
 * the definition, so look a little way up for the line that names the function.
 */
function definitionLine(document: vscode.TextDocument, name: string, entryLine: number): number {
  const pattern = new RegExp(`\\b${name.replace(/[^\w$]/g, '')}\\s*\\(`);
  for (let l = Math.min(entryLine, document.lineCount - 1); l >= Math.max(0, entryLine - 40); l--) {
    if (pattern.test(document.lineAt(l).text)) return l;
  }
  return Math.min(entryLine, document.lineCount - 1);
}

/** The unit of a measurement's counter: SysTick ticks are ticks, with their ratio when the target fixes it. */
function unitOf(info: InjectedMeasurementInfo, r: InjectedResult): PassUnit {
  const per = info.instructionsPerUnit;
  return passUnit(r.counter, undefined, per !== undefined ? { count: per, kind: 'instructions' } : undefined);
}
