import type { DisassembledInstruction } from '../debugger/types';

/** An address range [start, end) of the target's memory. */
export interface AddressRange {
  start: bigint;
  end: bigint;
}

/**
 * Disassembly already read from the target, by exact range (the disassembly view asks for the same
 * windows again as it scrolls and after each step). Anything that may write memory clears it: the
 * user's memory writes, injected patches and their removal, resets, loads, expressions with side
 * effects. When the target runs, only ranges inside code the program cannot write (the ELF's
 * loadable segments without write permission) survive: code in writable memory may change as it runs.
 */
export class DisassemblyCache {
  private entries = new Map<string, { range: AddressRange; instructions: Promise<DisassembledInstruction[]> }>();

  constructor(private readonly maxEntries = 64) {}

  /** The cached instructions of [start, end), or what `read` returns (kept only when it succeeds). */
  read(start: bigint, end: bigint, read: () => Promise<DisassembledInstruction[]>): Promise<DisassembledInstruction[]> {
    const key = `${start.toString(16)}:${end.toString(16)}`;
    const hit = this.entries.get(key);
    if (hit) {
      // Most recently used last: the oldest entry is the one dropped when the cache is full.
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit.instructions;
    }
    const instructions = read();
    const entry = { range: { start, end }, instructions };
    this.entries.set(key, entry);
    instructions.catch(() => {
      if (this.entries.get(key) === entry) this.entries.delete(key);
    });
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    return instructions;
  }

  /** Memory may have changed anywhere. */
  clear(): void {
    this.entries = new Map();
  }

  /** The target runs: keeps only ranges that lie wholly inside one of `stable`. */
  keepWithin(stable: readonly AddressRange[]): void {
    for (const [key, { range }] of this.entries) {
      if (!stable.some((s) => range.start >= s.start && range.end <= s.end)) this.entries.delete(key);
    }
  }

  get size(): number {
    return this.entries.size;
  }
}
