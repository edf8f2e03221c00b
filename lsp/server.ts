import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CodeLensRefreshRequest,
  DiagnosticSeverity,
  DidChangeConfigurationNotification,
  DidChangeWatchedFilesNotification,
  ErrorCodes,
  InlayHintRefreshRequest,
  MarkupKind,
  ResponseError,
  TextDocuments,
  TextDocumentSyncKind,
  type CodeLens,
  type CodeLensParams,
  type Hover,
  type HoverParams,
  type InlayHintParams,
  type Connection,
  type Diagnostic,
  type InitializeParams,
  type InlayHint,
} from 'vscode-languageserver';
import { TextDocument } from 'vscode-languageserver-textdocument';
import {
  DEFAULT_HOT_THRESHOLD,
  PROGRAM_NOTIFICATION,
  type ProfileServerSettings,
  type ProgramParams,
} from '../common/profileServer';
import type { ProfileFunction, ProfileLine } from '../core/profile/model';
import { linesOf, type LineSource } from './definitionLines';
import { functionHover, hotMessage, lensTitle, lineHintLabel, lineHover } from './presentation';
import { ProfileIndex, type PlacedFunction } from './profileIndex';
import { newestProfile, type LoadedProfile } from './profileSource';
import { expandSourceMap } from './sourcePaths';
import { ProfileWatcher } from './profileWatcher';

/**
 * The profile language server: the workspace's newest profile, served to any LSP editor as
 * CodeLens on profiled function definitions, hovers with every figure, inlay hints with line costs
 * and Information diagnostics on hot functions. It reads files and answers requests; it never
 * measures, so it needs neither the adapter nor a target.
 */
