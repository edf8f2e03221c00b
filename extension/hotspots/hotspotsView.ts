import * as vscode from 'vscode';
import { remapSourcePath } from '../../core/profile/lineHeat';
import type { Measure, Profile } from '../../core/profile/model';
import { formatNumber, formatShare } from '../../core/profile/units';
import type { LiveHotspots } from './liveHotspots';

type Node =
  | { kind: 'group'; label: 'Functions' | 'Lines' }
  | { kind: 'row'; label: string; measure: Measure; total: number; path?: string; line?: number; detail?: string };

const TOP = 25;

function share(m: Measure, total: number): string {
  const b = m.bound;
  return `${formatShare(m.value / total)}${b ? ` ±${((100 * (b.high - b.low)) / 2 / total).toFixed(1)}` : ''}`;
}

/** The Hotspots view in Run and Debug: top functions and lines of the live profile; a click opens the source. */
export class HotspotsView implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly subscription: vscode.Disposable;

  constructor(private readonly live: LiveHotspots) {
    this.subscription = live.onDidChange(() => this.changed.fire());
  }

  getChildren(node?: Node): Node[] {
    const run = this.live.current;
    const p: Profile | undefined = run?.profile;
    const total = p?.total?.value ?? 0;
    if (!run || !p || total === 0) return [];
    if (!node)
      return [
        { kind: 'group', label: 'Functions' },
        { kind: 'group', label: 'Lines' },
      ];
    if (node.kind !== 'group') return [];
    const sourceMap = (run.session.configuration as { sourceMap?: Record<string, string> }).sourceMap;
    if (node.label === 'Functions') {
      return [...p.functions]
        .filter((f) => f.self !== undefined)
        .sort((a, b) => b.self!.value - a.self!.value)
        .slice(0, TOP)
        .map((f) => ({
          kind: 'row',
          label: f.name,
          measure: f.self!,
          total,
          ...(f.location ? { path: remapSourcePath(f.location.path, sourceMap), line: f.location.line } : {}),
        }));
    }
    return p.lines.slice(0, TOP).map((l) => ({
      kind: 'row',
      label: `${l.path.split(/[\\/]/).pop()}:${l.line}`,
      measure: l.self,
      total,
      path: remapSourcePath(l.path, sourceMap),
      line: l.line,
      ...(l.function !== undefined ? { detail: p.functions[l.function]?.name } : {}),
    }));
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.kind === 'group') {
      const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.Expanded);
      item.id = `hotspots.${node.label}`;
      return item;
    }
    const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.None);
    item.description = `${share(node.measure, node.total)}${node.detail ? ` · ${node.detail}` : ''}`;
    item.tooltip =
      `${formatNumber(node.measure.value)} of ${formatNumber(node.total)}` +
      `${node.measure.bound ? ' (± is the 95 % interval)' : ''}`;
    item.iconPath = new vscode.ThemeIcon('flame');
    if (node.path && node.line) {
      item.command = {
        command: 'vscode.open',
        title: 'Open',
        arguments: [
          vscode.Uri.file(node.path),
          { selection: new vscode.Range(node.line - 1, 0, node.line - 1, 0) } satisfies vscode.TextDocumentShowOptions,
        ],
      };
    }
    return item;
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}
