import type * as vscode from 'vscode';
import type {
  CallGraphResponse,
  InjectArguments,
  InjectResponse,
  InjectedResultsResponse,
  RemoveInjectionsArguments,
} from '../../common/dapCustom';
import { CustomRequests } from '../../common/dapCustom';

/** The adapter's injection and call-graph requests, typed by the shared contract. */
export class InjectionClient {
  constructor(readonly session: vscode.DebugSession) {}

  inject(args: InjectArguments): Promise<InjectResponse> {
    return this.session.customRequest(CustomRequests.inject, args) as Promise<InjectResponse>;
  }

  results(): Promise<InjectedResultsResponse> {
    return this.session.customRequest(CustomRequests.injectedResults) as Promise<InjectedResultsResponse>;
  }

  remove(args: RemoveInjectionsArguments = {}): Promise<void> {
    return this.session.customRequest(CustomRequests.removeInjections, args) as Promise<void>;
  }

  callGraph(): Promise<CallGraphResponse> {
    return this.session.customRequest(CustomRequests.callGraph) as Promise<CallGraphResponse>;
  }
}
