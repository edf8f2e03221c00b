/**
 * First-fit allocation inside the reserved memory. Freed blocks are not reused at once: a
 * measured call may still be running when its measurement is removed, and its return goes through
 * the exit stub. They come back only when the service knows no call is in flight (empty shadow
 * stack), through `reclaim()`.
 */
export interface Block {
  start: number;
  size: number;
}

export class CaveAllocator {
  private free: Block[];
  private draining: Block[] = [];

  constructor(ranges: Block[]) {
    this.free = ranges
      .filter((r) => r.size > 0)
      .map((r) => ({ ...r }))
      .sort((a, b) => a.start - b.start);
  }

  allocate(size: number, align = 4): Block | undefined {
    for (const f of this.free) {
      const start = ((f.start + align - 1) & ~(align - 1)) >>> 0;
      const pad = start - f.start;
      if (f.size - pad < size) continue;
      const block = { start, size };
      const rest: Block[] = [];
      if (pad > 0) rest.push({ start: f.start, size: pad });
      if (f.size - pad - size > 0) rest.push({ start: start + size, size: f.size - pad - size });
      this.free.splice(this.free.indexOf(f), 1, ...rest);
      return block;
    }
    return undefined;
  }

  /** Gives a block back once nothing can execute it any more. */
  release(block: Block): void {
    this.draining.push(block);
  }

  /** Call when no measured call is in flight: drained blocks become free again. */
  reclaim(): void {
    this.free.push(...this.draining);
    this.draining = [];
    this.free.sort((a, b) => a.start - b.start);
    const merged: Block[] = [];
    for (const b of this.free) {
      const last = merged[merged.length - 1];
      if (last && last.start + last.size === b.start) last.size += b.size;
      else merged.push({ ...b });
    }
    this.free = merged;
  }

  get freeBytes(): number {
    return this.free.reduce((n, b) => n + b.size, 0);
  }
}
