import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CallGraphResponse, InjectArguments, RunArguments } from '../../common/dapCustom';
import { rootsForStart, runDescent, runRoundRobin } from '../../core/analysis/descent';
import { CALL_GRAPH_SCHEMA, type CallGraphDocument } from '../../core/analysis/resultSet';
import { runScenario, type ScenarioRequest } from '../../core/profiling/scenarios';
import { MetricsEngine } from '../../core/analysis/metrics';
import { DapProfiler, ProfilingError, eventOfCounter, type DapRequester } from '../../core/profiling/dapProfiler';

// The DAP-driven profiler against a simulated target that answers CycleLens's custom requests:
// a program whose iteration costs are known, a free-running counter that the payloads also
// advance, and functions the "adapter" refuses. This is the runner a test can drive for both the
// single-pass and the cyclic scenario.

const graph: CallGraphResponse = {
  functions: ['reset', 'main', 'idle', 'step', 'filter', 'mac', 'log', 'isr', 'done'].map((name, i) => ({
    name,
    address: 0x100 * (i + 1),
    size: 32,
  })),
  edges: [
    ['reset', 'main'],
    ['main', 'idle'],
    ['main', 'step'],
    ['step', 'filter'],
    ['filter', 'mac'],
    ['step', 'log'],
    ['isr', 'mac'],
    ['main', 'done'],
  ].map(([caller, callee], i) => ({ caller: caller!, callee: callee!, kind: 'call' as const, sites: [0x1000 + i] })),
  indirectCallers: [],
};

/** Per iteration of the main loop: inclusive instructions and calls. */
const PER_ITERATION: Record<string, { value: number; calls: number }> = {
  idle: { value: 2, calls: 1 },
  step: { value: 900, calls: 1 },
  filter: { value: 700, calls: 2 },
  mac: { value: 650, calls: 128 },
  log: { value: 5, calls: 1 },
  isr: { value: 60, calls: 0 },
};
const ITERATION = 1000;
/** Payload instructions per call outside the counting window, and inside it (what the adapter compensates). */
const PAYLOAD = 12;
const COUNTED = 3;

class SimulatedTarget implements DapRequester {
  readonly requests: Array<{ command: string; args: unknown }> = [];
  counter = 2 ** 24 - 1500; // a 24-bit counter wraps inside the first window
  iterations = 0;
  width = 64;
  configured = false;
  refuse = new Set(['idle']);
  failRun = false;
  /** Readings after the first run are unreliable (QEMU's clock jumped while halted). */
  unreliableAtEnd = false;
  /** Run replies say where the program ends (the adapter's `programEnd`, found in the code or configured). */
  reportsEnd = false;
  /** The window region, when one is injected: its count, and whether a run closed it. */
  private window: { id: number; value: number; closed: boolean } | undefined;
  private injected: Array<{ id: number; name: string; value: number; calls: number }> = [];
  private nextId = 1;

  constructor(private readonly iterationsPerRun = 20) {}

