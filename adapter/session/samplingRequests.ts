import { CustomRequests } from '../../common/dapCustom';
import type { SamplingService } from '../sampling/samplingService';
import type { CustomRequestHandlers } from './customRequestTypes';

type SamplingRequestName = (typeof CustomRequests)['samplers' | 'startSampling' | 'stopSampling' | 'samplingSnapshot'];

/** The custom `cyclelens/*` sampling requests: translation only; the sampling service does the work. */
export function samplingHandlers(service: SamplingService): CustomRequestHandlers<SamplingRequestName> {
  return {
    [CustomRequests.samplers]: async () => ({ samplers: service.samplers() }),
    [CustomRequests.startSampling]: async (a) => ({ sampler: await service.start(a) }),
    [CustomRequests.stopSampling]: () => service.stop(),
    [CustomRequests.samplingSnapshot]: async () => service.snapshot(),
  };
}
