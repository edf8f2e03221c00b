import * as vscode from 'vscode';
import type { InjectedMeasurementInfo, InjectedResult } from '../../common/dapCustom';
import type { MeasurementRecord, MeasurementSeries, MeasurementStore } from '../../core/analysis/measurements';
import { distribution, formatCount, histogramBars } from '../../core/analysis/statistics';
import type { InjectedEntry } from '../editor/injectedMeasurements';
import { measurementLabel } from '../editor/injectedPresentation';
import { passCountsOf, passFigures, passStats, passUnit, type PassUnit } from '../../core/analysis/passes';

/** The unit of an injected measurement's counter, with the tick's ratio when the target fixes it. */
function injectedUnit(info: InjectedMeasurementInfo, r: InjectedResult): PassUnit {
  const per = info.instructionsPerUnit;
  return passUnit(r.counter, undefined, per !== undefined ? { count: per, kind: 'instructions' } : undefined);
}

/** Where injected measurements come from (the editor's InjectedMeasurements). */
export interface InjectedSource {
  all(): InjectedEntry[];
  onDidChangeResults: vscode.Event<void>;
}

type Node =
  | {
      kind: 'injected';
      info: InjectedMeasurementInfo;
      result: InjectedResult | undefined;
      share: number | undefined;
      ended: string | undefined;
      endedKey: number | undefined;
    }
  | { kind: 'record'; record: MeasurementRecord }
  | { kind: 'series'; record: MeasurementRecord; series: MeasurementSeries }
  | { kind: 'stat'; label: string; value: string };

