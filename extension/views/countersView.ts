import * as vscode from 'vscode';
import type { CounterEvent, CounterSlotInfo, CounterUnitInfo, CounterValue } from '../../common/counters';
import { CustomRequests } from '../../common/dapCustom';
import { customRequest } from '../../common/dapCustomClient';
import { eventName } from '../commands/counterPicks';
import { formatCount } from '../../core/analysis/statistics';
import type { SessionTracker } from '../debug/sessionTracker';

type Node =
  | { kind: 'unit'; unit: CounterUnitInfo }
  | { kind: 'slot'; unit: CounterUnitInfo; slot: CounterSlotInfo }
  | { kind: 'message'; text: string };

/**
 * The Counters view: every counter unit the target has (or why it has none), its slots, what each
 * counts, and the value at this stop with the change since the previous stop.
 */
export class CountersView implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private units: CounterUnitInfo[] = [];
  /** The target's event catalogue, so slots show event names ("instructions retired"), not ids. */
  private events: CounterEvent[] = [];
  private values = new Map<string, CounterValue>();
  private deltas = new Map<string, bigint>();
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(private readonly tracker: SessionTracker) {
    this.subscriptions.push(
      tracker.onDidStop(() => void this.refresh(true)),
      tracker.onDidChange(() => void this.refresh(false)),
      this.changed,
    );
  }

  /** Re-reads units and (when `readValues`) values from the active session. */
  async refresh(readValues: boolean): Promise<void> {
    const session = this.tracker.active;
    if (!session) {
      this.units = [];
      this.events = [];
      this.values.clear();
      this.deltas.clear();
      this.changed.fire(undefined);
      return;
    }
    try {
      this.units = (await customRequest(session, CustomRequests.counters)).units;
      // The catalogue changes only with the session (a stop never changes it).
      if (!readValues || this.events.length === 0)
        this.events = (await customRequest(session, CustomRequests.events)).events;
      if (readValues && this.units.some((u) => u.slots.some((s) => s.event))) {
        const fresh = (await customRequest(session, CustomRequests.read)).values;
        for (const v of fresh) {
          const key = `${v.unit}:${v.slot}`;
          const previous = this.values.get(key);
          this.deltas.set(key, previous ? BigInt(v.value) - BigInt(previous.value) : 0n);
          this.values.set(key, v);
        }
      }
    } catch {
      // The session may have ended between the event and the request; the next event refreshes.
    }
    this.changed.fire(undefined);
  }

  /** Forget deltas after a reset, so the next stop shows the change from zero. */
  forgetValues(): void {
    this.values.clear();
    this.deltas.clear();
  }

  getChildren(node?: Node): Node[] {
    if (!node) {
      if (!this.tracker.active)
        return [{ kind: 'message', text: 'Start a CycleLens debug session to see its counters.' }];
      if (this.units.length === 0) return [{ kind: 'message', text: 'This target reported no counter units.' }];
      return this.units.map((unit) => ({ kind: 'unit', unit }));
    }
    if (node.kind === 'unit') return node.unit.slots.map((slot) => ({ kind: 'slot', unit: node.unit, slot }));
    return [];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    switch (node.kind) {
      case 'message':
        return new vscode.TreeItem(node.text);
      case 'unit': {
        const item = new vscode.TreeItem(
          node.unit.unit,
          node.unit.present ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None,
        );
        item.description = node.unit.present
          ? `${node.unit.slots.length} slot${node.unit.slots.length === 1 ? '' : 's'}`
          : 'not available';
        item.tooltip = node.unit.note ?? `${node.unit.unit}: resolution ${node.unit.resolution}`;
        item.iconPath = new vscode.ThemeIcon(node.unit.present ? 'pulse' : 'circle-slash');
        item.contextValue = node.unit.present ? 'counterUnit' : 'counterUnitAbsent';
        return item;
      }
      case 'slot': {
        const key = `${node.unit.unit}:${node.slot.index}`;
        const value = this.values.get(key);
        const delta = this.deltas.get(key);
        const item = new vscode.TreeItem(node.slot.name);
        const id = node.slot.event ?? node.slot.fixedEvent;
        const event = id === undefined ? undefined : eventName(id, this.events);
        const shown =
          value && node.slot.event
            ? `${formatCount(Number(value.value))}${delta ? ` (+${formatCount(Number(delta))})` : ''}`
            : '';
        item.description = [event ?? 'unassigned', shown].filter(Boolean).join(' · ');
        item.tooltip = new vscode.MarkdownString(
          [
            `**${node.slot.name}** (${node.slot.width}-bit)`,
            `event: ${event ?? '—'}`,
            value ? `value: ${value.value}` : '',
            value && !value.reliable ? `⚠ ${value.note ?? 'unreliable'}` : '',
          ]
            .filter(Boolean)
            .join('\n\n'),
        );
        item.iconPath = new vscode.ThemeIcon(
          value && !value.reliable ? 'warning' : node.slot.event ? 'dashboard' : 'circle-outline',
        );
        item.contextValue = 'counterSlot';
        return item;
      }
    }
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
  }
}
