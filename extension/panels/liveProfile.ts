import * as vscode from 'vscode';
import type { Profile } from '../../core/profile/model';
import type { LiveProfileState } from '../../common/webviewMessages';
import { DEBUG_TYPE } from '../debug/sessionTracker';

/** One picture of the live profile: what the panel shows of it. */
export interface LivePicture {
  profile: Profile;
  title: string;
  live: LiveProfileState;
}

/**
 * Where the panel reads the live profile from (the live hotspot overlay, extension/hotspots/): the
 * panel never reads sample events itself, so the overlay, its view and the panel show one profile.
 */
export interface LiveProfileSource {
  /**
   * The current run's newest picture; undefined when no run has one (none started, or turned off).
   * `fresh`: built from the counts as they are now (a panel opening on it), not the last rebuild's.
   */
  picture(fresh?: boolean): LivePicture | undefined;
  /** Whether a run is sampling now (its first picture may still be coming). */
  sampling(): boolean;
  /** A newer picture, or the run started or went (at most about once a second). */
  readonly onDidChange: vscode.Event<void>;
}

/** What the panel needs to show a live profile. */
export interface LivePanelHost {
  showLive(first: LivePicture, source: LiveProfileSource): void;
}

export const NO_LIVE_SAMPLING =
  'No live sampling is running, so there is no live profile to show: start a CycleLens debug ' +
  'session, run "CycleLens: Toggle Live Hotspots" (the flame in the debug toolbar), then ' +
  '"CycleLens: Show Live Profile".';
const TOGGLE = 'Toggle Live Hotspots';

/**
 * "CycleLens: Show Live Profile": the panel on the live profile, following it. Without sampling it
 * says what to start; while a run's first picture is still being built, the panel opens when it is.
 */
export function registerShowLiveProfile(panels: LivePanelHost, source: LiveProfileSource): vscode.Disposable {
  let waiting: vscode.Disposable | undefined;
  const openWhenReady = (): void => {
    waiting?.dispose();
    waiting = source.onDidChange(() => {
      const first = source.picture();
      if (first) panels.showLive(first, source);
      if (first || !source.sampling()) {
        waiting?.dispose();
        waiting = undefined;
      }
    });
  };
  const command = vscode.commands.registerCommand('cyclelens.showLiveProfile', async () => {
    const first = source.picture(source.sampling());
    if (first) {
      panels.showLive(first, source);
      return;
    }
    if (source.sampling()) {
      openWhenReady();
      return;
    }
    const session = vscode.debug.activeDebugSession?.type === DEBUG_TYPE;
    const choice = await vscode.window.showInformationMessage(NO_LIVE_SAMPLING, ...(session ? [TOGGLE] : []));
    if (choice !== TOGGLE) return;
    await vscode.commands.executeCommand('cyclelens.toggleHotspots');
    if (source.sampling()) openWhenReady();
  });
  return vscode.Disposable.from(command, { dispose: () => waiting?.dispose() });
}