/** The Measurements view: each measurement, its counters, and per counter the distribution over passes. */
export class MeasurementsView implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly subscriptions: Array<{ dispose(): void }>;

  constructor(
    private readonly store: MeasurementStore,
    private readonly injected: InjectedSource,
  ) {
    this.subscriptions = [
      store.onDidChange(() => this.changed.fire(undefined)),
      injected.onDidChangeResults(() => this.changed.fire(undefined)),
    ];
  }

  getChildren(node?: Node): Node[] {
    if (!node) {
      return [
        ...this.injected.all().map((l): Node => ({
          kind: 'injected',
          info: l.info,
          result: l.result,
          share: l.share,
          ended: l.ended,
          endedKey: l.key,
        })),
        ...this.store.all().map((record): Node => ({ kind: 'record', record })),
      ];
    }
    if (node.kind === 'injected') {
      const r = node.result;
      if (!r)
        return [
          {
            kind: 'stat',
            label: 'results',
            value: node.ended ? 'none: the run ended before a stop read them' : 'read at the next stop',
          },
        ];
      const unit = injectedUnit(node.info, r);
      return [
        ...(node.ended ? [{ kind: 'stat' as const, label: 'results', value: node.ended }] : []),
        { kind: 'stat', label: 'calls', value: String(r.calls) },
        ...passStats(passFigures(passCountsOf(r)), unit, node.share).map((x): Node => ({
          kind: 'stat',
          label: x.label,
          value: x.value,
        })),
        ...(r.untracked ? [{ kind: 'stat' as const, label: 'untracked entries', value: String(r.untracked) }] : []),
      ];
    }
    if (node.kind === 'record')
      return node.record.series.map((series) => ({ kind: 'series', record: node.record, series }));
    if (node.kind === 'series') {
      const d = node.series.distribution;
      if (!d) return [{ kind: 'stat', label: 'passes', value: '0' }];
      const u = passUnit(node.series.unit, node.series.event).label;
      return [
        { kind: 'stat', label: 'passes', value: String(d.count) },
        { kind: 'stat', label: 'mean', value: `${formatCount(d.mean)} ${u}` },
        { kind: 'stat', label: 'median', value: `${formatCount(d.median)} ${u}` },
        { kind: 'stat', label: 'min', value: `${formatCount(d.min)} ${u}` },
        { kind: 'stat', label: 'max', value: `${formatCount(d.max)} ${u}` },
        { kind: 'stat', label: 'std dev', value: `${formatCount(d.stddev)} ${u}` },
        { kind: 'stat', label: 'total', value: `${formatCount(d.total)} ${u}` },
        ...(node.series.unreliablePasses
          ? [{ kind: 'stat' as const, label: 'unreliable passes', value: String(node.series.unreliablePasses) }]
          : []),
      ];
    }
    return [];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    switch (node.kind) {
      case 'injected': {
        const item = new vscode.TreeItem(measurementLabel(node.info), vscode.TreeItemCollapsibleState.Collapsed);
        const r = node.result;
        const f = r ? passFigures(passCountsOf(r)) : undefined;
        const ended = node.ended ? ` · ${node.ended}` : '';
        item.description = r
          ? (f
              ? `${r.calls} calls · mean ${formatCount(f.mean)} ${injectedUnit(node.info, r).label}`
              : `${r.calls} calls, no complete pass`) + ended
          : `${node.info.kind} · ${node.info.payload} · ${node.ended ?? 'injected'}`;
        const d = f ? distribution(f.last) : undefined;
        const tooltip = new vscode.MarkdownString(
          d
            ? ['Last passes:', '```', ...histogramBars(d), '```'].join('\n')
            : 'Injected: counting at full speed; results are read at each stop.',
        );
        // The adapter's warnings are information here; those that change the figures were also notified.
        for (const w of node.info.warnings) tooltip.appendMarkdown('\n\n').appendText(w.message);
        item.tooltip = tooltip;
        item.iconPath = new vscode.ThemeIcon(node.ended ? 'history' : 'pulse');
        item.contextValue = 'injectedMeasurement';
        item.id = node.endedKey !== undefined ? `ended-${node.endedKey}` : `injected-${node.info.id}`;
        if (node.info.source) {
          item.command = {
            title: 'Go to source',
            command: 'vscode.open',
            arguments: [
              vscode.Uri.file(node.info.source.path),
              { selection: new vscode.Range(node.info.source.line - 1, 0, node.info.source.line - 1, 0) },
            ],
          };
        }
        return item;
      }
      case 'record': {
        const r = node.record;
        const item = new vscode.TreeItem(r.label, vscode.TreeItemCollapsibleState.Expanded);
        const first = r.series[0]?.distribution;
        item.description = first
          ? `${first.count} pass${first.count === 1 ? '' : 'es'} · mean ${formatCount(first.mean)} ` +
            `${passUnit(r.series[0]!.unit, r.series[0]!.event).label}`
          : 'no complete pass';
        item.tooltip = r.incomplete ? `Incomplete: ${r.incomplete}` : `${r.kind} · ${r.takenAt.toLocaleTimeString()}`;
        item.iconPath = new vscode.ThemeIcon(r.incomplete ? 'warning' : 'graph');
        item.contextValue = 'measurement';
        item.id = `measurement-${r.id}`;
        if (r.anchor) {
          item.command = {
            title: 'Go to region',
            command: 'vscode.open',
            arguments: [
              vscode.Uri.file(r.anchor.path),
              { selection: new vscode.Range(r.anchor.line - 1, 0, r.anchor.line - 1, 0) },
            ],
          };
        }
        return item;
      }
      case 'series': {
        const d = node.series.distribution;
        const unit = passUnit(node.series.unit, node.series.event).label;
        const item = new vscode.TreeItem(
          unit === node.series.event ? unit : `${node.series.event} (${unit})`,
          vscode.TreeItemCollapsibleState.Collapsed,
        );
        item.description = d ? `${formatCount(d.min)} … ${formatCount(d.max)} (median ${formatCount(d.median)})` : '';
        if (d) item.tooltip = new vscode.MarkdownString(['```', ...histogramBars(d), '```'].join('\n'));
        item.iconPath = new vscode.ThemeIcon('symbol-numeric');
        return item;
      }
      case 'stat': {
        const item = new vscode.TreeItem(node.label);
        item.description = node.value;
        return item;
      }
    }
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
    this.changed.dispose();
  }
}
