import type {
  CallGraphEdge,
  CallGraphResponse,
  DynamicCallGraphArguments,
  DynamicCallGraphResponse,
} from '../../common/dapCustom';
import type { TargetFamily } from '../../common/launchArgs';
import type { Debugger } from '../debugger/debugger';
import type { ElfImage } from '../elf';
import { programModelFor } from './callGraph';
import { archPlugin } from '../arch/registry';

/**
 * The dynamic call graph (docs/design.md, "Call-graph descent"): a breakpoint at the entry address of
 * every function, and at each halt the caller read from the unwound frame 1. At a function's first
 * instruction nothing has been pushed yet and the return address is still in ra/lr, so GDB unwinds
 * without any prologue analysis. One halt per call (~1–3 ms on QEMU): run once, save the result.
 */

export const DEFAULT_MAX_HITS = 200_000;
const DEFAULT_TIMEOUT_MS = 600_000;

/** What recording needs from the session's target (DebugTarget provides it). */
export interface RecordingTarget {
  readonly debugger: Debugger;
  readonly config: { readonly family: TargetFamily; readonly programEnd: string | undefined };
  internally<T>(fn: () => Promise<T>): Promise<T>;
  announceCurrentStop(description?: string): Promise<void>;
}

export interface DynamicCallGraphOptions {
  maxHits?: number;
  timeoutMs?: number;
  /** Exception handlers: entered asynchronously, so their frame 1 is not a caller. */
  handlers?: readonly string[];
}

/** Functions that return with an exception return (RISC-V MRET): the program's trap handlers. */
export function exceptionHandlers(elf: ElfImage): string[] {
  return programModelFor(elf)
    .functions.filter((f) => f.instructions.some((i) => i.kind === 'exceptionReturn'))
    .map((f) => f.name);
}

/**
 * `cyclelens/dynamicCallGraph`: records from where the target is halted and shows the user where
 * it ended. Saves nothing; the extension and the CLI save the result.
 */
export async function dynamicCallGraphRequest(
  target: RecordingTarget & { readonly config: { readonly image: ElfImage } },
  staticGraph: CallGraphResponse,
  a: DynamicCallGraphArguments,
): Promise<DynamicCallGraphResponse> {
  const result = await buildDynamicCallGraph(target, staticGraph, {
    ...a,
    handlers: exceptionHandlers(target.config.image),
  });
  await target.announceCurrentStop('call graph recorded');
  return result;
}

/** Counts per caller→callee, keyed without allocating an edge per call. */
class EdgeCounts {
  private readonly counts = new Map<string, Map<string, number>>();

  add(caller: string, callee: string): void {
    let row = this.counts.get(caller);
    if (!row) this.counts.set(caller, (row = new Map()));
    row.set(callee, (row.get(callee) ?? 0) + 1);
  }

  get(caller: string, callee: string): number | undefined {
    return this.counts.get(caller)?.get(callee);
  }

  *entries(): Generator<{ caller: string; callee: string; count: number }> {
    for (const [caller, row] of this.counts) for (const [callee, count] of row) yield { caller, callee, count };
  }
}

/**
 * Records caller→callee edges with the target halted at the start (e.g. at `main` after launch),
 * until `programEnd`, program exit, `maxHits` calls, the timeout, or a stop that is not ours (a
 * user breakpoint, a fault). Every breakpoint it inserted is gone afterwards; the target stays
 * halted where recording ended. The result is `staticGraph` with `count` on every observed edge and
 * the edges the static graph lacks (indirect calls) added as calls without sites.
 */
