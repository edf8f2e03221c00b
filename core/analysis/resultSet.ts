import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { CallGraphResponse } from '../../common/dapCustom';
import { JsonWalker } from '../json/jsonWalker';
import { CALLS, inclusiveKey, rawFromEvents, totalKey, type RawValues } from './metrics';

/**
 * Result sets (docs/design.md, "Measurement semantics"): every measurement taken in one run of the
 * program, with that run's totals. Ratios are formed inside one result set only: `rawValues()`
 * pairs a function's counts with the totals of the same run and nothing else. Result sets persist
 * as versioned JSON (`schema: 'cyclelens-resultset/1'`), are validated field by field on load
 * (files are data, never code), and are written atomically (temporary file + rename).
 */

export const RESULT_SET_SCHEMA = 'cyclelens-resultset/1';
const SCHEMA_NAME = 'cyclelens-resultset';
const SCHEMA_VERSION = 1;

export type RunKind = 'single-pass' | 'cyclic' | 'oracle' | 'synthetic';

export interface RunInfo {
  kind: RunKind;
  /** The event the function measurements count (`instructions`, `cycles` …). */
  event: string;
  /** Counts of the whole measured window by event id. */
  totals: Record<string, number>;
  /** How the values were taken, in words (`software injection, minstret`, `oracle (QEMU trace)` …). */
  method: string;
  /** The counter the measurements read (`minstret`, `SysTick CVR` …), when the run measured anything. */
  counter?: string;
  /** Where the window started and ended (`main`, `program_end`, `idle_point x20` …). */
  from?: string;
  to?: string;
}

export interface FunctionMeasurement {
  name: string;
  /** Inclusive counts by event id, with the payload's own counts removed. */
  inclusive: Record<string, number>;
  /** Entries (recursive ones included). */
  calls: number;
  /** Completed outermost passes. */
  passes?: number;
  /** Entries the payload could not track. */
  untracked?: number;
  /** Per-pass extremes and mean of the event, when the measurer keeps them. */
  min?: number;
  max?: number;
  mean?: number;
  /** The counted total before the payload's own counts were removed. */
  rawTotal?: number;
  /** Why the value may be too low (entries the payload could not track, call sites it could not rewrite). */
  incomplete?: string;
}

export interface RefusedFunction {
  name: string;
  reason: string;
  /** Set when a group measurement was refused: its members (each may still be measured alone). */
  members?: string[];
  /** The member that could not join the group, when the refusal names one. */
  blockedBy?: string;
}

/**
 * One slot shared by several functions: the counts while at least one member is on the stack (the
 * union of their activations, nested member calls counted once), and the entries through any
 * member. It bounds every member from above, and so prunes all of them at once when it is small.
 */
export interface GroupMeasurement {
  /** How the group is named in the run (`a + b + c`). */
  name: string;
  members: string[];
  inclusive: Record<string, number>;
  calls: number;
  /** Why the value may be too low (entries the payload could not track). */
  incomplete?: string;
}

export interface ResultSet {
  id: string;
  createdAt: string;
  program: { executable: string; family?: string };
  run: RunInfo;
  measurements: FunctionMeasurement[];
  /** Group measurements (one slot counting the union of several functions), when the run had any. */
  groups?: GroupMeasurement[];
  /** Asked for but not measured, with the reason (never silently dropped). */
  refused: RefusedFunction[];
}

export type FunctionStatus = 'measured' | 'pruned' | 'unmeasurable' | 'pending' | 'unreached';

/** What an analysis concluded about one function. */
export interface FunctionOutcome {
  name: string;
  status: FunctionStatus;
  /** Upper bound of the metric from the callers (a root's: the whole run). */
  bound?: number;
  /** The metric's value (round robin: the mean over the windows). */
  value?: number;
  /** Index in `resultSets` of the run that measured it (round robin: the last window). */
  resultSet?: number;
  /** Why it could not be measured, or why its value may be low. */
  reason?: string;
  /** Breadth-first depth from the roots. */
  depth?: number;
  /** Windows that measured it (round robin). */
  windows?: number;
  /** On the stack for the whole window (the function the run starts in): its value is the run's, unmeasured. */
  spansWindow?: boolean;
}

export type Scenario = 'descent' | 'full-profile' | 'round-robin';

