import * as vscode from 'vscode';
import {
  LanguageClient,
  TransportKind,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { PROGRAM_NOTIFICATION, type ProfileServerSettings, type ProgramParams } from '../../common/profileServer';
import { DEBUG_TYPE } from '../debug/sessionTracker';

/**
 * The profile language server (dist/lsp.js, lsp/ in the sources) started for the editor: it puts
 * the saved profile's figures on C, C++ and assembly sources (CodeLens, hover, line-cost inlay
 * hints, hot-function diagnostics), the same server `cyclelens lsp --stdio` runs for other editors.
 */
export function startProfileLanguageClient(
  context: vscode.ExtensionContext,
  log: vscode.LogOutputChannel,
): vscode.Disposable {
  const module = context.asAbsolutePath('dist/lsp.js');
  const run = { module, transport: TransportKind.ipc };
  const serverOptions: ServerOptions = { run, debug: run };
  const watcher = vscode.workspace.createFileSystemWatcher('**/.cyclelens/**/*.json');
  const clientOptions: LanguageClientOptions = {
    documentSelector: ['c', 'cpp', 'arm', 'asm'].map((language) => ({ scheme: 'file', language })),
    initializationOptions: initialSettings(),
    // The server re-reads its profile on these file events and the `cyclelens` settings on change.
    synchronize: { fileEvents: watcher, configurationSection: 'cyclelens' },
    outputChannel: log,
  };
  const client = new LanguageClient('cyclelens.profile', 'CycleLens Profile', serverOptions, clientOptions);
  // The program debugged now: the server serves only profiles made from it (cyclelens/program).
  const sessions = new Set<vscode.DebugSession>();
  let told: string | undefined;
  let started = false;
  const tell = (): void => {
    if (!started) return;
    const active = vscode.debug.activeDebugSession;
    const session = active?.type === DEBUG_TYPE && sessions.has(active) ? active : [...sessions].at(-1);
    const executable = session ? programOf(session) : undefined;
    if (executable === told) return;
    told = executable;
    const params: ProgramParams = executable !== undefined ? { executable } : {};
    void client.sendNotification(PROGRAM_NOTIFICATION, params).catch(() => undefined);
  };
  const tracking = [
    vscode.debug.onDidStartDebugSession((s) => {
      if (s.type !== DEBUG_TYPE) return;
      sessions.add(s);
      tell();
    }),
    vscode.debug.onDidTerminateDebugSession((s) => {
      if (sessions.delete(s)) tell();
    }),
    vscode.debug.onDidChangeActiveDebugSession(() => tell()),
  ];
  if (vscode.debug.activeDebugSession?.type === DEBUG_TYPE) sessions.add(vscode.debug.activeDebugSession);
  client.start().then(
    () => {
      started = true;
      tell();
    },
    (err: unknown) =>
      log.error(`the profile language server did not start: ${err instanceof Error ? err.message : String(err)}`),
  );
  return new vscode.Disposable(() => {
    watcher.dispose();
    for (const d of tracking) d.dispose();
    void client.stop().catch(() => undefined);
  });
}

/** The ELF a CycleLens session debugs, as its resolved launch configuration names it. */
function programOf(session: vscode.DebugSession): string | undefined {
  const executable: unknown = session.configuration['executable'];
  return typeof executable === 'string' && executable !== '' ? executable : undefined;
}

/**
 * VS Code draws codicons in lens titles. The source map joins the `cyclelens.sourceMap` setting and
 * the `sourceMap` of CycleLens launch configurations (the setting wins on a shared prefix).
 */
function initialSettings(): ProfileServerSettings {
  const configuration = vscode.workspace.getConfiguration('cyclelens');
  const launches = vscode.workspace.getConfiguration('launch').get<unknown[]>('configurations') ?? [];
  const sourceMap: Record<string, string> = {};
  for (const c of launches) {
    const map =
      (c as { type?: unknown; sourceMap?: unknown } | null)?.type === 'cyclelens'
        ? (c as { sourceMap?: unknown }).sourceMap
        : undefined;
    if (typeof map === 'object' && map !== null)
      for (const [from, to] of Object.entries(map)) if (typeof to === 'string') sourceMap[from] = to;
  }
  Object.assign(sourceMap, configuration.get<Record<string, string>>('sourceMap') ?? {});
  return { codicons: true, hotThreshold: configuration.get<number>('hotThreshold'), sourceMap };
}
