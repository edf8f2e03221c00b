import type { SamplersResponse, StartSamplingArguments, StartSamplingResponse } from '../../common/dapCustom';
import { CustomRequests } from '../../common/dapCustom';
import type { SamplingService } from '../sampling/samplingService';

type Handler = (args: never) => Promise<unknown>;

/** The custom `cyclelens/*` sampling requests: translation only; the sampling service does the work. */
export function samplingHandlers(service: SamplingService): Record<string, Handler> {
  return {
    [CustomRequests.samplers]: async (): Promise<SamplersResponse> => ({ samplers: service.samplers() }),
    [CustomRequests.startSampling]: async (a: StartSamplingArguments): Promise<StartSamplingResponse> => ({ sampler: await service.start(a) }),
    [CustomRequests.stopSampling]: () => service.stop(),
    [CustomRequests.samplingSnapshot]: async () => service.snapshot(),
  };
}
