import type * as vscode from 'vscode';
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

/** The adapter's custom requests, typed by the shared contract. */
export class ProbeClient {
  constructor(readonly session: vscode.DebugSession) {}

  events(): Promise<EventsResponse> {
    return this.session.customRequest(CustomRequests.events) as Promise<EventsResponse>;
  }

  counters(): Promise<CountersResponse> {
    return this.session.customRequest(CustomRequests.counters) as Promise<CountersResponse>;
  }

  configure(args: ConfigureArguments): Promise<CountersResponse> {
    return this.session.customRequest(CustomRequests.configure, args) as Promise<CountersResponse>;
  }

  read(): Promise<ReadResponse> {
    return this.session.customRequest(CustomRequests.read) as Promise<ReadResponse>;
  }

  reset(args: ResetArguments = {}): Promise<CountersResponse> {
    return this.session.customRequest(CustomRequests.reset, args) as Promise<CountersResponse>;
  }

  measureTo(args: MeasureToArguments): Promise<MeasurementResponse> {
    return this.session.customRequest(CustomRequests.measureTo, args) as Promise<MeasurementResponse>;
  }

  measureRange(args: MeasureRangeArguments): Promise<MeasurementResponse> {
    return this.session.customRequest(CustomRequests.measureRange, args) as Promise<MeasurementResponse>;
  }
}
