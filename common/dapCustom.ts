/**
 * CycleLens's custom DAP requests and events, declared once: `CustomRequestMap` gives each request's
 * arguments and response body, `CustomEventMap` each event's body. The adapter's dispatcher is typed
 * by them (adapter/session/customRequests.ts), and the extension, the CLI and the profiling job call
 * them through the one generic client in common/dapCustomClient.ts.
 */
import type { CounterEvent, CounterUnitInfo, CounterValue } from './counters';

/** A place in the program: a source line or an address. */
export type CodeLocation = { path: string; line: number } | { address: string } | { function: string };

export interface EventsResponse {
  events: Array<CounterEvent & { unit: string }>;
}

export interface CountersResponse {
  units: CounterUnitInfo[];
}

export interface SlotAssignment {
  unit: string;
  slot: number;
  event: string;
}

export interface ConfigureArguments {
  /** Explicit slot assignments, or… */
  assignments?: SlotAssignment[];
  /** …events to count, assigned to slots by the adapter (fixed-function slots first). */
  events?: string[];
}

export interface ReadResponse {
  values: CounterValue[];
}

export interface ResetArguments {
  unit?: string;
  slots?: number[];
}

/** "Measure to cursor": from where the target is stopped to `to`, once. */
export interface MeasureToArguments {
  to: CodeLocation;
  timeoutMs?: number;
}

/** Counters read at a start and an end breakpoint on every pass, `passes` times. */
export interface MeasureRangeArguments {
  start: CodeLocation;
  end: CodeLocation;
  passes: number;
  timeoutMs?: number;
}

/** One pass: the difference of every counter between the start and the end halt. */
export interface MeasuredPass {
  values: CounterValue[];
}

export interface MeasurementResponse {
  passes: MeasuredPass[];
  /** Why fewer passes than asked were taken (program ended, timeout, another breakpoint), if so. */
  incomplete?: string;
  /** Where the target stopped in the end. */
  stoppedAt?: { path?: string; line?: number; address: string; function?: string };
}

// ---- injected measurements (the target is never halted while they count) ----------------------

/**
 * What to inject: a function (by name or address), a region between two locations, or a group of
 * functions measured as one (entries patched, one shared record: the time while at least one
 * member is on the stack, and every entry through any member). `name` defaults to the members
 * joined with " + ".
 */
export type InjectionTarget = SingleInjectionTarget | InjectionGroupTarget;
/** A function or a region: one record each. */
export type SingleInjectionTarget = { function: string } | { start: CodeLocation; end: CodeLocation };
export type InjectionGroupTarget = { group: string[]; name?: string };

export interface InjectArguments {
  targets: InjectionTarget[];
  /** `software` (default): snapshot a free-running counter and accumulate in RAM; `hardware`: gate a counter slot. */
  payload?: 'software' | 'hardware';
  /**
   * Functions whose entry cannot be patched (too short, a branch into the patch, an IT block …) are
   * measured at their direct call sites instead of refused.
   */
  callSitesIfTooShort?: boolean;
}

export interface InjectedMeasurementInfo {
  id: number;
  name: string;
  kind: 'function' | 'region' | 'call-sites' | 'group';
  /** A group's functions, in the order given. */
  members?: string[];
  payload: 'software' | 'hardware';
  /** The counter the payload reads (`minstret`, `SysTick CVR`, `DWT CYCCNT` …). */
  counter: string;
  /**
   * Instructions per counter unit where the target facts fix it (QEMU's SysTick under
   * `-icount shift=S`: 40/2^S, so 40 at shift 0).
   */
  instructionsPerUnit?: number;
  warnings: InjectionWarning[];
  /** A region's function and patch addresses, as fields (its `name` is for logs and the disassembly). */
  region?: { function?: string; start: string; end: string };
  /** Source anchor for the editor, when the ELF has line information. */
  source?: { path: string; line: number; endLine?: number };
}

/**
 * Why an injected measurement's figures need a note. The extension decides by code which ones
 * interrupt the user; the message is for people.
 * - `callSitesMissed`: direct call sites that cannot be rewritten; calls through them are not counted.
 * - `indirectCallsMissed`: indirect calls may also reach the function; they are not counted.
 * - `pathsUnknown`: whether every path from the region's start reaches its end is unknown.
 * - `jumpTableUnresolved`: an indirect jump whose targets are assumed to lie outside the patch.
 * - `memoryPinned`: trampoline memory stays reserved until the session ends (a call was moved into it).
 */
