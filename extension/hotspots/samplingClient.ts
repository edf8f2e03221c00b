import type * as vscode from 'vscode';
import type { SamplersResponse, SamplingSnapshotResponse, StartSamplingArguments, StartSamplingResponse, StopSamplingResponse } from '../../common/dapCustom';
import { CustomRequests } from '../../common/dapCustom';

/** The adapter's sampling requests, typed by the shared contract. */
export class SamplingClient {
  constructor(readonly session: vscode.DebugSession) {}

  samplers(): Promise<SamplersResponse> {
    return this.session.customRequest(CustomRequests.samplers) as Promise<SamplersResponse>;
  }

  start(args: StartSamplingArguments): Promise<StartSamplingResponse> {
    return this.session.customRequest(CustomRequests.startSampling, args) as Promise<StartSamplingResponse>;
  }

  stop(): Promise<StopSamplingResponse> {
    return this.session.customRequest(CustomRequests.stopSampling) as Promise<StopSamplingResponse>;
  }

  snapshot(): Promise<SamplingSnapshotResponse> {
    return this.session.customRequest(CustomRequests.samplingSnapshot) as Promise<SamplingSnapshotResponse>;
  }
}
