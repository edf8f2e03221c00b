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
  return definitionLineOf(doc, sourceIdentifier(name), entryLine);
}

/** definitionLine with the identifier already found (once per profile, not per request). */
export function definitionLineOf(doc: LineSource, id: string, entryLine: number): number {
  const last = Math.max(0, doc.lineCount - 1);
  const start = Math.min(Math.max(0, entryLine), last);
  if (id === '') return start;
  for (let l = start; l >= Math.max(0, start - LOOKBACK); l--) {
    if (namesFunction(doc.line(l), id)) return l;
  }
  return start;
}

const IDENTIFIER_CHAR = /[\w$]/;

/**
 * Whether a line holds `id(` (a C or C++ definition or declarator) or starts with `id:` (an
 * assembly label). A string scan rather than a RegExp per function: compiling hundreds of patterns
 * cost more than the rest of a CodeLens request on a large file.
 */
export function namesFunction(text: string, id: string): boolean {
  for (let at = text.indexOf(id); at >= 0; at = text.indexOf(id, at + 1)) {
    if (at > 0 && IDENTIFIER_CHAR.test(text[at - 1]!)) continue;
    let next = at + id.length;
    if (next < text.length && IDENTIFIER_CHAR.test(text[next]!)) continue;
    while (next < text.length && (text[next] === ' ' || text[next] === '\t')) next++;
    if (text[next] === '(') return true;
    if (text[next] === ':' && text[next + 1] !== ':' && text.slice(0, at).trim() === '') return true;
  }
  return false;
}
