import { notesWith, profileStacks, treeCalls, treeFigures } from '../profile/callTree';
import type { Profile, ProfileFunction } from '../profile/model';
import { unitLabel } from '../profile/units';
import { unitId } from '../profile/units';
import { roundKeepingSum } from './common';

/**
 * The callgrind format (valgrind's docs/cl-format), read by KCachegrind, QCachegrind and
 * callgrind_annotate, drawn from the call tree every format reads (core/profile/callTree.ts). Each
 * function gets its self cost (its value on top of the tree's stacks) at its source line (per line
 * where the profile has per-line data) and one `calls=` record per callee whose cost line is the
 * callee's subtree under this caller: tools add those to the self cost to form the inclusive, so
 * the file shows the tree's figures. Integer rounding keeps the sums.
 */
export function callgrindText(p: Profile): string {
  const event = unitId(p.unit);
  const tree = profileStacks(p);
  const fns = tree.functions;
  const count = fns.length;
  const figures = treeFigures(tree);
  // Integer call costs per caller → callee, rounded so each callee's costs keep their sum.
  const calls = treeCalls(tree);
  const keys = [...calls.keys()].sort((a, b) => a - b);
  const rounded = roundKeepingSum(keys.map((k) => calls.get(k)!));
  const costOf = new Map<number, number>(keys.map((k, i) => [k, rounded[i]!]));
  const calleesOf = new Map<number, number[]>();
  for (const k of keys) {
    const caller = Math.floor(k / count);
    const list = calleesOf.get(caller) ?? [];
    list.push(k % count);
    calleesOf.set(caller, list);
  }
  const edgeCalls = new Map<number, number>();
  for (const e of p.edges)
    if (e.calls !== undefined)
      edgeCalls.set(e.caller * count + e.callee, (edgeCalls.get(e.caller * count + e.callee) ?? 0) + e.calls);
  const lines: string[] = [
    '# callgrind format',
    'version: 1',
    `creator: cyclelens (${p.generator})`,
    `cmd: ${oneLine(p.program.executable)}`,
    'positions: line',
  ];
  for (const note of notesWith(p, tree)) lines.push(`# ${oneLine(note)}`);
  lines.push(`event: ${event} : ${oneLine(unitLabel(p.unit))}`, `events: ${event}`);
  const stacksTotal = tree.stacks.reduce((s, x) => s + x.value, 0);
  const total = p.total?.value ?? stacksTotal;
  lines.push(`summary: ${Math.round(total)}`, '');

  const linesOf = new Map<number, { line: number; value: number }[]>();
  for (const l of p.lines) {
    if (l.function === undefined) continue;
    const arr = linesOf.get(l.function) ?? [];
    arr.push({ line: l.line, value: l.self.value });
    linesOf.set(l.function, arr);
  }
  // Each name and file once, not once per call record.
  const names = fns.map((f) => oneLine(f.name));
  const files = fns.map(fileOf);
  const selfRounded = roundKeepingSum([...figures.self]);
  for (const f of fns) {
    if (figures.inclusive[f.id]! <= 0 && !f.inclusive) continue;
    const self = Math.max(0, selfRounded[f.id]!);
    const at = f.location?.line ?? 0;
    lines.push(`fl=${files[f.id]}`, `fn=${names[f.id]}`);
    const perLine = linesOf.get(f.id) ?? [];
    const lineValues = roundKeepingSum(perLine.map((l) => l.value));
    const inLines = lineValues.reduce((s, v) => s + v, 0);
    if (perLine.length > 0 && inLines <= self) {
      perLine.forEach((l, i) => lines.push(`${l.line} ${lineValues[i]}`));
      // What the per-line table does not cover stays at the definition line.
      if (self - inLines > 0) lines.push(`${at} ${self - inLines}`);
    } else {
      lines.push(`${at} ${self}`);
    }
    for (const callee of calleesOf.get(f.id) ?? []) {
      const key = f.id * count + callee;
      const g = fns[callee]!;
      const n = edgeCalls.get(key) ?? Math.max(1, Math.round(g.calls ?? 1));
      // cfl= every time, even for the caller's own file: callgrind_annotate shortens fl= names relative
      // to its working directory but not an inherited call file, and would see two functions.
      lines.push(`cfl=${files[callee]}`);
      lines.push(`cfn=${names[callee]}`, `calls=${n} ${g.location?.line ?? 0}`, `${at} ${costOf.get(key) ?? 0}`);
    }
    lines.push('');
  }
  return `${lines.join('\n')}\n`;
}

function fileOf(f: ProfileFunction): string {
  return oneLine(f.location?.path ?? '???');
}

/** The format is line-based: a newline in a name would start a new record. */
function oneLine(s: string): string {
  return s.includes('\n') || s.includes('\r') ? s.replace(/[\r\n]/g, ' ') : s;
}
