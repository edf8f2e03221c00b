import * as vscode from 'vscode';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import type { Profile } from '../../core/profile/model';
import type { HostToWebview, LiveProfileState, PanelTab, WebviewToHost } from '../../common/webviewMessages';
import { resultsColumn, sourceColumn } from './editorColumns';
import { registerShowLiveProfile, type LivePicture, type LiveProfileSource } from './liveProfile';
import { newNonce, panelHtml } from './panelHtml';
import { functionAt, functionRanges, loadProfileFile, restorablePanel, resultSetOfReport } from './profileFiles';

/** One webview showing one profile, whether a panel of its own or a custom editor. */
class ProfileWebview implements vscode.Disposable {
  private profile: Profile;
  private title: string;
  private ranges: ReturnType<typeof functionRanges>;
  private ready = false;
  private live: LiveProfileState | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    readonly panel: vscode.WebviewPanel,
    extensionUri: vscode.Uri,
    profile: Profile,
    title: string,
    /** The tab a command asked for that the page has not been told yet (it is loading, or hidden). */
    private tab: PanelTab | undefined,
    private file: string | undefined,
    onDispose: () => void,
  ) {
    this.profile = profile;
    this.title = title;
    this.ranges = functionRanges(profile);
    const webview = panel.webview;
    const media = vscode.Uri.joinPath(extensionUri, 'media');
    const dist = vscode.Uri.joinPath(extensionUri, 'dist');
    webview.options = { enableScripts: true, localResourceRoots: [media, dist] };
    webview.html = panelHtml({
      cspSource: webview.cspSource,
      nonce: newNonce((n) => randomBytes(n)),
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(dist, 'webview.js')).toString(),
      workerUri: webview.asWebviewUri(vscode.Uri.joinPath(dist, 'webviewLayout.js')).toString(),
      styleUri: webview.asWebviewUri(vscode.Uri.joinPath(media, 'webview.css')).toString(),
      title,
    });
    this.disposables.push(
      webview.onDidReceiveMessage((m: WebviewToHost) => void this.receive(m)),
      // The page reloads when a hidden panel is shown again; it says `ready` and gets the profile anew.
      panel.onDidChangeViewState(() => {
        if (!panel.visible) this.ready = false;
      }),
      vscode.window.onDidChangeTextEditorSelection((e) => this.cursorMoved(e.textEditor)),
      panel.onDidDispose(() => {
        this.dispose();
        onDispose();
      }),
    );
  }

  /** A new profile (a live update, or another result set shown in the same panel). */
  update(profile: Profile, title: string, live: LiveProfileState | undefined, file: string | undefined): void {
    this.profile = profile;
    this.file = file;
    this.title = title;
    this.live = live;
    this.ranges = functionRanges(profile);
    this.panel.title = title;
    if (this.ready) this.post(this.profileMessage());
  }

  /**
   * Shows `tab`, now or when the page says `ready`: a request made while the page loads or is hidden
   * was once dropped, and the page then came up on the tab of an older request or its saved state.
   */
  showTab(tab: PanelTab): void {
    if (this.ready) {
      this.post({ type: 'showTab', tab });
      this.tab = undefined;
    } else this.tab = tab;
  }

  private profileMessage(): HostToWebview {
    return {
      type: 'profile',
      profile: this.profile,
      title: this.title,
      ...(this.live ? { live: this.live } : {}),
      ...(this.file !== undefined ? { file: this.file } : {}),
    };
  }

  private post(message: HostToWebview): void {
    void this.panel.webview.postMessage(message);
  }

  private async receive(message: WebviewToHost): Promise<void> {
    switch (message.type) {
      case 'ready':
        this.ready = true;
        this.post(this.profileMessage());
        // The tab last asked for, once: after hiding, the page comes back on the tab it saved itself.
        if (this.tab) this.post({ type: 'showTab', tab: this.tab });
        this.tab = undefined;
        return;
      case 'openLocation': {
        const uri = await sourceUri(message.path);
        if (!uri) {
          void vscode.window.showWarningMessage(
            `${message.path} is not on this machine or in the workspace: open the folder the firmware was built from.`,
          );
          return;
        }
        const line = Math.max(0, message.line - 1);
        await vscode.window.showTextDocument(uri, {
          viewColumn: sourceColumn(this.panel.viewColumn),
          selection: new vscode.Range(line, 0, line, 0),
          preserveFocus: message.keepFocus === true,
        });
        return;
      }
      case 'selectFunction':
        return;
      case 'requestSource': {
        const uri = await sourceUri(message.path);
        if (!uri) {
          this.post({
            type: 'source',
            path: message.path,
            problem:
              `${message.path} is not on this machine or in the workspace: open the folder the firmware ` +
              `was built from.`,
          });
          return;
        }
        try {
          this.post({
            type: 'source',
            path: message.path,
            text: (await vscode.workspace.openTextDocument(uri)).getText(),
          });
        } catch (err) {
          this.post({
            type: 'source',
            path: message.path,
            problem: `${message.path} could not be read: ${err instanceof Error ? err.message : String(err)}`,
          });
        }
        return;
      }
      case 'problem':
        void vscode.window.showErrorMessage(`CycleLens profile panel: ${message.message}`);
        return;
      default: {
        const unknown: never = message;
        void vscode.window.showErrorMessage(
          `CycleLens profile panel sent an unknown message: ${JSON.stringify(unknown)}`,
        );
      }
    }
  }

  private cursorMoved(editor: vscode.TextEditor): void {
    if (!this.ready || editor.document.uri.scheme !== 'file') return;
    const path = editor.document.uri.fsPath;
    const line = editor.selection.active.line + 1;
    // DWARF paths may name the file through another directory: fall back to the file name.
    const key = this.ranges.has(path) ? path : [...this.ranges.keys()].find((p) => basename(p) === basename(path));
    if (key === undefined) return;
    this.post({ type: 'cursorFunction', name: functionAt(this.ranges, key, line) });
  }

  dispose(): void {
    for (const d of this.disposables.splice(0)) d.dispose();
  }
}

