import type {
  ConfigureArguments,
  CountersResponse,
  MeasurementResponse,
  ExecutionCountsArguments,
  RunArguments,
  RunResponse,
} from '../../common/dapCustom';
import { CustomRequests } from '../../common/dapCustom';
import { CycleLensError, ErrorCode } from '../errors';
import type { CounterService } from '../probe/counterService';
import { toWire } from '../probe/counterService';
import { programModelFor, staticCallGraph, StaticCallGraph } from '../probe/callGraph';
import { findProgramEnd, noProgramEndMessage, type ProgramEnd } from '../probe/programEnd';
import { dynamicCallGraphRequest } from '../probe/dynamicCallGraph';
import { asynchronousHandlers, executionCountsRequest } from '../probe/executionCounts';
import { BreakpointMeasurement } from '../probe/rangeMeasurement';
import { breakpointLocation, describeBreakpointLocation } from '../debugger/locations';
import type { StopPoint } from '../probe/injection';
import type { CountingStop } from '../servers/qemuCounting';
import type { DebugTarget } from '../target/debugTarget';
import type { CustomRequestHandlers } from './customRequestTypes';

type ProbeRequestName = (typeof CustomRequests)[
  | 'events'
  | 'counters'
  | 'configure'
  | 'read'
  | 'reset'
  | 'measureTo'
  | 'measureRange'
  | 'callGraph'
  | 'run'
  | 'dynamicCallGraph'
  | 'executionCounts'];

/**
 * The custom `cyclelens/*` requests: counters and measurements. Translation only; the counter
 * service and the measurement classes do the work.
 */
export class ProbeRequests {
  constructor(
    private readonly target: () => DebugTarget,
    private readonly counters: () => CounterService,
    private readonly onProgress: (done: number, wanted: number) => void,
    /** Where a stop is taken while injected measurements patch the code (their trampolines move it). */
    private readonly stopPointFor: (address: number) => StopPoint,
  ) {}

  handlers(): CustomRequestHandlers<ProbeRequestName> {
    return {
      [CustomRequests.events]: async () => ({ events: this.counters().events() }),
      [CustomRequests.counters]: async () => ({ units: this.counters().capabilities() }),
      [CustomRequests.configure]: (a) => this.configure(a),
      [CustomRequests.read]: () => this.halted(async () => ({ values: (await this.counters().read()).map(toWire) })),
      [CustomRequests.reset]: (a) =>
        this.halted(async () => {
          await this.counters().reset(a.unit, a.slots);
          return { units: this.counters().capabilities() };
        }),
      [CustomRequests.measureTo]: (a) => this.measure((m) => m.measureTo(a.to, a.timeoutMs)),
      [CustomRequests.measureRange]: (a) =>
        this.measure((m) =>
          m.measureRange(a.start, a.end, a.passes, a.timeoutMs, (done) => this.onProgress(done, a.passes)),
        ),
      [CustomRequests.callGraph]: async () => this.callGraph(),
      [CustomRequests.run]: (a) => this.run(a),
      [CustomRequests.dynamicCallGraph]: (a) => dynamicCallGraphRequest(this.target(), this.callGraph(), a),
      [CustomRequests.executionCounts]: (a) => {
        const target = this.target();
        const server = target.server;
        return executionCountsRequest(
          {
            facts: target.config.facts,
            countInstructions: server.countInstructions?.bind(server),
            graph: this.callGraph(),
            entryAddress: target.config.image.header.entry,
            handlers: () => asynchronousHandlers(target.config.family, target.config.image, this.callGraph().functions),
            end: (args) => this.countingEnd(args),
          },
          a,
        );
      },
    };
  }

  /** Where the counting run stops: where the measured runs end, at its `hits`-th arrival. */
  private async countingEnd(a: ExecutionCountsArguments): Promise<{ stop: CountingStop; what: string } | undefined> {
    const target = this.target();
    const until =
      a.until ?? (target.config.programEnd ? { function: target.config.programEnd } : this.automaticEnd()?.location);
    if (!until) return undefined;
    const fn = 'function' in until ? target.config.image.functionNamed(until.function) : undefined;
    const raw = fn ? Number(fn.address) : Number(await target.internally(() => this.addressOf(until)));
    const address = raw - (raw % 2); // a Thumb function's symbol has bit 0 set; the plugin sees the PC
    const hits = a.hits ?? 1;
    return { stop: { address, hits }, what: `${describeLocation(until)}${hits > 1 ? ` (arrival ${hits})` : ''}` };
  }

  private graph: StaticCallGraph | undefined;
  private programEnd: { end: ProgramEnd | undefined } | undefined;

  /** The end of a single-pass program found in its code (no `programEnd`, no `exit`), once per session. */
  private automaticEnd(): ProgramEnd | undefined {
    if (!this.programEnd) {
      const image = this.target().config.image;
      let end: ProgramEnd | undefined;
      try {
        end = findProgramEnd(programModelFor(image));
      } catch {
        end = undefined; // a family without a disassembler: the message asks for programEnd
      }
      this.programEnd = { end };
    }
    return this.programEnd.end;
  }

  /** The static call graph of the ELF, built once per session. */
  callGraph(): StaticCallGraph {
    this.graph ??= staticCallGraph(this.target().config.image);
    return this.graph;
  }

