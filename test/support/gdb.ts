import type { Debugger } from '../../adapter/debugger/debugger';
import { startDebugger } from '../../adapter/debugger/factory';
import type { TargetFamily } from '../../common/launchArgs';

/**
 * GDB started the way a session starts it (adapter/debugger/factory.ts): tests and benches drive the
 * Debugger interface the services hold, never the concrete GdbDebugger.
 */
export function startGdb(cwd: string, family: TargetFamily, gdbPath = 'gdb-multiarch'): Promise<Debugger> {
  return startDebugger({ kind: 'gdb', family, gdbPath, lldbPython: 'python3', cwd });
}