/** A DWARF path as a file here: as written, else the workspace file with that name. */
async function sourceUri(path: string): Promise<vscode.Uri | undefined> {
  if (existsSync(path)) return vscode.Uri.file(path);
  const found = await vscode.workspace.findFiles(`**/${basename(path)}`, '**/node_modules/**', 1);
  return found[0];
}

/** The document behind the custom editor: the file; the profile is read when the editor opens. */
class ProfileDocument implements vscode.CustomDocument {
  constructor(readonly uri: vscode.Uri) {}
  dispose(): void {}
}

/**
 * The profile panel's host: one panel for saved result sets (the command palette, the end of a
 * descent), one for the live profile, and a custom editor for saved result sets and profile files.
 * The two panels are apart so that "Show Call Graph" never takes over the live profile (nor the
 * reverse); both open in the results group (editorColumns.ts), as tabs of one group.
 */
export class ProfilePanels implements vscode.CustomReadonlyEditorProvider<ProfileDocument>, vscode.Disposable {
  static readonly viewType = 'cyclelens.profile';
  static readonly editorViewType = 'cyclelens.profileEditor';
  private main: ProfileWebview | undefined;
  private live: ProfileWebview | undefined;
  private readonly editors = new Set<ProfileWebview>();
  /** While the live panel is open: the subscription to the live profile's newer pictures. */
  private following: vscode.Disposable | undefined;

  constructor(private readonly extensionUri: vscode.Uri) {}