export function startProfileServer(connection: Connection): void {
  const documents = new TextDocuments(TextDocument);
  let root = process.cwd();
  let initial: ProfileServerSettings = {};
  let settings: ProfileServerSettings = {};
  let loaded: LoadedProfile | undefined;
  let index: ProfileIndex | undefined;
  let lastProblems = '';
  let canRefreshLenses = false;
  let canRefreshHints = false;
  let canPullConfiguration = false;
  let watcher: ProfileWatcher | undefined;
  /** The ELF the client debugs now (`cyclelens/program`): only its profiles are served. */
  let program: string | undefined;
  /**
   * Placements per document version, with the CodeLens and diagnostics they make: formed when the
   * document opens or changes (the diagnostics need them then), so a CodeLens request that follows
   * is a lookup. Titles and hot messages come formatted from the profile's load (rebuildIndex).
   */
  const placements = new Map<string, Placement>();

  const effective = (): Required<Pick<ProfileServerSettings, 'hotThreshold' | 'sourceMap' | 'codicons'>> &
    ProfileServerSettings => {
    // The editor's settings override the initial ones field by field; source maps join.
    const merged = { ...initial, ...settings, sourceMap: { ...initial.sourceMap, ...settings.sourceMap } };
    const threshold =
      typeof merged.hotThreshold === 'number' && Number.isFinite(merged.hotThreshold)
        ? merged.hotThreshold
        : DEFAULT_HOT_THRESHOLD;
    return {
      ...merged,
      hotThreshold: threshold,
      sourceMap: expandSourceMap(merged.sourceMap, root),
      codicons: merged.codicons === true,
    };
  };

  const placedIn = (doc: TextDocument): Placement | undefined => {
    const path = localPath(doc.uri);
    if (!index || path === undefined) return undefined;
    const cached = placements.get(doc.uri);
    if (cached && cached.version === doc.version) return cached;
    const lines = linesOf(doc.getText());
    const entry = placement(doc.version, lines, index.place(path, lines));
    placements.set(doc.uri, entry);
    return entry;
  };

  const placement = (version: number, lines: LineSource, placed: PlacedFunction[]): Placement => {
    const lenses: CodeLens[] = [];
    const diagnostics: Diagnostic[] = [];
    const byLine = new Map<number, PlacedFunction>();
    for (const p of placed) if (!byLine.has(p.line)) byLine.set(p.line, p);
    // A file of many profiled functions gets lenses on its hottest ones only: a client asks for
    // a whole document's lenses (CodeLens has no range), and 100k lenses were 15 MB per answer.
    const withLens = placed.filter((p) => titles.get(p.fn));
    const shown = withLens.length > MAX_LENSES ? hottest(withLens, MAX_LENSES) : withLens;
    for (const { fn, line } of shown)
      lenses.push({
        range: { start: { line, character: 0 }, end: { line, character: 0 } },
        command: { title: titles.get(fn)!, command: '' },
      });
    if (shown.length < withLens.length)
      lenses.push({
        range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } },
        command: {
          title:
            `CycleLens: lenses on the ${shown.length.toLocaleString('en-US')} hottest ` +
            `of the ${withLens.length.toLocaleString('en-US')} profiled functions in this file; ` +
            'hover a definition for its figures',
          command: '',
        },
      });
    const hot = placed.filter((p) => hotMessages.get(p.fn));
    for (const { fn, line } of hot.length > MAX_DIAGNOSTICS ? hottest(hot, MAX_DIAGNOSTICS) : hot)
      diagnostics.push({
        range: { start: { line, character: 0 }, end: { line, character: lines.line(line).length } },
        severity: DiagnosticSeverity.Information,
        source: 'cyclelens',
        code: 'hot-function',
        message: hotMessages.get(fn)!,
      });
    return { version, lines, placed, byLine, lenses, diagnostics };
  };

  const publishDiagnostics = (doc: TextDocument): void => {
    void connection.sendDiagnostics({ uri: doc.uri, diagnostics: placedIn(doc)?.diagnostics ?? [] });
  };

  /**
   * Diagnostics after an edit wait for typing to pause: each version of a large file costs a
   * placement, and a burst of edits needs only the last one (20 quick edits of a file of 100k
   * functions queued 20 placements, and the server stopped answering).
   */
  const pending = new Map<string, NodeJS.Timeout>();
  const publishSoon = (doc: TextDocument): void => {
    clearTimeout(pending.get(doc.uri));
    pending.set(
      doc.uri,
      setTimeout(() => {
        pending.delete(doc.uri);
        const current = documents.get(doc.uri);
        if (current) guarded('the diagnostics', publishDiagnostics)(current);
      }, EDIT_SETTLE_MS),
    );
  };

  const refreshAll = (): void => {
    placements.clear();
    for (const doc of documents.all()) publishDiagnostics(doc);
    if (canRefreshLenses) void connection.sendRequest(CodeLensRefreshRequest.type).catch(() => undefined);
    if (canRefreshHints) void connection.sendRequest(InlayHintRefreshRequest.type).catch(() => undefined);
  };

  /** Titles, hot messages and labels depend on the profile and the settings only: formatted once per reload. */
  let titles = new Map<ProfileFunction, string | undefined>();
  let hotMessages = new Map<ProfileFunction, string | undefined>();
  let hintLabels = new Map<ProfileLine, string>();
  const rebuildIndex = (): void => {
    placements.clear();
    index = loaded ? new ProfileIndex(loaded.profile, effective().sourceMap, root) : undefined;
    const style = { codicons: effective().codicons };
    const threshold = effective().hotThreshold;
    titles = new Map(loaded?.profile.functions.map((f) => [f, lensTitle(loaded!.profile, f, style)]) ?? []);
    hotMessages = new Map(loaded?.profile.functions.map((f) => [f, hotMessage(loaded!.profile, f, threshold)]) ?? []);
    hintLabels = new Map(loaded?.profile.lines.map((l) => [l, lineHintLabel(loaded!.profile, l)]) ?? []);
    // A rehearsal on the profile's largest file: V8 compiles functions when they first run, and the
    // first placement, CodeLens and answer would pay for it, on the request path of the first file
    // the user opens (measured: most of a cold CodeLens response; docs/benchmarks.md).
    const rehearsal = index?.rehearsal();
    if (rehearsal) JSON.stringify(placement(0, rehearsal.lines, rehearsal.placed));
  };

  const reload = async (): Promise<void> => {
    const explicit = effective().profile;
    const search = await newestProfile(root, explicit !== undefined ? resolve(root, explicit) : undefined, program);
    const problems = search.problems.join('\n');
    if (problems && problems !== lastProblems) connection.console.warn(`CycleLens profiles passed over:\n${problems}`);
    lastProblems = problems;
    const next = search.loaded;
    if (next?.file === loaded?.file && next?.mtimeMs === loaded?.mtimeMs) return;
    loaded = next;
    rebuildIndex();
    connection.console.info(
      loaded
        ? `CycleLens profile: ${loaded.file} (${loaded.profile.functions.length} functions)`
        : program !== undefined
          ? `CycleLens: no profile of ${program} in ${root}/.cyclelens`
          : `CycleLens: no profile in ${root}/.cyclelens yet`,
    );
    refreshAll();
  };

  const pullSettings = async (): Promise<void> => {
    if (!canPullConfiguration) return;
    try {
      const section: unknown = await connection.workspace.getConfiguration('cyclelens');
      settings = readSettings(section);
    } catch {
      // A client that declared configuration support but failed the request keeps the initial settings.
    }
  };

  connection.onInitialize((params: InitializeParams) => {
    const folder = params.workspaceFolders?.[0]?.uri ?? params.rootUri ?? undefined;
    const fromUri = folder ? localPath(folder) : undefined;
    root = fromUri ?? params.rootPath ?? process.cwd();
    initial = readSettings(params.initializationOptions);
    const caps = params.capabilities;
    canRefreshLenses = caps.workspace?.codeLens?.refreshSupport === true;
    canRefreshHints = caps.workspace?.inlayHint?.refreshSupport === true;
    canPullConfiguration = caps.workspace?.configuration === true;
    const watchesFiles = caps.workspace?.didChangeWatchedFiles?.dynamicRegistration === true;
    const listensConfig = caps.workspace?.didChangeConfiguration?.dynamicRegistration === true;
    connection.onInitialized(async () => {
      if (watchesFiles)
        void connection.client
          .register(DidChangeWatchedFilesNotification.type, { watchers: [{ globPattern: '**/.cyclelens/**/*.json' }] })
          .catch(() => undefined);
      if (listensConfig)
        void connection.client
          .register(DidChangeConfigurationNotification.type, { section: 'cyclelens' })
          .catch(() => undefined);
      await pullSettings();
      // The editor's file events cover most editors; fs.watch covers the others (and files written by the CLI).
      watcher = new ProfileWatcher(root, () => void reload());
      await reload();
    });
    return {
      capabilities: {
        textDocumentSync: TextDocumentSyncKind.Incremental,
        // Titles are formatted once per loaded profile (rebuildIndex): there is nothing to defer to a resolve.
        codeLensProvider: { resolveProvider: false },
        hoverProvider: true,
        inlayHintProvider: { resolveProvider: false },
      },
      serverInfo: { name: 'cyclelens-profile' },
    };
  });

  connection.onDidChangeWatchedFiles(() => watcher?.poke());
  connection.onNotification(PROGRAM_NOTIFICATION, async (params: ProgramParams | null | undefined) => {
    const next = typeof params?.executable === 'string' && params.executable !== '' ? params.executable : undefined;
    if (next === program) return;
    program = next;
    await reload();
  });
  connection.onDidChangeConfiguration(async (change) => {
    const pushed = (change.settings as { cyclelens?: unknown } | null | undefined)?.cyclelens;
    if (pushed !== undefined && pushed !== null) settings = readSettings(pushed);
    else await pullSettings();
    rebuildIndex();
    await reload();
    refreshAll();
  });

  /**
   * A handler that cannot throw at the client: messages are checked before they arrive
   * (messageChecks.ts), so an exception here is the server's own fault. The client gets an error
   * that says which request failed; the details go to the server's log, not into the reply.
   */
  const guarded =
    <P, R>(what: string, handler: (params: P) => R) =>
    (params: P): R | ResponseError<void> => {
      try {
        return handler(params);
      } catch (err) {
        connection.console.error(
          `CycleLens could not answer ${what}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
        );
        return new ResponseError(
          ErrorCodes.InternalError,
          `CycleLens could not answer ${what}: an internal error, described in the language server's log.`,
        );
      }
    };

  connection.onCodeLens(
    guarded('textDocument/codeLens', (params: CodeLensParams): CodeLens[] => {
      const doc = documents.get(params.textDocument.uri);
      return (doc && placedIn(doc)?.lenses) ?? [];
    }),
  );

  connection.onHover(
    guarded('textDocument/hover', (params: HoverParams): Hover | null => {
      const doc = documents.get(params.textDocument.uri);
      const here = doc && placedIn(doc);
      if (!doc || !here || !index) return null;
      const line = params.position.line;
      const fn = here.byLine.get(line);
      if (fn) return { contents: { kind: MarkupKind.Markdown, value: functionHover(index.profile, fn.fn) } };
      const path = localPath(doc.uri);
      const cost = path !== undefined ? index.linesIn(path, line + 1, line + 1)[0] : undefined;
      return cost ? { contents: { kind: MarkupKind.Markdown, value: lineHover(index.profile, cost) } } : null;
    }),
  );

  connection.languages.inlayHint.on(
    guarded('textDocument/inlayHint', (params: InlayHintParams): InlayHint[] => {
      const doc = documents.get(params.textDocument.uri);
      const path = doc && localPath(doc.uri);
      if (!doc || path === undefined || !index) return [];
      const hints: InlayHint[] = [];
      const lines = placedIn(doc)!.lines;
      // Only the range asked for (the lines the editor shows) is served.
      for (const cost of index.linesIn(path, params.range.start.line + 1, params.range.end.line + 1)) {
        const line = cost.line - 1;
        if (line >= lines.lineCount) continue;
        hints.push({
          position: { line, character: lines.line(line).length },
          label: hintLabels.get(cost) ?? lineHintLabel(index.profile, cost),
          paddingLeft: true,
        });
      }
      return hints;
    }),
  );

  // Fired on open as well as on every edit.
  documents.onDidChangeContent((e) => publishSoon(e.document));
  documents.onDidClose((e) => {
    clearTimeout(pending.get(e.document.uri));
    pending.delete(e.document.uri);
    placements.delete(e.document.uri);
    void connection.sendDiagnostics({ uri: e.document.uri, diagnostics: [] });
  });
  connection.onShutdown(() => watcher?.dispose());

  documents.listen(connection);
  connection.listen();
}

