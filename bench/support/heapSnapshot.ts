import { readFileSync } from 'node:fs';

/**
 * A V8 heap snapshot (`.heapsnapshot`, as `--heapsnapshot-signal` writes it) reduced to what a
 * leak hunt compares: live objects grouped by type and constructor name, with their count and
 * their own (shallow) size. A snapshot holds only what is reachable after V8's full collection,
 * so two of them taken far apart differ by what the process kept, not by garbage.
 */
export interface HeapGroup {
  key: string;
  count: number;
  bytes: number;
}

export interface HeapSummary {
  nodes: number;
  bytes: number;
  groups: Map<string, HeapGroup>;
}

interface SnapshotFile {
  snapshot: { meta: { node_fields: string[]; node_types: unknown[] } };
  nodes: number[];
  strings: string[];
}

export function summariseHeapSnapshot(file: string): HeapSummary {
  const snap = JSON.parse(readFileSync(file, 'utf8')) as SnapshotFile;
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0] as string[];
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const groups = new Map<string, HeapGroup>();
  let bytes = 0;
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + typeAt]!] ?? '?';
    // Strings and code are grouped by kind only: their "names" are their contents.
    const named = type === 'object' || type === 'closure' || type === 'native' || type === 'hidden';
    const key = named ? `${type} ${snap.strings[snap.nodes[i + nameAt]!] ?? '?'}`.slice(0, 80) : type;
    const size = snap.nodes[i + sizeAt]!;
    bytes += size;
    const g = groups.get(key) ?? { key, count: 0, bytes: 0 };
    g.count++;
    g.bytes += size;
    groups.set(key, g);
  }
  return { nodes: snap.nodes.length / width, bytes, groups };
}

/** The groups that grew most from `a` to `b`, by bytes. */
export function heapGrowth(a: HeapSummary, b: HeapSummary, top = 12): Array<HeapGroup & { countDelta: number }> {
  const out: Array<HeapGroup & { countDelta: number }> = [];
  for (const g of b.groups.values()) {
    const before = a.groups.get(g.key);
    out.push({
      key: g.key,
      count: g.count,
      bytes: g.bytes - (before?.bytes ?? 0),
      countDelta: g.count - (before?.count ?? 0),
    });
  }
  return out.sort((x, y) => y.bytes - x.bytes).slice(0, top);
}
