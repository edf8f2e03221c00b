import { readdir, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import * as vscode from 'vscode';
import { EXPORT_FORMATS, type ExportFormat } from '../../core/export/formats';
import { writeExport } from '../../core/export/writeExport';
import { loadAnyProfile } from '../../core/profile/json';

/**
 * "CycleLens: Export Profile…": a saved result set (or profile file) to another tool's format. The
 * source is the file the command was invoked on (explorer context menu), else one of the workspace's
 * saved result sets; then a quick pick of formats, each saying which tool opens it, and a save
 * dialog. Afterwards Open (VS Code opens `.cpuprofile` in its built-in profile viewer) or Reveal.
 */
export function registerExportCommands(output: vscode.LogOutputChannel): vscode.Disposable[] {
  return [vscode.commands.registerCommand('cyclelens.exportProfile', (resource?: vscode.Uri) => exportProfile(resource, output))];
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
  try {
    // Data, never code: the loader validates every field before anything is written.
    const profile = await loadAnyProfile(source);
    const bytes = await writeExport(profile, { format, path: target.fsPath });
    output.info(`exported ${source} as ${format.label} to ${target.fsPath} (${bytes} bytes)`);
    const choice = await vscode.window.showInformationMessage(`Exported ${format.label} to ${basename(target.fsPath)}. It opens in ${format.opensIn}.`, 'Open', 'Reveal');
    if (choice === 'Open') await vscode.commands.executeCommand('vscode.open', target);
    else if (choice === 'Reveal') await vscode.commands.executeCommand('revealFileInOS', target);
  } catch (err) {
    void vscode.window.showErrorMessage(`CycleLens could not export ${basename(source)}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

async function pickFormat(): Promise<ExportFormat | undefined> {
  const items = EXPORT_FORMATS.map((format) => ({ label: format.label, description: format.extension, detail: `Opens in ${format.opensIn}`, format }));
  return (await vscode.window.showQuickPick(items, { title: 'Export Profile: format', placeHolder: 'Which tool should open the profile?', matchOnDetail: true }))?.format;
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
  const browse = { label: '$(folder-opened) Browse…', description: 'a result set or profile file elsewhere', path: '' };
  const items = [...saved.map((s) => ({ label: basename(s.path), description: new Date(s.mtime).toLocaleString(), path: s.path })), browse];
  const picked = saved.length ? await vscode.window.showQuickPick(items, { title: 'Export Profile: which result set?' }) : browse;
  if (!picked) return undefined;
  if (picked.path) return picked.path;
  const chosen = await vscode.window.showOpenDialog({ canSelectMany: false, filters: { 'CycleLens result sets and profiles': ['json'] }, title: 'Export a CycleLens result set or profile' });
  return chosen?.[0]?.fsPath;
}
