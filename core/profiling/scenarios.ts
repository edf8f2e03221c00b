import type { CallGraphResponse, CodeLocation } from '../../common/dapCustom';
import {
  MeasurerPool,
  analysisRecord,
  rootsForStart,
  runDescent,
  runFullProfile,
  runRoundRobin,
  type AnalysisResult,
} from '../analysis/descent';
import { callGraphDot } from '../analysis/dot';
import { MetricsEngine } from '../analysis/metrics';
import { profileRows, type ProfileRow } from '../analysis/profileRows';
import { textReport } from '../analysis/report';
import {
  describingSet,
  resultSetDocument,
  type CallGraphDocument,
  type ResultSet,
  type ResultSetDocument,
} from '../analysis/resultSet';
import { SavedGraphError, withCallCounts } from '../analysis/savedGraph';
import type { DapProfiler } from './dapProfiler';

/** A profiling scenario as the CLI and the editor both ask for it. */
export interface ScenarioRequest {
  command: 'descent' | 'profile';
  threshold: { kind: 'share' | 'count'; value: number };
  slots: number;
  /** Where each run starts, and the function that spans it. */
  start: string;
  roots: string[];
  cyclic?: CodeLocation;
  rounds: number;
  lookahead: boolean;
  /**
   * Descent: false measures every function alone. Otherwise functions that look cold are grouped
   * when `savedGraph` gives call counts, and measured alone without a word when it does not.
   */
  groups?: boolean;
  /**
   * A dynamic call graph saved earlier (same build): its counts drive the group measurements. An
   * `optional` one (found in the workspace rather than asked for) that does not fit is left out
   * with a note instead of failing the descent.
   */
  savedGraph?: { document: CallGraphDocument; file: string; optional?: boolean };
}

export interface ScenarioOutcome {
  result: AnalysisResult;
  rows: ProfileRow[];
  report: string;
  document: ResultSetDocument;
  dot: string;
}

/** More sessions of the same configuration, for runs at once (single-pass scenarios only). */
export interface ScenarioWorkers {
  /** Sessions that may run at once, the first one included (decideJobs). */
  jobs: number;
  /** Starts the profiler of extra session `index` (1, 2, …); the front end closes its sessions at the end. */
  start(index: number): Promise<DapProfiler>;
}

/**
 * Runs a scenario (descent, full profile, or round robin for cyclic programs) over a DapProfiler and
 * renders what every front end shows: the text report, the result-set document and the DOT graph.
 * With `workers`, independent runs go to several sessions at once (MeasurerPool).
 */
export async function runScenario(
  req: ScenarioRequest,
  profiler: DapProfiler,
  options: {
    signal: AbortSignal;
    onProgress?: (line: string) => void;
    previous?: ResultSet[];
    title: string;
    generator: string;
    workers?: ScenarioWorkers;
  },
): Promise<ScenarioOutcome> {
  const program: CallGraphResponse = await profiler.callGraph();
  let graph = program;
  if (req.savedGraph) {
    try {
      graph = withCallCounts(program, req.savedGraph.document, req.savedGraph.file);
    } catch (err) {
      if (!(err instanceof SavedGraphError) || !req.savedGraph.optional) throw err;
      options.onProgress?.(`${err.message} Descent runs without its call counts.`);
    }
  }
  const engine = new MetricsEngine();
  // Every session's profiler, for the runs that only formed a total (each session forms its own).
  const profilers: DapProfiler[] = [profiler];
  const workers = options.workers;
  const jobs =
    req.cyclic || !workers ? 1 : Math.max(1, Math.min(workers.jobs, Math.ceil(graph.functions.length / req.slots)));
  const pool = new MeasurerPool(profiler, {
    jobs,
    ...(workers
      ? {
          startWorker: async (index: number) => {
            const p = await workers.start(index);
            profilers.push(p);
            return p;
          },
        }
      : {}),
    log: (line) => options.onProgress?.(line),
  });
  if (jobs > 1) options.onProgress?.(`up to ${jobs} runs at once, one debug session each`);
  const common = {
    engine,
    roots: req.roots.length > 0 ? req.roots : rootsForStart(graph, req.start),
    spanning: [req.start],
    signal: options.signal,
    onProgress: (p: { run: number; batch: readonly string[]; open: number; worker?: number }) =>
      options.onProgress?.(
        `run ${p.run}${p.worker !== undefined ? ` [worker ${p.worker}]` : ''}: ${p.batch.join(', ')}` +
          `${p.open ? ` (${p.open} undecided)` : ''}`,
      ),
  };
  let result: AnalysisResult;
  if (req.command === 'descent') {
    const metric = engine.monotone(req.threshold.kind === 'share' ? 'share' : 'inclusive');
    result = await runDescent(graph, pool, {
      ...common,
      metric,
      threshold: req.threshold.value,
      lookahead: req.lookahead,
      previous: options.previous ?? [],
      ...(req.groups === false ? { groups: false } : {}),
    });
  } else {
    const metric = engine.definition('share')!;
    result = req.cyclic
      ? await runRoundRobin(graph, profiler, { ...common, metric, rounds: req.rounds })
      : await runFullProfile(graph, pool, { ...common, metric });
  }
  const rows = profileRows(result, graph, engine);
  // The analysis counts every run of the program, the ones that only formed a total or counted
  // instructions included.
  const runs = result.runs + profilers.reduce((n, p) => n + p.baselineRuns + p.countingRuns, 0);
  const first = describingSet(result.resultSets);
  const report = textReport(
    {
      scenario: result.scenario,
      metric: result.metric,
      ...(result.threshold !== undefined ? { threshold: result.threshold } : {}),
      runs,
      naiveRuns: Math.ceil(graph.functions.length / req.slots),
      slots: req.slots,
      roots: result.roots,
      cancelled: result.cancelled,
      warnings: result.warnings,
      ...(first
        ? {
            program: first.program.executable,
            method: first.run.method,
            ...(first.run.counter !== undefined ? { counter: first.run.counter } : {}),
          }
        : {}),
      ...(result.counted ? { counted: result.counted } : {}),
    },
    rows,
    engine,
  );
  const document = resultSetDocument(result.resultSets, analysisRecord({ ...result, runs }, graph), options.generator);
  const dot = callGraphDot(graph, rows, {
    title: options.title,
    metricFormat: result.metric === 'inclusive' ? 'count' : 'percent',
  });
  return { result, rows, report, document, dot };
}
