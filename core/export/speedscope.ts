import { notesWith, profileStacks } from '../profile/callTree';
import type { Profile, ProfileStack } from '../profile/model';
import { unitLabel } from '../profile/units';
import { programName } from './common';

/**
 * speedscope's file format (https://www.speedscope.app/file-format-schema.json): one sampled
 * profile (each stack with its weight) and one evented profile (the call tree laid out in time, a
 * frame opened, its own cost, its callees in turn, closed). speedscope knows time and bytes only, so
 * cycles, instructions and ticks go out as unit `none`, and the profile's name says what they count.
 */

interface Frame {
  name: string;
  file?: string;
  line?: number;
}

interface TrieNode {
  frame: number;
  self: number;
  children: Map<number, TrieNode>;
}

export function speedscopeJson(p: Profile): string {
  const tree = profileStacks(p);
  const frames: Frame[] = tree.functions.map((f) => ({
    name: f.name,
    ...(f.location ? { file: f.location.path, line: f.location.line } : {}),
  }));
  const used = tree.stacks.filter((s) => s.value > 0 && s.frames.length > 0);
  const total = used.reduce((s, x) => s + x.value, 0);
  const unitName = unitLabel(p.unit);
  const base = programName(p);
  const notes = notesWith(p, tree);
  const doc = {
    $schema: 'https://www.speedscope.app/file-format-schema.json',
    name: `${base} (${unitName})`,
    exporter: `cyclelens (${p.generator})${notes.length ? `: ${notes.join(' ')}` : ''}`,
    activeProfileIndex: 0,
    shared: { frames },
    profiles: [
      {
        type: 'sampled',
        name: `${base}: ${unitName} by stack`,
        unit: 'none',
        startValue: 0,
        endValue: total,
        samples: used.map((s) => s.frames),
        weights: used.map((s) => s.value),
      },
      {
        type: 'evented',
        name: `${base}: ${unitName} as a call tree`,
        unit: 'none',
        startValue: 0,
        endValue: total,
        events: events(used),
      },
    ],
  };
  return `${JSON.stringify(doc)}\n`;
}

function events(stacks: readonly ProfileStack[]): { type: 'O' | 'C'; frame: number; at: number }[] {
  const roots = new Map<number, TrieNode>();
  for (const s of stacks) {
    let level = roots;
    let node: TrieNode | undefined;
    for (const id of s.frames) {
      node = level.get(id);
      if (!node) {
        node = { frame: id, self: 0, children: new Map() };
        level.set(id, node);
      }
      level = node.children;
    }
    if (node) node.self += s.value;
  }
  const out: { type: 'O' | 'C'; frame: number; at: number }[] = [];
  let at = 0;
  // Iterative walk: a deep derived tree must not exhaust the JavaScript stack.
  const work: { node: TrieNode; open: boolean }[] = [...roots.values()].reverse().map((node) => ({ node, open: true }));
  while (work.length) {
    const { node, open } = work.pop()!;
    if (!open) {
      out.push({ type: 'C', frame: node.frame, at });
      continue;
    }
    out.push({ type: 'O', frame: node.frame, at });
    at += node.self;
    work.push({ node, open: false });
    for (const child of [...node.children.values()].reverse()) work.push({ node: child, open: true });
  }
  return out;
}