export type InjectionWarningCode =
  | 'callSitesMissed'
  | 'indirectCallsMissed'
  | 'pathsUnknown'
  | 'jumpTableUnresolved'
  | 'memoryPinned'
  | 'bodyEntryMissed'
  | 'fallThroughCounted';

export interface InjectionWarning {
  code: InjectionWarningCode;
  message: string;
  /** The member of a group the warning is about. */
  member?: string;
}

/** A refused target, echoed as it was sent. */
export interface InjectionRefusedTarget {
  target: InjectionTarget;
  /** The user-facing reason: what blocks the patch and what to do instead. */
  reason: string;
  /** A group refused because of one member: that member (the others may go into another group). */
  member?: string;
}

export interface InjectResponse {
  injected: InjectedMeasurementInfo[];
  refused: InjectionRefusedTarget[];
}

/** A dry run of entry patches: which functions can be measured by a patch at their entry. */
export interface PlanInjectionArguments {
  functions: string[];
}

export interface PlanInjectionResponse {
  /**
   * Every function asked for, in order: `entry` when its entry can be patched; else the reason, and
   * `callSites` when its direct calls could be rewritten instead (inject with callSitesIfTooShort).
   * `solo` (with `entry`): measured on its own only, never in a group, and why (millicode).
   */
  functions: Array<{ name: string; entry: boolean; callSites?: boolean; reason?: string; solo?: string }>;
}

export interface InjectedResult {
  id: number;
  name: string;
  counter: string;
  /** Entries through the patch (recursive calls included). */
  calls: number;
  /** Completed outermost passes, which total/min/max/mean describe. */
  passes: number;
  /** Entries the payload could not track (a Secure-to-Non-secure FNC_RETURN in LR, full shadow stack). */
  untracked: number;
  /** Raw counted total, and the total with the payloads' own counted instructions removed. */
  total: number;
  compensatedTotal: number;
  overheadPerPass: number;
  /** Payloads of other measurements inside the passes, in counter units (out of total, min, max and the passes). */
  nested?: number;
  min: number | null;
  max: number | null;
  mean: number | null;
  meanCompensated: number | null;
  /** The last few passes, each less the own payload per pass (may dip below zero: core/analysis/passes.ts clamps). */
  lastPasses: number[];
}

export interface InjectedResultsResponse {
  results: InjectedResult[];
  /** Counter units elapsed since the first measurement was injected: the run the shares refer to. */
  elapsed?: number;
}

export interface RemoveInjectionsArguments {
  /** Ids to remove; all when omitted. */
  ids?: number[];
}

// ---- call graph ----------------------------------------------------------------------------------

export interface CallGraphFunction {
  name: string;
  address: number;
  size: number;
  path?: string;
  line?: number;
}

export interface CallGraphEdge {
  caller: string;
  callee: string;
  kind: 'call' | 'tail';
  /** Call sites (addresses of the calling instructions). */
  sites: number[];
  /** Observed calls, when a dynamic pass recorded them. */
  count?: number;
}

export interface CallGraphResponse {
  functions: CallGraphFunction[];
  edges: CallGraphEdge[];
  /** Functions that contain indirect calls (their callees are unknown statically). */
  indirectCallers: string[];
  /** Functions whose code may run on into another's without a call (the adapter's static graph sends it). */
  fallThrough?: { caller: string; callee: string }[];
}

/**
 * The dynamic call graph: an entry breakpoint on every function, one halt per call (slow: meant to
 * run once and be saved by the caller). Runs from where the target is halted.
 */
export interface DynamicCallGraphArguments {
  /** Stop recording after this many calls (default 200,000). */
  maxHits?: number;
  timeoutMs?: number;
}

/** The static graph with `count` on every observed edge, plus the edges only the run showed. */
export interface DynamicCallGraphResponse extends CallGraphResponse {
  /** Calls recorded (interrupt entries not included). */
  hits: number;
  /** Why recording ended; the target stays halted where it did (unless the program exited). */
  ended: 'programEnd' | 'exited' | 'maxHits' | 'timeout' | 'otherStop';
  /** Asynchronous entries, interrupted function → handler, counted apart from the calls. */
  interrupts: CallGraphEdge[];
  elapsedMs: number;
}

/**
 * How often the program's code runs, from one free run of the session's image in a QEMU of its
 * own with the counting plugin: no debugger and no halt, from reset until the program ends QEMU
 * (semihosting exit, a test device). QEMU servers only; `counted: false` says why none was made.
 * Under -icount the run executes what every profiling run executes, and more (the startup before
 * the window, the exit after it), so each count bounds the window's from above: descent prunes
 * with it (core/analysis/countBounds.ts).
 */