/** The analysis the result sets belong to: enough to re-render it or continue it. */
export interface AnalysisRecord {
  scenario: Scenario;
  metric: string;
  threshold?: number;
  roots: string[];
  /**
   * Every run of the program the analysis took: its result sets, the runs that only formed the total,
   * the counting run.
   */
  runs: number;
  cancelled: boolean;
  outcomes: FunctionOutcome[];
  callGraph?: CallGraphResponse;
  /** Descent: the counting run whose instruction counts bounded the functions (one of `runs`, with no result set). */
  counted?: { method: string; ran: number; functions: number };
}

export interface ResultSetDocument {
  schema: typeof RESULT_SET_SCHEMA;
  generator: string;
  resultSets: ResultSet[];
  analysis?: AnalysisRecord;
}

// ---- forming values inside one result set ---------------------------------------------------------

/**
 * The result set that describes an analysis (its header's method, counter and unit): the first
 * run that measured something. A run whose batch was all refused says "no counter" and would
 * describe the profile by a run that measured nothing.
 */
export function describingSet(sets: readonly ResultSet[]): ResultSet | undefined {
  return sets.find((rs) => rs.measurements.length > 0 || (rs.groups?.length ?? 0) > 0) ?? sets[0];
}

export function measurementOf(rs: ResultSet, name: string): FunctionMeasurement | undefined {
  return rs.measurements.find((m) => m.name === name);
}

/**
 * The raw values of one function for the metrics engine: its inclusive counts and calls together
 * with the totals of the same run. `extra` adds function-scope values formed elsewhere (callees).
 */
export function rawValues(rs: ResultSet, name: string, extra: RawValues = {}): Record<string, number> | undefined {
  const m = measurementOf(rs, name);
  if (!m) return undefined;
  return {
    ...rawFromEvents(m.inclusive, 'inclusive'),
    ...rawFromEvents(rs.run.totals, 'total'),
    ...runEvent(m.inclusive, rs),
    [CALLS]: m.calls,
    ...extra,
  };
}

/** The raw values of a group measurement, with the totals of the same run. */
export function groupRawValues(rs: ResultSet, g: GroupMeasurement): Record<string, number> {
  return {
    ...rawFromEvents(g.inclusive, 'inclusive'),
    ...rawFromEvents(rs.run.totals, 'total'),
    ...runEvent(g.inclusive, rs),
    [CALLS]: g.calls,
  };
}

/** The whole run as if it were one function: what a root's bound is. */
export function wholeRunValues(rs: ResultSet): Record<string, number> {
  return {
    ...rawFromEvents(rs.run.totals, 'inclusive'),
    ...rawFromEvents(rs.run.totals, 'total'),
    ...runEvent(rs.run.totals, rs),
  };
}

/** The `event` raw values: the counts of the event the run measured (`inclusive:event`, `total:event`). */
function runEvent(counts: Readonly<Record<string, number>>, rs: ResultSet): Record<string, number> {
  const out: Record<string, number> = {};
  const v = counts[rs.run.event];
  const t = rs.run.totals[rs.run.event];
  if (v !== undefined) out[inclusiveKey('event')] = v;
  if (t !== undefined) out[totalKey('event')] = t;
  return out;
}

