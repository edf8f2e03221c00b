import { Event } from '@vscode/debugadapter';
import type {
  CustomArguments,
  CustomEventMap,
  CustomEventName,
  CustomRequestName,
  CustomResponse,
} from '../../common/dapCustom';
import type { SamplingService } from '../sampling/samplingService';
import type { InjectionRequests } from './injectionRequests';
import type { ProbeRequests } from './probeRequests';
import { samplingHandlers } from './samplingRequests';

/**
 * A handler of one custom request, typed by common/dapCustom.ts's `CustomRequestMap`. The dispatcher
 * passes `{}` when a request comes without arguments (DAP makes them optional), so a request that
 * takes none gets an empty object.
 */
export type CustomRequestHandler<K extends CustomRequestName> = (
  args: [CustomArguments<K>] extends [undefined] ? Record<string, never> : CustomArguments<K>,
) => Promise<CustomResponse<K>>;

/** Handlers for the requests `K`: a missing one, one more, or a wrong shape does not compile. */
export type CustomRequestHandlers<K extends CustomRequestName = CustomRequestName> = {
  [P in K]: CustomRequestHandler<P>;
};

/** Every custom request the adapter answers, by wire name: exactly the names of the contract. */
export function customRequestHandlers(
  probe: ProbeRequests,
  injection: InjectionRequests,
  sampling: SamplingService,
): CustomRequestHandlers {
  return { ...probe.handlers(), ...injection.handlers(), ...samplingHandlers(sampling) };
}

/** A custom event whose body has the shape the contract declares for its name. */
export function customEvent<K extends CustomEventName>(name: K, body: CustomEventMap[K]): Event {
  return new Event(name, body);
}
