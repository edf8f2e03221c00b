import * as vscode from 'vscode';
import type { SamplerId } from '../../common/dapCustom';
import { CustomRequests } from '../../common/dapCustom';
import { customRequest } from '../../common/dapCustomClient';
import { DEBUG_TYPE } from '../debug/sessionTracker';
import { HotspotsView } from './hotspotsView';
import { LiveHotspots } from './liveHotspots';

function activeSession(): vscode.DebugSession | undefined {
  const s = vscode.debug.activeDebugSession;
  return s?.type === DEBUG_TYPE ? s : undefined;
}

/** The live hotspot overlay, its view and commands (Command Palette and the debug toolbar). */
export function registerLiveHotspots(): vscode.Disposable[] {
  const live = new LiveHotspots();
  const view = new HotspotsView(live);
  const start = async (sampler?: SamplerId): Promise<void> => {
    const session = activeSession();
    if (!session) {
      void vscode.window.showWarningMessage('Live hotspots need a running CycleLens debug session: start one first.');
      return;
    }
    const configured = vscode.workspace.getConfiguration('cyclelens').get<SamplerId | 'auto'>('hotspots.sampler', 'auto');
    try {
      await live.start(session, sampler ?? (configured === 'auto' ? undefined : configured));
    } catch (err) {
      void vscode.window.showErrorMessage(`Could not start live hotspots: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  return [
    live,
    view,
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
