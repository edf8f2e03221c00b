import { isAbort, type BatchMeasurer, type MeasurerPlan } from './analysisRun';
import type { ExecutionCounts } from './countBounds';
import type { ResultSet } from './resultSet';

/**
 * Several measurers running independent batches at once (docs/design.md, "Parallel runs"). On a
 * deterministic target (QEMU under `-icount`) a run gives the same values on any instance, so the
 * batches of a full profile, or the disjoint batches of one descent step, can go to several
 * instances. The first measurer is the primary: it plans, it runs alone with one job, and it takes
 * the first batch of every call. Extra workers are started on demand, only when a call has work for
 * them, and each keeps its own session state (its own baseline, counters, window).
 *
 * Results reach the caller in plan order, whatever order the runs end in, so the ledger sees the
 * same sequence as a sequential analysis; with one job the pool is exactly the sequential loop
 * (measure, deliver, measure the next).
 */

export interface BatchJob {
  batch: readonly string[];
  groups?: readonly (readonly string[])[];
}

export interface PoolOptions {
  /** Measurers that may run at once, the primary included (>= 1). */
  jobs: number;
  /** Starts the extra worker `index` (1, 2, …); a worker that cannot start is left out with a note. */
  startWorker?(index: number): Promise<BatchMeasurer>;
  log?(line: string): void;
}

export class PoolError extends Error {
  override name = 'PoolError';
}

export class MeasurerPool {
  /** Workers by index: started (or starting); undefined once a start failed. */
  private readonly workers: (Promise<BatchMeasurer | undefined> | undefined)[];
  private failedStarts = 0;

  constructor(
    readonly primary: BatchMeasurer,
    private readonly options: PoolOptions = { jobs: 1 },
  ) {
    if (!Number.isInteger(options.jobs) || options.jobs < 1)
      throw new PoolError(`the number of jobs must be a whole number >= 1 (got ${options.jobs})`);
    if (options.jobs > 1 && !options.startWorker)
      throw new PoolError(`${options.jobs} jobs need a way to start the extra workers`);
    this.workers = [Promise.resolve(primary)];
  }

  /** A measurer alone, or the pool it already is. */
  static of(m: BatchMeasurer | MeasurerPool): MeasurerPool {
    return m instanceof MeasurerPool ? m : new MeasurerPool(m);
  }

  get slots(): number {
    return this.primary.slots;
  }

  get groups(): boolean | undefined {
    return this.primary.groups;
  }

  plan(functions: readonly string[], signal?: AbortSignal): Promise<MeasurerPlan> | undefined {
    return this.primary.plan?.(functions, signal);
  }

  /** The primary's instruction counts (one run, whichever measurer makes it: the program is the same). */
  executionCounts(signal?: AbortSignal): Promise<ExecutionCounts | undefined> | undefined {
    return this.primary.executionCounts?.(signal);
  }

  /** How many batches may run at once: the jobs asked for, less workers that could not start. */
  get capacity(): number {
    return Math.max(1, this.options.jobs - this.failedStarts);
  }

  /**
   * Starts the extra workers now rather than when a call first has work for them: for an analysis
   * that knows early that it has more than one run's work (a descent whose counting run left more
   * open functions than one run measures), so they are ready by its first steps.
   */
  warm(): void {
    for (let index = 1; index < this.options.jobs; index++) void this.worker(index);
  }

  /** Workers started so far (the primary included), for the run count and for closing. */
  get started(): number {
    return this.workers.length;
  }

