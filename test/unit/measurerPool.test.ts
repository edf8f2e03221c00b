import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  MeasurerPool,
  runDescent,
  runFullProfile,
  type AnalysisResult,
  type BatchMeasurer,
} from '../../core/analysis/descent';
import type { ResultSet } from '../../core/analysis/resultSet';
import { decideJobs } from '../../core/profiling/parallelJobs';
import { parseArgs } from '../../cli/args';
import { FakeMeasurer, engine, randomProgram, share } from '../support/syntheticDescent';
import { WorkerNotNeeded } from '../../core/analysis/measurerPool';

// The measurer pool (core/analysis/measurerPool.ts) over deterministic fake measurers: runs of one
// program on several workers must give exactly what one worker gives, in plan order.

/** A worker: a deterministic measurer whose runs take different times, so they end out of order. */
class Worker implements BatchMeasurer {
  readonly inner: FakeMeasurer;
  readonly batches: string[][] = [];
  static inFlight = 0;
  static maxInFlight = 0;
  static failed = false;
  failOn?: string;
  onStart?: (batch: readonly string[]) => void;

  constructor(
    readonly name: string,
    slots: number,
    values: Record<string, number>,
    total: number,
  ) {
    this.inner = new FakeMeasurer(slots, values, total);
  }

  get slots(): number {
    return this.inner.slots;
  }

  async measure(batch: readonly string[], signal?: AbortSignal): Promise<ResultSet> {
    if (signal?.aborted) throw Object.assign(new Error('aborted'), { name: 'AbortError' });
    this.batches.push([...batch]);
    this.onStart?.(batch);
    Worker.inFlight++;
    Worker.maxInFlight = Math.max(Worker.maxInFlight, Worker.inFlight);
    try {
      // A run's length depends on its batch, not on the clock: later batches may end first.
      const turns = (batch.join().length * 7) % 5;
      for (let i = 0; i < turns; i++) await new Promise((r) => setImmediate(r));
      if (this.failOn !== undefined && batch.includes(this.failOn)) {
        Worker.failed = true;
        throw new Error(`the session of ${this.name} ended`);
      }
      return await this.inner.measure(batch);
    } finally {
      Worker.inFlight--;
    }
  }
}

function poolOf(workers: Worker[], log: string[] = []): MeasurerPool {
  return new MeasurerPool(workers[0]!, {
    jobs: workers.length,
    startWorker: async (i) => {
      await new Promise((r) => setImmediate(r));
      return workers[i]!;
    },
    log: (l) => log.push(l),
  });
}

function values(r: AnalysisResult): Map<string, number | undefined> {
  return new Map(r.outcomes.filter((o) => o.status === 'measured').map((o) => [o.name, o.value]));
}

const SEEDS = [3, 11, 27, 40, 58];