  /** Shows `file` (a result set or profile) in the panel, on `tab`. */
  async showFile(file: vscode.Uri, tab: PanelTab): Promise<void> {
    try {
      const { profile, title } = await loadProfileFile(file.fsPath);
      this.show(profile, title, tab, file.fsPath);
    } catch (err) {
      void vscode.window.showErrorMessage(err instanceof Error ? err.message : String(err));
    }
  }

  show(profile: Profile, title: string, tab: PanelTab, file?: string): void {
    if (this.main) {
      this.main.update(profile, title, undefined, file);
      this.main.showTab(tab);
      // Where it is: revealing it "beside" moved it into a new group when its own was the active one.
      this.main.panel.reveal();
      return;
    }
    this.main = this.newPanel(profile, title, tab, file);
  }

  private newPanel(profile: Profile, title: string, tab: PanelTab, file: string | undefined): ProfileWebview {
    const panel = vscode.window.createWebviewPanel(ProfilePanels.viewType, title, resultsColumn(), {
      enableScripts: true,
    });
    return new ProfileWebview(panel, this.extensionUri, profile, title, tab, file, () => this.panelClosed(panel));
  }

  private panelClosed(panel: vscode.WebviewPanel): void {
    if (this.main?.panel === panel) this.main = undefined;
    if (this.live?.panel === panel) {
      this.live = undefined;
      this.stopFollowing();
    }
  }

  private stopFollowing(): void {
    this.following?.dispose();
    this.following = undefined;
  }

  /**
   * Shows the live profile in its panel and follows `source`: each newer picture (at most one a
   * second) redraws the page in place, which keeps its tab, selection, search, sort and zoom. When
   * the run goes (turned off), the last picture stays, marked as no longer live.
   */
  showLive(first: LivePicture, source: LiveProfileSource): void {
    this.stopFollowing();
    if (this.live) {
      this.live.update(first.profile, first.title, first.live, undefined);
      this.live.panel.reveal();
    } else {
      // Sampled profiles are flat (no stacks): the table of functions is where they read best.
      this.live = this.newPanel(first.profile, first.title, 'table', undefined);
      this.live.update(first.profile, first.title, first.live, undefined);
    }
    let last = first;
    this.following = source.onDidChange(() => {
      const next = source.picture();
      if (next) last = next;
      else if (last.live.running) last = { ...last, live: { ...last.live, running: false } };
      else return;
      this.live?.update(last.profile, last.title, last.live, undefined);
    });
  }

  /**
   * The panel after a window reload (VS Code's serializer): the file it showed, read again, on the
   * tab it was on; the webview gets its own saved state (selection, search, sort) back by itself.
   */
  async restore(panel: vscode.WebviewPanel, state: unknown): Promise<void> {
    const saved = restorablePanel(state);
    try {
      if (!saved)
        throw new Error(
          'This panel showed a live profile that was not saved, so there is nothing to reopen: run ' +
            '"CycleLens: Show Live Profile" while sampling, or "CycleLens: Show Call Graph" on a saved ' +
            'result set.',
        );
      const { profile, title } = await loadProfileFile(saved.file);
      panel.title = title;
      if (this.main) this.main.panel.dispose();
      this.main = new ProfileWebview(panel, this.extensionUri, profile, title, saved.tab, saved.file, () =>
        this.panelClosed(panel),
      );
    } catch (err) {
      showProblemPage(panel, err instanceof Error ? err.message : String(err));
    }
  }

  openCustomDocument(uri: vscode.Uri): ProfileDocument {
    return new ProfileDocument(uri);
  }

  async resolveCustomEditor(document: ProfileDocument, panel: vscode.WebviewPanel): Promise<void> {
    try {
      const { profile, title } = await loadProfileFile(document.uri.fsPath);
      const view = new ProfileWebview(panel, this.extensionUri, profile, title, undefined, undefined, () =>
        this.editors.delete(view),
      );
      this.editors.add(view);
    } catch (err) {
      showProblemPage(panel, err instanceof Error ? err.message : String(err));
    }
  }

