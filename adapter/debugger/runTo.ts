import type { Debugger, RunToResult } from './debugger';

/**
 * A run to an address with a temporary breakpoint, for any debugger: the breakpoint is removed
 * afterwards whatever happened (a debugger removes a temporary one only when it is the one hit), a
 * run that times out is interrupted, and arriving is what counts (a user breakpoint at the same
 * address may be the one the debugger names).
 */
export async function runToWithTemporaryBreakpoint(
  debug: Debugger,
  address: bigint,
  timeoutMs: number,
): Promise<RunToResult> {
  const bp = await debug.insertBreakpoint({ location: { kind: 'address', address }, temporary: true });
  let stop;
  try {
    const stopped = debug.waitForStop(timeoutMs);
    await debug.continue();
    stop = await stopped;
    if (!stop && debug.isRunning) await debug.interrupt();
  } finally {
    if (debug.executionState === 'stopped' && !stop?.breakpointIds.includes(bp.id))
      await debug.deleteBreakpoints([bp.id]).catch(() => undefined);
  }
  const reached = stop !== undefined && (stop.breakpointIds.includes(bp.id) || stop.frame?.address === address);
  return { reached, stop };
}
