import * as vscode from 'vscode';
import { basename } from 'node:path';
import type { SamplerId } from '../../common/dapCustom';
import { CustomRequests } from '../../common/dapCustom';
import { customRequest } from '../../common/dapCustomClient';
import { DEBUG_TYPE } from '../debug/sessionTracker';
import type { LiveProfileSource } from '../panels/liveProfile';
import { HotspotsView } from './hotspotsView';
import { LiveHotspots } from './liveHotspots';

function activeSession(): vscode.DebugSession | undefined {
  const s = vscode.debug.activeDebugSession;
  return s?.type === DEBUG_TYPE ? s : undefined;
}

/** The overlay's run as the profile panel reads it: its profile, which sampler, and whether it still samples. */
export function liveProfileSource(live: LiveHotspots): LiveProfileSource {
  return {
    picture: (fresh) => {
      const run = live.current;
      const profile = fresh ? live.profileNow() : run?.profile;
      if (!run || !profile) return undefined;
      return {
        profile,
        title: `Live profile: ${basename(profile.program.executable) || run.session.name}`,
        live: { running: run.running, ...(run.sampler ? { samplerLabel: run.sampler.label } : {}) },
      };
    },
    sampling: () => live.current?.running === true,
    onDidChange: live.onDidChange,
  };
}

/** The live hotspot overlay, its view and commands (Command Palette and the debug toolbar). */
export function registerLiveHotspots(live: LiveHotspots): vscode.Disposable[] {
  const view = new HotspotsView(live);
  // "Show Live Profile" joins the debug toolbar while the overlay samples.
  const sampling = (): void =>
    void vscode.commands.executeCommand('setContext', 'cyclelens.liveSampling', live.current?.running === true);
  const start = async (sampler?: SamplerId): Promise<void> => {
    const session = activeSession();
    if (!session) {
      void vscode.window.showWarningMessage('Live hotspots need a running CycleLens debug session: start one first.');
      return;
    }
    const configured = vscode.workspace
      .getConfiguration('cyclelens')
      .get<SamplerId | 'auto'>('hotspots.sampler', 'auto');
    try {
      await live.start(session, sampler ?? (configured === 'auto' ? undefined : configured));
    } catch (err) {
      void vscode.window.showErrorMessage(
        `Could not start live hotspots: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
  };
  return [
    live,
    view,
    live.onDidChange(sampling),
    vscode.window.registerTreeDataProvider('cyclelens.hotspots', view),
    vscode.commands.registerCommand('cyclelens.toggleHotspots', async () => {
      const current = live.current;
      const session = activeSession();
      // The overlay of an ended (or another) session is only its last picture: in a new session the
      // toggle starts sampling there instead of merely clearing that picture. Without a session
      // (the status-bar item's click) it clears it.
      if (current && (!session || current.session.id === session.id)) {
        await live.stop();
        return;
      }
      if (current) await live.stop();
      await start();
    }),
    vscode.commands.registerCommand('cyclelens.startHotspotsWith', async () => {
      const session = activeSession();
      if (!session) return;
      const { samplers } = await customRequest(session, CustomRequests.samplers);
      const pick = await vscode.window.showQuickPick(
        samplers.map((s) => ({
          label: s.label,
          description: s.available ? `${s.attribution}${s.halting ? ', halts per sample' : ''}` : `needs ${s.needs}`,
          id: s.id,
          detail: s.accuracy,
          available: s.available,
        })),
        { title: 'Live hotspots: sampler' },
      );
      if (!pick) return;
      if (!pick.available) {
        void vscode.window.showWarningMessage(`${pick.label} ${pick.description}.`);
        return;
      }
      if (live.current) await live.stop();
      await start(pick.id);
    }),
  ];
}
