import { readdir, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import * as vscode from 'vscode';
import { EXPORT_FORMATS, type ExportFormat } from '../../core/export/formats';
import { fileErrorWords, unwritableReason, writeExport } from '../../core/export/writeExport';
import { loadAnyProfile } from '../../core/profile/json';

/**
 * "CycleLens: Export Profile…": a saved result set (or profile file) to another tool's format. The
 * source is the file the command was invoked on (explorer context menu), else one of the workspace's
 * saved result sets; then a quick pick of formats, each saying which tool opens it, and a save
 * dialog. Afterwards Open (VS Code opens `.cpuprofile` in its built-in profile viewer) or Reveal.
 */
export function registerExportCommands(output: vscode.LogOutputChannel): vscode.Disposable[] {
  return [
    vscode.commands.registerCommand('cyclelens.exportProfile', (resource?: vscode.Uri) =>
      exportProfile(resource, output),
    ),
  ];
}

async function exportProfile(resource: vscode.Uri | undefined, output: vscode.LogOutputChannel): Promise<void> {
  const source = resource?.scheme === 'file' ? resource.fsPath : await pickSource();
  if (!source) return;
  const format = await pickFormat();
  if (!format) return;
  const stem = basename(source).replace(/(\.profile)?\.json$/i, '');
  const folder = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(source))?.uri.fsPath ?? dirname(source);
  const target = await vscode.window.showSaveDialog({
    title: `Export ${basename(source)} as ${format.label}`,
    defaultUri: vscode.Uri.file(join(folder, `${stem}${format.extension}`)),
    filters: { [format.label]: [format.extension.slice(1).replace(/^.*\./, '')], 'All files': ['*'] },
    saveLabel: 'Export',
  });
  if (!target) return;
  const failed = (why: string): void =>
    void vscode.window.showErrorMessage(`CycleLens could not export ${basename(source)}: ${why}`);
  if (target.scheme !== 'file')
    return failed(`${target.toString()} is not a local file: choose a path on this machine's disk`);
  // Checked before the profile is loaded and converted, so the message names the destination and its fix.
  const refused = await unwritableReason(target.fsPath);
  if (refused) return failed(refused);
  let profile;
  try {
    // Data, never code: the loader validates every field before anything is written.
    profile = await loadAnyProfile(source);
  } catch (err) {
    return failed(err instanceof Error ? err.message : String(err));
  }
  let bytes: number;
  try {
    bytes = await writeExport(profile, { format, path: target.fsPath });
  } catch (err) {
    return failed(
      `${target.fsPath} could not be written (${fileErrorWords(err)}): choose another folder, or ` +
        `free space on its disk`,
    );
  }
  output.info(`exported ${source} as ${format.label} to ${target.fsPath} (${bytes} bytes)`);
  const choice = await vscode.window.showInformationMessage(
    `Exported ${format.label} to ${basename(target.fsPath)}. It opens in ${format.opensIn}.`,
    'Open',
    'Reveal',
  );
  if (choice === 'Open') await vscode.commands.executeCommand('vscode.open', target);
  // The OS file manager is on the user's machine only when the extension host is too (not in a
  // browser or a remote window): elsewhere the file is revealed in the Explorer.
  else if (choice === 'Reveal')
    await vscode.commands.executeCommand(
      vscode.env.remoteName || vscode.env.uiKind === vscode.UIKind.Web ? 'revealInExplorer' : 'revealFileInOS',
      target,
    );
}

async function pickFormat(): Promise<ExportFormat | undefined> {
  const items = EXPORT_FORMATS.map((format) => ({
    label: format.label,
    description: format.extension,
    detail: `Opens in ${format.opensIn}`,
    format,
  }));
  return (
    await vscode.window.showQuickPick(items, {
      title: 'Export Profile: format',
      placeHolder: 'Which tool should open the profile?',
      matchOnDetail: true,
    })
  )?.format;
}

/** The workspace's saved result sets, newest first; an open dialog when there are none. */
async function pickSource(): Promise<string | undefined> {
  const saved: { path: string; mtime: number }[] = [];
  for (const folder of vscode.workspace.workspaceFolders ?? []) {
    const dir = join(folder.uri.fsPath, '.cyclelens', 'results');
    const names = await readdir(dir).catch(() => [] as string[]);
    for (const name of names.filter((n) => n.endsWith('.json'))) {
      const s = await stat(join(dir, name)).catch(() => undefined);
      if (s?.isFile()) saved.push({ path: join(dir, name), mtime: s.mtimeMs });
    }
  }
  saved.sort((a, b) => b.mtime - a.mtime);
  const browse = {
    label: '$(folder-opened) Browse…',
    description: 'a result set or profile file elsewhere',
    path: '',
  };
  const items = [
    ...saved.map((s) => ({ label: basename(s.path), description: new Date(s.mtime).toLocaleString(), path: s.path })),
    browse,
  ];
  const picked = saved.length
    ? await vscode.window.showQuickPick(items, { title: 'Export Profile: which result set?' })
    : browse;
  if (!picked) return undefined;
  if (picked.path) return picked.path;
  const chosen = await vscode.window.showOpenDialog({
    canSelectMany: false,
    filters: { 'CycleLens result sets and profiles': ['json'] },
    title: 'Export a CycleLens result set or profile',
  });
  return chosen?.[0]?.fsPath;
}
