import type { CallGraphResponse } from '../common/dapCustom';
import { staticCallGraph } from '../adapter/probe/callGraph';
import { ElfImage } from '../adapter/elf';
import { rootsForStart, runDescent, type BatchMeasurer } from '../core/analysis/descent';
import { CallGraphIndex } from '../core/analysis/callGraphIndex';
import { MetricsEngine } from '../core/analysis/metrics';
import type { ResultSet } from '../core/analysis/resultSet';
import { runOracle, type OracleSummary } from '../test/oracle/oracle';
import { dynamicGraphFromOracle as dynamicGraph } from '../test/oracle/dynamicGraph';
import { fixturePrograms, printTable } from './support';

/**
 * Descent benchmark (docs/design.md, "Tests and benchmarks"): runs to finish versus the naive method (ceil(F/k)
 * runs for F functions and k per run), and recall/precision of "functions at or above the
 * threshold", for every fixture program and k in {1, 2, 4, 8}.
 *
 * The measurer here is the ORACLE, a perfect BatchMeasurer: each "run" returns the exact inclusive
 * instruction counts of the QEMU trace (test/oracle/), so the figures isolate the algorithm (how
 * many runs it needs, whether pruning loses a hot function) from measurement error. The call graph
 * is the product's static one (adapter/probe/callGraph.ts); roots are the functions nobody calls.
 * `firmware` is the large one (320 functions, most of them cold; test/fixtures/README.md).
 * Each row also runs descent with group measurements over the dynamic call graph (its counts give the
 * estimates that decide what to group), counting the run that records the graph.
 *   npm run bench -- descent [--program firmware] [--target rv32]
 */

const TARGETS = ['cortex-m4', 'rv32'] as const;
const PROGRAMS = ['singlepass', 'cyclic_limited', 'cyclic', 'nodebug', 'firmware'] as const;
/** `cyclic` never ends: its trace is cut after this many instructions. */
const CYCLIC_BOUND = 1_500_000;
const SLOTS = [1, 2, 4, 8];
const THRESHOLDS = [0.01, 0.05];

/**
 * The oracle as a perfect measurer: exact inclusive counts of one run, any batch size. With an
 * index it also measures groups, as the sum of their members. The planner never groups a caller
 * with its callees; members that still can be on the stack together (an interrupt handler over
 * main's code) have a union below the sum, so a group's figure here is never lower than the
 * adapter's: the run counts are, if anything, pessimistic.
 */
class OracleMeasurer implements BatchMeasurer {
  runs = 0;
  readonly groups: boolean;
  private readonly byName: Map<string, { inclusive: number; calls: number }>;

  constructor(
    readonly slots: number,
    private readonly oracle: OracleSummary,
    private readonly index?: CallGraphIndex,
  ) {
    this.groups = index !== undefined;
    this.byName = new Map(
      oracle.functions.map((f) => [f.name, { inclusive: f.inclusive, calls: f.calls + f.interrupts + f.traps }]),
    );
    for (const f of oracle.functions)
      for (const alias of f.aliases) if (!this.byName.has(alias)) this.byName.set(alias, this.byName.get(f.name)!);
  }

  async measure(
    batch: readonly string[],
    _signal?: AbortSignal,
    groups: readonly (readonly string[])[] = [],
  ): Promise<ResultSet> {
    this.runs++;
    if (batch.length + groups.length > this.slots)
      throw new Error(`asked for ${batch.length + groups.length} measurements in one run with ${this.slots} slots`);
    const nested = groups.find((g) => g.some((a, i) => g.some((b, j) => j > i && this.index!.related(a, b))));
    if (nested)
      throw new Error(
        `the group ${nested.join(' + ')} has a caller and its callee: the oracle's sum would count the callee twice`,
      );
    return {
      id: `oracle-${this.runs}`,
      createdAt: new Date().toISOString(),
      program: { executable: this.oracle.elf },
      run: {
        kind: 'oracle',
        event: 'instructions',
        totals: { instructions: this.oracle.totals.instructions },
        method: 'oracle (QEMU trace), perfect measurer',
      },
      // A function that never ran is measured as zero, as an injected counter would read.
      measurements: batch.map((name) => {
        const f = this.byName.get(name);
        return { name, inclusive: { instructions: f?.inclusive ?? 0 }, calls: f?.calls ?? 0 };
      }),
      groups: groups.map((members) => ({
        name: members.join(' + '),
        members: [...members],
        inclusive: { instructions: members.reduce((sum, m) => sum + (this.byName.get(m)?.inclusive ?? 0), 0) },
        calls: members.reduce((sum, m) => sum + (this.byName.get(m)?.calls ?? 0), 0),
      })),
      refused: [],
    };
  }
}

