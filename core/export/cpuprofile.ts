import { profileStacks } from '../profile/callTree';
import type { Profile } from '../profile/model';
import { roundKeepingSum } from './common';

/**
 * Chrome's `.cpuprofile` (the DevTools protocol's Profiler.Profile), which VS Code's built-in
 * profile viewer opens. The format knows microseconds only: one count of the profile's unit is
 * written as one microsecond, so the viewer's "ms" column reads as thousands of cycles
 * (instructions, ticks). Each call-tree node gets one sample whose duration is its own cost: a
 * sample lasts until the next one's timestamp, so each delta carries the previous node's value.
 */

interface CpuNode {
  id: number;
  callFrame: { functionName: string; scriptId: string; url: string; lineNumber: number; columnNumber: number };
  hitCount: number;
  children: number[];
}

export function cpuProfileJson(p: Profile): string {
  const tree = profileStacks(p);
  const root: CpuNode = {
    id: 1,
    callFrame: { functionName: '(root)', scriptId: '0', url: '', lineNumber: -1, columnNumber: -1 },
    hitCount: 0,
    children: [],
  };
  const nodes: CpuNode[] = [root];
  const index = new Map<string, CpuNode>();
  const selfOf = new Map<number, number>();
  for (const s of tree.stacks) {
    let parent = root;
    let key = '';
    for (const id of s.frames) {
      key += `/${id}`;
      let node = index.get(key);
      if (!node) {
        const f = tree.functions[id]!;
        // lineNumber is 0-based in this format.
        node = {
          id: nodes.length + 1,
          callFrame: {
            functionName: f.name,
            scriptId: String(id + 1),
            url: f.location ? fileUrl(f.location.path) : '',
            lineNumber: f.location ? f.location.line - 1 : -1,
            columnNumber: f.location ? 0 : -1,
          },
          hitCount: 0,
          children: [],
        };
        nodes.push(node);
        index.set(key, node);
        parent.children.push(node.id);
      }
      parent = node;
    }
    selfOf.set(parent.id, (selfOf.get(parent.id) ?? 0) + s.value);
  }
  const sampled = nodes.filter((n) => (selfOf.get(n.id) ?? 0) > 0);
  const durations = roundKeepingSum(sampled.map((n) => selfOf.get(n.id)!));
  for (const n of sampled) n.hitCount = 1;
  const timeDeltas = sampled.map((_, i) => (i === 0 ? 0 : durations[i - 1]!));
  const total = durations.reduce((s, v) => s + v, 0);
  const doc = { nodes, startTime: 0, endTime: total, samples: sampled.map((n) => n.id), timeDeltas };
  return `${JSON.stringify(doc)}\n`;
}

function fileUrl(path: string): string {
  return path.startsWith('/') ? `file://${encodeURI(path)}` : encodeURI(path);
}
