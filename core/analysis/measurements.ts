import type { CounterValue } from '../../common/counters';
import type { MeasurementResponse } from '../../common/dapCustom';
import { Distribution, distribution } from './statistics';

/** Where a measurement applies in the source, for inline results. */
export interface SourceAnchor {
  path: string;
  line: number;
  endLine?: number;
}

export type MeasurementKind = 'to-cursor' | 'breakpoint-range' | 'injected-region' | 'injected-function';

export interface MeasurementRecord {
  id: number;
  kind: MeasurementKind;
  label: string;
  anchor: SourceAnchor | undefined;
  takenAt: Date;
  /** Per event (unit:slot:event): the per-pass values and their distribution. */
  series: MeasurementSeries[];
  incomplete?: string;
}

export interface MeasurementSeries {
  key: string;
  event: string;
  unit: string;
  values: number[];
  unreliablePasses: number;
  distribution: Distribution | undefined;
}

/** Groups a measurement's passes by counter and computes each distribution. */
export function seriesFromResponse(r: MeasurementResponse): MeasurementSeries[] {
  const byKey = new Map<string, { first: CounterValue; values: number[]; unreliable: number }>();
  for (const pass of r.passes) {
    for (const v of pass.values) {
      const key = `${v.unit}:${v.slot}:${v.event ?? '?'}`;
      const entry = byKey.get(key) ?? { first: v, values: [], unreliable: 0 };
      entry.values.push(Number(v.value));
      if (!v.reliable) entry.unreliable++;
      byKey.set(key, entry);
    }
  }
  return [...byKey.entries()].map(([key, e]) => ({
    key,
    event: e.first.event ?? '?',
    unit: e.first.unit,
    values: e.values,
    unreliablePasses: e.unreliable,
    distribution: distribution(e.values),
  }));
}

/** Measurements of this window, newest first; listeners refresh the views. */
export class MeasurementStore {
  private records: MeasurementRecord[] = [];
  private nextId = 1;
  private readonly listeners = new Set<() => void>();

  add(
    kind: MeasurementKind,
    label: string,
    anchor: SourceAnchor | undefined,
    response: MeasurementResponse,
  ): MeasurementRecord {
    const record: MeasurementRecord = {
      id: this.nextId++,
      kind,
      label,
      anchor,
      takenAt: new Date(),
      series: seriesFromResponse(response),
      ...(response.incomplete ? { incomplete: response.incomplete } : {}),
    };
    this.records.unshift(record);
    this.notify();
    return record;
  }

  remove(id: number): void {
    this.records = this.records.filter((r) => r.id !== id);
    this.notify();
  }

  clear(): void {
    this.records = [];
    this.notify();
  }

  all(): readonly MeasurementRecord[] {
    return this.records;
  }

  onDidChange(listener: () => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  private notify(): void {
    for (const l of this.listeners) l();
  }
}
