import type {
  ConfigureArguments,
  CountersResponse,
  EventsResponse,
  MeasureRangeArguments,
  MeasureToArguments,
  MeasurementResponse,
  ReadResponse,
  ResetArguments,
} from '../../common/dapCustom';
import { CustomRequests } from '../../common/dapCustom';
import { CycleLensError, ErrorCode } from '../errors';
import type { CounterService } from '../probe/counterService';
import { toWire } from '../probe/counterService';
import { BreakpointMeasurement } from '../probe/rangeMeasurement';
import type { DebugTarget } from '../target/debugTarget';

type Handler = (args: never) => Promise<unknown>;

/**
 * The custom `cyclelens/*` requests: counters and measurements. Translation only; the counter
 * service and the measurement classes do the work.
 */
export class ProbeRequests {
  constructor(
    private readonly target: () => DebugTarget,
    private readonly counters: () => CounterService,
    private readonly onProgress: (done: number, wanted: number) => void,
  ) {}

  handlers(): Record<string, Handler> {
    return {
      [CustomRequests.events]: async (): Promise<EventsResponse> => ({ events: this.counters().events() }),
      [CustomRequests.counters]: async (): Promise<CountersResponse> => ({ units: this.counters().capabilities() }),
      [CustomRequests.configure]: (a: ConfigureArguments) => this.configure(a),
      [CustomRequests.read]: (): Promise<ReadResponse> => this.halted(async () => ({ values: (await this.counters().read()).map(toWire) })),
      [CustomRequests.reset]: (a: ResetArguments) => this.halted(async () => {
        await this.counters().reset(a.unit, a.slots);
        return { units: this.counters().capabilities() };
      }),
      [CustomRequests.measureTo]: (a: MeasureToArguments) => this.measure((m) => m.measureTo(a.to, a.timeoutMs)),
      [CustomRequests.measureRange]: (a: MeasureRangeArguments) =>
        this.measure((m) => m.measureRange(a.start, a.end, a.passes, a.timeoutMs, (done) => this.onProgress(done, a.passes))),
    };
  }

  private async configure(a: ConfigureArguments): Promise<CountersResponse> {
    const service = this.counters();
    const assignments = a.assignments ?? (a.events ? service.planEvents(a.events) : undefined);
    if (!assignments) throw new CycleLensError(ErrorCode.InvalidRequest, 'cyclelens/configure needs `events` or `assignments`.');
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
      const fixed = service.capabilities().filter((u) => u.present).flatMap((u) => u.slots.filter((s) => s.fixedEvent).map((s) => s.fixedEvent!));
      if (fixed.length === 0) {
        throw new CycleLensError(ErrorCode.CounterUnavailable, 'No counter is configured and this target has no fixed cycle or instruction counter. Configure a counter first (CycleLens: Configure Counters).');
      }
      await service.configure(service.planEvents([fixed[0]!]));
    }
    const result = await run(new BreakpointMeasurement({ gdb: target.gdb, internally: (fn) => target.internally(fn) }, service));
    if (target.gdb.executionState === 'stopped') {
      const frames = await target.gdb.stackListFrames(1, 0, 0).catch(() => []);
      target.announceStop({ reason: 'step', threadId: 1, allStopped: true, breakpointIds: [], description: 'measurement finished', ...(frames[0] ? { frame: frames[0] } : {}) });
    }
    return result;
  }

  private halted<T>(fn: () => Promise<T>): Promise<T> {
    return this.target().withHalted(fn);
  }
}