  async customRequest(command: string, args?: unknown): Promise<unknown> {
    this.requests.push({ command, args });
    switch (command) {
      case 'cyclelens/callGraph':
        return graph;
      case 'cyclelens/counters':
        return {
          units: [
            {
              unit: 'RISC-V counters',
              present: true,
              resolution: 1,
              slots: [
                {
                  index: 2,
                  name: 'minstret',
                  width: this.width,
                  fixedEvent: 'instructions',
                  running: true,
                  ...(this.configured ? { event: 'instructions' } : {}),
                },
              ],
            },
          ],
        };
      case 'cyclelens/configure':
        this.configured = true;
        return { units: [] };
      case 'cyclelens/read':
        return {
          values: this.configured
            ? [
                {
                  unit: 'RISC-V counters',
                  slot: 2,
                  event: 'instructions',
                  value: String(this.counter % 2 ** this.width),
                  reliable: !(this.unreliableAtEnd && this.iterations > 0),
                  ...(this.unreliableAtEnd && this.iterations > 0 ? { note: 'the clock jumped while halted' } : {}),
                },
              ]
            : [],
        };
      case 'cyclelens/run': {
        if (this.failRun) throw new Error('the target stopped responding');
        const a = args as RunArguments;
        const end = this.reportsEnd ? { programEnd: { function: 'done' } } : {};
        if (a.restart) {
          this.iterations = 0;
          return { reached: true, ...end };
        }
        // `until` the end function is the whole run, as without one; anything else is one iteration (the safe stop).
        const n = a.until && !('function' in a.until && a.until.function === 'done') ? 1 : this.iterationsPerRun;
        for (let i = 0; i < n; i++) this.iterate();
        if (this.window) this.window.closed = true;
        return { reached: true, until: a.until ?? { function: 'done' }, ...end };
      }
      case 'cyclelens/inject': {
        const a = args as InjectArguments;
        const out = { injected: [] as unknown[], refused: [] as unknown[] };
        for (const t of a.targets) {
          if ('start' in t) {
            this.window = { id: this.nextId++, value: 0, closed: false };
            out.injected.push({
              id: this.window.id,
              name: 'window',
              kind: 'region',
              payload: 'software',
              counter: 'minstret',
              warnings: [],
            });
            continue;
          }
          const name = 'function' in t ? t.function : '?';
          if (this.refuse.has(name)) {
            out.refused.push({ target: t, reason: `${name} is a 2-byte return: too short to patch` });
            continue;
          }
          const m = { id: this.nextId++, name, value: 0, calls: 0 };
          this.injected.push(m);
          out.injected.push({
            id: m.id,
            name,
            kind: 'function',
            payload: 'software',
            counter: 'minstret',
            warnings: [],
          });
        }
        return out;
      }
      case 'cyclelens/injectedResults': {
        const w = this.window;
        const window = w
          ? [
              {
                id: w.id,
                name: 'window',
                counter: 'minstret',
                calls: 1,
                passes: w.closed ? 1 : 0,
                untracked: 0,
                total: w.value + COUNTED,
                compensatedTotal: w.value,
                overheadPerPass: COUNTED,
                min: null,
                max: null,
                mean: null,
                meanCompensated: null,
                lastPasses: [],
              },
            ]
          : [];
        return {
          results: [
            ...window,
            ...this.injected.map((m) => ({
              id: m.id,
              name: m.name,
              counter: 'minstret',
              calls: m.calls,
              passes: m.calls,
              untracked: 0,
              total: m.value + COUNTED * m.calls,
              compensatedTotal: m.value,
              overheadPerPass: COUNTED,
              min: null,
              max: null,
              mean: null,
              meanCompensated: null,
              lastPasses: [],
            })),
          ],
        };
      }
      case 'cyclelens/planInjection': {
        // The dry run says the same as the injection would: `idle` cannot be patched at all.
        const names = (args as { functions: string[] }).functions;
        return {
          functions: names.map((name) =>
            this.refuse.has(name)
              ? { name, entry: false, callSites: false, reason: `${name} is a 2-byte return: too short to patch` }
              : { name, entry: true },
          ),
        };
      }
      case 'cyclelens/removeInjections': {
        const ids = (args as { ids?: number[] }).ids;
        this.injected = this.injected.filter((m) => ids !== undefined && !ids.includes(m.id));
        if (this.window && (ids === undefined || ids.includes(this.window.id))) this.window = undefined;
        return {};
      }
      default:
        throw new Error(`unknown request ${command}`);
    }
  }

  /** One loop iteration: every injected function accumulates; the counter also runs the payloads. */
  private iterate(): void {
    this.iterations++;
    // Windows differ: every third iteration has a second frame to filter.
    const scale = this.iterations % 3 === 0 ? 2 : 1;
    let payload = 0;
    for (const m of this.injected) {
      const p = PER_ITERATION[m.name];
      if (!p) continue; // `done` runs once, after the loop
      m.value += p.value * (m.name === 'isr' ? 1 : scale);
      m.calls += p.calls * scale;
      payload += (PAYLOAD + COUNTED) * p.calls * scale;
    }
    this.counter += ITERATION + (scale - 1) * 900 + payload;
    if (this.window) this.window.value += ITERATION + (scale - 1) * 900;
  }
}

const engine = new MetricsEngine();