interface Score {
  runs: number;
  measured: number;
  groups: number;
  recall: number;
  precision: number;
}

interface Row {
  program: string;
  k: number;
  threshold: number;
  functions: number;
  hot: number;
  naive: number;
  runs: number;
  bfsRuns: number;
  basicRuns: number;
  measured: number;
  recall: number;
  precision: number;
  basicRecall: number;
  /** Descent with group measurements over the dynamic call graph: its runs include the one that recorded the graph. */
  grouped: Score;
}

/**
 * Every run starts in `main`, as the product's runs do (`rootsForStart`): main spans the window, the
 * reset code before it is outside, interrupt handlers are roots of their own.
 */
const START = 'main';

async function benchProgram(label: string, graph: CallGraphResponse, oracle: OracleSummary): Promise<Row[]> {
  const engine = new MetricsEngine();
  const metric = engine.monotone('share');
  const total = oracle.totals.instructions;
  const roots = rootsForStart(graph, START);
  const window = new CallGraphIndex(graph, { roots });
  const dynamic = dynamicGraph(graph, oracle, START);
  const dynamicRoots = rootsForStart(dynamic, START);
  const dynamicIndex = new CallGraphIndex(dynamic, { roots: dynamicRoots });
  const rows: Row[] = [];
  for (const threshold of THRESHOLDS) {
    const truth = new Set(
      oracle.functions
        .filter((f) => window.reachable.has(f.name) && f.inclusive / total >= threshold)
        .map((f) => f.name),
    );
    for (const k of SLOTS) {
      const score = async (
        g: CallGraphResponse,
        measurer: OracleMeasurer,
        options: { lookahead?: boolean; siblingResidual?: boolean; order?: 'weight' | 'call-site' },
      ): Promise<Score> => {
        const r = await runDescent(g, measurer, {
          engine,
          metric,
          threshold,
          roots: g === dynamic ? dynamicRoots : roots,
          spanning: [START],
          ...options,
        });
        if (r.warnings.length > 0) console.error(`${label}: ${r.warnings.join('; ')}`);
        const measured = r.outcomes.filter((o) => o.status === 'measured');
        const found = new Set(measured.filter((o) => (o.value ?? 0) >= threshold).map((o) => o.name));
        const hits = [...found].filter((f) => truth.has(f)).length;
        const missed = [...truth].filter((f) => !found.has(f));
        if (missed.length > 0) console.error(`${label} k=${k} ${threshold * 100}%: MISSED ${missed.join(', ')}`);
        const groups = (r.groupBatches ?? []).reduce((n, b) => n + b.length, 0);
        return {
          runs: r.runs,
          measured: measured.length,
          groups,
          recall: truth.size ? hits / truth.size : 1,
          precision: found.size ? hits / found.size : 1,
        };
      };
      const best = await score(graph, new OracleMeasurer(k, oracle), {
        lookahead: true,
        siblingResidual: true,
        order: 'weight',
      });
      const bfs = await score(graph, new OracleMeasurer(k, oracle), {
        lookahead: true,
        siblingResidual: true,
        order: 'call-site',
      });
      const basic = await score(graph, new OracleMeasurer(k, oracle), {
        lookahead: false,
        siblingResidual: false,
        order: 'call-site',
      });
      const grouped = await score(dynamic, new OracleMeasurer(k, oracle, dynamicIndex), {});
      rows.push({
        program: label,
        k,
        threshold,
        functions: graph.functions.length,
        hot: truth.size,
        naive: Math.ceil(graph.functions.length / k),
        runs: best.runs,
        bfsRuns: bfs.runs,
        basicRuns: basic.runs,
        measured: best.measured,
        recall: best.recall,
        precision: best.precision,
        basicRecall: Math.min(basic.recall, bfs.recall),
        // The dynamic call graph is one more run of the program.
        grouped: { ...grouped, runs: grouped.runs + 1 },
      });
    }
  }
  return rows;
}