export async function buildDynamicCallGraph(
  target: RecordingTarget,
  staticGraph: CallGraphResponse,
  options: DynamicCallGraphOptions = {},
): Promise<DynamicCallGraphResponse> {
  const gdb = target.debugger;
  const maxHits = options.maxHits ?? DEFAULT_MAX_HITS;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const handlers = new Set(options.handlers ?? []);
  const programEnd = target.config.programEnd;
  const started = Date.now();

  return target.internally(async (): Promise<DynamicCallGraphResponse> => {
    if (gdb.isRunning) await gdb.interrupt();
    const pc = Number(await gdb.readRegister('pc'));
    const calleeOf = new Map<number, string>();
    const inserted: number[] = [];
    let endId: number | undefined;
    const calls = new EdgeCounts();
    const interrupts = new EdgeCounts();
    let hits = 0;
    let ended: DynamicCallGraphResponse['ended'] = 'maxHits';
    // By default a debugger removes every breakpoint at each halt and inserts them all again to resume:
    // two packets per function per call. Kept inserted, a halt costs a few packets.
    await gdb.setBreakpointsAlwaysInserted(true);
    try {
      for (const f of staticGraph.functions) {
        // Halted at an entry, the first continue would step over it unreported: skip it.
        if (f.address === pc) continue;
        // The end gets a stop breakpoint, not an entry count.
        const isEnd = f.name === programEnd;
        const bp = await gdb.insertBreakpoint({
          location: { kind: 'address', address: BigInt(f.address) },
          temporary: isEnd,
        });
        inserted.push(bp.id);
        if (isEnd) endId = bp.id;
        else calleeOf.set(bp.id, f.name);
      }

      const functionAt = (address: number): string =>
        staticGraph.functions.find((f) => address >= f.address && address < f.address + f.size)?.name ??
        `0x${address.toString(16)}`;
      const tails = new Set(
        staticGraph.edges.filter((e) => e.kind === 'tail').map((e) => `${e.caller}\u0000${e.callee}`),
      );
      // A tail call leaves ra/lr and sp as the tail caller found them, so frame 1 of the tail
      // callee is its tail caller's caller. The last function entered with the same return address
      // is the tail caller when the static graph has that tail edge (a direct call site calls one
      // function only, so nothing else enters with that return address).
      const lastEnteredWith = new Map<number, string>();

      while (hits < maxHits) {
        const remaining = timeoutMs - (Date.now() - started);
        if (remaining <= 0) {
          ended = 'timeout';
          break;
        }
        const stopped = gdb.waitForStop(remaining);
        await gdb.continue();
        const stop = await stopped;
        if (!stop) {
          if (gdb.isRunning) await gdb.interrupt();
          ended = gdb.executionState === 'exited' ? 'exited' : 'timeout';
          break;
        }
        if (endId !== undefined && stop.breakpointIds.includes(endId)) {
          endId = undefined; // temporary: GDB deleted it
          ended = 'programEnd';
          break;
        }
        const callee = stop.breakpointIds.map((id) => calleeOf.get(id)).find((n) => n !== undefined);
        if (callee === undefined) {
          ended = 'otherStop';
          break;
        }
        const [frame1] = await gdb.stackFrames(stop.threadId ?? 1, 1, 1);
        if (handlers.has(callee)) {
          // An interrupt entry, not a call: counted apart, so no call edge grows by it. Where the
          // unwinder does not reach the interrupted PC (RISC-V: mepc), the family names its register.
          const interruptedPc = archPlugin(target.config.family).abi.interruptedPcRegister;
          const interrupted =
            interruptedPc !== undefined
              ? functionAt(Number(await gdb.readRegister(interruptedPc)))
              : (frame1?.func ?? '??');
          interrupts.add(interrupted, callee);
          continue;
        }
        const returnAddress = frame1 ? Number(frame1.address) : -1;
        const previous = lastEnteredWith.get(returnAddress);
        const caller =
          previous !== undefined && tails.has(`${previous}\u0000${callee}`)
            ? previous
            : (frame1?.func ?? (frame1 ? functionAt(returnAddress) : '??'));
        lastEnteredWith.set(returnAddress, callee);
        calls.add(caller, callee);
        hits++;
      }
    } finally {
      if (gdb.isRunning) await gdb.interrupt();
      // GDB keeps breakpoints after the program exits too: delete them whatever happened.
      await gdb.deleteBreakpoints(endId === undefined ? inserted.filter((id) => calleeOf.has(id)) : inserted);
      await gdb.setBreakpointsAlwaysInserted(false);
    }
    return {
      ...merge(staticGraph, calls),
      hits,
      ended,
      interrupts: edgesOf(interrupts),
      elapsedMs: Date.now() - started,
    };
  });
}

function edgesOf(counts: EdgeCounts): CallGraphEdge[] {
  return [...counts.entries()].map(({ caller, callee, count }) => ({ caller, callee, kind: 'call', sites: [], count }));
}

/** The static graph with observed counts; a tail edge and a call edge of one pair share the count. */
function merge(staticGraph: CallGraphResponse, calls: EdgeCounts): CallGraphResponse {
  const known = new Set<string>();
  const edges: CallGraphEdge[] = staticGraph.edges.map((e) => {
    const key = `${e.caller}\u0000${e.callee}`;
    const count = known.has(key) ? undefined : calls.get(e.caller, e.callee);
    known.add(key);
    return count === undefined ? { ...e, sites: [...e.sites] } : { ...e, sites: [...e.sites], count };
  });
  for (const e of calls.entries()) {
    if (!known.has(`${e.caller}\u0000${e.callee}`))
      edges.push({ caller: e.caller, callee: e.callee, kind: 'call', sites: [], count: e.count });
  }
  return {
    functions: staticGraph.functions.map((f) => ({ ...f })),
    edges,
    indirectCallers: [...staticGraph.indirectCallers],
  };
}
