import type { Profile, ProfileFunction, ProfileLine } from '../core/profile/model';
import { definitionLineOf, linesOf, sourceIdentifier, type LineSource } from './definitionLines';
import { SourcePathResolver, type SourceMap } from './sourcePaths';

/** A function placed in a document: the 0-based line its CodeLens, hover and diagnostic sit on. */
export interface PlacedFunction {
  fn: ProfileFunction;
  line: number;
}

/** What placing a function needs, formed once per profile: its identifier and 0-based entry line. */
interface FunctionEntry {
  fn: ProfileFunction;
  id: string;
  entryLine: number;
}

/**
 * The profile seen by source file: which functions and line costs belong to a document, found
 * once per profile (and per document version for placements), so a CodeLens request on a large
 * file is a map lookup and a short scan, not a walk over the whole profile.
 */
export class ProfileIndex {
  private readonly functionsByPath = new Map<string, FunctionEntry[]>();
  private readonly linesByPath = new Map<string, ProfileLine[]>();
  private readonly resolver: SourcePathResolver;

  constructor(
    readonly profile: Profile,
    map: SourceMap,
    root: string,
  ) {
    for (const f of profile.functions) {
      if (!f.location) continue;
      const list = this.functionsByPath.get(f.location.path) ?? [];
      list.push({ fn: f, id: sourceIdentifier(f.name), entryLine: f.location.line - 1 });
      this.functionsByPath.set(f.location.path, list);
    }
    for (const l of profile.lines) {
      const list = this.linesByPath.get(l.path) ?? [];
      list.push(l);
      this.linesByPath.set(l.path, list);
    }
    for (const list of this.linesByPath.values()) list.sort((a, b) => a.line - b.line);
    this.resolver = new SourcePathResolver([...this.functionsByPath.keys(), ...this.linesByPath.keys()], map, root);
  }

  /** The profiled functions defined in a local file, placed on their definition lines. */
  place(documentPath: string, doc: LineSource): PlacedFunction[] {
    const path = this.resolver.profilePathFor(documentPath);
    const fns = path !== undefined ? this.functionsByPath.get(path) : undefined;
    return (fns ?? []).map((e) => ({ fn: e.fn, line: definitionLineOf(doc, e.id, e.entryLine) }));
  }

  /** The per-line costs of a local file (empty when the profile has none). */
  lines(documentPath: string): ProfileLine[] {
    const path = this.resolver.profilePathFor(documentPath);
    return (path !== undefined ? this.linesByPath.get(path) : undefined) ?? [];
  }

  /** The line costs of a local file on 1-based lines `from` to `to`: a binary search, not a scan. */
  linesIn(documentPath: string, from: number, to: number): ProfileLine[] {
    const all = this.lines(documentPath);
    let lo = 0;
    let hi = all.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (all[mid]!.line < from) lo = mid + 1;
      else hi = mid;
    }
    const out: ProfileLine[] = [];
    for (let i = lo; i < all.length && all[i]!.line <= to; i++) out.push(all[i]!);
    return out;
  }

  /**
   * The profile's largest file as a stand-in document (each function's name on its entry line),
   * placed: the server runs it once per load so that the code a first request needs is compiled.
   */
  rehearsal(): { lines: LineSource; placed: PlacedFunction[] } | undefined {
    let largest: FunctionEntry[] | undefined;
    for (const list of this.functionsByPath.values()) if (!largest || list.length > largest.length) largest = list;
    if (!largest) return undefined;
    const text: string[] = [];
    for (const e of largest) if (e.entryLine >= 0 && e.entryLine < 1_000_000) text[e.entryLine] = `${e.id}(void)`;
    const lines = linesOf(Array.from(text, (l) => l ?? '').join('\n'));
    return { lines, placed: largest.map((e) => ({ fn: e.fn, line: definitionLineOf(lines, e.id, e.entryLine) })) };
  }
}
