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

  /** The target of a CycleLens session stopped (breakpoint, step, pause, measurement end). */
  readonly onDidStop = this.stoppedEmitter.event;
  /** Sessions started or ended, or capabilities arrived. */
  readonly onDidChange = this.changedEmitter.event;

  constructor() {
    this.disposables.push(
      vscode.debug.registerDebugAdapterTrackerFactory(DEBUG_TYPE, {
        createDebugAdapterTracker: (session) => ({
          onDidSendMessage: (m: { type?: string; event?: string }) => {
            if (m.type === 'event' && m.event === 'stopped') this.stoppedEmitter.fire(session);
          },
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
        if (this.capabilities.delete(s.id)) this.changedEmitter.fire();
      }),
      vscode.debug.onDidChangeActiveDebugSession(() => this.changedEmitter.fire()),
      this.stoppedEmitter,
      this.changedEmitter,
    );
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