describe('measurer pool: parallel runs equal sequential runs', () => {
  it('with one job, a pool measures exactly the batches of the measurer alone (full profile and descent)', async () => {
    for (const seed of SEEDS) {
      const p = randomProgram(seed);
      const alone = new FakeMeasurer(3, p.values, p.total);
      const pooled = new Worker('w1', 3, p.values, p.total);
      const a = await runFullProfile(p.graph, alone, { engine, metric: share });
      const b = await runFullProfile(p.graph, new MeasurerPool(pooled), { engine, metric: share });
      assert.deepEqual(pooled.batches, alone.batches, `seed ${seed}: full profile batches`);
      assert.deepEqual(b.batches, a.batches);
      const alone2 = new FakeMeasurer(2, p.values, p.total);
      const pooled2 = new Worker('w1', 2, p.values, p.total);
      const d1 = await runDescent(p.graph, alone2, { engine, metric: share, threshold: 0.05 });
      const d2 = await runDescent(p.graph, new MeasurerPool(pooled2, { jobs: 1 }), {
        engine,
        metric: share,
        threshold: 0.05,
      });
      assert.deepEqual(pooled2.batches, alone2.batches, `seed ${seed}: descent batches`);
      assert.deepEqual(d2.outcomes, d1.outcomes);
      assert.equal(d2.runs, d1.runs);
    }
  });

  it(
    'a full profile on three workers: the same batches and values, result sets in plan order, ' + 'runs at once',
    async () => {
      for (const seed of SEEDS) {
        const p = randomProgram(seed);
        const sequential = await runFullProfile(p.graph, new FakeMeasurer(2, p.values, p.total), {
          engine,
          metric: share,
        });
        const workers = ['w1', 'w2', 'w3'].map((n) => new Worker(n, 2, p.values, p.total));
        Worker.maxInFlight = 0;
        const progress: { run: number; worker?: number }[] = [];
        const parallel = await runFullProfile(p.graph, poolOf(workers), {
          engine,
          metric: share,
          onProgress: (x) => progress.push(x),
        });
        assert.deepEqual(parallel.batches, sequential.batches, `seed ${seed}`);
        assert.deepEqual(
          parallel.resultSets.map((rs) => rs.measurements.map((m) => m.name)),
          sequential.batches,
        );
        assert.deepEqual(parallel.outcomes, sequential.outcomes);
        assert.equal(parallel.runs, sequential.runs);
        assert.deepEqual(
          progress.map((x) => x.run),
          sequential.batches.map((_, i) => i + 1),
        );
        // Every batch ran exactly once, spread over the workers, and more than one at a time.
        assert.deepEqual(workers.flatMap((w) => w.batches).sort(), [...sequential.batches].sort());
        if (sequential.batches.length > 2) {
          assert.ok(Worker.maxInFlight > 1, `seed ${seed}: runs went one at a time`);
          assert.ok(workers.filter((w) => w.batches.length > 0).length > 1, 'one worker did everything');
          assert.ok(
            progress.every((x) => x.worker !== undefined && x.worker >= 1 && x.worker <= 3),
            'progress names the worker',
          );
        }
      }
    },
  );

  it('a descent on three workers: every measured value equals the sequential one, nothing hot is lost', async () => {
    let parallelSteps = 0;
    for (const seed of SEEDS) {
      const p = randomProgram(seed);
      for (const threshold of [0.01, 0.05]) {
        const seqM = new FakeMeasurer(2, p.values, p.total);
        const sequential = await runDescent(p.graph, seqM, { engine, metric: share, threshold });
        const workers = ['w1', 'w2', 'w3'].map((n) => new Worker(n, 2, p.values, p.total));
        const parallel = await runDescent(p.graph, poolOf(workers), { engine, metric: share, threshold });
        const sv = values(sequential);
        const pv = values(parallel);
        for (const [name, v] of sv)
          assert.equal(pv.get(name), v, `seed ${seed}: ${name} measured sequentially but not the same in parallel`);
        for (const [name, v] of pv) assert.equal(v, p.values[name]! / p.total, `${name}`);
        // Batches within one step are disjoint, and no function is measured twice.
        const all = parallel.batches.flat();
        assert.equal(new Set(all).size, all.length, `seed ${seed}: a function measured twice`);
        assert.equal(parallel.runs, parallel.batches.length);
        if (workers.filter((w) => w.batches.length > 0).length > 1) parallelSteps++;
      }
    }
    assert.ok(parallelSteps > 0, 'no descent used more than one worker');
  });

  it(
    'cancellation stops every worker: no run starts after the abort, finished runs are kept in ' + 'plan order',
    async () => {
      const p = randomProgram(27);
      const workers = ['w1', 'w2'].map((n) => new Worker(n, 1, p.values, p.total));
      const controller = new AbortController();
      let started = 0;
      let startedAfterAbort = 0;
      for (const w of workers)
        w.onStart = () => {
          if (controller.signal.aborted) startedAfterAbort++;
          if (++started === 4) controller.abort();
        };
      const r = await runFullProfile(p.graph, poolOf(workers), { engine, metric: share, signal: controller.signal });
      assert.equal(r.cancelled, true);
      assert.equal(startedAfterAbort, 0);
      assert.equal(started, 4);
      assert.ok(r.batches.length <= 4);
      const sequential = await runFullProfile(p.graph, new FakeMeasurer(1, p.values, p.total), {
        engine,
        metric: share,
      });
      // Whatever finished is there, in the order of the plan.
      const index = (b: string[]): number => sequential.batches.findIndex((s) => s.join() === b.join());
      const at = r.batches.map(index);
      assert.deepEqual(
        at,
        [...at].sort((a, b) => a - b),
      );
    },
  );

  it('a worker that dies fails the analysis with its name, and the others take no new batch', async () => {
    const p = randomProgram(40);
    const workers = ['w1', 'w2'].map((n) => new Worker(n, 1, p.values, p.total));
    const sequential = await runFullProfile(p.graph, new FakeMeasurer(1, p.values, p.total), { engine, metric: share });
    const victim = sequential.batches[3]![0]!;
    workers[1]!.failOn = victim;
    workers[0]!.failOn = victim;
    let afterFailure = 0;
    Worker.failed = false;
    for (const w of workers)
      w.onStart = () => {
        if (Worker.failed) afterFailure++;
      };
    await assert.rejects(
      runFullProfile(p.graph, poolOf(workers), { engine, metric: share }),
      /worker [12]: the session of w[12] ended/,
    );
    assert.equal(afterFailure, 0, `${afterFailure} batches started after a worker died`);
    const measured = workers.flatMap((w) => w.batches).length;
    assert.ok(measured < sequential.batches.length, 'the analysis went on after the failure');
  });

  it('a worker that cannot start is left out with a note; the others do its share', async () => {
    const p = randomProgram(11);
    const first = new Worker('w1', 2, p.values, p.total);
    const log: string[] = [];
    const pool = new MeasurerPool(first, {
      jobs: 3,
      startWorker: (i) =>
        i === 1
          ? Promise.reject(new Error('QEMU did not start'))
          : Promise.resolve(new Worker(`w${i + 1}`, 2, p.values, p.total)),
      log: (l) => log.push(l),
    });
    const r = await runFullProfile(p.graph, pool, { engine, metric: share });
    const sequential = await runFullProfile(p.graph, new FakeMeasurer(2, p.values, p.total), { engine, metric: share });
    assert.deepEqual(r.outcomes, sequential.outcomes);
    assert.equal(pool.capacity, 2);
    assert.match(log.join('\n'), /worker 2 could not start \(QEMU did not start\)/);
  });

  it(
    'a worker whose session was ready only after the analysis ended is noted as not needed, not ' + 'as a failure',
    async () => {
      const p = randomProgram(11);
      const log: string[] = [];
      const pool = new MeasurerPool(new Worker('w1', 2, p.values, p.total), {
        jobs: 2,
        startWorker: () => Promise.reject(new WorkerNotNeeded()),
        log: (l) => log.push(l),
      });
      await runFullProfile(p.graph, pool, { engine, metric: share });
      assert.match(log.join('\n'), /worker 2 was not needed: the analysis was done before its session was ready/);
      assert.doesNotMatch(log.join('\n'), /could not start/);
    },
  );

  it('a later call gives the batches to the workers that did start, past the one that did not', async () => {
    const p = randomProgram(11);
    const workers = ['w1', 'w2', 'w3'].map((n) => new Worker(n, 1, p.values, p.total));
    const pool = new MeasurerPool(workers[0]!, {
      jobs: 3,
      startWorker: (i) => (i === 1 ? Promise.reject(new Error('no QEMU')) : Promise.resolve(workers[i]!)),
    });
    const names = Object.keys(p.values);
    await pool.run(
      [{ batch: [names[0]!] }, { batch: [names[1]!] }, { batch: [names[2]!] }],
      undefined,
      () => undefined,
    );
    const before = workers[2]!.batches.length;
    const seen: number[] = [];
    // Two batches, two living workers: the first and the third run one each.
    await pool.run([{ batch: [names[3]!] }, { batch: [names[4]!] }], undefined, (_, __, worker) => seen.push(worker));
    assert.equal(workers[1]!.batches.length, 0);
    assert.ok(
      workers[2]!.batches.length > before || seen.includes(2),
      `the third worker got nothing: ${JSON.stringify(seen)}`,
    );
  });

  it('refuses a pool without a way to start its workers, and starts none it has no batch for', async () => {
    const p = randomProgram(3);
    assert.throws(() => new MeasurerPool(new FakeMeasurer(1, p.values, p.total), { jobs: 2 }), /need a way to start/);
    let starts = 0;
    const pool = new MeasurerPool(new FakeMeasurer(100, p.values, p.total), {
      jobs: 4,
      startWorker: (i) => {
        starts++;
        return Promise.resolve(new FakeMeasurer(100, p.values, p.total + i));
      },
    });
    await runFullProfile(p.graph, pool, { engine, metric: share });
    assert.equal(starts, 0, 'one batch holds every function: no extra worker');
  });

  it(
    'a descent whose counting run leaves more than one run of work starts its workers at once, ' +
      'and one with less none',
    async () => {
      const p = randomProgram(5);
      const started = (slots: number): Promise<{ starts: number[]; beforeFirstRun: number }> => {
        const starts: number[] = [];
        let beforeFirstRun = -1;
        const primary = new FakeMeasurer(slots, p.values, p.total);
        primary.counts = p.executed;
        primary.onMeasure = () => {
          if (beforeFirstRun < 0) beforeFirstRun = starts.length;
        };
        const pool = new MeasurerPool(primary, {
          jobs: 3,
          startWorker: (i) => {
            starts.push(i);
            const w = new FakeMeasurer(slots, p.values, p.total);
            return Promise.resolve(w);
          },
        });
        return runDescent(p.counted, pool, { engine, metric: share, threshold: 0.01, roots: p.roots }).then(() => ({
          starts,
          beforeFirstRun,
        }));
      };
      const ran = p.executed.functions.length;
      const busy = await started(1);
      assert.ok(ran > 1, `${ran} functions ran`);
      assert.deepEqual(busy.starts.slice(0, 2), [1, 2], 'both extra workers are started');
      assert.equal(busy.beforeFirstRun, 2, 'before the first run');
      const idle = await started(1000);
      assert.deepEqual(idle.starts, [], 'one run holds every open function: no extra worker');
    },
  );
});

