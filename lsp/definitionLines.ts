/**
 * Where a function's CodeLens goes. The line table puts a function's entry address on its first
 * statement (after the prologue), often a line or more below the definition; the lens belongs on
 * the line that names the function, so look a little way up for it: `name(` in C and C++, `name:`
 * for an assembly label.
 */

/** How far above the entry line the definition may be (a long parameter list, a comment block). */
const LOOKBACK = 40;

/** The identifier a source line names: `ns::Klass::run(int)` and `run` are found as `run`. */
export function sourceIdentifier(name: string): string {
  const bare = name.replace(/\(.*$/, '').replace(/<.*>$/, '');
  const last = bare.split('::').pop() ?? bare;
  return last.replace(/[^\w$]/g, '');
}

/** A reader of a document's lines, 0-based. */
export interface LineSource {
  lineCount: number;
  line(index: number): string;
}

export function linesOf(text: string): LineSource {
  const lines = text.split(/\r?\n/);
  return { lineCount: lines.length, line: (i) => lines[i] ?? '' };
}

/** The 0-based definition line of `name`, given the 0-based entry line from DWARF. */
export function definitionLine(doc: LineSource, name: string, entryLine: number): number {
  const last = Math.max(0, doc.lineCount - 1);
  const start = Math.min(Math.max(0, entryLine), last);
  const id = sourceIdentifier(name);
  if (id === '') return start;
  const call = new RegExp(`(^|[^\\w$])${id.replace(/\$/g, '\\$')}\\s*\\(`);
  const label = new RegExp(`^\\s*${id.replace(/\$/g, '\\$')}\\s*:`);
  for (let l = start; l >= Math.max(0, start - LOOKBACK); l--) {
    const text = doc.line(l);
    if (call.test(text) || label.test(text)) return l;
  }
  return start;
}
