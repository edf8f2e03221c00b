import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CodeLensRefreshRequest,
  DiagnosticSeverity,
  DidChangeConfigurationNotification,
  DidChangeWatchedFilesNotification,
  InlayHintRefreshRequest,
  MarkupKind,
  TextDocuments,
  TextDocumentSyncKind,
  type CodeLens,
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
    for (const { fn, line } of placed) {
      const title = titles.get(fn);
      if (title)
        lenses.push({
          range: { start: { line, character: 0 }, end: { line, character: 0 } },
          command: { title, command: '' },
        });
      const message = hotMessages.get(fn);
      if (message)
        diagnostics.push({
          range: { start: { line, character: 0 }, end: { line, character: lines.line(line).length } },
          severity: DiagnosticSeverity.Information,
          source: 'cyclelens',
          code: 'hot-function',
          message,
        });
    }
    return { version, lines, placed, lenses, diagnostics };
  };

  const publishDiagnostics = (doc: TextDocument): void => {
    void connection.sendDiagnostics({ uri: doc.uri, diagnostics: placedIn(doc)?.diagnostics ?? [] });
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

  connection.onCodeLens((params): CodeLens[] => {
    const doc = documents.get(params.textDocument.uri);
    return (doc && placedIn(doc)?.lenses) ?? [];
  });

  connection.onHover((params) => {
    const doc = documents.get(params.textDocument.uri);
    const here = doc && placedIn(doc);
    if (!doc || !here || !index) return null;
    const line = params.position.line;
    const fn = here.placed.find((p) => p.line === line);
    if (fn) return { contents: { kind: MarkupKind.Markdown, value: functionHover(index.profile, fn.fn) } };
    const path = localPath(doc.uri);
    const cost = path !== undefined ? index.lines(path).find((l) => l.line - 1 === line) : undefined;
    return cost ? { contents: { kind: MarkupKind.Markdown, value: lineHover(index.profile, cost) } } : null;
  });

  connection.languages.inlayHint.on((params): InlayHint[] => {
    const doc = documents.get(params.textDocument.uri);
    const path = doc && localPath(doc.uri);
    if (!doc || path === undefined || !index) return [];
    const hints: InlayHint[] = [];
    const lines = placedIn(doc)!.lines;
    for (const cost of index.lines(path)) {
      const line = cost.line - 1;
      if (line < params.range.start.line || line > params.range.end.line || line >= lines.lineCount) continue;
      hints.push({
        position: { line, character: lines.line(line).length },
        label: hintLabels.get(cost) ?? lineHintLabel(index.profile, cost),
        paddingLeft: true,
      });
    }
    return hints;
  });

  // Fired on open as well as on every edit.
  documents.onDidChangeContent((e) => publishDiagnostics(e.document));
  documents.onDidClose((e) => {
    placements.delete(e.document.uri);
    void connection.sendDiagnostics({ uri: e.document.uri, diagnostics: [] });
  });
  connection.onShutdown(() => watcher?.dispose());

  documents.listen(connection);
  connection.listen();
}

interface Placement {
  version: number;
  lines: LineSource;
  placed: PlacedFunction[];
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