export function newResultSetId(): string {
  return `rs-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
}

// ---- validation -----------------------------------------------------------------------------------

export type ResultSetErrorKind = 'io' | 'notJson' | 'notResultSet' | 'version' | 'malformed';

export class ResultSetError extends Error {
  override name = 'ResultSetError';
  constructor(
    readonly kind: ResultSetErrorKind,
    message: string,
  ) {
    super(message);
  }
}

type Json = unknown;

/**
 * Walks a result set's untrusted JSON; paths read `resultSets[0].run.totals.cycles`. Counter readings
 * are checked for what a counter can read.
 */
class Reader extends JsonWalker {
  fail(what: string): never {
    throw new ResultSetError(
      'malformed',
      `${this.file}: ${this.path || 'the top level'} ${what}. The file is damaged or was not ` +
        `written by CycleLens; measure again or restore it.`,
    );
  }

  protected at(path: string, value: unknown): this {
    return new Reader(this.file, path, value) as this;
  }

  protected memberPath(name: string): string {
    return this.path ? `${this.path}.${name}` : name;
  }

  protected itemPath(index: number): string {
    return `${this.path}[${index}]`;
  }

  count(): number {
    const n = this.number();
    if (!Number.isInteger(n) || n < 0) this.fail(`must be a non-negative integer (found ${n})`);
    // Above 2^53 integers are no longer exact in JSON numbers: no run makes that many calls or steps.
    if (n > Number.MAX_SAFE_INTEGER) this.fail(`is impossibly large (${n}; at most ${Number.MAX_SAFE_INTEGER})`);
    return n;
  }

  /**
   * A counter reading: finite, not negative, and below 2^64, the widest hardware counter (RV32
   * mcycle/minstret pairs, ARMv8.1-M PMU chained pairs). 1e300 instructions is a damaged file.
   */
  counterValue(): number {
    const n = this.number();
    if (n < 0) this.fail(`is a negative count (${n}); counters only count up`);
    if (n > MAX_COUNTER) this.fail(`is impossibly large (${n}; a 64-bit counter reads at most ${MAX_COUNTER})`);
    return n;
  }

  /**
   * Counts with the payload's own cost taken out. Compensation subtracts a fixed cost per call from a
   * counter that resolves coarser than that cost (a SysTick tick is 40 instructions on QEMU), so a
   * near-empty function can come out a little below zero: by less than one unit per call boundary.
   * Anything lower is not a measurement.
   */
  compensatedRecord(calls: number): Record<string, number> {
    const raw = this.numberRecord();
    for (const key of Object.keys(raw)) {
      const at = this.at(this.memberPath(key), raw[key]);
      if (raw[key]! < 0 && raw[key]! >= -(calls + 1)) continue;
      at.counterValue();
    }
    return raw;
  }

  /** One pass's compensated count (min, max, mean): below zero by less than one unit at most. */
  compensatedValue(): number {
    const n = this.number();
    return n < 0 && n >= -1 ? n : this.counterValue();
  }

  /** A record of counter readings keyed by event id. */
  counterRecord(): Record<string, number> {
    const raw = this.numberRecord();
    for (const key of Object.keys(raw)) this.at(this.memberPath(key), raw[key]).counterValue();
    return raw;
  }
}

/** 2^64: no counter reads more. */
const MAX_COUNTER = 18446744073709551616;
/**
 * A function's inclusive count cannot exceed the window it was measured in. Compensation, counter
 * ratios and a window boundary inside a call may stretch that a little; more than twice the total
 * (plus a small constant for near-empty windows) is not a measurement.
 */
const INCLUSIVE_SLACK = 2;
const INCLUSIVE_FLOOR = 1_000_000;

function checkInclusive(m: Reader, inclusive: Record<string, number>, totals: Record<string, number>): void {
  for (const [event, value] of Object.entries(inclusive)) {
    const total = totals[event];
    if (total === undefined || value <= total * INCLUSIVE_SLACK + INCLUSIVE_FLOOR) continue;
    m.field('inclusive')
      .field(event)
      .fail(
        `is ${value}, far more than the whole run's total of ${total} (run.totals.${event}): a ` +
          `function cannot count more than the run it is part of`,
      );
  }
}

const RUN_KINDS: readonly RunKind[] = ['single-pass', 'cyclic', 'oracle', 'synthetic'];
const STATUSES: readonly FunctionStatus[] = ['measured', 'pruned', 'unmeasurable', 'pending', 'unreached'];
const SCENARIOS: readonly Scenario[] = ['descent', 'full-profile', 'round-robin'];

