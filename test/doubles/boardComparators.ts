import type { BreakpointPacket } from './boardPackets';
import type { Comparators } from './boardProfiles';

/**
 * TEST DOUBLE support — the hardware comparators of a part profile: which `Z1` (hardware
 * breakpoint) and `Z2`-`Z4` (watchpoint) requests a probe's server can honour, and which it refuses
 * with an error, as OpenOCD does when the FPB, the DWT or the RISC-V triggers are all taken
 * (ERROR_TARGET_RESOURCE_NOT_AVAILABLE, sent to GDB as `E0E`).
 */

export type ComparatorRefusal =
  'breakpointsExhausted' | 'watchpointsExhausted' | 'breakpointOutsideCodeRegion' | 'watchpointUnaligned' | 'duplicate';

export interface ComparatorUse {
  breakpoints: number;
  watchpoints: number;
  /** The most held at once since the counts were reset. */
  peakBreakpoints: number;
  peakWatchpoints: number;
}

export class ComparatorBudget {
  private readonly breakpoints = new Map<number, number>();
  private readonly watchpoints = new Set<string>();
  private peakBreakpoints = 0;
  private peakWatchpoints = 0;

  constructor(readonly comparators: Comparators) {}

  /** Breakpoint comparators the part has (`shared`: the whole trigger pool). */
  get breakpointLimit(): number {
    return this.comparators.kind === 'separate' ? this.comparators.breakpoints : this.comparators.triggers;
  }

  get watchpointLimit(): number {
    return this.comparators.kind === 'separate' ? this.comparators.watchpoints : this.comparators.triggers;
  }

  /** Why an insertion would be refused, or undefined when a comparator is free for it. */
  check(p: BreakpointPacket): ComparatorRefusal | undefined {
    const c = this.comparators;
    if (p.type === 1) {
      if (this.breakpoints.has(p.address)) return 'duplicate';
      if (c.kind === 'separate' && c.breakpointsBelow !== undefined && p.address >= c.breakpointsBelow)
        return 'breakpointOutsideCodeRegion';
      const used = this.breakpoints.size + (c.kind === 'shared' ? this.watchpoints.size : 0);
      return used >= this.breakpointLimit ? 'breakpointsExhausted' : undefined;
    }
    if (this.watchpoints.has(watchKey(p))) return 'duplicate';
    if (c.kind === 'separate' && c.watchpointsAligned) {
      const powerOfTwo = p.kind > 0 && p.kind <= 0x8000 && (p.kind & (p.kind - 1)) === 0;
      if (!powerOfTwo || p.address % p.kind !== 0) return 'watchpointUnaligned';
    }
    const used = this.watchpoints.size + (c.kind === 'shared' ? this.breakpoints.size : 0);
    return used >= this.watchpointLimit ? 'watchpointsExhausted' : undefined;
  }

  /** Records an insertion the target accepted (`Z1`…`Z4`), or a removal (`z1`…`z4`). */
  apply(p: BreakpointPacket): void {
    if (p.type === 1) {
      if (p.insert) this.breakpoints.set(p.address, p.kind);
      else this.breakpoints.delete(p.address);
    } else if (p.insert) this.watchpoints.add(watchKey(p));
    else this.watchpoints.delete(watchKey(p));
    this.peakBreakpoints = Math.max(this.peakBreakpoints, this.breakpoints.size);
    this.peakWatchpoints = Math.max(this.peakWatchpoints, this.watchpoints.size);
  }

  /** What is held, as the `z` packets that would remove it. */
  held(): BreakpointPacket[] {
    return [
      ...[...this.breakpoints].map(([address, kind]) => ({ insert: false, type: 1, address, kind })),
      ...[...this.watchpoints].map((key) => {
        const [type, address, kind] = key.split(':').map(Number);
        return { insert: false, type: type!, address: address!, kind: kind! };
      }),
    ];
  }

  clear(): void {
    this.breakpoints.clear();
    this.watchpoints.clear();
  }

  use(): ComparatorUse {
    return {
      breakpoints: this.breakpoints.size,
      watchpoints: this.watchpoints.size,
      peakBreakpoints: this.peakBreakpoints,
      peakWatchpoints: this.peakWatchpoints,
    };
  }

  resetPeaks(): void {
    this.peakBreakpoints = this.breakpoints.size;
    this.peakWatchpoints = this.watchpoints.size;
  }
}

function watchKey(p: BreakpointPacket): string {
  return `${p.type}:${p.address}:${p.kind}`;
}