  dispose(): void {
    this.stopFollowing();
    this.main?.panel.dispose();
    this.live?.panel.dispose();
    for (const e of this.editors) e.panel.dispose();
  }
}

/** A page saying why there is no profile to show instead of a blank one; the text is escaped into it. */
function showProblemPage(panel: vscode.WebviewPanel, message: string): void {
  const text = message.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  panel.webview.options = { enableScripts: false };
  panel.webview.html =
    `<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" ` +
    `content="default-src 'none'"></head><body><p>${text}</p></body></html>`;
}

/** The result sets saved in the workspace, newest first. */
async function savedResultSets(): Promise<vscode.Uri[]> {
  const files = await vscode.workspace.findFiles('**/.cyclelens/results/*.json', '**/node_modules/**');
  const stats = await Promise.all(files.map(async (f) => ({ f, mtime: (await vscode.workspace.fs.stat(f)).mtime })));
  return stats.sort((a, b) => b.mtime - a.mtime).map((s) => s.f);
}

/** The panel's commands and the custom editor, registered once. */
export function registerProfilePanels(context: vscode.ExtensionContext, live: LiveProfileSource): vscode.Disposable[] {
  const panels = new ProfilePanels(context.extensionUri);
  const open =
    (tab: PanelTab) =>
    async (file?: vscode.Uri): Promise<void> => {
      let target = file instanceof vscode.Uri ? file : undefined;
      if (!target) {
        const files = await savedResultSets();
        if (files.length === 0) {
          void vscode.window.showInformationMessage(
            'No saved result set in this workspace: run "Where Do My Cycles Go?" or "Exact Full Profile" first.',
          );
          return;
        }
        const picked =
          files.length === 1
            ? { uri: files[0]! }
            : await vscode.window.showQuickPick(
                files.map((uri, i) => ({
                  label: basename(uri.fsPath),
                  description: i === 0 ? 'latest' : vscode.workspace.asRelativePath(uri),
                  uri,
                })),
                { title: 'Show which result set?' },
              );
        if (!picked) return;
        target = picked.uri;
      }
      await panels.showFile(target, tab);
    };
  return [
    panels,
    vscode.commands.registerCommand('cyclelens.showCallGraph', open('graph')),
    vscode.commands.registerCommand('cyclelens.showFlameGraph', open('flame')),
    registerShowLiveProfile(panels, live),
    vscode.window.registerCustomEditorProvider(ProfilePanels.editorViewType, panels, {
      webviewOptions: { retainContextWhenHidden: false },
      supportsMultipleEditorsPerDocument: true,
    }),
    vscode.window.registerWebviewPanelSerializer(ProfilePanels.viewType, {
      deserializeWebviewPanel: (panel, state: unknown) => panels.restore(panel, state),
    }),
    // "Open Call Graph" inside a descent's or profile's saved text report, above its first line.
    vscode.languages.registerCodeLensProvider(
      { scheme: 'file', pattern: '**/.cyclelens/results/*.txt' },
      new ReportLenses(),
    ),
  ];
}

/** The report's lenses: the call graph and flame graph of the result set saved beside it. */
class ReportLenses implements vscode.CodeLensProvider {
  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    const resultSet = resultSetOfReport(document.uri.fsPath);
    if (!resultSet || !existsSync(resultSet)) return [];
    const top = new vscode.Range(0, 0, 0, 0);
    const file = vscode.Uri.file(resultSet);
    return [
      new vscode.CodeLens(top, {
        title: 'Open Call Graph',
        command: 'cyclelens.showCallGraph',
        arguments: [file],
        tooltip: `The annotated call graph of ${basename(resultSet)}`,
      }),
      new vscode.CodeLens(top, {
        title: 'Open Flame Graph',
        command: 'cyclelens.showFlameGraph',
        arguments: [file],
        tooltip: `The flame graph of ${basename(resultSet)}`,
      }),
    ];
  }
}