describe('DAP profiler, single-pass', () => {
  it('runs the documented request sequence, with one baseline run for the total', async () => {
    const t = new SimulatedTarget();
    const p = new DapProfiler(t, { slots: 2, mode: { kind: 'single-pass' }, executable: '/fw/app.elf' });
    const rs = await p.measure(['step', 'mac']);
    assert.deepEqual(
      t.requests.map((r) => r.command),
      [
        'cyclelens/counters',
        'cyclelens/configure',
        'cyclelens/run',
        'cyclelens/read',
        'cyclelens/run',
        'cyclelens/read',
        'cyclelens/run',
        'cyclelens/inject',
        'cyclelens/run',
        'cyclelens/injectedResults',
        'cyclelens/removeInjections',
      ],
    );
    assert.deepEqual(t.requests[2]!.args, { restart: true, until: { function: 'main' } });
    assert.deepEqual(t.requests[4]!.args, {});
    assert.deepEqual(t.requests[1]!.args, { events: ['instructions'] });
    assert.deepEqual((t.requests[7]!.args as InjectArguments).targets, [{ function: 'step' }, { function: 'mac' }]);
    assert.equal(p.baselineRuns, 1);
    // 20 iterations, 6 of them double: 20*1000 + 6*900, no payload in the baseline.
    assert.deepEqual(rs.run.totals, { instructions: 25_400 });
    assert.equal(rs.run.event, 'instructions');
    assert.equal(rs.run.kind, 'single-pass');
    const step = rs.measurements.find((m) => m.name === 'step')!;
    assert.equal(step.inclusive.instructions, 900 * 26);
    assert.equal(step.calls, 26);
    assert.equal(step.rawTotal, 900 * 26 + COUNTED * 26);
    // Second batch: no second baseline.
    await p.measure(['log']);
    assert.equal(p.baselineRuns, 1);
  });

  it(
    'takes the total from a window injected beside the first batch when the adapter says where ' +
      'the program ends: no run of its own',
    async () => {
      const t = new SimulatedTarget();
      t.reportsEnd = true;
      const p = new DapProfiler(t, { slots: 2, mode: { kind: 'single-pass' }, executable: '/fw/app.elf' });
      const rs = await p.measure(['step', 'mac']);
      assert.equal(
        t.requests.filter((r) => r.command === 'cyclelens/run').length,
        2,
        'one restart to main, one run to the end',
      );
      assert.equal(p.baselineRuns, 0);
      const injects = t.requests
        .filter((r) => r.command === 'cyclelens/inject')
        .map((r) => (r.args as InjectArguments).targets);
      assert.deepEqual(injects, [
        [{ start: { function: 'main' }, end: { address: '0x1007' } }],
        [{ function: 'step' }, { function: 'mac' }],
      ]);
      // The window without any payload: the same 25,400 instructions as a run without injections.
      assert.deepEqual(rs.run.totals, { instructions: 25_400 });
      assert.match(rs.run.method, /total from the region main -> 0x1007 injected with the first batch/);
      assert.equal(rs.measurements.find((m) => m.name === 'step')!.calls, 26);
      await p.measure(['log']);
      assert.equal(p.baselineRuns, 0, 'later batches reuse the total');
      assert.equal(t.requests.filter((r) => r.command === 'cyclelens/run').length, 4);
    },
  );

  it('refuses the function every run ends at, alone or in a group: it never runs inside the window', async () => {
    const t = new SimulatedTarget();
    t.reportsEnd = true;
    const p = new DapProfiler(t, { slots: 3, mode: { kind: 'single-pass' }, executable: '/fw/app.elf' });
    const rs = await p.measure(['step', 'done'], undefined, [['log', 'done']]);
    const injects = t.requests
      .filter((r) => r.command === 'cyclelens/inject')
      .map((r) => (r.args as InjectArguments).targets);
    assert.deepEqual(injects.at(-1), [{ function: 'step' }], 'neither done nor the group holding it is patched');
    const refused = rs.refused.filter((r) => /every run ends at its entry/.test(r.reason));
    assert.deepEqual(
      refused.map((r) => [r.name, r.members, r.blockedBy]),
      [
        ['done', undefined, undefined],
        ['log + done', ['log', 'done'], 'done'],
      ],
    );
    assert.ok(rs.measurements.some((m) => m.name === 'step'));
    const later = await p.measure(['done', 'log']);
    assert.deepEqual(
      later.refused.map((r) => r.name),
      ['done'],
      'a later run refuses it too',
    );
  });

  it('measures the total by an injected window when the counters read at halts are unreliable', async () => {
    const t = new SimulatedTarget();
    t.unreliableAtEnd = true;
    const p = new DapProfiler(t, { slots: 2, mode: { kind: 'single-pass' }, executable: '/fw/app.elf' });
    const rs = await p.measure(['step']);
    assert.deepEqual(
      t.requests.map((r) => r.command),
      [
        'cyclelens/counters',
        'cyclelens/configure',
        'cyclelens/run',
        'cyclelens/read',
        'cyclelens/run',
        'cyclelens/read',
        // the window run: main's entry to its call of the end function (site 0x1007), never halted
        'cyclelens/run',
        'cyclelens/callGraph',
        'cyclelens/inject',
        'cyclelens/run',
        'cyclelens/injectedResults',
        'cyclelens/removeInjections',
        'cyclelens/run',
        'cyclelens/inject',
        'cyclelens/run',
        'cyclelens/injectedResults',
        'cyclelens/removeInjections',
      ],
    );
    assert.deepEqual((t.requests[8]!.args as InjectArguments).targets, [
      { start: { function: 'main' }, end: { address: '0x1007' } },
    ]);
    assert.deepEqual(t.requests[9]!.args, { until: { function: 'done' } });
    assert.equal(p.baselineRuns, 2);
    // The jumped counters are not used: the total is the window's own count, 20 iterations, 6 double.
    assert.deepEqual(rs.run.totals, { instructions: 25_400 });
    assert.match(rs.run.method, /region main -> 0x1007/);
  });

  it(
    'refuses a run total when the start function neither calls the end function once nor runs ' +
      'once (then it is its own window)',
    async () => {
      const t = new SimulatedTarget();
      t.unreliableAtEnd = true;
      const p = new DapProfiler(t, {
        slots: 2,
        mode: { kind: 'single-pass', start: 'step' },
        executable: '/fw/app.elf',
      });
      await assert.rejects(
        p.measure(['filter']),
        (err: Error) =>
          err instanceof ProfilingError &&
          /step from its entry to its return was not measured exactly once \(26 passes, 26 calls\)/.test(err.message) &&
          /"programEnd": "exit"/.test(err.message),
      );
    },
  );

  it('reports refused and unanswered functions, never drops them', async () => {
    const t = new SimulatedTarget();
    const p = new DapProfiler(t, { slots: 3, mode: { kind: 'single-pass' }, executable: 'x' });
    const rs = await p.measure(['idle', 'step']);
    assert.deepEqual(rs.refused, [{ name: 'idle', reason: 'idle is a 2-byte return: too short to patch' }]);
    const silent: DapRequester = {
      customRequest: async (command, args) =>
        command === 'cyclelens/inject' ? { injected: [], refused: [] } : t.customRequest(command, args),
    };
    const rs2 = await new DapProfiler(silent, { slots: 1, mode: { kind: 'single-pass' }, executable: 'x' }).measure([
      'log',
    ]);
    assert.deepEqual(rs2.refused, [{ name: 'log', reason: 'the adapter neither injected nor refused it' }]);
  });

  it('removes the injections when the run fails, and says which request failed', async () => {
    const t = new SimulatedTarget();
    let runs = 0;
    // Runs 1 and 2 are the baseline, 3 the restart, 4 the measured run: it fails after the injection.
    const failing: DapRequester = {
      customRequest: async (command, args) => {
        if (command === 'cyclelens/run' && ++runs === 4) throw new Error('the target stopped responding');
        return t.customRequest(command, args);
      },
    };
    const p = new DapProfiler(failing, { slots: 2, mode: { kind: 'single-pass' }, executable: 'x' });
    await assert.rejects(
      p.measure(['step']),
      (e: Error) =>
        e instanceof ProfilingError && /cyclelens\/run failed: the target stopped responding/.test(e.message),
    );
    assert.deepEqual(
      t.requests.slice(-2).map((r) => r.command),
      ['cyclelens/inject', 'cyclelens/removeInjections'],
    );
  });

  it('stops when aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const p = new DapProfiler(new SimulatedTarget(), { slots: 1, mode: { kind: 'single-pass' }, executable: 'x' });
    await assert.rejects(p.measure(['step'], controller.signal), { name: 'AbortError' });
  });

  it('knows which event a payload counter counts', () => {
    assert.equal(eventOfCounter('minstret'), 'instructions');
    assert.equal(eventOfCounter('SysTick CVR'), 'ticks', 'SysTick ticks are never labelled cycles');
    assert.equal(eventOfCounter('DWT CYCCNT'), 'cycles');
    assert.throws(
      () => new DapProfiler(new SimulatedTarget(), { slots: 0, mode: { kind: 'single-pass' }, executable: 'x' }),
      /slots/,
    );
  });

  it('drives a whole descent: main spans the run, the refused idle costs nothing below it', async () => {
    const t = new SimulatedTarget();
    const p = new DapProfiler(t, { slots: 2, mode: { kind: 'single-pass' }, executable: 'x' });
    const roots = rootsForStart(graph, 'main');
    assert.deepEqual(roots, ['main', 'isr']);
    const r = await runDescent(graph, p, {
      engine,
      metric: engine.monotone('share'),
      threshold: 0.05,
      roots,
      spanning: ['main'],
    });
    const status = Object.fromEntries(r.outcomes.map((o) => [o.name, o.status]));
    assert.deepEqual(status, {
      reset: 'unreached',
      main: 'measured',
      idle: 'unmeasurable',
      step: 'measured',
      filter: 'measured',
      mac: 'measured',
      log: 'measured',
      isr: 'measured',
      done: 'measured',
    });
    const mac = r.outcomes.find((o) => o.name === 'mac')!;
    assert.ok(Math.abs(mac.value! - (650 * 26) / 25_400) < 1e-12);
    assert.ok(!t.requests.some((q) => q.command === 'cyclelens/inject' && JSON.stringify(q.args).includes('"main"')));
    // The dry run found idle unmeasurable before any run: no slot was spent on it.
    assert.ok(!t.requests.some((q) => q.command === 'cyclelens/inject' && JSON.stringify(q.args).includes('"idle"')));
    assert.match(r.outcomes.find((o) => o.name === 'idle')!.reason!, /too short to patch/);
  });
});

