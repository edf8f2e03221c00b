import type { GdbBackend } from '../../backend/gdb/gdbBackend';
import type { TargetRunner } from './injectionService';

/**
 * Run control for calibration over GDB: a temporary breakpoint at the address, continue, wait for
 * the stop, interrupt on timeout. The session hides these stops from the user (the lead wires it
 * through the session's "internally" wrapper).
 */
export function gdbTargetRunner(gdb: GdbBackend): TargetRunner {
  return {
    async runTo(address: number, timeoutMs: number): Promise<boolean> {
      const bp = await gdb.breakInsert({ location: `*0x${address.toString(16)}`, temporary: true });
      try {
        const stopped = gdb.waitForStop(timeoutMs);
        await gdb.execContinue();
        const stop = await stopped;
        if (!stop && gdb.isRunning) await gdb.execInterrupt();
        return stop !== undefined && stop.breakpointIds.includes(bp.id);
      } finally {
        if (gdb.executionState === 'stopped') await gdb.breakDelete([bp.id]).catch(() => undefined);
      }
    },
  };
}
