import { basename, isAbsolute, normalize, resolve } from 'node:path';

/**
 * Which file of the profile a document is. DWARF names files as the compiler saw them (often on a
 * build machine or in a container), so profile paths go through the source map first (compiled
 * prefix → local prefix, the longest matching prefix wins, as in a debugger's `sourceMap`), then a
 * document path is matched exactly. Failing that, its base name is matched, but only when exactly
 * one file of the profile has that name: two `main.c` in a profile would put one file's figures on
 * the other.
 */
export type SourceMap = Record<string, string>;

/** `${workspaceFolder}` in a source map's local side, as in launch configurations. */
export function expandSourceMap(map: SourceMap | undefined, workspaceFolder: string): SourceMap {
  const out: SourceMap = {};
  for (const [from, to] of Object.entries(map ?? {})) {
    if (typeof to !== 'string' || from === '') continue;
    out[from] = to.replace(/\$\{workspaceFolder\}/g, workspaceFolder);
  }
  return out;
}

/** A compiled path rewritten by the source map; relative paths are taken from `root`. */
export function mapSourcePath(path: string, map: SourceMap, root: string): string {
  let best: string | undefined;
  for (const from of Object.keys(map)) {
    const prefix = from.replace(/[\\/]+$/, '');
    const atBoundary = path === prefix || path.startsWith(`${prefix}/`) || path.startsWith(`${prefix}\\`);
    if (atBoundary && (best === undefined || prefix.length > best.length)) best = prefix;
  }
  const mapped =
    best !== undefined ? `${map[best] ?? map[`${best}/`] ?? map[`${best}\\`]}${path.slice(best.length)}` : path;
  return comparable(isAbsolute(mapped) ? mapped : resolve(root, mapped));
}

/** Paths compare case-insensitively where the file system does (Windows, macOS by default). */
function comparable(path: string): string {
  const p = normalize(path);
  return process.platform === 'win32' || process.platform === 'darwin' ? p.toLowerCase() : p;
}

export class SourcePathResolver {
  private readonly byLocal = new Map<string, string>();
  private readonly byBase = new Map<string, string[]>();
  private readonly memo = new Map<string, string | undefined>();

  constructor(profilePaths: Iterable<string>, map: SourceMap, root: string) {
    for (const p of new Set(profilePaths)) {
      this.byLocal.set(mapSourcePath(p, map, root), p);
      const base = comparable(basename(p.replace(/\\/g, '/')));
      this.byBase.set(base, [...(this.byBase.get(base) ?? []), p]);
    }
  }

  /** The profile's path for a local document path, or undefined when the profile has no such file. */
  profilePathFor(documentPath: string): string | undefined {
    if (this.memo.has(documentPath)) return this.memo.get(documentPath);
    const local = comparable(documentPath);
    let found = this.byLocal.get(local);
    if (found === undefined) {
      const same = this.byBase.get(comparable(basename(local)));
      if (same && same.length === 1) found = same[0];
    }
    this.memo.set(documentPath, found);
    return found;
  }
}