  /**
   * Measures the jobs, each once, on up to `capacity` workers; `deliver` gets each result set in
   * plan order (job index, result set, worker index) as soon as every earlier job has delivered.
   * Returns false when the signal aborted: the jobs finished by then are still delivered, in plan
   * order, the others not at all. A worker that throws stops the others (they finish the run in
   * hand) and, once all have stopped, the error is thrown.
   */
  async run(
    jobs: readonly BatchJob[],
    signal: AbortSignal | undefined,
    deliver: (job: number, rs: ResultSet, worker: number) => void,
  ): Promise<boolean> {
    if (jobs.length === 0) return !signal?.aborted;
    const stop = new AbortController();
    const onAbort = (): void => stop.abort();
    signal?.addEventListener('abort', onAbort);
    if (signal?.aborted) stop.abort();
    const results: ({ rs: ResultSet; worker: number } | undefined)[] = jobs.map(() => undefined);
    let next = 0;
    let delivered = 0;
    let failure: { error: unknown } | undefined;
    // A worker still starting waits no longer than until every job is taken or the pool stops.
    let release!: () => void;
    const released = new Promise<undefined>((resolve) => (release = () => resolve(undefined)));
    stop.signal.addEventListener('abort', () => release());
    if (stop.signal.aborted) release();
    const flush = (): void => {
      while (delivered < jobs.length && results[delivered]) {
        const r = results[delivered]!;
        deliver(delivered, r.rs, r.worker);
        delivered++;
      }
    };
    const fail = (err: unknown): void => {
      failure ??= { error: err };
      stop.abort();
    };
    const work = async (index: number, measurer: BatchMeasurer): Promise<void> => {
      while (!stop.signal.aborted && next < jobs.length) {
        const i = next++;
        if (next === jobs.length) release();
        const job = jobs[i]!;
        let rs: ResultSet;
        try {
          rs =
            job.groups && job.groups.length > 0
              ? await measurer.measure(job.batch, stop.signal, job.groups)
              : await measurer.measure(job.batch, stop.signal);
        } catch (err) {
          if (isAbort(err) || stop.signal.aborted) return;
          // Which session failed, when there are several.
          if (this.options.jobs > 1 && err instanceof Error) err.message = `worker ${index + 1}: ${err.message}`;
          fail(err);
          return;
        }
        results[i] = { rs, worker: index };
        try {
          if (!failure) flush();
        } catch (err) {
          fail(err);
          return;
        }
      }
    };
    const wanted = Math.min(this.capacity, jobs.length);
    const loops: Promise<void>[] = [];
    // Workers that could not start leave a gap: the next ones take their place.
    for (let index = 0; index < this.options.jobs && loops.length < wanted; index++) {
      const worker = this.worker(index);
      if (!worker) continue;
      loops.push(
        (async () => {
          // One still starting when every job is taken gets none; it stays for later calls.
          const m = index === 0 ? this.primary : await Promise.race([worker, released]);
          if (m) await work(index, m);
        })(),
      );
    }
    try {
      await Promise.all(loops);
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
    if (failure) throw failure.error;
    // Cancelled: what finished after a job that did not is delivered too, still in plan order.
    if (delivered < jobs.length) {
      for (let i = delivered; i < jobs.length; i++) {
        const r = results[i];
        if (r) deliver(i, r.rs, r.worker);
      }
      return false;
    }
    return true;
  }

  /** The worker at `index`, started now if it is not yet; undefined when it could not start. */
  private worker(index: number): Promise<BatchMeasurer | undefined> | undefined {
    if (index < this.workers.length) return this.workers[index];
    while (this.workers.length <= index) {
      const i = this.workers.length;
      const started = this.options.startWorker!(i).then((m) => {
        if (m.slots !== this.primary.slots)
          throw new PoolError(`it offers ${m.slots} slots, the first worker ${this.primary.slots}`);
        return m;
      });
      this.workers.push(
        started.catch((err: unknown) => {
          this.failedStarts++;
          this.workers[i] = undefined;
          // The analysis was over before this session was ready (a short program): the normal
          // end of a session started ahead, not a failure.
          if (err instanceof WorkerNotNeeded)
            this.options.log?.(`worker ${i + 1} was not needed: the analysis was done before its session was ready`);
          else
            this.options.log?.(
              `worker ${i + 1} could not start (${err instanceof Error ? err.message : String(err)}); the ` +
                `analysis goes on with the others`,
            );
          return undefined;
        }),
      );
    }
    return this.workers[index];
  }
}

/** Thrown by `startWorker` when the analysis ended while the worker's session was starting. */
export class WorkerNotNeeded extends Error {
  override name = 'WorkerNotNeeded';
  constructor() {
    super('the analysis ended while the session was starting');
  }
}
