/**
 * Declarative metrics (docs/design.md, "Measurement semantics"): each metric names the values it needs
 * (raw measurements or other metrics) and says whether it is monotone, i.e. whether a caller's
 * value bounds the sum of its callees' (`M(f) <= sum over callers p of M(p)`). The engine builds the
 * dependency graph once, then for any set of raw values computes exactly the metrics whose inputs
 * are there, nothing guessed. Only monotone metrics may drive descent pruning; `monotone()` hands out
 * the branded type the descent accepts. Pure: the CLI uses it too.
 */

/** Raw values belong to a function (inclusive counts, calls, its measured callees) or to the run (totals). */
export type RawScope = 'function' | 'run';

export interface RawValueSpec {
  key: string;
  scope: RawScope;
  label: string;
  /**
   * True for inclusive event counts: the time a function is on the stack is covered by its callers'
   * (interrupts included on both sides). False for calls (a leaf may be called more often than
   * its caller) and derived sums.
   */
  monotone: boolean;
}

/**
 * Semantic raw values and the counter events (common/counters.ts ids) that provide them, first
 * match wins: DWT on Cortex-M, the Armv8.1-M PMU architectural events, ARC PCT conditions.
 */
export const EVENT_SOURCES: Readonly<Record<string, readonly string[]>> = {
  cycles: ['cycles'],
  instructions: ['instructions'],
  // SysTick ticks: a clock of its own, never cycles (the run's method gives the ratio where known).
  ticks: ['ticks'],
  lsu: ['dwt.lsu'],
  fold: ['dwt.fold'],
  cpiStall: ['dwt.cpi'],
  exceptionCycles: ['dwt.exc'],
  sleepCycles: ['dwt.sleep'],
  icacheMisses: ['pmu.0x0001', 'arc.icm'],
  icacheAccesses: ['pmu.0x0014'],
  dcacheMisses: ['pmu.0x0003', 'arc.dclm'],
  dcacheAccesses: ['pmu.0x0004'],
};

const EVENT_LABELS: Readonly<Record<string, string>> = {
  cycles: 'cycles',
  instructions: 'instructions',
  ticks: 'SysTick ticks',
  lsu: 'load/store extra cycles',
  fold: 'folded instructions',
  cpiStall: 'multi-cycle extra cycles',
  exceptionCycles: 'exception overhead cycles',
  sleepCycles: 'sleep cycles',
  icacheMisses: 'I-cache misses',
  icacheAccesses: 'I-cache accesses',
  dcacheMisses: 'D-cache misses',
  dcacheAccesses: 'D-cache accesses',
};

/** Raw keys: `inclusive:<v>` (function), `total:<v>` (run), `callees:<v>` (function), `calls`. */
export const inclusiveKey = (value: string): string => `inclusive:${value}`;
export const totalKey = (value: string): string => `total:${value}`;
export const calleesKey = (value: string): string => `callees:${value}`;
export const CALLS = 'calls';

export const RAW_VALUES: readonly RawValueSpec[] = [
  ...Object.keys(EVENT_SOURCES).flatMap((v): RawValueSpec[] => [
    { key: inclusiveKey(v), scope: 'function', label: `inclusive ${EVENT_LABELS[v]}`, monotone: true },
    { key: totalKey(v), scope: 'run', label: `run total ${EVENT_LABELS[v]}`, monotone: false },
  ]),
  // `event`: whatever the run's measurements counted (RunInfo.event), for metrics that do not care which.
  { key: inclusiveKey('event'), scope: 'function', label: "inclusive count of the run's event", monotone: true },
  { key: totalKey('event'), scope: 'run', label: "run total of the run's event", monotone: false },
  {
    key: calleesKey('event'),
    scope: 'function',
    label: "the run's event counted in the measured callees",
    monotone: false,
  },
  { key: calleesKey('cycles'), scope: 'function', label: 'inclusive cycles of the measured callees', monotone: false },
  {
    key: calleesKey('instructions'),
    scope: 'function',
    label: 'inclusive instructions of the measured callees',
    monotone: false,
  },
  {
    key: calleesKey('ticks'),
    scope: 'function',
    label: 'inclusive SysTick ticks of the measured callees',
    monotone: false,
  },
  { key: CALLS, scope: 'function', label: 'calls', monotone: false },
];

export type MetricFormat = 'count' | 'percent' | 'ratio';

export interface MetricDefinition {
  id: string;
  label: string;
  /** Short column heading for reports. */
  short: string;
  format: MetricFormat;
  /** Raw keys or ids of other metrics, in the order `compute` receives them. */
  inputs: readonly string[];
  monotone: boolean;
  /** Called only with every input present and finite; `undefined` when the value does not exist (x/0). */
  compute(values: readonly number[]): number | undefined;
}