describe('DAP profiler, cyclic', () => {
  it('reconfigures at the safe stop, dwells, and takes each window total from the counter', async () => {
    const t = new SimulatedTarget();
    t.width = 24;
    const p = new DapProfiler(t, {
      slots: 2,
      mode: { kind: 'cyclic', safeStop: { function: 'idle' }, dwell: 3 },
      executable: 'x',
    });
    const w1 = await p.measure(['step', 'mac']);
    const commands = t.requests.map((r) => r.command);
    assert.deepEqual(commands, [
      'cyclelens/counters',
      'cyclelens/configure',
      'cyclelens/run',
      'cyclelens/inject',
      'cyclelens/read',
      'cyclelens/run',
      'cyclelens/run',
      'cyclelens/run',
      'cyclelens/read',
      'cyclelens/injectedResults',
      'cyclelens/removeInjections',
    ]);
    assert.ok(
      !t.requests.some((r) => (r.args as RunArguments | undefined)?.restart),
      'a cyclic program is never restarted',
    );
    // Iterations 2, 3, 4 (the first run reached the safe stop): 3000 + 900 for iteration 3, the counter
    // wrapped at 2^24 on the way; the payloads' uncompensated part is left in, the counted part removed.
    const payload = PAYLOAD * (1 + 128) * 4;
    assert.equal(w1.run.totals.instructions, 3000 + 900 + payload);
    assert.equal(w1.run.from, 'idle');
    assert.equal(w1.run.to, 'idle x3');
    const before = t.requests.length;
    await p.measure(['filter']);
    assert.equal(
      t.requests.slice(before).filter((r) => r.command === 'cyclelens/run').length,
      3,
      'already at the safe stop',
    );
  });

  it('drives a round robin over windows of different lengths', async () => {
    const t = new SimulatedTarget();
    const p = new DapProfiler(t, {
      slots: 3,
      mode: { kind: 'cyclic', safeStop: { function: 'idle' }, dwell: 3 },
      executable: 'x',
    });
    const r = await runRoundRobin(graph, p, {
      engine,
      metric: engine.definition('share')!,
      rounds: 2,
      functions: ['step', 'filter', 'log', 'isr'],
      spanning: ['main'],
    });
    assert.equal(r.runs, 4);
    assert.deepEqual(r.batches, [['step', 'filter', 'log'], ['isr'], ['step', 'filter', 'log'], ['isr']]);
    const step = r.outcomes.find((o) => o.name === 'step')!;
    assert.equal(step.windows, 2);
    assert.ok(step.value! > 0.6 && step.value! < 0.9, `step share ${step.value}`);
    assert.equal(r.outcomes.find((o) => o.name === 'mac')!.status, 'unreached', 'not asked for');
  });
});

