/**
 * CycleLens's custom DAP requests and events, declared once. The adapter implements them
 * (adapter/session/customRequests.ts); the extension and the CLI call them through these types.
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

export const CustomRequests = {
  events: 'cyclelens/events',
  counters: 'cyclelens/counters',
  configure: 'cyclelens/configure',
  read: 'cyclelens/read',
  reset: 'cyclelens/reset',
  measureTo: 'cyclelens/measureTo',
  measureRange: 'cyclelens/measureRange',
} as const;

export const CustomEvents = {
  /** Sent once after launch: the counter units the target has (present or not, with notes). */
  capabilities: 'cyclelens/capabilities',
  /** Sent during a repeated measurement: passes done so far. */
  measurementProgress: 'cyclelens/measurementProgress',
} as const;

export interface CapabilitiesEventBody {
  family: string;
  units: CounterUnitInfo[];
}

export interface MeasurementProgressEventBody {
  passesDone: number;
  passesWanted: number;
}