declare const monotoneBrand: unique symbol;
/** A metric that may drive pruning: obtainable only from `MetricsEngine.monotone()`. */
export type MonotoneMetric = MetricDefinition & { readonly monotone: true; readonly [monotoneBrand]: true };

export type RawValues = Readonly<Record<string, number>>;

export class MetricDefinitionError extends Error {
  override name = 'MetricDefinitionError';
}

const ratio = (a: number, b: number): number | undefined => (b === 0 ? undefined : a / b);

const SHORT: Record<'cycles' | 'instructions' | 'ticks', string> = {
  cycles: 'cyc',
  instructions: 'instr',
  ticks: 'tick',
};

function perEvent(v: 'cycles' | 'instructions' | 'ticks'): MetricDefinition[] {
  return [
    {
      id: `inclusive.${v}`,
      label: `inclusive ${v}`,
      short: `incl ${SHORT[v]}`,
      format: 'count',
      inputs: [inclusiveKey(v)],
      monotone: true,
      compute: ([x]) => x,
    },
    {
      id: `share.${v}`,
      label: `share of the run's ${v}`,
      short: `share ${SHORT[v]}`,
      format: 'percent',
      inputs: [`inclusive.${v}`, totalKey(v)],
      monotone: true,
      compute: ([x, t]) => ratio(x!, t!),
    },
    {
      id: `perCall.${v}`,
      label: `${v} per call`,
      short: `${SHORT[v]}/call`,
      format: 'count',
      inputs: [`inclusive.${v}`, CALLS],
      monotone: false,
      compute: ([x, n]) => ratio(x!, n!),
    },
    {
      id: `exclusive.${v}`,
      label: `exclusive ${v} (inclusive minus measured callees)`,
      short: `excl ${SHORT[v]}`,
      format: 'count',
      inputs: [`inclusive.${v}`, calleesKey(v)],
      monotone: false,
      compute: ([x, c]) => x! - c!,
    },
    {
      id: `exclusiveShare.${v}`,
      label: `exclusive share of the run's ${v}`,
      short: `excl% ${SHORT[v]}`,
      format: 'percent',
      inputs: [`exclusive.${v}`, totalKey(v)],
      monotone: false,
      compute: ([x, t]) => ratio(x!, t!),
    },
  ];
}

/** The metrics CycleLens ships; more can be passed to the engine. */
export const STANDARD_METRICS: readonly MetricDefinition[] = [
  // Over the run's own event: what descent prunes on when it cannot know in advance which counter the target has.
  {
    id: 'inclusive',
    label: "inclusive count of the run's event",
    short: 'inclusive',
    format: 'count',
    inputs: [inclusiveKey('event')],
    monotone: true,
    compute: ([x]) => x,
  },
  {
    id: 'share',
    label: "share of the run's total",
    short: 'share',
    format: 'percent',
    inputs: ['inclusive', totalKey('event')],
    monotone: true,
    compute: ([x, t]) => ratio(x!, t!),
  },
  ...perEvent('instructions'),
  ...perEvent('cycles'),
  ...perEvent('ticks'),
  {
    id: 'cpi',
    label: 'cycles per instruction',
    short: 'CPI',
    format: 'ratio',
    inputs: ['inclusive.cycles', 'inclusive.instructions'],
    monotone: false,
    compute: ([c, i]) => ratio(c!, i!),
  },
  {
    id: 'ipc',
    label: 'instructions per cycle',
    short: 'IPC',
    format: 'ratio',
    inputs: ['inclusive.instructions', 'inclusive.cycles'],
    monotone: false,
    compute: ([i, c]) => ratio(i!, c!),
  },
  // DWT LSUCNT/CPICNT/EXCCNT/SLEEPCNT count extra cycles (ARMv7-M C1.8.7-C1.8.10): as a share of all cycles.
  {
    id: 'lsuStallShare',
    label: 'cycles lost to loads/stores',
    short: 'LSU%',
    format: 'percent',
    inputs: [inclusiveKey('lsu'), 'inclusive.cycles'],
    monotone: false,
    compute: ([l, c]) => ratio(l!, c!),
  },
  {
    id: 'cpiStallShare',
    label: 'cycles lost to multi-cycle instructions',
    short: 'CPI%',
    format: 'percent',
    inputs: [inclusiveKey('cpiStall'), 'inclusive.cycles'],
    monotone: false,
    compute: ([l, c]) => ratio(l!, c!),
  },
  {
    id: 'exceptionShare',
    label: 'cycles of exception entry/exit',
    short: 'EXC%',
    format: 'percent',
    inputs: [inclusiveKey('exceptionCycles'), 'inclusive.cycles'],
    monotone: false,
    compute: ([l, c]) => ratio(l!, c!),
  },
  {
    id: 'sleepShare',
    label: 'cycles asleep',
    short: 'SLEEP%',
    format: 'percent',
    inputs: [inclusiveKey('sleepCycles'), 'inclusive.cycles'],
    monotone: false,
    compute: ([l, c]) => ratio(l!, c!),
  },
  // FOLDCNT counts instructions that took zero cycles (folded IT/branches).
  {
    id: 'foldRate',
    label: 'folded instructions per instruction',
    short: 'fold',
    format: 'percent',
    inputs: [inclusiveKey('fold'), 'inclusive.instructions'],
    monotone: false,
    compute: ([f, i]) => ratio(f!, i!),
  },
  {
    id: 'icacheMissRate',
    label: 'I-cache miss rate',
    short: 'I$ miss',
    format: 'percent',
    inputs: [inclusiveKey('icacheMisses'), inclusiveKey('icacheAccesses')],
    monotone: false,
    compute: ([m, a]) => ratio(m!, a!),
  },
  {
    id: 'dcacheMissRate',
    label: 'D-cache miss rate',
    short: 'D$ miss',
    format: 'percent',
    inputs: [inclusiveKey('dcacheMisses'), inclusiveKey('dcacheAccesses')],
    monotone: false,
    compute: ([m, a]) => ratio(m!, a!),
  },
  {
    id: 'icacheMpki',
    label: 'I-cache misses per 1000 instructions',
    short: 'I$ MPKI',
    format: 'ratio',
    inputs: [inclusiveKey('icacheMisses'), 'inclusive.instructions'],
    monotone: false,
    compute: ([m, i]) => (i === 0 ? undefined : (1000 * m!) / i!),
  },
  {
    id: 'dcacheMpki',
    label: 'D-cache misses per 1000 instructions',
    short: 'D$ MPKI',
    format: 'ratio',
    inputs: [inclusiveKey('dcacheMisses'), 'inclusive.instructions'],
    monotone: false,
    compute: ([m, i]) => (i === 0 ? undefined : (1000 * m!) / i!),
  },
];