export interface ExecutionCountsArguments {
  /** Give up when the program has not ended by then (default 20 s). */
  timeoutMs?: number;
  /** Stop where the measured runs stop (default: `programEnd`, or the end found in the code). */
  until?: CodeLocation;
  /** Stop at the `hits`-th arrival at `until` (a window of passes: default 1). */
  hits?: number;
}

export interface ExecutedFunction {
  name: string;
  /** Instructions executed at the function's addresses (where it is the innermost symbol). */
  instructions: number;
  /**
   * Instructions executed anywhere in its address range, where other functions' symbols lie inside
   * it and that is more (libgcc's `__riscv_restore_10` inside `__riscv_restore_12`).
   */
  inRange?: number;
  /** Executions of its first instruction: at least its calls. */
  entries: number;
}

export type ExecutionCountsResponse =
  | { counted: false; reason: string; elapsedMs: number }
  | {
      counted: true;
      /** The call graph's functions whose code ran (one absent never ran). */
      functions: ExecutedFunction[];
      /**
       * The call graph's direct edges that ran, with how often their call instructions executed
       * (a conditional tail-call branch counts when it executed, taken or not).
       */
      calls: { caller: string; callee: string; kind: CallGraphEdge['kind']; count: number }[];
      /** Instructions executed outside every function of the call graph (veneers, unnamed code). */
      outside: number;
      /** Every instruction the run executed. */
      total: number;
      /** The function at the program's entry point (the reset handler, `_start`), when it has one. */
      entry?: string;
      /** Functions that end in an exception return (RISC-V `mret`): entered asynchronously. */
      handlers: string[];
      /** Functions the disassembly could not follow to their end: whom they call is not known. */
      incomplete: string[];
      /** Functions whose code may run on into the next function's without a branch (RV32 millicode). */
      fallThrough: { caller: string; callee: string }[];
      /**
       * Instructions per unit of each event injected measurements count, where the target fixes
       * it (`instructions`: 1; SysTick `ticks` on QEMU: 2^-shift x 40 at 25 MHz). A quantised
       * unit is read whole at both ends of every activation.
       */
      units: Record<string, { instructionsPerUnit: number; quantised: boolean }>;
      /** How the counts were made, for the result's provenance. */
      method: string;
      elapsedMs: number;
    };

/** Restarts the program from reset and runs it to `until` (default: the end of a single-pass program). */
export interface RunArguments {
  until?: CodeLocation;
  timeoutMs?: number;
  restart?: boolean;
}

export interface RunResponse {
  reached: boolean;
  /** Where the run was sent: `until`, or the launch configuration's `programEnd` when it named none. */
  until?: CodeLocation;
  /** How the end was found in the program's code, when neither `until` nor `programEnd` named it. */
  endFoundBy?: string;
  /** Where a run without `until` ends (`programEnd`, or the end found in the code), whatever this run's `until` was. */
  programEnd?: CodeLocation;
  /** Why the run stopped elsewhere (program exit, timeout, another breakpoint). */
  detail?: string;
}

// ---- PC sampling (live hotspots) ------------------------------------------------------------------

/**
 * The samplers the adapter has. `qemu-monitor`: QEMU's HMP monitor reads the vCPU's PC while the
 * guest runs (never halts; the PC is the start of the running translation block, or exact with
 * `server.singlestep`). `qemu-plugin`: a TCG plugin counts every executed instruction (exact; needs
 * `server.instructionCounts`). `openocd-pcsr`: a Cortex-M behind OpenOCD; DWT_PCSR read in bursts
 * through the Tcl RPC port while the core runs (never halts). `gdb-halting`: any gdbserver;
 * interrupt, read the PC, continue. `target-interrupt`: a timer interrupt handler injected into
 * reserved RAM counts the interrupted PC into buckets on the target (never halts to sample).
 */
export type SamplerId = 'qemu-monitor' | 'qemu-plugin' | 'openocd-pcsr' | 'target-interrupt' | 'gdb-halting';

/** What a sample's PC means (docs/design.md, "Sampling semantics"). Mirrors core/profile's SampleAttribution. */
export type SampleAttributionKind =
  'time-proportional' | 'next-committing' | 'translation-block-start' | 'recently-executed' | 'halting' | 'exact-count';

