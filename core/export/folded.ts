import { profileStacks } from '../profile/callTree';
import type { Profile } from '../profile/model';
import { roundKeepingSum } from './common';

/**
 * Folded stacks (`main;work;leaf 123`, one stack per line, root first), the input of flamegraph.pl,
 * speedscope, and the webview's flame graph. Counts are integers: derived stacks split a shared
 * callee by call counts, and rounding keeps the file's total equal to the profile's.
 */
export function foldedStacks(p: Profile): string {
  const tree = profileStacks(p);
  const counts = roundKeepingSum(tree.stacks.map((s) => s.value));
  const lines: string[] = [];
  tree.stacks.forEach((s, i) => {
    if (counts[i]! <= 0) return;
    // `;` separates frames and a line break stacks; the count is after the last space, so spaces and
    // brackets inside a name (`[not measured]`, `operator new(unsigned int)`) read back as they are.
    lines.push(`${s.frames.map((id) => foldedName(tree.functions[id]!.name)).join(';')} ${counts[i]}`);
  });
  return lines.length ? `${lines.join('\n')}\n` : '';
}

/** A frame name as folded stacks can hold it: `;` and line breaks become `_`, and so do spaces at its ends. */
export function foldedName(name: string): string {
  return name.replace(/[;\r\n]/g, '_').replace(/^\s+|\s+$/g, (edge) => '_'.repeat(edge.length));
}
