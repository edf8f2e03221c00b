import type { CallGraphResponse } from '../../common/dapCustom';
import { MetricsEngine } from '../analysis/metrics';
import { profileRows, type ProfileRow } from '../analysis/profileRows';
import { describingSet, measurementOf, type ResultSet, type ResultSetDocument } from '../analysis/resultSet';
import {
  emptyProfile,
  type ErrorBound,
  type Measure,
  type Profile,
  type ProfileFunction,
  type ProfileRun,
  type Provenance,
  type Unit,
} from './model';
import { withEdgeValues } from './callTree';
import { unitOfEvent } from './units';

/**
 * A profile from injected measurements: the result sets of one analysis (descent, full profile,
 * round robin) and its call graph.
 *
 * Values of different runs enter through their share of their own run (ratios stay inside a result
 * set), scaled by the reference run's total: on a deterministic target the totals agree and nothing
 * changes; elsewhere a function keeps its share. Self values are the inclusive minus the measured
 * callees where that is exact (profileRows decides), and otherwise carry a note instead of a guess.
 */
export interface ResultSetProfileOptions {
  generator?: string;
  /** Target facts: what one SysTick tick stands for, when known. */
  perTick?: Unit['perTick'];
}

export function profileFromResultSets(doc: ResultSetDocument, options: ResultSetProfileOptions = {}): Profile {
  const sets = doc.resultSets;
  // Described by a run that measured (a batch that was all refused says "no counter").
  const reference = describingSet(sets);
  const event = reference?.run.event ?? 'cycles';
  const unit = unitOfEvent(event, reference?.run.method ?? '', options.perTick);
  const profile = emptyProfile({
    generator: options.generator ?? doc.generator,
    program: reference ? { ...reference.program } : { executable: 'unknown' },
    unit,
    provenance: provenanceOf(reference, event),
    ...(reference?.createdAt ? { createdAt: reference.createdAt } : {}),
  });
  const referenceTotal = reference?.run.totals[event];
  if (referenceTotal !== undefined) profile.total = { value: referenceTotal, ...quantised(referenceTotal, unit, 1) };

  profile.runs = runsOf(doc, event);
  const analysis = doc.analysis;
  if (analysis) {
    profile.analysis = {
      scenario: analysis.scenario,
      metric: analysis.metric,
      ...(analysis.threshold !== undefined ? { threshold: analysis.threshold } : {}),
      roots: [...analysis.roots],
      cancelled: analysis.cancelled,
    };
  }
  const graph = analysis?.callGraph;
  const rows = analysis
    ? profileRows(
        { metric: analysis.metric, outcomes: analysis.outcomes, resultSets: sets },
        graph,
        new MetricsEngine(),
      )
    : measuredOnly(sets);
  const baselineRuns = profile.runs.filter((r) => r.role === 'baseline').length;
  profile.functions = rows.map((row, id) => functionOf(row, id, sets, graph, unit, referenceTotal, baselineRuns));
  profile.edges = edgesOf(profile.functions, graph);
  markCallTreeConventions(profile, graph);
  return withEdgeValues(profile);
}

function provenanceOf(rs: ResultSet | undefined, event: string): Provenance {
  const counter =
    rs?.run.counter ??
    /\(([^)]+)\)\s*$/.exec(rs?.run.method ?? '')?.[1] ??
    /,\s*([\w.]+)\s*$/.exec(rs?.run.method ?? '')?.[1] ??
    event;
  if (rs?.run.kind === 'oracle') return { kind: 'oracle', source: rs.run.method };
  return { kind: 'injected', payload: 'accumulated', counter };
}

/** Every run the document came from: the baseline runs that formed the total, then one per result set. */
function runsOf(doc: ResultSetDocument, event: string): ProfileRun[] {
  const batches = doc.resultSets.map((rs): ProfileRun => ({
    role: rs.run.kind === 'oracle' ? 'oracle' : rs.run.kind === 'synthetic' ? 'synthetic' : 'batch',
    method: rs.run.method,
    ...(rs.run.totals[event] !== undefined ? { total: rs.run.totals[event] } : {}),
    ...(rs.run.from !== undefined ? { from: rs.run.from } : {}),
    ...(rs.run.to !== undefined ? { to: rs.run.to } : {}),
    measured: [...rs.measurements.map((m) => m.name), ...(rs.groups ?? []).map((g) => g.name)],
  }));
  // Older documents count the baseline runs in `analysis.runs` only.
  const extra = Math.max(0, (doc.analysis?.runs ?? batches.length) - batches.length);
  const baselines = Array.from({ length: extra }, (): ProfileRun => ({
    role: 'baseline',
    method: 'the window total, measured in a run of its own',
    measured: [],
  }));
  return [...baselines, ...batches];
}

