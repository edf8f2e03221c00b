import type { CustomArguments, CustomRequestName, CustomResponse } from '../../common/dapCustom';

// The handlers' types have a file of their own: each group of requests (probe, injection, sampling)
// names them, and customRequests.ts gathers the groups, so no group imports the file that imports it.

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