  /**
   * Runs the program (optionally from reset) to a location, hidden from the user until it arrives:
   * how profiling scenarios start and end their runs. Without `until`, runs to `programEnd`.
   */
  private async run(a: RunArguments): Promise<RunResponse> {
    const target = this.target();
    const until =
      a.until ?? (target.config.programEnd ? { function: target.config.programEnd } : this.automaticEnd()?.location);
    if (!until) throw new CycleLensError(ErrorCode.InvalidLaunchArgs, noProgramEndMessage(target.config.image.path));
    const debug = target.debugger;
    const result = await target.internally(async (): Promise<RunResponse> => {
      if (debug.isRunning) await debug.interrupt();
      if (a.restart) await target.resetHalted();
      // At a function's entry, not after its prologue: the same place an injected entry patch sits.
      const address = await this.addressOf(until);
      // Patched code runs in its trampoline: the stop is taken where it comes back, after the payload.
      const point: StopPoint = this.stopPointFor(Number(address));
      if (!point.ok)
        throw new CycleLensError(ErrorCode.InvalidRequest, `Cannot run to ${describeLocation(until)}: ${point.reason}`);
      const timeoutMs = a.timeoutMs ?? 120_000;
      const { reached, stop } = await target.runTo(BigInt(point.address), { hidden: true, timeoutMs });
      if (!stop) {
        const ended = debug.executionState === 'exited';
        return {
          reached: false,
          detail: ended
            ? 'The program ended before it got there.'
            : `It did not get there within ${Math.round(timeoutMs / 1000)} s.`,
        };
      }
      return reached
        ? { reached }
        : {
            reached,
            detail:
              `It stopped first at ${stop.frame?.func ?? 'an unknown place'} ` +
              `(${stop.reason}${stop.description ? ` ${stop.description}` : ''}).` +
              (stop.reason === 'breakpoint'
                ? ` Breakpoint ${stop.breakpointIds.join(', ') || '(unnumbered)'}` +
                  (stop.frame?.file ? ` at ${stop.frame.file}:${stop.frame.line ?? '?'}` : '') +
                  ' stopped the analysis run; this debugger cannot disable breakpoints for it: remove or ' +
                  'disable that breakpoint while the analysis runs, then start it again.'
                : ''),
          };
    });
    // The user's editor stays where it is: a profiling scenario makes many such stops.
    await target.announceCurrentStop(
      result.reached ? `profiling run at ${describeLocation(until)}` : 'profiling run stopped early',
      { preserveFocus: true },
    );
    const found = !target.config.programEnd ? this.automaticEnd() : undefined;
    const programEnd = target.config.programEnd ? { function: target.config.programEnd } : found?.location;
    return { ...result, until, ...(found ? { endFoundBy: found.how } : {}), ...(programEnd ? { programEnd } : {}) };
  }

  /** The address of a location, as the debugger resolves it (a function's first instruction). */
  private async addressOf(until: NonNullable<RunArguments['until']>): Promise<bigint> {
    if ('address' in until) return BigInt(until.address);
    const debug = this.target().debugger;
    const bp = await debug.insertBreakpoint({ location: breakpointLocation(until, { atEntry: true }) });
    await debug.deleteBreakpoints([bp.id]);
    if (bp.address === undefined)
      throw new CycleLensError(
        ErrorCode.InvalidRequest,
        `Cannot run to ${describeLocation(until)}: the program has no code there.`,
      );
    return bp.address;
  }

  private async configure(a: ConfigureArguments): Promise<CountersResponse> {
    const service = this.counters();
    const assignments = a.assignments ?? (a.events ? service.planEvents(a.events) : undefined);
    if (!assignments)
      throw new CycleLensError(ErrorCode.InvalidRequest, 'cyclelens/configure needs `events` or `assignments`.');
    // Configured counters count from now on: a user configures, then steps and watches them move.
    await this.halted(async () => {
      await service.configure(assignments);
      await service.start();
    });
    return { units: service.capabilities() };
  }

  private async measure(run: (m: BreakpointMeasurement) => Promise<MeasurementResponse>): Promise<MeasurementResponse> {
    const target = this.target();
    const service = this.counters();
    if (!service.capabilities().some((u) => u.slots.some((s) => s.event !== undefined))) {
      // Nothing chosen yet: count the first fixed-function event (cycles or instructions).
      const fixed = service
        .capabilities()
        .filter((u) => u.present)
        .flatMap((u) => u.slots.filter((s) => s.fixedEvent).map((s) => s.fixedEvent!));
      if (fixed.length === 0) {
        throw new CycleLensError(
          ErrorCode.CounterUnavailable,
          'No counter is configured and this target has no fixed cycle or instruction counter. ' +
            'Configure a counter first (CycleLens: Configure Counters).',
        );
      }
      await service.configure(service.planEvents([fixed[0]!]));
    }
    const result = await run(
      new BreakpointMeasurement({ debugger: target.debugger, internally: (fn) => target.internally(fn) }, service),
    );
    await target.announceCurrentStop('measurement finished');
    return result;
  }

  private halted<T>(fn: () => Promise<T>): Promise<T> {
    return this.target().withHalted(fn);
  }
}

function describeLocation(loc: NonNullable<RunArguments['until']>): string {
  return describeBreakpointLocation(breakpointLocation(loc));
}
