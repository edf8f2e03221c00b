/**
 * The profile model (docs/design.md, "The profile model"): one typed, versioned structure that every
 * view, export and the language server read. It is built from any source (injected result sets,
 * exact counter reads, the oracle's trace, PC samples) by the builders beside this file, and nothing
 * downstream goes back to the sources.
 *
 * Every figure carries its unit and its provenance, and an error bound where one is known. Values of
 * one profile share one unit (`Profile.unit`): a source whose runs counted different things makes one
 * profile per unit. Ticks stay ticks: a SysTick count is never relabelled as cycles, it carries the
 * ratio that converts it when the target facts know one.
 */

export const PROFILE_SCHEMA = 'cyclelens-profile/1';

/** What a value counts. */
export type UnitKind = 'cycles' | 'instructions' | 'ticks' | 'samples' | 'events';

export interface Unit {
  kind: UnitKind;
  /** For `events`: the counter event id (`dwt.lsu`, `pmu.0x0003`, `arc.dcm` …). */
  event?: string;
  /**
   * For `ticks`: how many of `perTick.kind` one tick stands for, when the target facts know it
   * (SysTick on QEMU mps2-an386 under `-icount shift=0`: 40 instructions per tick).
   */
  perTick?: { count: number; kind: 'cycles' | 'instructions' };
}

/** How a value was obtained: what a reader needs to judge it. */
export type Provenance =
  /** A counter read by the debugger at two halts (nothing in the target changed). */
  | { kind: 'exact'; counter: string }
  /** Counted by injected code: gated (a slot started/stopped) or accumulated (deltas summed in RAM). */
  | {
      kind: 'injected';
      payload: 'gated' | 'accumulated';
      counter: string;
      /** Counts removed per call for the payload itself. */ compensation?: number;
    }
  /** PC samples; `attribution` says what a sample's PC means (docs/design.md, "Sampling semantics"). */
  | { kind: 'sampled'; sampler: string; halting: boolean; attribution: SampleAttribution }
  /** The exact instruction trace (QEMU `-d exec,nochain -singlestep`, or the counting plugin). */
  | { kind: 'oracle'; source: string };

export type SampleAttribution =
  'time-proportional' | 'next-committing' | 'translation-block-start' | 'recently-executed' | 'halting' | 'exact-count';

/** An interval the true value lies in, and why. */
export interface ErrorBound {
  low: number;
  high: number;
  /**
   * quantisation: counter resolution (±1 tick per boundary); confidence95: sampling; compensation: the
   * payload residue.
   */
  kind: 'quantisation' | 'confidence95' | 'compensation' | 'estimate';
}

/** One figure: a count in the profile's unit. */
export interface Measure {
  value: number;
  bound?: ErrorBound;
}

/** Where in the source a function or line is (from DWARF; paths as the compiler wrote them). */
export interface SourceLocation {
  path: string;
  line: number;
  endLine?: number;
}

/** What an analysis concluded about a function (descent, full profile, sampling). */
export type FunctionStatus = 'measured' | 'pruned' | 'unmeasurable' | 'pending' | 'unreached' | 'sampled';

export interface ProfileFunction {
  /** Index in `Profile.functions`; edges, lines and stacks refer to functions by it. */
  id: number;
  name: string;
  address?: number;
  size?: number;
  location?: SourceLocation;
  status: FunctionStatus;
  /** Time with callees. */
  inclusive?: Measure;
  /** Time in the function's own code: inclusive minus measured callees, or sampled directly. */
  self?: Measure;
  /** Why `self` is missing or only an upper bound (an unmeasured or shared callee). */
  selfNote?: string;
  calls?: number;
  /** Per call (per outermost pass), when the measurer keeps them. */
  min?: number;
  max?: number;
  mean?: number;
  /** Per-call values, when recorded. */
  distribution?: number[];
  /** Descent: the callers' upper bound on the inclusive share (0..1) that pruned it or was checked. */
  boundShare?: number;
  /** Why it was not measured, or why its value may be low. */
  reason?: string;
  /** Index in `Profile.runs` of the run that measured it. */
  run?: number;
  /** It calls through a pointer: whom it calls is not known, so its own time cannot be formed from its callees. */
  indirectCalls?: boolean;
  /**
   * Passes that reach its code by running on from another function's (no call: `__aeabi_dsub` runs
   * on into `__adddf3`): its values leave them out, they are counted under `from`.
   */
  runOnFrom?: string[];
}

