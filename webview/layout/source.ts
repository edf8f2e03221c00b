import type { Profile } from '../../core/profile/model';

/** The annotated source of one function as pure data: which lines, their values, heat and instructions. */

export interface AnnotatedInstruction {
  address: number;
  text: string;
  value: number;
}

export interface AnnotatedLine {
  line: number;
  text: string;
  value?: number;
  /** value / the hottest line's value (0..1). */
  heat: number;
  instructions: AnnotatedInstruction[];
}

export interface AnnotatedSource {
  path: string;
  lines: AnnotatedLine[];
  /** Line number of the hottest line, to scroll into view. */
  hottest?: number;
  total: number;
}

const CONTEXT = 3;

/** Paths as DWARF wrote them may differ from the profile's line table only by directory; compare whole paths. */
function samePath(a: string, b: string): boolean {
  return a === b;
}

/**
 * The lines to show for function `fn` in `text` (the file at the function's DWARF path): from its
 * first line to its last profiled line (or `endLine`), with a few lines of context; the whole file
 * when the profile does not locate the function.
 */
export function annotateSource(p: Profile, fn: number, path: string, text: string): AnnotatedSource {
  const source = text.split(/\r?\n/);
  const f = p.functions[fn];
  const lineValues = new Map<number, number>();
  for (const l of p.lines) {
    if (!samePath(l.path, path) || (l.function !== undefined && l.function !== fn)) continue;
    lineValues.set(l.line, (lineValues.get(l.line) ?? 0) + l.self.value);
  }
  const instructions = new Map<number, AnnotatedInstruction[]>();
  for (const a of p.addresses) {
    if (
      a.line === undefined ||
      (a.path !== undefined && !samePath(a.path, path)) ||
      (a.function !== undefined && a.function !== fn)
    )
      continue;
    if (!instructions.has(a.line)) instructions.set(a.line, []);
    instructions.get(a.line)!.push({ address: a.address, text: a.instruction ?? '', value: a.self.value });
  }
  for (const list of instructions.values()) list.sort((x, y) => x.address - y.address);
  const profiled = [...lineValues.keys(), ...instructions.keys()];
  let first = 1;
  let last = source.length;
  if (f?.location && samePath(f.location.path, path)) {
    first = Math.min(f.location.line, ...profiled);
    last = Math.max(f.location.endLine ?? f.location.line, ...profiled);
    first = Math.max(1, first - CONTEXT);
    last = Math.min(source.length, last + CONTEXT);
  }
  let max = 0;
  let hottest: number | undefined;
  let total = 0;
  for (const [line, v] of lineValues) {
    total += v;
    if (v > max) {
      max = v;
      hottest = line;
    }
  }
  const lines: AnnotatedLine[] = [];
  for (let n = first; n <= last; n++) {
    const value = lineValues.get(n);
    lines.push({
      line: n,
      text: source[n - 1] ?? '',
      ...(value !== undefined ? { value } : {}),
      heat: value !== undefined && max > 0 ? value / max : 0,
      instructions: instructions.get(n) ?? [],
    });
  }
  return { path, lines, ...(hottest !== undefined ? { hottest } : {}), total };
}

/** A heat value (0..1) as one of `levels` classes (CSS holds the colours, from the theme). */
export function heatLevel(heat: number, levels = 10): number {
  if (!(heat > 0)) return 0;
  return Math.min(levels, Math.max(1, Math.ceil(heat * levels)));
}
