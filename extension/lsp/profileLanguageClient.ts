import * as vscode from 'vscode';
import {
  LanguageClient,
  TransportKind,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import type { ProfileServerSettings } from '../../common/profileServer';

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
  client
    .start()
    .catch((err: unknown) =>
      log.error(`the profile language server did not start: ${err instanceof Error ? err.message : String(err)}`),
    );
  return new vscode.Disposable(() => {
    watcher.dispose();
    void client.stop().catch(() => undefined);
  });
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