function measuredOnly(sets: readonly ResultSet[]): ProfileRow[] {
  const rows = new Map<string, ProfileRow>();
  sets.forEach((rs, index) => {
    for (const m of rs.measurements) {
      if (rows.has(m.name)) continue;
      const inclusive = m.inclusive[rs.run.event];
      rows.set(m.name, {
        name: m.name,
        status: 'measured',
        metrics: new Map(),
        event: rs.run.event,
        calls: m.calls,
        resultSet: index,
        ...(inclusive !== undefined ? { inclusive } : {}),
      });
    }
  });
  return [...rows.values()];
}

function functionOf(
  row: ProfileRow,
  id: number,
  sets: readonly ResultSet[],
  graph: CallGraphResponse | undefined,
  unit: Unit,
  referenceTotal: number | undefined,
  baselineRuns: number,
): ProfileFunction {
  const fn = graph?.functions.find((f) => f.name === row.name);
  const f: ProfileFunction = { id, name: row.name, status: row.status };
  if (fn) {
    f.address = fn.address;
    f.size = fn.size;
    if (fn.path && fn.line !== undefined) f.location = { path: fn.path, line: fn.line };
  }
  if (row.bound !== undefined) f.boundShare = row.bound;
  if (row.reason !== undefined) f.reason = row.reason;
  if (row.calls !== undefined) f.calls = row.calls;
  const rs = row.resultSet !== undefined ? sets[row.resultSet] : undefined;
  if (row.resultSet !== undefined) f.run = baselineRuns + row.resultSet;
  const runTotal = rs?.run.totals[rs.run.event];
  // A value of another run enters through its share of that run.
  const scale =
    rs && runTotal && referenceTotal !== undefined && runTotal !== referenceTotal ? referenceTotal / runTotal : 1;
  // A count is never below zero. A compensated value can dip under it (the payload's fixed cost taken
  // from a coarser counter) and so can a self value formed from measurements of different runs: such
  // a value is zero, within its bound.
  if (row.inclusive !== undefined) f.inclusive = counted(row.inclusive * scale, unit, row.calls ?? 1);
  if (row.exclusive !== undefined) f.self = counted(row.exclusive * scale, unit, row.calls ?? 1);
  else if (f.inclusive)
    f.selfNote = 'not formed: a callee is unmeasured, shared with other callers, or reached by an indirect call';
  const m = rs ? measurementOf(rs, row.name) : undefined;
  if (m) {
    if (m.min !== undefined) f.min = Math.max(0, m.min * scale);
    if (m.max !== undefined) f.max = Math.max(0, m.max * scale);
    if (m.mean !== undefined) f.mean = Math.max(0, m.mean * scale);
    if (m.incomplete) f.reason = m.incomplete;
  }
  return f;
}

function counted(value: number, unit: Unit, calls: number): Measure {
  return { value: Math.max(0, value), ...quantised(Math.max(0, value), unit, calls) };
}

/**
 * SysTick quantisation (reference/targets.md: a 24-bit down-counter read at each boundary): each
 * call's delta is off by less than one tick, so N calls are off by at most N ticks either way.
 */
function quantised(value: number, unit: Unit, calls: number): { bound?: ErrorBound } {
  if (unit.kind !== 'ticks') return {};
  const spread = Math.max(1, calls);
  return { bound: { low: Math.max(0, value - spread), high: value + spread, kind: 'quantisation' } };
}

function edgesOf(functions: readonly ProfileFunction[], graph: CallGraphResponse | undefined): Profile['edges'] {
  if (!graph) return [];
  const ids = new Map(functions.map((f) => [f.name, f.id]));
  const edges: Profile['edges'] = [];
  for (const e of graph.edges) {
    const caller = ids.get(e.caller);
    const callee = ids.get(e.callee);
    if (caller === undefined || callee === undefined) continue;
    edges.push({ caller, callee, kind: e.kind, ...(e.count !== undefined ? { calls: e.count } : {}) });
  }
  return edges;
}

/**
 * What the call tree must know of the graph beyond its edges: who calls through a pointer (its own
 * time is not formed from its callees: whatever it held, it is never its inclusive value) and whose
 * code other code runs on into without a call (its value leaves those passes out).
 */
function markCallTreeConventions(p: Profile, graph: CallGraphResponse | undefined): void {
  if (!graph) return;
  const byName = new Map(p.functions.map((f) => [f.name, f]));
  for (const name of graph.indirectCallers) {
    const f = byName.get(name);
    if (!f) continue;
    f.indirectCalls = true;
    if (f.self && f.inclusive) {
      delete f.self;
      f.selfNote = 'not formed: it calls through a pointer, and whom it calls there is not known';
    }
  }
  for (const ft of graph.fallThrough ?? []) {
    const f = byName.get(ft.callee);
    if (!f) continue;
    (f.runOnFrom ??= []).push(ft.caller);
  }
  for (const f of p.functions) {
    if (!f.runOnFrom || !f.inclusive) continue;
    const note =
      `leaves out the passes that run on into it from ${f.runOnFrom.join(', ')} without a call: ` +
      `they count under ${f.runOnFrom.length > 1 ? 'those' : 'that function'}`;
    f.reason = f.reason ? `${f.reason}; ${note}` : `${note[0]!.toUpperCase()}${note.slice(1)}`;
  }
}
