import * as vscode from 'vscode';
import type { CodeLocation, MeasurementResponse } from '../../common/dapCustom';
import { CustomRequests } from '../../common/dapCustom';
import { customRequest } from '../../common/dapCustomClient';
import type { MeasurementKind, MeasurementStore, SourceAnchor } from '../../core/analysis/measurements';
import { formatCount } from '../../core/analysis/statistics';
import { passUnit } from '../../core/analysis/passes';
import type { SessionTracker } from '../debug/sessionTracker';
import type { CountersView } from '../views/countersView';
import { counterPickItems } from './counterPicks';

/** Commands that configure counters and take measurements between two points. */
export function registerCounterCommands(
  tracker: SessionTracker,
  counters: CountersView,
  store: MeasurementStore,
): vscode.Disposable[] {
  const withSession = async (action: (session: vscode.DebugSession) => Promise<void>): Promise<void> => {
    const session = tracker.active;
    if (!session) {
      const choice = await vscode.window.showErrorMessage(
        "No CycleLens debug session is active. Start one to use the target's counters.",
        'Start Debugging',
      );
      if (choice) await vscode.commands.executeCommand('workbench.action.debug.start');
      return;
    }
    try {
      await action(session);
    } catch (err) {
      void vscode.window.showErrorMessage(err instanceof Error ? err.message : String(err));
    }
  };

  return [
    vscode.commands.registerCommand('cyclelens.configureCounters', () =>
      withSession(async (session) => {
        const [{ events }, { units }] = await Promise.all([
          customRequest(session, CustomRequests.events),
          customRequest(session, CustomRequests.counters),
        ]);
        if (events.length === 0) {
          void vscode.window.showWarningMessage(
            `This target has no usable counters. ${units.map((u) => `${u.unit}: ${u.note ?? 'absent'}`).join(' ')}`,
          );
          return;
        }
        const picked = await vscode.window.showQuickPick(counterPickItems(events, units), {
          canPickMany: true,
          title: 'Events to count',
          placeHolder: 'Pick the events to count; each needs a free counter slot',
        });
        if (!picked || picked.length === 0) return;
        await customRequest(session, CustomRequests.configure, { events: [...new Set(picked.map((p) => p.id))] });
        counters.forgetValues();
        await counters.refresh(true);
      }),
    ),
    vscode.commands.registerCommand('cyclelens.resetCounters', () =>
      withSession(async (session) => {
        await customRequest(session, CustomRequests.reset);
        counters.forgetValues();
        await counters.refresh(true);
      }),
    ),
    vscode.commands.registerCommand('cyclelens.measureToCursor', () =>
      withSession(async (session) => {
        const editor = vscode.window.activeTextEditor;
        if (!editor) throw new Error('Place the cursor on the line to measure to.');
        const line = editor.selection.active.line + 1;
        const to: CodeLocation = { path: editor.document.uri.fsPath, line };
        const r = await runWithProgress(`Measuring to line ${line}…`, () =>
          customRequest(session, CustomRequests.measureTo, { to }),
        );
        record(store, 'to-cursor', `to ${basename(to.path)}:${line}`, { path: to.path, line }, r);
      }),
    ),
    vscode.commands.registerCommand('cyclelens.measureSelection', () =>
      withSession(async (session) => {
        const editor = vscode.window.activeTextEditor;
        if (!editor || editor.selection.isSingleLine)
          throw new Error('Select the lines of the region: from its first line to the line where it ends.');
        const path = editor.document.uri.fsPath;
        const startLine = editor.selection.start.line + 1;
        const endLine = editor.selection.end.line + 1;
        const answer = await vscode.window.showInputBox({
          title: 'Passes to measure',
          value: '10',
          validateInput: (v) => (/^[1-9]\d*$/.test(v) ? undefined : 'A whole number ≥ 1'),
        });
        if (!answer) return;
        const passes = Number(answer);
        const r = await runWithProgress(`Measuring lines ${startLine}–${endLine} over ${passes} passes…`, () =>
          customRequest(session, CustomRequests.measureRange, {
            start: { path, line: startLine },
            end: { path, line: endLine },
            passes,
          }),
        );
        record(
          store,
          'breakpoint-range',
          `${basename(path)}:${startLine}–${endLine}`,
          { path, line: startLine, endLine },
          r,
        );
      }),
    ),
    vscode.commands.registerCommand('cyclelens.clearMeasurements', () => store.clear()),
  ];
}

function record(
  store: MeasurementStore,
  kind: MeasurementKind,
  label: string,
  anchor: SourceAnchor,
  r: MeasurementResponse,
): void {
  const rec = store.add(kind, label, anchor, r);
  const first = rec.series[0]?.distribution;
  const summary = first
    ? `${label}: ${formatCount(first.mean)} ${passUnit(rec.series[0]!.unit, rec.series[0]!.event).label} ` +
      `per pass (${first.count} pass${first.count === 1 ? '' : 'es'})`
    : `${label}: no complete pass`;
  if (r.incomplete) void vscode.window.showWarningMessage(`${summary}. ${r.incomplete}`);
  else void vscode.window.showInformationMessage(summary);
}

function runWithProgress<T>(title: string, work: () => Promise<T>): Thenable<T> {
  return vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title }, work);
}

function basename(p: string): string {
  return p.split(/[\\/]/).pop() ?? p;
}