/** The most lenses one document gets (its hottest functions), and the most hot diagnostics. */
export const MAX_LENSES = 1000;
export const MAX_DIAGNOSTICS = 200;
/** How long after the last edit a document's diagnostics are formed again. */
const EDIT_SETTLE_MS = 200;

/** The `count` hottest of `placed` (by inclusive value, else self), in document order. */
function hottest(placed: PlacedFunction[], count: number): PlacedFunction[] {
  const weight = (p: PlacedFunction): number => p.fn.inclusive?.value ?? p.fn.self?.value ?? 0;
  return [...placed]
    .sort((a, b) => weight(b) - weight(a) || a.line - b.line)
    .slice(0, count)
    .sort((a, b) => a.line - b.line);
}

interface Placement {
  version: number;
  lines: LineSource;
  placed: PlacedFunction[];
  byLine: Map<number, PlacedFunction>;
  lenses: CodeLens[];
  diagnostics: Diagnostic[];
}

/** The file-system path of a `file:` URI; other schemes (untitled, remote) have no profile. */
function localPath(uri: string): string | undefined {
  if (!uri.startsWith('file:')) return undefined;
  try {
    return fileURLToPath(uri);
  } catch {
    return undefined;
  }
}

/** Settings as a client sends them: anything not of the expected type is left out (defaults apply). */
export function readSettings(value: unknown): ProfileServerSettings {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
  const v = value as Record<string, unknown>;
  const out: ProfileServerSettings = {};
  if (typeof v.hotThreshold === 'number' && Number.isFinite(v.hotThreshold) && v.hotThreshold >= 0)
    out.hotThreshold = v.hotThreshold;
  if (typeof v.codicons === 'boolean') out.codicons = v.codicons;
  if (typeof v.profile === 'string' && v.profile !== '') out.profile = v.profile;
  if (typeof v.sourceMap === 'object' && v.sourceMap !== null && !Array.isArray(v.sourceMap)) {
    out.sourceMap = Object.fromEntries(
      Object.entries(v.sourceMap as Record<string, unknown>).filter(
        (e): e is [string, string] => typeof e[1] === 'string',
      ),
    );
  }
  return out;
}