interface Node {
  def: MetricDefinition;
  /** Raw keys the metric needs, directly or through other metrics. */
  rawClosure: ReadonlySet<string>;
}

export class MetricsEngine {
  /** Metrics in dependency order: every metric after the metrics it reads. */
  readonly metrics: readonly MetricDefinition[];
  private readonly nodes = new Map<string, Node>();
  private readonly raw: ReadonlyMap<string, RawValueSpec>;
  private readonly plans = new Map<string, readonly MetricDefinition[]>();

  constructor(
    definitions: readonly MetricDefinition[] = STANDARD_METRICS,
    rawValues: readonly RawValueSpec[] = RAW_VALUES,
  ) {
    this.raw = new Map(rawValues.map((r) => [r.key, r]));
    const byId = new Map<string, MetricDefinition>();
    for (const d of definitions) {
      if (byId.has(d.id)) throw new MetricDefinitionError(`metric '${d.id}' is defined twice`);
      if (this.raw.has(d.id)) throw new MetricDefinitionError(`metric '${d.id}' has the name of a raw value`);
      byId.set(d.id, d);
    }
    const ordered: MetricDefinition[] = [];
    const state = new Map<string, 'visiting' | 'done'>();
    const visit = (id: string, path: string[]): void => {
      const s = state.get(id);
      if (s === 'done') return;
      if (s === 'visiting')
        throw new MetricDefinitionError(`metrics depend on each other in a cycle: ${[...path, id].join(' -> ')}`);
      state.set(id, 'visiting');
      const d = byId.get(id)!;
      const closure = new Set<string>();
      for (const input of d.inputs) {
        if (this.raw.has(input)) {
          closure.add(input);
        } else if (byId.has(input)) {
          visit(input, [...path, id]);
          for (const k of this.nodes.get(input)!.rawClosure) closure.add(k);
        } else {
          throw new MetricDefinitionError(`metric '${id}' reads '${input}', which is neither a raw value nor a metric`);
        }
      }
      if (d.monotone) this.checkMonotone(d, byId);
      this.nodes.set(id, { def: d, rawClosure: closure });
      state.set(id, 'done');
      ordered.push(d);
    };
    for (const d of definitions) visit(d.id, []);
    this.metrics = ordered;
  }

  definition(id: string): MetricDefinition | undefined {
    return this.nodes.get(id)?.def;
  }

  /** The raw values a metric needs in the end. */
  requirements(id: string): ReadonlySet<string> {
    const n = this.nodes.get(id);
    if (!n) throw new MetricDefinitionError(`unknown metric '${id}'`);
    return n.rawClosure;
  }

