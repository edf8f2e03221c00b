/**
 * The counts a live overlay shows: cumulative since sampling started, or only the last N seconds.
 * Deltas arrive in timestamped batches (one per `cyclelens/samples` event); a sliding window keeps
 * the batches inside it and subtracts those that fall out, so an update costs the batch, not the
 * whole history.
 */
export class SampleWindow {
  private readonly totals = new Map<number, number>();
  private readonly batches: Array<{ at: number; delta: ReadonlyArray<readonly [number, number]> }> = [];
  private sum = 0;

  /** `windowMs` undefined: cumulative. */
  constructor(private windowMs: number | undefined) {}

  get total(): number {
    return this.sum;
  }

  counts(): ReadonlyMap<number, number> {
    return this.totals;
  }

  /** Changes the window; a shorter one drops what falls out now, a longer one cannot bring back what was dropped. */
  setWindow(windowMs: number | undefined, now: number): void {
    this.windowMs = windowMs;
    if (windowMs === undefined) this.batches.length = 0;
    this.expire(now);
  }

  add(at: number, delta: ReadonlyArray<readonly [number, number]>): void {
    for (const [address, n] of delta) {
      this.totals.set(address, (this.totals.get(address) ?? 0) + n);
      this.sum += n;
    }
    if (this.windowMs !== undefined) this.batches.push({ at, delta });
    this.expire(at);
  }

  /** Drops batches older than the window, measured back from `now`. */
  expire(now: number): void {
    if (this.windowMs === undefined) return;
    while (this.batches.length > 0 && this.batches[0]!.at <= now - this.windowMs) {
      for (const [address, n] of this.batches.shift()!.delta) {
        const left = (this.totals.get(address) ?? 0) - n;
        if (left > 0) this.totals.set(address, left);
        else this.totals.delete(address);
        this.sum -= n;
      }
    }
  }

  clear(): void {
    this.totals.clear();
    this.batches.length = 0;
    this.sum = 0;
  }
}
