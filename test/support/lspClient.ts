import { fork, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import {
  createProtocolConnection,
  IPCMessageReader,
  IPCMessageWriter,
  StreamMessageReader,
  StreamMessageWriter,
  type CodeLens,
  type Diagnostic,
  type Hover,
  type InlayHint,
  type ProtocolConnection,
  type PublishDiagnosticsParams,
} from 'vscode-languageserver-protocol/node';

/**
 * An LSP client for tests: the `vscode-languageserver-protocol` connection (the protocol layer of
 * VS Code's own language client) on the stdin/stdout of a server process, with the requests the
 * profile server answers.
 */
export class LspTestClient {
  private readonly diagnostics = new Map<string, Diagnostic[]>();
  private readonly logs: string[] = [];
  private readonly exited: Promise<number | null>;

  private constructor(
    child: ChildProcess,
    private readonly connection: ProtocolConnection,
  ) {
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    connection.onNotification('textDocument/publishDiagnostics', (p: PublishDiagnosticsParams) =>
      this.diagnostics.set(p.uri, p.diagnostics),
    );
    connection.onNotification('window/logMessage', (m: { message: string }) => this.logs.push(m.message));
    connection.listen();
  }

  /** Starts `command args…` in `root` on stdio and initializes it with `root` as the workspace folder. */
  static async start(
    command: string,
    args: string[],
    root: string,
    env: NodeJS.ProcessEnv,
    initializationOptions: unknown = {},
  ): Promise<LspTestClient> {
    const child = spawn(command, args, { cwd: root, env, stdio: ['pipe', 'pipe', 'pipe'] });
    const connection = createProtocolConnection(
      new StreamMessageReader(child.stdout!),
      new StreamMessageWriter(child.stdin!),
    );
    return LspTestClient.initialize(child, connection, root, initializationOptions);
  }

  /**
   * Forks a Node module with `--node-ipc`, as VS Code's language client does for
   * `TransportKind.ipc`, and talks to it over the IPC channel.
   */
  static async startIpc(
    module: string,
    root: string,
    env: NodeJS.ProcessEnv,
    initializationOptions: unknown = {},
  ): Promise<LspTestClient> {
    const child = fork(module, ['--node-ipc'], { cwd: root, env, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    const connection = createProtocolConnection(new IPCMessageReader(child), new IPCMessageWriter(child));
    return LspTestClient.initialize(child, connection, root, initializationOptions);
  }

  private static async initialize(
    child: ChildProcess,
    connection: ProtocolConnection,
    root: string,
    initializationOptions: unknown,
  ): Promise<LspTestClient> {
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const client = new LspTestClient(child, connection);
    try {
      await connection.sendRequest('initialize', {
        processId: process.pid,
        rootUri: pathToFileURL(root).href,
        workspaceFolders: [{ uri: pathToFileURL(root).href, name: 'workspace' }],
        capabilities: {},
        initializationOptions,
      });
    } catch (err) {
      throw new Error(
        `the language server did not initialize (${err instanceof Error ? err.message : String(err)}); ` +
          `its stderr: ${stderr}`,
      );
    }
    await connection.sendNotification('initialized', {});
    return client;
  }

  get log(): readonly string[] {
    return this.logs;
  }

  async open(path: string, languageId = 'c'): Promise<string> {
    const uri = pathToFileURL(path).href;
    await this.connection.sendNotification('textDocument/didOpen', {
      textDocument: { uri, languageId, version: 1, text: readFileSync(path, 'utf8') },
    });
    return uri;
  }

  /** Replaces the document's text (a change without a range), as a new version. */
  async replace(uri: string, version: number, text: string): Promise<void> {
    await this.connection.sendNotification('textDocument/didChange', {
      textDocument: { uri, version },
      contentChanges: [{ text }],
    });
  }

  /** Pushes settings, as editors do with `workspace/didChangeConfiguration`. */
  async configure(settings: unknown): Promise<void> {
    await this.connection.sendNotification('workspace/didChangeConfiguration', { settings });
  }

  /** Sends a notification of the server's own (`cyclelens/program`). */
  async notify(method: string, params: unknown): Promise<void> {
    await this.connection.sendNotification(method, params);
  }

  codeLenses(uri: string): Promise<CodeLens[]> {
    return this.connection.sendRequest('textDocument/codeLens', { textDocument: { uri } });
  }

  hover(uri: string, line: number, character = 0): Promise<Hover | null> {
    return this.connection.sendRequest('textDocument/hover', { textDocument: { uri }, position: { line, character } });
  }

  inlayHints(uri: string, startLine: number, endLine: number): Promise<InlayHint[] | null> {
    return this.connection.sendRequest('textDocument/inlayHint', {
      textDocument: { uri },
      range: { start: { line: startLine, character: 0 }, end: { line: endLine, character: 0 } },
    });
  }

  diagnosticsOf(uri: string): Diagnostic[] | undefined {
    return this.diagnostics.get(uri);
  }

  /** Polls `read` until `done` holds or `timeoutMs` passes; returns the last value read. */
  async until<T>(read: () => Promise<T> | T, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    let value = await read();
    while (!done(value) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      value = await read();
    }
    return value;
  }

  /** shutdown + exit, as an editor ends a server; resolves with the exit status. */
  async stop(): Promise<number | null> {
    await this.connection.sendRequest('shutdown');
    await this.connection.sendNotification('exit');
    const code = await this.exited;
    this.connection.dispose();
    return code;
  }
}
