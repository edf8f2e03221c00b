import type { DebugProtocol } from '@vscode/debugprotocol';
import type { SampleLocation, SamplesEventBody } from '../../common/dapCustom';
import { CustomEvents } from '../../common/dapCustom';
import type { AdapterHarness } from './dap';

/** Every `cyclelens/samples` event of a session, summed: what a client sees over DAP. */
export class SampleCollector {
  readonly counts = new Map<number, number>();
  readonly locations = new Map<number, SampleLocation>();
  readonly events: SamplesEventBody[] = [];
  total = 0;
  /** Reads the adapter counted apart because the core was completing an exception return. */
  inExceptionReturn = 0;
  private waiters: Array<{ until: (c: SampleCollector) => boolean; resolve: () => void }> = [];

  constructor(h: AdapterHarness) {
    h.dc.on(CustomEvents.samples, (e: DebugProtocol.Event) => {
      const body = e.body as SamplesEventBody;
      this.events.push(body);
      for (const [address, n] of body.delta) {
        this.counts.set(address, (this.counts.get(address) ?? 0) + n);
        this.total += n;
      }
      for (const loc of body.locations) this.locations.set(loc.address, loc);
      this.inExceptionReturn += body.inExceptionReturn ?? 0;
      this.waiters = this.waiters.filter((w) => {
        if (!w.until(this)) return true;
        w.resolve();
        return false;
      });
    });
  }

  /** Resolves once `until` holds after an event (or at once if it already does). */
  waitFor(until: (c: SampleCollector) => boolean, timeoutMs: number, what: string): Promise<void> {
    if (until(this)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what} (${this.total} samples so far)`)),
        timeoutMs,
      );
      this.waiters.push({ until, resolve: () => (clearTimeout(timer), resolve()) });
    });
  }

  get final(): boolean {
    return this.events.some((e) => e.final === true);
  }
}

/** Self counts per function name from per-address counts and their locations. */
export function byFunction(
  counts: ReadonlyMap<number, number>,
  locations: ReadonlyMap<number, SampleLocation>,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const [address, n] of counts) {
    const name = locations.get(address)?.function ?? '[outside program]';
    out.set(name, (out.get(name) ?? 0) + n);
  }
  return out;
}

/** Counts per `basename:line` (the oracle's paths are absolute, DWARF's as the compiler wrote them). */
export function byLine(
  counts: ReadonlyMap<number, number>,
  locations: ReadonlyMap<number, SampleLocation>,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const [address, n] of counts) {
    const loc = locations.get(address);
    const key = loc?.path !== undefined ? `${loc.path.split('/').pop()}:${loc.line}` : '[no line]';
    out.set(key, (out.get(key) ?? 0) + n);
  }
  return out;
}
