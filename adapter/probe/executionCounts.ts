import type {
  CallGraphFunction,
  ExecutedFunction,
  ExecutionCountsArguments,
  ExecutionCountsResponse,
} from '../../common/dapCustom';
import type { TargetFamily } from '../../common/launchArgs';
import { isUnsupported } from '../arch/archPlugin';
import { archPlugin } from '../arch/registry';
import type { ElfImage } from '../elf';
import { exceptionHandlers } from './dynamicCallGraph';
import type { InstructionCountSnapshot } from '../sampling/pluginSampler';
import type { CountingRunResult, CountingStop } from '../servers/qemuCounting';
import type { TargetFacts } from '../target/targetFacts';
import type { StaticCallGraph } from './callGraph';

/**
 * `cyclelens/executionCounts`: the program's instruction counts per function, from one free run in
 * a QEMU of its own (QemuServer.countInstructions). The counts are the plugin's, attributed here to
 * the call graph's functions by address; descent turns them into upper bounds
 * (core/analysis/countBounds.ts), so what is reported is only what was counted.
 */

export const DEFAULT_COUNTING_TIMEOUT_MS = 20_000;

/** What the request needs of the session. */
export interface CountingSession {
  readonly facts: TargetFacts;
  /** The QEMU server's counting run, or undefined when the server is not QEMU. */
  readonly countInstructions:
    ((timeoutMs: number, signal?: AbortSignal, stop?: CountingStop) => Promise<CountingRunResult>) | undefined;
  /**
   * Where the measured runs end (the run's `until`, `programEnd`, or the end found in the code): the
   * counting run stops there too, so it counts what they run and ends where they end.
   */
  end(a: ExecutionCountsArguments): Promise<{ stop: CountingStop; what: string } | undefined>;
  readonly graph: StaticCallGraph;
  /** The ELF's entry point (e_entry, Thumb bit cleared). */
  readonly entryAddress: number;
  /** Functions that end in an exception return. */
  handlers(): string[];
}

export async function executionCountsRequest(
  session: CountingSession,
  a: ExecutionCountsArguments,
): Promise<ExecutionCountsResponse> {
  const refuse = (reason: string): ExecutionCountsResponse => ({ counted: false, reason, elapsedMs: 0 });
  if (!session.countInstructions)
    return refuse('instruction counts need a QEMU server: only QEMU runs the counting plugin');
  const shift = session.facts.qemu?.icountShift;
  // Without -icount, interrupts follow the host clock, so a run without the debugger need not
  // execute what a measured run executes, and its counts would bound nothing.
  if (shift === undefined)
    return refuse(
      'QEMU runs without -icount ("icount": null), so a run without the debugger need not repeat a measured run',
    );
  const end = await session.end(a);
  const run = await session.countInstructions(a.timeoutMs ?? DEFAULT_COUNTING_TIMEOUT_MS, undefined, end?.stop);
  if (!run.counted) return { counted: false, reason: run.reason, elapsedMs: run.elapsedMs };
  if (run.snapshot.dropped > 0)
    return {
      counted: false,
      reason: `the counting plugin's table was full (${run.snapshot.dropped} instructions not counted)`,
      elapsedMs: run.elapsedMs,
    };
  const attributed = attributeCounts(session.graph.functions, run.snapshot);
  const entry = session.graph.functions.find(
    (f) => session.entryAddress >= f.address && session.entryAddress < f.address + f.size,
  )?.name;
  const ticks = session.facts.coreClockTicksPerInstruction;
  return {
    counted: true,
    functions: attributed.functions,
    calls: session.graph.edges
      .map((e) => ({
        caller: e.caller,
        callee: e.callee,
        kind: e.kind,
        count: e.sites.reduce((n, site) => n + (run.snapshot.counts.get(site) ?? 0), 0),
      }))
      .filter((e) => e.count > 0),
    outside: attributed.outside,
    total: attributed.total,
    ...(entry !== undefined ? { entry } : {}),
    handlers: session.handlers(),
    incomplete: session.graph.incomplete.map((f) => f.name),
    fallThrough: session.graph.fallThrough,
    units: {
      instructions: { instructionsPerUnit: 1, quantised: false },
      ...(ticks.fixed ? { ticks: { instructionsPerUnit: 1 / ticks.value, quantised: true } } : {}),
    },
    method: end
      ? `one run without the debugger, from reset to ${end.what} (the end the measured runs stop ` +
        `at; the plugin ended QEMU there), instructions counted by the QEMU plugin under -icount ` +
        `shift=${shift}`
      : `one run without the debugger, from reset to the program's exit (QEMU exit code ${run.exitCode}), ` +
        `instructions counted by the QEMU plugin under -icount shift=${shift}`,
    elapsedMs: run.elapsedMs,
  };
}