export interface SamplerDescription {
  id: SamplerId;
  label: string;
  attribution: SampleAttributionKind;
  /** Whether taking a sample stops the target. */
  halting: boolean;
  /** `samples`: one count per PC read; `instructions`: every executed instruction counted. */
  unit: 'samples' | 'instructions';
  /**
   * How far its shares are from the exact instruction counts, as measured against the oracle
   * (bench/sampling.ts, docs/benchmarks.md): what the user is shown next to the figures.
   */
  accuracy: string;
  /** What a sample's PC means, in words, where the attribution kind alone does not say it. */
  semantics?: string;
  /** Usable on this session's target; otherwise `needs` says what it takes. */
  available: boolean;
  needs?: string;
}

export interface SamplersResponse {
  samplers: SamplerDescription[];
}

export interface StartSamplingArguments {
  /** Default: the best available (exact plugin, then the monitor, then halting). */
  sampler?: SamplerId;
  /**
   * Target rate of periodic samplers (samples/s). Default: as fast as the sampler goes (monitor),
   * 50/s (halting), 100,000 per second of the target's virtual time (target-interrupt).
   */
  rateHz?: number;
  /** How often `cyclelens/samples` events are sent (ms, default 250). */
  eventIntervalMs?: number;
}

export interface StartSamplingResponse {
  sampler: SamplerDescription;
}

/** Where a sampled address is in the program; resolved by the adapter from the ELF. */
export interface SampleLocation {
  address: number;
  function?: string;
  functionAddress?: number;
  /** As the compiler wrote it (the extension applies the launch configuration's source map). */
  path?: string;
  line?: number;
}

/** Per-address counts: [address, count] pairs. */
export type AddressCounts = Array<[number, number]>;

/** Sent every `eventIntervalMs` while sampling: what was counted since the previous event. */
export interface SamplesEventBody {
  sampler: SamplerId;
  seq: number;
  /** Milliseconds since sampling started. */
  elapsedMs: number;
  /** Counts added since the previous event. */
  delta: AddressCounts;
  /** Addresses first seen in this event. */
  locations: SampleLocation[];
  totalSamples: number;
  /** Over the last event interval. */
  samplesPerSecond: number;
  /**
   * Reads since the previous event that found the core asleep (WFI/WFE) or halted: DWT_PCSR reads
   * 0xFFFFFFFF then. They are no code: not in `delta`, not in `totalSamples`. Only samplers that can
   * tell (`openocd-pcsr`) send it.
   */
  asleepOrHalted?: number;
  /**
   * Reads since the previous event that found a Cortex-M core completing an exception return: QEMU
   * holds the EXC_RETURN token in the PC then, which is no code address. Not in `delta`, not in
   * `totalSamples`; sent only when there were some (`qemu-monitor` on Cortex-M).
   */
  inExceptionReturn?: number;
  /** Set on the last event of a run (sampling stopped, session ending). */
  final?: boolean;
}

/** The reasons a sampler counts a read apart from code, never in `delta` or `totalSamples` (see SamplesEventBody). */
export const COUNTED_APART = ['asleepOrHalted', 'inExceptionReturn'] as const;
export type CountedApart = Pick<SamplesEventBody, (typeof COUNTED_APART)[number]>;

/** Adds `more` into `into`, reason by reason: a reason only `more` has is added as it is. */
export function addCountedApart(into: CountedApart, more: CountedApart): void {
  for (const key of COUNTED_APART) {
    const n = more[key];
    if (n !== undefined) into[key] = (into[key] ?? 0) + n;
  }
}

/** `cyclelens/samplingSnapshot`: the cumulative counts so far (for clients that poll). */
export interface SamplingSnapshotResponse {
  sampler: SamplerId | undefined;
  running: boolean;
  counts: AddressCounts;
  locations: SampleLocation[];
  totalSamples: number;
  /** Reads that found the core asleep or halted, since the start (see SamplesEventBody). */
  asleepOrHalted?: number;
  /** Reads that found the core completing an exception return, since the start (see SamplesEventBody). */
  inExceptionReturn?: number;
  elapsedMs: number;
}

export interface StopSamplingResponse {
  totalSamples: number;
  elapsedMs: number;
}

/**
 * Every custom request by its wire name: what it takes and what its response body is. `undefined`
 * arguments: the request takes none; `void` response: the response has no body.
 */
