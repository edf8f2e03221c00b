import type { CustomArguments, CustomEventMap, CustomEventName, CustomRequestName, CustomResponse } from './dapCustom';

/**
 * The one client of CycleLens's custom DAP requests, typed by `CustomRequestMap`: the request's wire
 * name fixes what it takes and what it answers, so a wrong name or shape does not compile. It needs
 * only `customRequest`, which `vscode.DebugSession` and the CLI's DAP client both have.
 */
export interface CustomRequestPeer {
  customRequest(command: string, args?: unknown): PromiseLike<unknown>;
}

/** Requests without arguments take none; requests whose arguments are all optional may omit them. */
export type CustomArgumentList<K extends CustomRequestName> = [CustomArguments<K>] extends [undefined]
  ? []
  : object extends CustomArguments<K>
    ? [args?: CustomArguments<K>]
    : [args: CustomArguments<K>];

/** Sends `name` with its arguments; resolves with the response body the contract declares for it. */
export async function customRequest<K extends CustomRequestName>(
  peer: CustomRequestPeer,
  name: K,
  ...args: CustomArgumentList<K>
): Promise<CustomResponse<K>> {
  const body = await peer.customRequest(name, args[0]);
  // The one place the wire's untyped body meets the contract: the adapter's dispatcher is typed by
  // the same map, so the body has the declared shape.
  return body as CustomResponse<K>;
}

/** The body of a custom event when it is the event `name`, typed by `CustomEventMap`; otherwise undefined. */
export function customEventBody<K extends CustomEventName>(
  event: { event: string; body?: unknown },
  name: K,
): CustomEventMap[K] | undefined {
  // Typed by the same map the adapter sends its events with (adapter/session/customRequests.ts).
  return event.event === name ? (event.body as CustomEventMap[K]) : undefined;
}
