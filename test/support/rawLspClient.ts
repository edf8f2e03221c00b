import { spawn, type ChildProcess } from 'node:child_process';

/**
 * A language-server client that writes raw bytes to the server's stdin and reads its framed
 * replies, with a framing parser of its own (not the protocol library's): the tool for sending what
 * no well-behaved client would (bad headers, bodies that are not JSON, params of the wrong type).
 */
export class RawLspClient {
  readonly messages: Array<Record<string, unknown>> = [];
  private pending = Buffer.alloc(0);
  private stderrText = '';
  private exitCode: number | null | undefined;
  private nextId = 1;
  readonly exited: Promise<number | null>;

  private constructor(readonly child: ChildProcess) {
    this.exited = new Promise((resolve) =>
      child.once('exit', (code) => {
        this.exitCode = code;
        resolve(code);
      }),
    );
    child.stdout!.on('data', (d: Buffer) => this.read(d));
    child.stderr!.on('data', (d: Buffer) => (this.stderrText += d.toString()));
  }

  static start(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): RawLspClient {
    return new RawLspClient(spawn(command, args, { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] }));
  }

  get stderr(): string {
    return this.stderrText;
  }

  /** undefined while the server runs, else its exit code. */
  get exitStatus(): number | null | undefined {
    return this.exitCode;
  }

  private read(data: Buffer): void {
    this.pending = Buffer.concat([this.pending, data]);
    for (;;) {
      const end = this.pending.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = /Content-Length: (\d+)/i.exec(this.pending.subarray(0, end).toString('ascii'));
      if (!length) throw new Error(`the server wrote a frame without Content-Length: ${this.pending.toString()}`);
      const size = Number(length[1]);
      if (this.pending.length < end + 4 + size) return;
      const body = this.pending.subarray(end + 4, end + 4 + size).toString('utf8');
      this.pending = this.pending.subarray(end + 4 + size);
      const message = JSON.parse(body) as Record<string, unknown>;
      this.messages.push(message);
      // Answer the server's own requests (configuration, refresh) as an editor would.
      if (typeof message.method === 'string' && message.id !== undefined)
        this.send({
          jsonrpc: '2.0',
          id: message.id,
          result: message.method === 'workspace/configuration' ? [{}] : null,
        });
    }
  }

  /** Writes bytes as they are. */
  raw(bytes: string | Buffer): void {
    this.child.stdin!.write(bytes);
  }

  /** Writes one well-framed message (its body is whatever JSON `body` is). */
  send(body: unknown): void {
    const text = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body), 'utf8');
    this.raw(Buffer.concat([Buffer.from(`Content-Length: ${text.length}\r\n\r\n`, 'ascii'), text]));
  }

  /** Sends a request and resolves with its response (result or error). */
  async request(method: string, params: unknown, timeoutMs = 20_000): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    this.send({ jsonrpc: '2.0', id, method, params });
    return this.waitFor((m) => m.id === id && !('method' in m), `the reply to ${method} (id ${id})`, timeoutMs);
  }

  notify(method: string, params: unknown): void {
    this.send({ jsonrpc: '2.0', method, params });
  }

  /** The first message from `from` on (an index into `messages`) that `match` accepts. */
  async waitFor(
    match: (m: Record<string, unknown>) => boolean,
    what: string,
    timeoutMs = 20_000,
    from = 0,
  ): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.messages.slice(from).find(match);
      if (found) return found;
      if (this.exitCode !== undefined)
        throw new Error(`the server exited (${this.exitCode}) before ${what}; stderr: ${this.stderrText}`);
      if (Date.now() > deadline) throw new Error(`no ${what} within ${timeoutMs} ms; stderr: ${this.stderrText}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async initialize(root: string, initializationOptions: unknown = {}): Promise<void> {
    const { pathToFileURL } = await import('node:url');
    const reply = await this.request('initialize', {
      processId: process.pid,
      rootUri: pathToFileURL(root).href,
      workspaceFolders: [{ uri: pathToFileURL(root).href, name: 'workspace' }],
      capabilities: {},
      initializationOptions,
    });
    if (!reply.result) throw new Error(`initialize failed: ${JSON.stringify(reply)}`);
    this.notify('initialized', {});
  }

  /** shutdown then exit; resolves with the exit code. */
  async stop(): Promise<number | null> {
    if (this.exitCode !== undefined) return this.exitCode;
    await this.request('shutdown', null);
    this.notify('exit', null);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    const code = await this.exited;
    clearTimeout(timer);
    return code;
  }
}
