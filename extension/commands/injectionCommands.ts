import * as vscode from 'vscode';
import type { InjectedMeasurements } from '../editor/injectedMeasurements';

/** The line-number context menu passes `{ lineNumber, uri }`; the command palette passes nothing. */
interface LineArgs {
  lineNumber?: number;
  uri?: vscode.Uri;
}

function lineOf(args: LineArgs | undefined): { uri: vscode.Uri; line: number } {
  if (args?.uri && args.lineNumber) return { uri: args.uri, line: args.lineNumber };
  const editor = vscode.window.activeTextEditor;
  if (!editor) throw new Error('Open the source file and put the cursor on the line first.');
  return { uri: editor.document.uri, line: editor.selection.active.line + 1 };
}

/** Commands of injected measurements: regions from the gutter, functions from CodeLens. */
export function registerInjectionCommands(injected: InjectedMeasurements): vscode.Disposable[] {
  const guarded =
    (fn: (...args: never[]) => Promise<void> | void) =>
    async (...args: never[]): Promise<void> => {
      try {
        await fn(...args);
      } catch (err) {
        void vscode.window.showErrorMessage(err instanceof Error ? err.message : String(err));
      }
    };
  return [
    vscode.commands.registerCommand(
      'cyclelens.measureRegionFrom',
      guarded((args?: LineArgs) => {
        const { uri, line } = lineOf(args);
        injected.markStart(uri, line);
      }),
    ),
    vscode.commands.registerCommand(
      'cyclelens.measureRegionTo',
      guarded(async (args?: LineArgs) => {
        const { uri, line } = lineOf(args);
        await injected.markEnd(uri, line);
      }),
    ),
    vscode.commands.registerCommand(
      'cyclelens.measureFunction',
      guarded(async (name?: string) => {
        const fn =
          name ?? (await vscode.window.showInputBox({ title: 'Function to measure', placeHolder: 'e.g. fir_filter' }));
        if (fn) await injected.measureFunction(fn);
      }),
    ),
    // From a CodeLens the argument is the id; from the Measurements view, the tree node.
    vscode.commands.registerCommand(
      'cyclelens.removeInjected',
      guarded(async (arg: number | { info: { id: number }; endedKey?: number }) => {
        // An ended run's entry has no patch left: only its results go.
        if (typeof arg !== 'number' && arg.endedKey !== undefined) return injected.forgetEnded(arg.endedKey);
        return injected.remove(typeof arg === 'number' ? arg : arg.info.id);
      }),
    ),
    vscode.commands.registerCommand(
      'cyclelens.removeAllInjected',
      guarded(async () => injected.removeAll()),
    ),
    vscode.commands.registerCommand(
      'cyclelens.refreshInjected',
      guarded(async () => injected.refresh()),
    ),
  ];
}