export interface CustomRequestMap {
  'cyclelens/events': { arguments: undefined; response: EventsResponse };
  'cyclelens/counters': { arguments: undefined; response: CountersResponse };
  'cyclelens/configure': { arguments: ConfigureArguments; response: CountersResponse };
  'cyclelens/read': { arguments: undefined; response: ReadResponse };
  'cyclelens/reset': { arguments: ResetArguments; response: CountersResponse };
  'cyclelens/measureTo': { arguments: MeasureToArguments; response: MeasurementResponse };
  'cyclelens/measureRange': { arguments: MeasureRangeArguments; response: MeasurementResponse };
  'cyclelens/inject': { arguments: InjectArguments; response: InjectResponse };
  'cyclelens/injectedResults': { arguments: undefined; response: InjectedResultsResponse };
  'cyclelens/removeInjections': { arguments: RemoveInjectionsArguments; response: void };
  'cyclelens/planInjection': { arguments: PlanInjectionArguments; response: PlanInjectionResponse };
  'cyclelens/callGraph': { arguments: undefined; response: CallGraphResponse };
  'cyclelens/run': { arguments: RunArguments; response: RunResponse };
  'cyclelens/dynamicCallGraph': { arguments: DynamicCallGraphArguments; response: DynamicCallGraphResponse };
  'cyclelens/executionCounts': { arguments: ExecutionCountsArguments; response: ExecutionCountsResponse };
  'cyclelens/samplers': { arguments: undefined; response: SamplersResponse };
  'cyclelens/startSampling': { arguments: StartSamplingArguments; response: StartSamplingResponse };
  'cyclelens/stopSampling': { arguments: undefined; response: StopSamplingResponse };
  'cyclelens/samplingSnapshot': { arguments: undefined; response: SamplingSnapshotResponse };
}

export type CustomRequestName = keyof CustomRequestMap;
export type CustomArguments<K extends CustomRequestName> = CustomRequestMap[K]['arguments'];
export type CustomResponse<K extends CustomRequestName> = CustomRequestMap[K]['response'];

/** Every custom event by its wire name: its body. */
export interface CustomEventMap {
  'cyclelens/capabilities': CapabilitiesEventBody;
  'cyclelens/injectionsRemoved': Record<string, never>;
  'cyclelens/injectionsApplied': InjectResponse;
  'cyclelens/measurementProgress': MeasurementProgressEventBody;
  'cyclelens/samples': SamplesEventBody;
}

export type CustomEventName = keyof CustomEventMap;

/** The short names code uses for the wire names (`CustomRequests.inject` is `'cyclelens/inject'`). */
export const CustomRequests = {
  events: 'cyclelens/events',
  counters: 'cyclelens/counters',
  configure: 'cyclelens/configure',
  read: 'cyclelens/read',
  reset: 'cyclelens/reset',
  measureTo: 'cyclelens/measureTo',
  measureRange: 'cyclelens/measureRange',
  inject: 'cyclelens/inject',
  injectedResults: 'cyclelens/injectedResults',
  removeInjections: 'cyclelens/removeInjections',
  planInjection: 'cyclelens/planInjection',
  callGraph: 'cyclelens/callGraph',
  run: 'cyclelens/run',
  dynamicCallGraph: 'cyclelens/dynamicCallGraph',
  executionCounts: 'cyclelens/executionCounts',
  samplers: 'cyclelens/samplers',
  startSampling: 'cyclelens/startSampling',
  stopSampling: 'cyclelens/stopSampling',
  samplingSnapshot: 'cyclelens/samplingSnapshot',
} as const satisfies Record<string, CustomRequestName>;

export const CustomEvents = {
  /** Sent once after launch: the counter units the target has (present or not, with notes). */
  capabilities: 'cyclelens/capabilities',
  /** Every injected measurement was removed (reset or restart): the editor drops its results. */
  injectionsRemoved: 'cyclelens/injectionsRemoved',
  /** After a restart: the measurements asked for before it, injected again (new ids). */
  injectionsApplied: 'cyclelens/injectionsApplied',
  /** Sent during a repeated measurement: passes done so far. */
  measurementProgress: 'cyclelens/measurementProgress',
  /** While sampling: counts since the previous event (SamplesEventBody). */
  samples: 'cyclelens/samples',
} as const satisfies Record<string, CustomEventName>;

// The short names and the maps name the same requests and events: one missing on either side does not compile.
type SameNames<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const requestNamesAgree: SameNames<(typeof CustomRequests)[keyof typeof CustomRequests], CustomRequestName> = true;
const eventNamesAgree: SameNames<(typeof CustomEvents)[keyof typeof CustomEvents], CustomEventName> = true;
void requestNamesAgree;
void eventNamesAgree;

export interface CapabilitiesEventBody {
  family: string;
  units: CounterUnitInfo[];
}

export interface MeasurementProgressEventBody {
  passesDone: number;
  passesWanted: number;
}