  /**
   * The metric that may drive pruning. Throws for a metric not declared monotone: descent would
   * otherwise prune on a bound that does not hold (a leaf's calls exceed its caller's).
   */
  monotone(id: string): MonotoneMetric {
    const d = this.definition(id);
    if (!d) throw new MetricDefinitionError(`unknown metric '${id}'`);
    if (!d.monotone) {
      throw new MetricDefinitionError(
        `metric '${id}' (${d.label}) is not monotone: a caller's value does not bound its callees', ` +
          `so it cannot drive pruning. Use ${this.metrics
            .filter((m) => m.monotone)
            .map((m) => `'${m.id}'`)
            .join(', ')}.`,
      );
    }
    return d as MonotoneMetric;
  }

  /** The metrics computable from exactly these raw keys, in dependency order (cached per key set). */
  computable(available: Iterable<string>): readonly MetricDefinition[] {
    const keys = [...new Set(available)].sort();
    const signature = keys.join('\u0000');
    let plan = this.plans.get(signature);
    if (!plan) {
      const have = new Set(keys);
      plan = this.metrics.filter((m) => [...this.nodes.get(m.id)!.rawClosure].every((k) => have.has(k)));
      this.plans.set(signature, plan);
    }
    return plan;
  }

  /**
   * Every metric whose inputs are present and finite. A metric whose value does not exist
   * (a ratio over zero) is left out, and so are the metrics that read it.
   */
  evaluate(raw: RawValues): Map<string, number> {
    const present = Object.keys(raw).filter((k) => this.raw.has(k) && Number.isFinite(raw[k]));
    const out = new Map<string, number>();
    for (const m of this.computable(present)) {
      const args: number[] = [];
      let ok = true;
      for (const input of m.inputs) {
        const v = this.raw.has(input) ? raw[input] : out.get(input);
        if (v === undefined || !Number.isFinite(v)) {
          ok = false;
          break;
        }
        args.push(v);
      }
      if (!ok) continue;
      const v = m.compute(args);
      if (v !== undefined && Number.isFinite(v)) out.set(m.id, v);
    }
    return out;
  }

  /** One metric's value, or undefined when its inputs are not all there. */
  value(id: string, raw: RawValues): number | undefined {
    if (!this.nodes.has(id)) throw new MetricDefinitionError(`unknown metric '${id}'`);
    return this.evaluate(raw).get(id);
  }

  /**
   * A monotone metric may read monotone function values (inclusive counts or monotone metrics)
   * and run-scope constants, nothing else: calls or callee sums would break the bound.
   */
  private checkMonotone(d: MetricDefinition, byId: ReadonlyMap<string, MetricDefinition>): void {
    let functionInputs = 0;
    for (const input of d.inputs) {
      const raw = this.raw.get(input);
      if (raw) {
        if (raw.scope === 'run') continue;
        if (!raw.monotone)
          throw new MetricDefinitionError(
            `metric '${d.id}' is declared monotone but reads '${input}' (${raw.label}), which is not`,
          );
        functionInputs++;
        continue;
      }
      const m = byId.get(input)!;
      if (!m.monotone)
        throw new MetricDefinitionError(
          `metric '${d.id}' is declared monotone but reads metric '${input}', which is not`,
        );
      functionInputs++;
    }
    if (functionInputs !== 1)
      throw new MetricDefinitionError(
        `metric '${d.id}' is declared monotone but reads ${functionInputs} per-function values; a ` +
          `monotone metric scales exactly one`,
      );
  }
}

/**
 * Raw values from counter events (`cycles`, `dwt.lsu`, `pmu.0x0001` …) by the semantic names of
 * EVENT_SOURCES, as raw keys of one scope (`inclusive:cycles`, `total:cycles` …).
 */
export function rawFromEvents(
  values: Readonly<Record<string, number>>,
  scope: 'inclusive' | 'total' | 'callees',
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [semantic, events] of Object.entries(EVENT_SOURCES)) {
    const event = events.find((e) => values[e] !== undefined);
    if (event !== undefined) out[`${scope}:${semantic}`] = values[event]!;
  }
  return out;
}

/** The semantic value name an event provides (`pmu.0x0001` -> `icacheMisses`), if any. */
export function semanticOf(event: string): string | undefined {
  return Object.entries(EVENT_SOURCES).find(([, events]) => events.includes(event))?.[0];
}

export function formatMetric(format: MetricFormat, v: number): string {
  switch (format) {
    case 'percent':
      return `${noNegativeZero((v * 100).toFixed(v >= 0.1 || v <= -0.1 ? 1 : 2))}%`;
    case 'ratio':
      return noNegativeZero(v.toFixed(3));
    case 'count':
      return Number.isInteger(v) ? String(v === 0 ? 0 : v) : noNegativeZero(v.toFixed(1));
  }
}

/** "-0.00" is a value that rounds to zero: it reads "0.00". */
function noNegativeZero(text: string): string {
  return /^-0(\.0+)?$/.test(text) ? text.slice(1) : text;
}