describe('scenarios with a saved call graph', () => {
  const request: ScenarioRequest = {
    command: 'descent',
    threshold: { kind: 'share', value: 0.05 },
    slots: 2,
    start: 'main',
    roots: [],
    rounds: 1,
    lookahead: true,
  };
  const otherBuild: CallGraphDocument = {
    schema: CALL_GRAPH_SCHEMA,
    program: 'x',
    kind: 'dynamic',
    graph: { ...graph, functions: graph.functions.map((f, i) => (i === 0 ? { ...f, address: f.address + 4 } : f)) },
    ended: 'programEnd',
  };
  const options = (lines: string[]) => ({
    signal: new AbortController().signal,
    onProgress: (l: string) => lines.push(l),
    title: 't',
    generator: 'test',
  });

  it(
    'fails on a graph of another build that was asked for, and leaves out one found in the ' + 'workspace with a note',
    async () => {
      await assert.rejects(
        runScenario(
          { ...request, savedGraph: { document: otherBuild, file: 'calls.json' } },
          new DapProfiler(new SimulatedTarget(), { slots: 2, mode: { kind: 'single-pass' }, executable: 'x' }),
          options([]),
        ),
        /calls\.json was recorded on another build/,
      );
      const lines: string[] = [];
      const outcome = await runScenario(
        { ...request, savedGraph: { document: otherBuild, file: 'calls.json', optional: true } },
        new DapProfiler(new SimulatedTarget(), { slots: 2, mode: { kind: 'single-pass' }, executable: 'x' }),
        options(lines),
      );
      assert.ok(
        lines.some((l) => /another build .* Descent runs without its call counts/.test(l)),
        lines.join('\n'),
      );
      assert.equal(outcome.result.outcomes.find((o) => o.name === 'step')!.status, 'measured');
    },
  );
});