/**
 * Counts by address to counts by function: the instructions at addresses where the function is the
 * innermost symbol (a symbol that starts inside another's range, as libgcc's `__riscv_restore_10`
 * inside `__riscv_restore_12`, takes its addresses), those anywhere in its range where that is more,
 * and how often its first instruction ran.
 */
export function attributeCounts(
  functions: readonly CallGraphFunction[],
  snapshot: InstructionCountSnapshot,
): { functions: ExecutedFunction[]; outside: number; total: number } {
  const sorted = [...functions].filter((f) => f.size > 0).sort((x, y) => x.address - y.address);
  const lastAtOrBefore = <T>(list: readonly T[], key: (t: T) => number, address: number): number => {
    let lo = 0;
    let hi = list.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (key(list[mid]!) <= address) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  };
  const containing = (address: number): CallGraphFunction | undefined => {
    // The innermost: the last symbol starting at or before the address whose range holds it.
    for (let i = lastAtOrBefore(sorted, (f) => f.address, address); i >= 0; i--) {
      const f = sorted[i]!;
      if (address < f.address + f.size) return f;
      if (i > 0 && sorted[i - 1]!.address + sorted[i - 1]!.size <= f.address) break;
    }
    return undefined;
  };
  const byName = new Map<string, ExecutedFunction>();
  let outside = 0;
  let total = 0;
  const addresses = [...snapshot.counts.keys()].sort((a, b) => a - b);
  const prefix = [0];
  for (const a of addresses) prefix.push(prefix.at(-1)! + snapshot.counts.get(a)!);
  for (const [address, count] of snapshot.counts) {
    total += count;
    const f = containing(address);
    if (!f) {
      outside += count;
      continue;
    }
    let e = byName.get(f.name);
    if (!e) byName.set(f.name, (e = { name: f.name, instructions: 0, entries: 0 }));
    e.instructions += count;
  }
  for (const f of sorted) {
    const e = byName.get(f.name);
    if (!e) continue;
    e.entries = snapshot.counts.get(f.address) ?? 0;
    const inRange =
      prefix[lastAtOrBefore(addresses, (a) => a, f.address + f.size - 1) + 1]! -
      prefix[lastAtOrBefore(addresses, (a) => a, f.address - 1) + 1]!;
    if (inRange > e.instructions) e.inRange = inRange;
  }
  return { functions: [...byName.values()].sort((x, y) => y.instructions - x.instructions), outside, total };
}

/**
 * The functions the core enters asynchronously: the ones that end in an exception return (RISC-V
 * `mret`) and the ones the family's table of handlers names (Cortex-M's vector table).
 */
export function asynchronousHandlers(
  family: TargetFamily,
  image: ElfImage,
  functions: readonly CallGraphFunction[],
): string[] {
  const names = new Set(exceptionHandlers(image));
  const callGraph = archPlugin(family).callGraph;
  if (!isUnsupported(callGraph) && callGraph.handlerEntries) {
    const byAddress = new Map(functions.map((f) => [f.address, f.name]));
    for (const address of callGraph.handlerEntries(image, (a) => byAddress.has(a))) names.add(byAddress.get(address)!);
  }
  return [...names];
}
