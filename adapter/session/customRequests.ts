import { Event } from '@vscode/debugadapter';
import type { CustomEventMap, CustomEventName } from '../../common/dapCustom';
import type { SamplingService } from '../sampling/samplingService';
import type { InjectionRequests } from './injectionRequests';
import type { ProbeRequests } from './probeRequests';
import { samplingHandlers } from './samplingRequests';
import type { CustomRequestHandlers } from './customRequestTypes';

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