async function main(argv: string[]): Promise<void> {
  const rows: Row[] = [];
  for (const { target, program, elf } of fixturePrograms(argv, TARGETS, PROGRAMS)) {
    const graph = staticCallGraph(ElfImage.loadSync(elf));
    const oracle = await runOracle({ elf, ...(program === 'cyclic' ? { maxInstructions: CYCLIC_BOUND } : {}) });
    if (!oracle.totals.consistent) throw new Error(`${target}/${program}: the oracle's totals are inconsistent`);
    rows.push(
      ...(await benchProgram(
        `${target}/${program}${program === 'cyclic' ? ` (first ${CYCLIC_BOUND / 1e6} M instr.)` : ''}`,
        graph,
        oracle,
      )),
    );
  }
  const pct = (v: number): string => `${(v * 100).toFixed(0)}%`;
  console.log(
    '\nCall-graph descent with the ORACLE as a perfect measurer (exact inclusive instruction ' +
      'counts from the QEMU trace).',
  );
  console.log(
    `Every run starts in ${START} (it spans the window; interrupt handlers are roots too). F ` +
      `functions, k slots per run, naive = ceil(F/k) runs.`,
  );
  console.log(
    'hot: functions at or above the threshold; any method must measure each, so ceil(hot/k) runs is a floor.',
  );
  console.log(
    'runs: descent over the static call graph, one function per slot (callers decided first, ' +
      'heaviest static reach first, lookahead, sibling residual);',
  );
  console.log(
    'bfs: the same in breadth-first call-site order; basic: breadth-first, bound rule only (no ' +
      'lookahead, no residual).',
  );
  console.log(
    'grouped: descent with group measurements (one slot counts the union of several functions) ' +
      'over the dynamic call graph;',
  );
  console.log(
    '  its runs include the one run that records the dynamic graph. tests: single + group measurements taken.',
  );
  console.log('recall/precision: of each; "other recall": the lowest recall of the bfs and basic variants.\n');
  printTable(
    [
      'program',
      'k',
      'threshold',
      'F',
      'hot',
      'naive',
      'floor',
      'runs',
      'runs/naive',
      'bfs',
      'basic',
      'measured',
      'recall',
      'precision',
      'other recall',
      'grouped',
      'grouped/naive',
      'tests',
      'recall ',
      'precision ',
    ],
    rows.map((r) => [
      r.program,
      String(r.k),
      pct(r.threshold),
      String(r.functions),
      String(r.hot),
      String(r.naive),
      String(Math.ceil(r.hot / r.k)),
      String(r.runs),
      (r.runs / r.naive).toFixed(2),
      String(r.bfsRuns),
      String(r.basicRuns),
      String(r.measured),
      pct(r.recall),
      pct(r.precision),
      pct(r.basicRecall),
      String(r.grouped.runs),
      (r.grouped.runs / r.naive).toFixed(2),
      `${r.grouped.measured} + ${r.grouped.groups}`,
      pct(r.grouped.recall),
      pct(r.grouped.precision),
    ]),
  );
  const recall = rows.every((r) => r.recall === 1 && r.basicRecall === 1 && r.grouped.recall === 1);
  console.log(`\nrecall 100% everywhere: ${recall ? 'yes' : 'NO'}`);
  const fifth = rows
    .filter((r) => r.threshold === 0.05)
    .map(
      (r) =>
        `${r.program} k=${r.k}: ${(r.runs / r.naive).toFixed(2)} / grouped ${(r.grouped.runs / r.naive).toFixed(2)}`,
    );
  console.log(`runs/naive at 5%: ${fifth.join('; ')}`);
  if (!recall) process.exitCode = 1;
}

void main(process.argv.slice(2));