describe('scenarios on several sessions (workers)', () => {
  const options = (lines: string[]) => ({
    signal: new AbortController().signal,
    onProgress: (l: string) => lines.push(l),
    title: 't',
    generator: 'test',
  });

  it(
    'a full profile on three sessions: the values of one, every run counted, the total formed ' + 'once and shared',
    async () => {
      const request: ScenarioRequest = {
        command: 'profile',
        threshold: { kind: 'share', value: 0 },
        slots: 1,
        start: 'main',
        roots: [],
        rounds: 1,
        lookahead: true,
      };
      const alone = await runScenario(
        request,
        new DapProfiler(new SimulatedTarget(), { slots: 1, mode: { kind: 'single-pass' }, executable: 'x' }),
        options([]),
      );
      const first = new SimulatedTarget();
      const primary = new DapProfiler(first, { slots: 1, mode: { kind: 'single-pass' }, executable: 'x' });
      const extra: SimulatedTarget[] = [];
      const lines: string[] = [];
      const outcome = await runScenario(request, primary, {
        ...options(lines),
        workers: {
          jobs: 3,
          start: (index) => {
            const t = new SimulatedTarget();
            extra[index] = t;
            return Promise.resolve(
              new DapProfiler(t, { slots: 1, mode: { kind: 'single-pass' }, executable: 'x', totalFrom: primary }),
            );
          },
        },
      });
      const values = (o: typeof alone) => o.result.outcomes.map((x) => [x.name, x.status, x.value]);
      assert.deepEqual(values(outcome), values(alone));
      assert.deepEqual(outcome.result.batches, alone.result.batches);
      // One run formed the total (the counters read at main and at the end), on the first session only.
      assert.equal(primary.baselineRuns, 1);
      assert.equal(
        outcome.document.analysis!.runs,
        outcome.result.resultSets.length + 1,
        'the baseline run is counted',
      );
      assert.equal(outcome.document.analysis!.runs, alone.document.analysis!.runs);
      const ran = extra.filter((t) => t && t.requests.some((r) => r.command === 'cyclelens/inject'));
      assert.ok(ran.length >= 1, 'an extra session measured batches');
      for (const t of ran)
        assert.ok(
          !t.requests.some((r) => r.command === 'cyclelens/read'),
          'an extra session forms no total of its own',
        );
      assert.ok(
        lines.some((l) => /^run \d+ \[worker [23]\]: /.test(l)),
        lines.join('\n'),
      );
    },
  );
});
