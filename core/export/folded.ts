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
    // `;` separates frames and the last space the count: names holding either would misparse.
    lines.push(`${s.frames.map((id) => tree.functions[id]!.name.replace(/[;\s]/g, '_')).join(';')} ${counts[i]}`);
  });
  return lines.length ? `${lines.join('\n')}\n` : '';
}
