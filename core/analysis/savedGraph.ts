import type { CallGraphResponse } from '../../common/dapCustom';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadCallGraphDocument, type CallGraphDocument } from './resultSet';

export class SavedGraphError extends Error {
  override name = 'SavedGraphError';
}

/**
 * The program's static call graph with the counts of a saved dynamic one: every static edge stays
 * (bounds must hold for paths the recorded run did not take), observed edges carry their count,
 * and edges only the run showed (calls through pointers) are added. The saved graph must be of the
 * same build: the functions, their addresses and sizes must match, or its counts would be
 * attributed to the wrong code.
 */
export function withCallCounts(
  current: CallGraphResponse,
  saved: CallGraphDocument,
  file: string,
): CallGraphResponse & { interrupts?: CallGraphResponse['edges'] } {
  if (saved.kind !== 'dynamic')
    throw new SavedGraphError(
      `${file} is a static call graph: it has no call counts. Record a dynamic one with ` +
        `\`cyclelens call-graph --dynamic --out ${file}\`.`,
    );
  const now = new Map(current.functions.map((f) => [f.name, f]));
  const differ = saved.graph.functions.filter((f) => {
    const c = now.get(f.name);
    return !c || c.address !== f.address || c.size !== f.size;
  });
  if (differ.length > 0 || saved.graph.functions.length !== current.functions.length) {
    const example = differ[0]
      ? ` (${differ[0].name} at 0x${differ[0].address.toString(16)} is ` +
        `${now.has(differ[0].name) ? 'elsewhere or of another size' : 'gone'} in the program now)`
      : '';
    throw new SavedGraphError(
      `${file} was recorded on another build of ${saved.program}${example}: record it again with ` +
        `\`cyclelens call-graph --dynamic --out ${file}\`.`,
    );
  }
  const counts = new Map<string, number>();
  const key = (caller: string, callee: string): string => `${caller}\u0000${callee}`;
  for (const e of saved.graph.edges)
    if (e.count !== undefined)
      counts.set(key(e.caller, e.callee), (counts.get(key(e.caller, e.callee)) ?? 0) + e.count);
  const edges = current.edges.map((e) => {
    const count = counts.get(key(e.caller, e.callee));
    counts.delete(key(e.caller, e.callee));
    // A static edge the run never took counts zero: the run was recorded whole.
    return { ...e, count: count ?? 0 };
  });
  for (const e of saved.graph.edges) {
    if (!counts.has(key(e.caller, e.callee))) continue;
    edges.push({ ...e, count: counts.get(key(e.caller, e.callee))! });
    counts.delete(key(e.caller, e.callee));
  }
  return { ...current, edges, ...(saved.interrupts ? { interrupts: saved.interrupts } : {}) };
}

/** Where the workspace keeps the call graph that `cyclelens call-graph --dynamic --out` saved. */
export function workspaceCallGraphPath(folder: string): string {
  return join(folder, '.cyclelens', 'callgraph.json');
}

/**
 * The workspace's saved call graph for a descent run from the editor: none when there is no file,
 * the document when it reads, or the reason it cannot be used (the descent then runs without it).
 */
export async function workspaceCallGraph(
  folder: string,
): Promise<{ document: CallGraphDocument; file: string } | { problem: string } | undefined> {
  const file = workspaceCallGraphPath(folder);
  if (!existsSync(file)) return undefined;
  try {
    return { document: await loadCallGraphDocument(file), file };
  } catch (err) {
    return { problem: err instanceof Error ? err.message : String(err) };
  }
}
