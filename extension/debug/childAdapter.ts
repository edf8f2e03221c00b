import type { ChildProcess } from 'node:child_process';
import * as vscode from 'vscode';
import { DapFramer, encodeDapMessage } from '../../core/dap/dapClient';

/** What is kept of the adapter's stderr, to say why it ended if it ends unexpectedly. */
const STDERR_KEPT = 4096;
/** How long the adapter has to end after its session did (it stops its children first). */
const END_GRACE_MS = 5_000;

/**
 * A debug adapter process that this extension started (a spare handed its session, or one spawned
 * for it: core/dap/adapterSpare.ts), given to VS Code as an inline adapter: DAP messages are framed
 * onto its stdin and read off its stdout. It does what VS Code does for an adapter it spawns itself:
 * when the session ends the adapter's stdin closes (the adapter then stops what it started and
 * exits) and, if it is still there after a grace period, it is killed; and when the adapter ends on
 * its own before the session does, the session ends with the reason in the Debug Console.
 */
export class ChildDebugAdapter implements vscode.DebugAdapter {
  private readonly sent = new vscode.EventEmitter<vscode.DebugProtocolMessage>();
  readonly onDidSendMessage = this.sent.event;
  private readonly framer = new DapFramer();
  private stderr = '';
  private disposed = false;
  private terminatedSent = false;
  private seq = 1_000_000_000;

  constructor(
    private readonly child: ChildProcess,
    private readonly log: vscode.LogOutputChannel,
  ) {
    child.stdout!.on('data', (chunk: Buffer) => this.receive(chunk));
    child.stderr!.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      this.stderr = (this.stderr + text).slice(-STDERR_KEPT);
      this.log.debug(`debug adapter: ${text.trimEnd()}`);
    });
    child.stdin!.on('error', () => undefined);
    child.on('error', (err) => this.ended(`could not be started: ${err.message}`));
    child.on('exit', (code, signal) => this.ended(signal ? `was ended by ${signal}` : `exited with code ${code}`));
  }

  handleMessage(message: vscode.DebugProtocolMessage): void {
    const stdin = this.child.stdin;
    if (stdin && !stdin.destroyed && stdin.writable) stdin.write(encodeDapMessage(message));
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.child.stdin?.end();
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const kill = setTimeout(() => this.child.kill('SIGTERM'), END_GRACE_MS);
    kill.unref();
    this.child.once('exit', () => clearTimeout(kill));
  }

  private receive(chunk: Buffer): void {
    let messages;
    try {
      messages = this.framer.push(chunk);
    } catch (err) {
      // A stream that is not DAP cannot be resynchronised: end the session rather than guess.
      this.stderr += `\n${(err as Error).message}`;
      this.child.kill('SIGTERM');
      return;
    }
    for (const m of messages) {
      if (m.type === 'event' && m.event === 'terminated') this.terminatedSent = true;
      this.sent.fire(m as vscode.DebugProtocolMessage);
    }
  }

  /** The adapter is gone: unless the session ended first, end it and say why. */
  private ended(how: string): void {
    if (this.disposed || this.terminatedSent) return;
    this.terminatedSent = true;
    const tail = this.stderr.trim();
    const output = `The CycleLens debug adapter ${how}.${tail ? `\n${tail}` : ''}\n`;
    this.log.error(output.trimEnd());
    this.sent.fire({
      seq: this.seq++,
      type: 'event',
      event: 'output',
      body: { category: 'stderr', output },
    } as vscode.DebugProtocolMessage);
    this.sent.fire({ seq: this.seq++, type: 'event', event: 'terminated', body: {} } as vscode.DebugProtocolMessage);
  }
}
