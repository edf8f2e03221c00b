import type { CallGraphResponse } from '../../common/dapCustom';
import { calleesKey, semanticOf, type MetricsEngine } from './metrics';
import { measurementOf, rawValues, type FunctionOutcome, type FunctionStatus, type ResultSet } from './resultSet';

/**
 * One row per function of an analysis, with every metric its result set allows: the shared input
 * of the text report, the DOT graph and the exporters.
 *
 * Exclusive = inclusive minus the callees, formed only when it is exact: every callee is measured
 * and is called by this function alone (a shared callee's time is split among callers in a way
 * function-level measurements cannot tell), and the function is not part of mutual recursion.
 * A callee measured in another run enters through its share of that run (ratios stay inside their
 * result set), scaled by this run's total. Interrupt handlers that preempted the function stay in
 * its inclusive and hence in its exclusive value, as on the hardware.
 */

export interface ProfileRow {
  name: string;
  status: FunctionStatus;
  /** The metric the analysis ran on, and its value / bound. */
  value?: number;
  bound?: number;
  /** Counts of the run's event (`event`). */
  event?: string;
  inclusive?: number;
  exclusive?: number;
  calls?: number;
  share?: number;
  /** Every metric computable from the function's result set. */
  metrics: Map<string, number>;
  reason?: string;
  source?: { path: string; line?: number };
  resultSet?: number;
  windows?: number;
  /** On the stack for the whole window: its inclusive value is the run's total, not measured. */
  spansWindow?: boolean;
}

export interface AnalysisView {
  metric: string;
  outcomes: readonly FunctionOutcome[];
  resultSets: readonly ResultSet[];
}

const STATUS_ORDER: Record<FunctionStatus, number> = {
  measured: 0,
  unmeasurable: 1,
  pruned: 2,
  pending: 3,
  unreached: 4,
};

export function profileRows(
  view: AnalysisView,
  graph: CallGraphResponse | undefined,
  engine: MetricsEngine,
): ProfileRow[] {
  const byName = new Map(view.outcomes.map((o) => [o.name, o]));
  const structure = graph ? graphStructure(graph) : undefined;
  const rows = view.outcomes.map((o): ProfileRow => {
    const fn = graph?.functions.find((f) => f.name === o.name);
    const row: ProfileRow = { name: o.name, status: o.status, metrics: new Map() };
    if (o.value !== undefined) row.value = o.value;
    if (o.bound !== undefined) row.bound = o.bound;
    if (o.reason !== undefined) row.reason = o.reason;
    if (o.windows !== undefined) row.windows = o.windows;
    if (fn?.path) row.source = { path: fn.path, ...(fn.line !== undefined ? { line: fn.line } : {}) };
    if (o.spansWindow) {
      row.spansWindow = true;
      const first = view.resultSets[0];
      const total = first?.run.totals[first.run.event];
      if (first && total !== undefined) {
        row.event = first.run.event;
        row.inclusive = total;
        row.share = 1;
      }
      return row;
    }
    if (o.status !== 'measured' || o.resultSet === undefined) return row;
    const rs = view.resultSets[o.resultSet];
    const m = rs ? measurementOf(rs, o.name) : undefined;
    if (!rs || !m) return row;
    row.resultSet = o.resultSet;
    const semantic = semanticOf(rs.run.event);
    const extra: Record<string, number> = {};
    if (semantic && structure) {
      const callees = calleesTotal(o.name, rs, semantic, structure, byName, view.resultSets);
      if (callees !== undefined) {
        extra[calleesKey(semantic)] = callees;
        extra[calleesKey('event')] = callees;
      }
    }
    const raw = rawValues(rs, o.name, extra)!;
    row.metrics = engine.evaluate(raw);
    row.event = rs.run.event;
    row.calls = m.calls;
    row.inclusive = m.inclusive[rs.run.event];
    const share = row.metrics.get('share');
    const exclusive = semantic ? row.metrics.get(`exclusive.${semantic}`) : undefined;
    if (share !== undefined) row.share = share;
    if (exclusive !== undefined) row.exclusive = exclusive;
    return row;
  });
  return rows.sort(
    (a, b) =>
      STATUS_ORDER[a.status] - STATUS_ORDER[b.status] ||
      (b.value ?? b.bound ?? -1) - (a.value ?? a.bound ?? -1) ||
      a.name.localeCompare(b.name),
  );
}

interface Structure {
  callees: Map<string, Set<string>>;
  callers: Map<string, Set<string>>;
  indirect: boolean;
  indirectCallers: Set<string>;
}

function graphStructure(graph: CallGraphResponse): Structure {
  const callees = new Map<string, Set<string>>();
  const callers = new Map<string, Set<string>>();
  for (const f of graph.functions) {
    callees.set(f.name, new Set());
    callers.set(f.name, new Set());
  }
  for (const e of graph.edges) {
    if (e.caller === e.callee) continue;
    callees.get(e.caller)?.add(e.callee);
    callers.get(e.callee)?.add(e.caller);
  }
  return {
    callees,
    callers,
    indirect: graph.indirectCallers.length > 0,
    indirectCallers: new Set(graph.indirectCallers),
  };
}

/** Sum of the callees' inclusive values in `rs`'s units, or undefined when it would not be exact. */
function calleesTotal(
  name: string,
  rs: ResultSet,
  semantic: string,
  s: Structure,
  outcomes: ReadonlyMap<string, FunctionOutcome>,
  sets: readonly ResultSet[],
): number | undefined {
  // A call through a pointer reaches callees nobody listed: its own time is not the inclusive.
  if (s.indirectCallers.has(name)) return undefined;
  const callees = [...(s.callees.get(name) ?? [])];
  if (callees.length === 0) return 0;
  // With indirect calls anywhere, a callee's time may come from callers the graph does not show.
  if (s.indirect) return undefined;
  const total = rs.run.totals[rs.run.event];
  if (total === undefined) return undefined;
  let sum = 0;
  for (const c of callees) {
    const callers = s.callers.get(c)!;
    if (callers.size !== 1) return undefined;
    if (reaches(s, c, name)) return undefined;
    const o = outcomes.get(c);
    if (o?.status !== 'measured' || o.resultSet === undefined) return undefined;
    const crs = sets[o.resultSet];
    const cm = crs ? measurementOf(crs, c) : undefined;
    if (!crs || !cm || semanticOf(crs.run.event) !== semantic) return undefined;
    const ctotal = crs.run.totals[crs.run.event];
    const cvalue = cm.inclusive[crs.run.event];
    if (!ctotal || cvalue === undefined) return undefined;
    sum += crs === rs ? cvalue : (cvalue / ctotal) * total;
  }
  return sum;
}

function reaches(s: Structure, from: string, to: string): boolean {
  const seen = new Set([from]);
  const queue = [from];
  for (let i = 0; i < queue.length; i++) {
    for (const c of s.callees.get(queue[i]!) ?? []) {
      if (c === to) return true;
      if (!seen.has(c)) {
        seen.add(c);
        queue.push(c);
      }
    }
  }
  return false;
}