function readResultSet(r: Reader): ResultSet {
  const run = r.field('run');
  const program = r.field('program');
  const family = program.optional('family', (x) => x.string());
  const from = run.optional('from', (x) => x.string());
  const to = run.optional('to', (x) => x.string());
  const counter = run.optional('counter', (x) => x.string());
  const totals = run.field('totals').counterRecord();
  return {
    id: r.field('id').string(),
    createdAt: r.field('createdAt').string(),
    program: { executable: program.field('executable').string(), ...(family !== undefined ? { family } : {}) },
    run: {
      kind: run.field('kind').oneOf(RUN_KINDS),
      event: run.field('event').string(),
      totals,
      method: run.field('method').string(),
      ...(counter !== undefined ? { counter } : {}),
      ...(from !== undefined ? { from } : {}),
      ...(to !== undefined ? { to } : {}),
    },
    measurements: r.field('measurements').array((m) => {
      const calls = m.field('calls').count();
      const out: FunctionMeasurement = {
        name: m.field('name').string(),
        inclusive: m.field('inclusive').compensatedRecord(calls),
        calls,
      };
      checkInclusive(m, out.inclusive, totals);
      const passes = m.optional('passes', (x) => x.count());
      const untracked = m.optional('untracked', (x) => x.count());
      const min = m.optional('min', (x) => x.compensatedValue());
      const max = m.optional('max', (x) => x.compensatedValue());
      if (min !== undefined && max !== undefined && min > max) m.field('min').fail(`(${min}) is above max (${max})`);
      const mean = m.optional('mean', (x) => x.compensatedValue());
      const rawTotal = m.optional('rawTotal', (x) => x.counterValue());
      const incomplete = m.optional('incomplete', (x) => x.string());
      if (passes !== undefined) out.passes = passes;
      if (untracked !== undefined) out.untracked = untracked;
      if (min !== undefined) out.min = min;
      if (max !== undefined) out.max = max;
      if (mean !== undefined) out.mean = mean;
      if (rawTotal !== undefined) out.rawTotal = rawTotal;
      if (incomplete !== undefined) out.incomplete = incomplete;
      return out;
    }),
    ...optionalGroups(r),
    refused: r.field('refused').array((x) => {
      const members = x.optional('members', (y) => y.array((z) => z.string()));
      const blockedBy = x.optional('blockedBy', (y) => y.string());
      return {
        name: x.field('name').string(),
        reason: x.field('reason').string(),
        ...(members ? { members } : {}),
        ...(blockedBy !== undefined ? { blockedBy } : {}),
      };
    }),
  };
}

function optionalGroups(r: Reader): { groups?: GroupMeasurement[] } {
  const groups = r.optional('groups', (x) =>
    x.array((g) => {
      const members = g.field('members').array((m) => m.string());
      if (members.length === 0) g.field('members').fail('must name at least one function');
      const incomplete = g.optional('incomplete', (y) => y.string());
      const calls = g.field('calls').count();
      return {
        name: g.field('name').string(),
        members,
        inclusive: g.field('inclusive').compensatedRecord(calls),
        calls,
        ...(incomplete !== undefined ? { incomplete } : {}),
      };
    }),
  );
  return groups ? { groups } : {};
}

function readOutcome(r: Reader): FunctionOutcome {
  const out: FunctionOutcome = { name: r.field('name').string(), status: r.field('status').oneOf(STATUSES) };
  const bound = r.optional('bound', (x) => x.number());
  const value = r.optional('value', (x) => x.number());
  const resultSet = r.optional('resultSet', (x) => x.count());
  const reason = r.optional('reason', (x) => x.string());
  const depth = r.optional('depth', (x) => x.count());
  const windows = r.optional('windows', (x) => x.count());
  const spansWindow = r.optional('spansWindow', (x) => x.boolean());
  if (bound !== undefined) out.bound = bound;
  if (value !== undefined) out.value = value;
  if (resultSet !== undefined) out.resultSet = resultSet;
  if (reason !== undefined) out.reason = reason;
  if (depth !== undefined) out.depth = depth;
  if (windows !== undefined) out.windows = windows;
  if (spansWindow !== undefined) out.spansWindow = spansWindow;
  return out;
}

export const CALL_GRAPH_SCHEMA = 'cyclelens-callgraph/1';

/** A call graph saved to the workspace: the static graph, or a dynamic one with its call counts. */
export interface CallGraphDocument {
  schema: typeof CALL_GRAPH_SCHEMA;
  /** The executable it was taken from. */
  program: string;
  /** `dynamic`: recorded with an entry breakpoint on every function (counts on the edges). */
  kind: 'static' | 'dynamic';
  graph: CallGraphResponse;
  /** Dynamic: interrupt-handler entries (interrupted function -> handler, with counts). */
  interrupts?: CallGraphResponse['edges'];
  /** Dynamic: why the recording ended (`programEnd` when it saw the whole run). */
  ended?: string;
}

