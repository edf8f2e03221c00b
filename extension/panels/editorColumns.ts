import * as vscode from 'vscode';

/*
 * Where CycleLens puts what it opens. Results (the profile panels, a descent's saved report) share
 * one editor group beside the sources, and sources opened from a panel go to a group of sources:
 * `ViewColumn.Beside` alone made a new group each time it was asked from the rightmost group, so a
 * descent (report beside the source, then the panel beside the report) left three groups, and
 * every further descent one more.
 */

/** The webview and custom-editor view types of the profile panel (extension/panels/profilePanels.ts). */
const RESULT_VIEW_TYPES = ['cyclelens.profile', 'cyclelens.profileEditor'];

/** A saved report of a descent or full profile (`.cyclelens/results/*.txt`). */
function isReport(uri: vscode.Uri): boolean {
  return uri.scheme === 'file' && /[\\/]\.cyclelens[\\/]results[\\/][^\\/]+\.txt$/.test(uri.fsPath);
}

/** Whether an editor tab shows CycleLens results. */
export function isResultTab(tab: vscode.Tab): boolean {
  const input = tab.input;
  // A webview panel's tab names its view type with a prefix of VS Code's own (`mainThreadWebview-`).
  if (input instanceof vscode.TabInputWebview || input instanceof vscode.TabInputCustom)
    return RESULT_VIEW_TYPES.some((t) => input.viewType === t || input.viewType.endsWith(`-${t}`));
  return input instanceof vscode.TabInputText && isReport(input.uri);
}

/**
 * The group results open in: the one that shows results already; else, with more than one group,
 * a group other than the active one (the source the user works in stays); else a new group beside.
 */
export function resultsColumn(): vscode.ViewColumn {
  const groups = vscode.window.tabGroups.all;
  const holding = groups.find((g) => g.tabs.some(isResultTab));
  if (holding) return holding.viewColumn;
  const active = vscode.window.tabGroups.activeTabGroup;
  const other = groups.find((g) => g !== active);
  return other ? other.viewColumn : vscode.ViewColumn.Beside;
}

/**
 * The group a source opens in from a panel in group `panel`: one that shows a source already, else
 * any other group, else a new group beside the panel. Never the panel's own group, which would
 * hide the panel behind the source.
 */
export function sourceColumn(panel: vscode.ViewColumn | undefined): vscode.ViewColumn {
  const sources = vscode.window.visibleTextEditors.filter(
    (e) => e.viewColumn !== undefined && e.viewColumn !== panel && !isReport(e.document.uri),
  );
  if (sources[0]?.viewColumn !== undefined) return sources[0].viewColumn;
  const other = vscode.window.tabGroups.all.find((g) => g.viewColumn !== panel);
  return other ? other.viewColumn : vscode.ViewColumn.Beside;
}
