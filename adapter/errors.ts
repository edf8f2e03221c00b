/**
 * Every failure the adapter reports has a code here. User-facing errors say what is wrong and what
 * to do; the session's dispatcher turns any thrown error into one DAP error response
 * (adapter/session/debugSession.ts), so request handlers simply throw.
 */
export enum ErrorCode {
  // Launch configuration
  InvalidLaunchArgs = 1001,
  ExecutableNotFound = 1002,
  NotAnElf = 1003,
  UnsupportedArchitecture = 1004,
  // External programs
  ProgramNotFound = 1101,
  ServerFailedToStart = 1102,
  ServerExited = 1103,
  PortInUse = 1104,
  ServerTimeout = 1105,
  DebuggerFailed = 1106,
  DebuggerExited = 1107,
  ConnectFailed = 1108,
  // Requests
  NotStopped = 1201,
  NotRunning = 1202,
  CommandFailed = 1203,
  InvalidRequest = 1204,
  Unsupported = 1205,
  // Counters and measurements
  CounterUnavailable = 1301,
  UnknownEvent = 1302,
  TooManyEvents = 1303,
  CounterUnreliable = 1304,
  // Tcl RPC
  TclError = 1401,
  TclTimeout = 1402,
  TclConnectionLost = 1403,
}

export class CycleLensError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Shown to the user (notification / Debug Console) rather than only logged. */
    readonly userFacing = true,
  ) {
    super(message);
    this.name = 'CycleLensError';
  }
}

export function fail(code: ErrorCode, message: string): never {
  throw new CycleLensError(code, message);
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
