import { availableParallelism } from 'node:os';

/**
 * How many program runs of an analysis may go at once (docs/design.md, "Parallel runs"). Each extra
 * job is a second debug session of the same configuration: its own QEMU, its own GDB. That gives the
 * sequential values only where a run is deterministic and the target can be duplicated: a QEMU
 * launched with `-icount` (the default). A board behind OpenOCD or a remote gdbserver is one
 * target; a QEMU without icount follows the host clock.
 */

export interface JobsDecision {
  jobs: number;
  /** Why fewer jobs than asked for, to say once in the log. */
  note?: string;
}

/** What the decision reads of the launch configuration (its `server`, and launch or attach). */
export interface JobsTarget {
  request: 'launch' | 'attach';
  server?: { type?: string; icount?: number | null } | undefined;
  /** A cyclic program (measured in windows of one long run) is not split over runs. */
  cyclic?: boolean;
}

/**
 * `requested`: the user's number (undefined or 0: the number of cores). `batches`: at most this many
 * runs can ever go at once (the full profile's run count), when known.
 */
export function decideJobs(requested: number | undefined, target: JobsTarget, batches?: number): JobsDecision {
  const asked = requested !== undefined && requested > 0 ? requested : availableParallelism();
  const explicit = requested !== undefined && requested > 1;
  const one = (why: string): JobsDecision => ({
    jobs: 1,
    ...(explicit ? { note: `${requested} jobs asked for, running 1: ${why}` } : {}),
  });
  if (asked <= 1) return { jobs: 1 };
  if (target.cyclic)
    return one('a cyclic program is measured in windows of one run, which cannot be split over sessions');
  if (target.request !== 'launch')
    return one('an attached session is one running target; parallel runs need launched QEMU sessions');
  const server = target.server?.type;
  if (server !== 'qemu')
    return one(
      `the server is ${server ?? 'not given'}, one real target; parallel runs need a QEMU target, ` +
        `where every run is deterministic and a second instance is cheap`,
    );
  if (target.server?.icount === null)
    return one(
      'QEMU runs without icount ("icount": null), so runs follow the host clock and differ; parallel runs need icount',
    );
  return { jobs: batches !== undefined ? Math.max(1, Math.min(asked, batches)) : asked };
}