/** Where an edge's value came from: measured per call site, or estimated from the functions' totals. */
export type EdgeProvenance = 'exact' | 'injected' | 'estimated';

export interface ProfileEdge {
  caller: number;
  callee: number;
  kind: 'call' | 'tail' | 'interrupt';
  /** Calls observed along this edge, when a dynamic pass or the oracle counted them. */
  calls?: number;
  /**
   * The callee's inclusive value through this caller (all the caller's contexts together): measured
   * per edge (`exact`: the counting plugin's shadow stack, the oracle; `injected`: gated at the call
   * site), or `estimated` from the functions' totals, with the bound the measured values allow.
   */
  inclusive?: Measure;
  provenance?: EdgeProvenance;
}

/** A cost per source line (self cost of the line's instructions). */
export interface ProfileLine {
  path: string;
  line: number;
  function?: number;
  self: Measure;
}

/** A cost per instruction address. */
export interface ProfileAddress {
  address: number;
  function?: number;
  self: Measure;
  /** The source line the instruction belongs to (DWARF line table), when known. */
  path?: string;
  line?: number;
  /** The disassembled instruction (`addi a0, a0, 1`), when the builder had the disassembly. */
  instruction?: string;
}

/** A call stack, root first, with the cost of its top frame: the input of flame graphs and folded stacks. */
export interface ProfileStack {
  frames: number[];
  value: number;
  /** Where an edge on the path was split by estimate: the interval the value lies in. */
  bound?: { low: number; high: number };
}

export type RunRole = 'baseline' | 'batch' | 'oracle' | 'sampling' | 'synthetic';

/** One execution of the program that values in the profile came from. */
export interface ProfileRun {
  role: RunRole;
  /** In words: `software injection, minstret`, `oracle (QEMU trace)` … */
  method: string;
  /** The window's total in the profile's unit, when the run has one. */
  total?: number;
  from?: string;
  to?: string;
  /** Functions measured in this run. */
  measured: string[];
}

export interface ProfileAnalysis {
  scenario: 'descent' | 'full-profile' | 'round-robin' | 'sampling' | 'oracle' | 'import';
  metric?: string;
  /** Descent's share threshold (0..1). */
  threshold?: number;
  roots?: string[];
  cancelled?: boolean;
}

export interface Profile {
  schema: typeof PROFILE_SCHEMA;
  /** Where it came from (`cyclelens-vscode`, `cyclelens-cli`, an importer's name). */
  generator: string;
  createdAt: string;
  program: { executable: string; family?: string };
  unit: Unit;
  provenance: Provenance;
  /** The whole window's value, the denominator of every share. */
  total?: Measure;
  functions: ProfileFunction[];
  edges: ProfileEdge[];
  lines: ProfileLine[];
  addresses: ProfileAddress[];
  stacks: ProfileStack[];
  runs: ProfileRun[];
  analysis?: ProfileAnalysis;
  /**
   * What a reader must know about how figures were formed that the fields do not say (a call tree
   * derived from totals rather than recorded, an importer's assumption). Shown with the profile.
   */
  notes?: string[];
}

/** An empty profile to fill (builders and importers start here). */
export function emptyProfile(
  init: Pick<Profile, 'generator' | 'program' | 'unit' | 'provenance'> & Partial<Profile>,
): Profile {
  return {
    schema: PROFILE_SCHEMA,
    createdAt: new Date().toISOString(),
    functions: [],
    edges: [],
    lines: [],
    addresses: [],
    stacks: [],
    runs: [],
    ...init,
  };
}

/** A function's inclusive share of the whole window (0..1), when both are known. */
export function inclusiveShare(p: Profile, f: ProfileFunction): number | undefined {
  const total = p.total?.value;
  return f.inclusive !== undefined && total ? f.inclusive.value / total : undefined;
}

export function selfShare(p: Profile, f: ProfileFunction): number | undefined {
  const total = p.total?.value;
  return f.self !== undefined && total ? f.self.value / total : undefined;
}

/** Functions by name (names are unique within a profile). */
export function functionsByName(p: Profile): Map<string, ProfileFunction> {
  return new Map(p.functions.map((f) => [f.name, f]));
}