/** Validates parsed JSON as a saved call graph; `file` names it in messages. */
export function parseCallGraphDocument(json: Json, file = 'the call graph'): CallGraphDocument {
  const top = new Reader(file, '', json);
  top.object();
  const schema = top.has('schema') ? top.field('schema').string() : undefined;
  if (schema !== CALL_GRAPH_SCHEMA) {
    throw new ResultSetError(
      schema === undefined ? 'notResultSet' : 'version',
      `${file} is not a CycleLens call graph: its schema is ${schema === undefined ? 'missing' : `"${schema}"`}, ` +
        `expected "${CALL_GRAPH_SCHEMA}". Record it with \`cyclelens call-graph\`.`,
    );
  }
  const graph = readCallGraph(top.field('graph'));
  const interrupts = top.optional(
    'interrupts',
    (r) => readCallGraph(new Reader(file, 'interrupts', { functions: [], edges: r.value, indirectCallers: [] })).edges,
  );
  const ended = top.optional('ended', (r) => r.string());
  return {
    schema: CALL_GRAPH_SCHEMA,
    program: top.field('program').string(),
    kind: top.field('kind').oneOf(['static', 'dynamic'] as const),
    graph,
    ...(interrupts ? { interrupts } : {}),
    ...(ended !== undefined ? { ended } : {}),
  };
}

/** A file's text; `missing` says what to do when it does not exist. */
async function readDocument(path: string, missing: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ResultSetError(
      'io',
      code === 'ENOENT' ? `${path} does not exist: ${missing}.` : `${path} cannot be read (${(err as Error).message}).`,
    );
  }
}

export async function loadCallGraphDocument(path: string): Promise<CallGraphDocument> {
  const text = await readDocument(path, `record it with \`cyclelens call-graph --dynamic --out ${path}\``);
  let json: Json;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ResultSetError(
      'notJson',
      `${path} is not valid JSON (${err instanceof Error ? err.message : String(err)}): record the call graph again.`,
    );
  }
  return parseCallGraphDocument(json, path);
}

function readCallGraph(r: Reader): CallGraphResponse {
  return {
    functions: r.field('functions').array((f) => {
      const path = f.optional('path', (x) => x.string());
      const line = f.optional('line', (x) => x.count());
      return {
        name: f.field('name').string(),
        address: f.field('address').count(),
        size: f.field('size').count(),
        ...(path !== undefined ? { path } : {}),
        ...(line !== undefined ? { line } : {}),
      };
    }),
    edges: r.field('edges').array((e) => {
      const count = e.optional('count', (x) => x.count());
      return {
        caller: e.field('caller').string(),
        callee: e.field('callee').string(),
        kind: e.field('kind').oneOf(['call', 'tail'] as const),
        sites: e.field('sites').array((s) => s.count()),
        ...(count !== undefined ? { count } : {}),
      };
    }),
    indirectCallers: r.field('indirectCallers').array((s) => s.string()),
    ...runOnOf(r),
  };
}

/** Code that runs on into another function's (optional: older documents lack it). */
function runOnOf(r: Reader): Pick<CallGraphResponse, 'fallThrough'> {
  const list = r.optional('fallThrough', (x) =>
    x.array((e) => ({ caller: e.field('caller').string(), callee: e.field('callee').string() })),
  );
  return list ? { fallThrough: list } : {};
}

function readAnalysis(r: Reader, resultSets: number): AnalysisRecord {
  const threshold = r.optional('threshold', (x) => x.number());
  const callGraph = r.optional('callGraph', readCallGraph);
  const counted = r.optional('counted', (x) => ({
    method: x.field('method').string(),
    ran: x.field('ran').count(),
    functions: x.field('functions').count(),
  }));
  const outcomes = r.field('outcomes').array(readOutcome);
  outcomes.forEach((o, i) => {
    if (o.resultSet !== undefined && o.resultSet >= resultSets) {
      r.field('outcomes').fail(
        `[${i}].resultSet points at result set ${o.resultSet}, but the file holds ${resultSets}`,
      );
    }
  });
  return {
    scenario: r.field('scenario').oneOf(SCENARIOS),
    metric: r.field('metric').string(),
    ...(threshold !== undefined ? { threshold } : {}),
    roots: r.field('roots').array((x) => x.string()),
    runs: r.field('runs').count(),
    cancelled: r.field('cancelled').boolean(),
    outcomes,
    ...(callGraph ? { callGraph } : {}),
    ...(counted ? { counted } : {}),
  };
}

