import { calleeShares, derivationNote, selfValue, treeTotals } from '../profile/callTree';
import type { Profile, ProfileFunction } from '../profile/model';
import { unitLabel } from '../profile/units';
import { unitId } from '../profile/units';
import { roundKeepingSum } from './common';

/**
 * The callgrind format (valgrind's docs/cl-format), read by KCachegrind, QCachegrind and
 * callgrind_annotate. Each measured function gets its self cost at its source line (per line where
 * the profile has per-line data) and one `calls=` record per measured callee whose cost line is the
 * callee's inclusive share through this caller: tools add those to the self cost to form the
 * inclusive, so the split must add up. A shared callee is split as the derived call tree splits it
 * (core/profile/callTree.ts); integer rounding keeps each callee's shares summing to its total.
 */
export function callgrindText(p: Profile): string {
  const event = unitId(p.unit);
  const shares = calleeShares(p);
  const totals = treeTotals(p, shares);
  const effective = totals.inclusive;
  // Each callee's inclusive split into integer shares per caller, in a stable order; keyed by
  // caller × function count + callee (numbers: a string key per call edge cost more than the rest).
  const count = p.functions.length;
  const splitOf = new Map<number, number>();
  const byCallee = new Map<number, { caller: number; value: number }[]>();
  for (const [caller, list] of shares) {
    for (const k of list) {
      const arr = byCallee.get(k.callee) ?? [];
      // The callee's whole subtree through this caller, as the derived stacks count it.
      arr.push({ caller, value: (effective.get(k.callee) ?? 0) * k.fraction });
      byCallee.set(k.callee, arr);
    }
  }
  for (const [callee, arr] of byCallee) {
    const rounded = roundKeepingSum(arr.map((a) => a.value));
    arr.forEach((a, i) => splitOf.set(a.caller * count + callee, rounded[i]!));
  }
  const lines: string[] = [
    '# callgrind format',
    'version: 1',
    `creator: cyclelens (${p.generator})`,
    `cmd: ${oneLine(p.program.executable)}`,
    'positions: line',
  ];
  // The same notes as the stack formats (the split is theirs), formed from the totals: this format
  // lists no stacks, so none are derived for it.
  const notes = [
    ...(p.notes ?? []),
    ...(p.stacks.length === 0 ? [derivationNote(shares, { ...totals, truncated: false })] : []),
  ];
  for (const note of notes) lines.push(`# ${oneLine(note)}`);
  lines.push(`event: ${event} : ${oneLine(unitLabel(p.unit))}`, `events: ${event}`);
  // Without a window total, the roots' inclusive values add up to the whole.
  const total =
    p.total?.value ?? p.functions.reduce((s, f) => s + (f.inclusive && !byCallee.has(f.id) ? f.inclusive.value : 0), 0);
  lines.push(`summary: ${Math.round(total)}`, '');

  const linesOf = new Map<number, { line: number; value: number }[]>();
  for (const l of p.lines) {
    if (l.function === undefined) continue;
    const arr = linesOf.get(l.function) ?? [];
    arr.push({ line: l.line, value: l.self.value });
    linesOf.set(l.function, arr);
  }
  // Each name and file once, not once per call record.
  const names = p.functions.map((f) => oneLine(f.name));
  const files = p.functions.map(fileOf);
  for (const f of p.functions) {
    if (!f.inclusive) continue;
    const kids = shares.get(f.id) ?? [];
    const allocated = kids.reduce((s, k) => s + (p.functions[k.callee]!.inclusive?.value ?? 0) * k.fraction, 0);
    const self = Math.max(0, Math.round(selfValue(f, allocated)));
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
    for (const k of kids) {
      const callee = p.functions[k.callee]!;
      const calls = k.calls ?? Math.max(1, Math.round((callee.calls ?? 1) * k.fraction));
      // cfl= every time, even for the caller's own file: callgrind_annotate shortens fl= names relative
      // to its working directory but not an inherited call file, and would see two functions.
      lines.push(`cfl=${files[k.callee]}`);
      lines.push(
        `cfn=${names[k.callee]}`,
        `calls=${calls} ${callee.location?.line ?? 0}`,
        `${at} ${splitOf.get(f.id * count + k.callee) ?? 0}`,
      );
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
