import * as vscode from 'vscode';
import type { CapabilitiesEventBody } from '../../common/dapCustom';
import { CustomEvents } from '../../common/dapCustom';
import { customEventBody } from '../../common/dapCustomClient';

export const DEBUG_TYPE = 'cyclelens';

/**
 * Follows CycleLens debug sessions: which one is active, what counters it has, and when its target
 * stops or runs (seen through a debug adapter tracker, so views refresh at every stop).
 */
export class SessionTracker implements vscode.Disposable {
  private readonly capabilities = new Map<string, CapabilitiesEventBody>();
  private readonly stoppedEmitter = new vscode.EventEmitter<vscode.DebugSession>();
  private readonly changedEmitter = new vscode.EventEmitter<void>();
  private readonly disposables: vscode.Disposable[] = [];
  /** Per session: the adapter's last 'important' lines (what died, how, its last output) and whether it ended. */
  private readonly endings = new Map<string, { important: string[]; ended: boolean }>();
  private readonly endedEmitter = new vscode.EventEmitter<string>();

  /** The target of a CycleLens session stopped (breakpoint, step, pause, measurement end). */
  readonly onDidStop = this.stoppedEmitter.event;
  /** Sessions started or ended, or capabilities arrived. */
  readonly onDidChange = this.changedEmitter.event;
  /** A CycleLens session ended (its adapter said `terminated`, exited, or VS Code ended it); the id. */
  readonly onDidEnd = this.endedEmitter.event;

  constructor() {
    this.disposables.push(
      vscode.debug.registerDebugAdapterTrackerFactory(DEBUG_TYPE, {
        createDebugAdapterTracker: (session) => ({
          onDidSendMessage: (m: { type?: string; event?: string; body?: { category?: string; output?: string } }) => {
            if (m.type !== 'event') return;
            if (m.event === 'stopped') this.stoppedEmitter.fire(session);
            else if (m.event === 'output' && m.body?.category === 'important' && m.body.output) {
              const e = this.ending(session.id);
              e.important = [...e.important, m.body.output.trimEnd()].slice(-3);
            } else if (m.event === 'terminated') this.markEnded(session.id);
          },
          onExit: () => this.markEnded(session.id),
        }),
      }),
      vscode.debug.onDidReceiveDebugSessionCustomEvent((e) => {
        const capabilities = customEventBody(e, CustomEvents.capabilities);
        if (e.session.type === DEBUG_TYPE && capabilities) {
          this.capabilities.set(e.session.id, capabilities);
          this.changedEmitter.fire();
        }
      }),
      vscode.debug.onDidTerminateDebugSession((s) => {
        this.markEnded(s.id);
        if (this.capabilities.delete(s.id)) this.changedEmitter.fire();
      }),
      vscode.debug.onDidChangeActiveDebugSession(() => this.changedEmitter.fire()),
      this.stoppedEmitter,
      this.changedEmitter,
      this.endedEmitter,
    );
  }

  private ending(id: string): { important: string[]; ended: boolean } {
    let e = this.endings.get(id);
    if (!e) {
      e = { important: [], ended: false };
      this.endings.set(id, e);
      // Only recent sessions are asked about: keep a few.
      for (const old of this.endings.keys()) if (this.endings.size > 8) this.endings.delete(old);
    }
    return e;
  }

  private markEnded(id: string): void {
    const e = this.ending(id);
    if (e.ended) return;
    e.ended = true;
    this.endedEmitter.fire(id);
  }

  /**
   * Settles when `session` ends (at once if it has), rejecting with `reason`; for racing work that
   * waits on the session's requests, which an ended session may never answer.
   */
  rejectWhenEnded(session: vscode.DebugSession, reason: () => Error): { ended: Promise<never>; dispose(): void } {
    let listener: vscode.Disposable | undefined;
    const ended = new Promise<never>((_, reject) => {
      if (this.ending(session.id).ended) return reject(reason());
      listener = this.endedEmitter.event((id) => {
        if (id === session.id) reject(reason());
      });
    });
    // Nobody may be waiting when it settles (the work finished first).
    ended.catch(() => undefined);
    return { ended, dispose: () => listener?.dispose() };
  }

  /**
   * How a session ended, in its adapter's words: waits up to `ms` for the end, since a request can
   * fail ("the debug session has ended") before the events that say why have arrived.
   */
  async endingOf(session: vscode.DebugSession, ms: number): Promise<{ ended: boolean; reason?: string }> {
    if (!this.ending(session.id).ended) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          listener.dispose();
          resolve();
        }, ms);
        const listener = this.endedEmitter.event((id) => {
          if (id !== session.id) return;
          clearTimeout(timer);
          listener.dispose();
          resolve();
        });
      });
    }
    const e = this.ending(session.id);
    return { ended: e.ended, ...(e.important.length > 0 ? { reason: e.important.join('\n') } : {}) };
  }

  /** The active CycleLens session, if the active session is one. */
  get active(): vscode.DebugSession | undefined {
    const s = vscode.debug.activeDebugSession;
    return s?.type === DEBUG_TYPE ? s : undefined;
  }

  capabilitiesOf(session: vscode.DebugSession): CapabilitiesEventBody | undefined {
    return this.capabilities.get(session.id);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