/** Validates parsed JSON as a result-set document; `file` names it in messages. */
export function parseResultSetDocument(json: Json, file = 'the result set'): ResultSetDocument {
  const top = new Reader(file, '', json);
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new ResultSetError(
      'notResultSet',
      `${file} is not a CycleLens result set: it holds ${Array.isArray(json) ? 'an array' : typeof json}, ` +
        `not an object with "schema": "${RESULT_SET_SCHEMA}".`,
    );
  }
  if (!top.has('schema') || typeof (json as Record<string, Json>).schema !== 'string') {
    throw new ResultSetError(
      'notResultSet',
      `${file} is not a CycleLens result set: it has no "schema" field (expected "${RESULT_SET_SCHEMA}").`,
    );
  }
  const schema = (json as Record<string, Json>).schema as string;
  const m = /^(.+)\/(\d+)$/.exec(schema);
  if (!m || m[1] !== SCHEMA_NAME) {
    throw new ResultSetError(
      'notResultSet',
      `${file} is not a CycleLens result set: its schema is "${schema}", expected "${RESULT_SET_SCHEMA}".`,
    );
  }
  const version = Number(m[2]);
  if (version !== SCHEMA_VERSION) {
    const advice =
      version > SCHEMA_VERSION
        ? 'it was written by a newer CycleLens: update CycleLens to read it'
        : 'it was written by an older CycleLens whose format this version no longer reads: measure again';
    throw new ResultSetError(
      'version',
      `${file} has result-set format version ${version}, this CycleLens reads version ${SCHEMA_VERSION}: ${advice}.`,
    );
  }
  const resultSets = top.field('resultSets').array(readResultSet);
  const analysis = top.optional('analysis', (r) => readAnalysis(r, resultSets.length));
  return {
    schema: RESULT_SET_SCHEMA,
    generator: top.has('generator') ? top.field('generator').string() : 'unknown',
    resultSets,
    ...(analysis ? { analysis } : {}),
  };
}

export function parseResultSetText(text: string, file = 'the result set'): ResultSetDocument {
  let json: Json;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ResultSetError(
      'notJson',
      `${file} is not valid JSON (${err instanceof Error ? err.message : String(err)}): it may be ` +
        `truncated or edited by hand; measure again or restore it.`,
    );
  }
  return parseResultSetDocument(json, file);
}

export async function loadResultSetDocument(path: string): Promise<ResultSetDocument> {
  return parseResultSetText(await readDocument(path, 'check the path, or run the analysis to create it'), path);
}

export function resultSetDocument(
  resultSets: ResultSet[],
  analysis?: AnalysisRecord,
  generator = 'cyclelens',
): ResultSetDocument {
  return { schema: RESULT_SET_SCHEMA, generator, resultSets, ...(analysis ? { analysis } : {}) };
}

// ---- atomic write ---------------------------------------------------------------------------------

export interface AtomicWriteHooks {
  /** Called with the complete temporary file before it replaces the target (tests fail here). */
  beforeRename?(temporary: string): void | Promise<void>;
}

/**
 * Writes `text` to `path` so that a reader sees the old file or the new one, never a part: the
 * text goes to a temporary file in the same directory (same file system), is flushed to disk,
 * then renamed over the target (rename(2) replaces atomically). On any failure the temporary file
 * is removed and the target is untouched.
 */
export async function writeFileAtomic(
  path: string,
  text: string | Uint8Array,
  hooks: AtomicWriteHooks = {},
): Promise<void> {
  const temporary = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  let renamed = false;
  await mkdir(dirname(path), { recursive: true });
  try {
    const handle = await open(temporary, 'wx', 0o644);
    try {
      await (typeof text === 'string' ? handle.writeFile(text, 'utf8') : handle.writeFile(text));
      await handle.sync();
    } finally {
      await handle.close();
    }
    await hooks.beforeRename?.(temporary);
    await rename(temporary, path);
    renamed = true;
  } finally {
    if (!renamed) await unlink(temporary).catch(() => undefined);
  }
}

export async function saveResultSetDocument(
  path: string,
  doc: ResultSetDocument,
  hooks?: AtomicWriteHooks,
): Promise<void> {
  // Serialise first: a value JSON cannot hold fails here, before any file is touched.
  const text = `${JSON.stringify(doc, null, 1)}\n`;
  parseResultSetText(text, path);
  await writeFileAtomic(path, text, hooks);
}
