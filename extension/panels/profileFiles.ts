import { basename } from 'node:path';
import { loadAnyProfile } from '../../core/profile/json';
import type { Profile } from '../../core/profile/model';
import type { PanelTab } from '../../common/webviewMessages';

/** The files the profile panel opens: saved result sets and profile files. */
export const PROFILE_FILE_SUFFIX = '.cyclelens-profile.json';

/**
 * A profile from a file: a `*.cyclelens-profile.json` profile as written by the exporter, or a
 * result-set document. Imported files are data: both are validated field by field, nothing in them runs.
 */
export async function loadProfileFile(path: string): Promise<{ profile: Profile; title: string }> {
  return { profile: await loadAnyProfile(path), title: basename(path) };
}

/**
 * Where a function is, as line ranges per file: its DWARF line to its end line, or to the next function
 * in the file.
 */
export function functionRanges(p: Profile): Map<string, Array<{ name: string; first: number; last: number }>> {
  const byFile = new Map<string, Array<{ name: string; first: number; last: number }>>();
  const located = p.functions.filter((f) => f.location).sort((a, b) => a.location!.line - b.location!.line);
  for (const f of located) {
    const list = byFile.get(f.location!.path) ?? [];
    list.push({ name: f.name, first: f.location!.line, last: f.location!.endLine ?? Number.POSITIVE_INFINITY });
    byFile.set(f.location!.path, list);
  }
  for (const list of byFile.values()) {
    for (let i = 0; i < list.length; i++) {
      const next = list[i + 1];
      if (next && list[i]!.last === Number.POSITIVE_INFINITY) list[i]!.last = next.first - 1;
    }
  }
  return byFile;
}

/** The function whose range holds `line` (1-based) in `path`. */
export function functionAt(ranges: ReturnType<typeof functionRanges>, path: string, line: number): string | undefined {
  return ranges.get(path)?.find((r) => line >= r.first && line <= r.last)?.name;
}

const TABS: readonly PanelTab[] = ['graph', 'flame', 'source', 'table'];

/**
 * What a panel saved before a window reload (the webview's `setState`, handed back by VS Code's
 * serializer) says to reopen: the file it showed and its tab. A panel that showed an unsaved live
 * profile has no file, and the state is the webview's, so every field is checked.
 */
export function restorablePanel(state: unknown): { file: string; tab: PanelTab } | undefined {
  if (typeof state !== 'object' || state === null) return undefined;
  const { file, tab } = state as { file?: unknown; tab?: unknown };
  if (typeof file !== 'string' || file === '') return undefined;
  return { file, tab: TABS.includes(tab as PanelTab) ? (tab as PanelTab) : 'graph' };
}

/** The result set a descent's or profile's text report belongs to: `.cyclelens/results/X.txt` → `X.json`. */
export function resultSetOfReport(path: string): string | undefined {
  const parts = path.split(/[\\/]/);
  if (parts.length < 3 || parts.at(-2) !== 'results' || parts.at(-3) !== '.cyclelens' || !path.endsWith('.txt'))
    return undefined;
  return `${path.slice(0, -'.txt'.length)}.json`;
}