describe('how many jobs', () => {
  const qemu = { request: 'launch' as const, server: { type: 'qemu' } };
  it('QEMU with icount runs as many as asked, no more than there are batches', () => {
    assert.deepEqual(decideJobs(3, qemu), { jobs: 3 });
    assert.deepEqual(decideJobs(8, qemu, 5), { jobs: 5 });
    assert.ok(decideJobs(undefined, qemu).jobs >= 1);
    assert.equal(decideJobs(0, qemu, 1).jobs, 1);
  });
  it(
    'one real target, an attached session, QEMU without icount or a cyclic program: one job, ' +
      'and why when more were asked for',
    () => {
      const openocd = decideJobs(4, { request: 'launch', server: { type: 'openocd' } });
      assert.equal(openocd.jobs, 1);
      assert.match(openocd.note!, /openocd, one real target/);
      assert.match(decideJobs(2, { request: 'launch', server: { type: 'remote' } }).note!, /remote/);
      assert.match(decideJobs(2, { request: 'launch', server: { type: 'qemu', icount: null } }).note!, /icount/);
      assert.match(decideJobs(2, { ...qemu, request: 'attach' }).note!, /attached/);
      assert.match(decideJobs(2, { ...qemu, cyclic: true }).note!, /cyclic/);
      assert.deepEqual(
        decideJobs(undefined, { request: 'launch', server: { type: 'openocd' } }),
        { jobs: 1 },
        'no note when nothing was asked for',
      );
    },
  );
  it('--jobs takes a whole number >= 1, for descent and profile', () => {
    const ok = parseArgs(['profile', '--config', 'l.json', '--name', 'x', '--jobs', '2']);
    assert.equal(ok.kind === 'run' && ok.command.jobs, 2);
    const absent = parseArgs(['descent', '--config', 'l.json', '--name', 'x']);
    assert.equal(absent.kind === 'run' && absent.command.jobs, undefined);
    for (const bad of ['0', '-1', 'two', '1.5']) {
      const r = parseArgs(['profile', '--config', 'l.json', '--name', 'x', `--jobs=${bad}`]);
      assert.equal(r.kind, 'error', bad);
      assert.match(r.kind === 'error' ? r.message : '', /--jobs .*whole number >= 1/);
    }
    const cg = parseArgs(['call-graph', '--config', 'l.json', '--name', 'x', '--out', 'g.json', '--jobs', '2']);
    assert.match(cg.kind === 'error' ? cg.message : '', /--jobs does not apply to call-graph/);
  });
});
