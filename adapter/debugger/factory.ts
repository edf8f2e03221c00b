import type { DebuggerKind, TargetFamily } from '../../common/launchArgs';
import type { Debugger } from './debugger';
import { GdbBackend } from './gdb/gdbBackend';
import { discardPrestartedGdb, prestartGdb } from './gdb/gdbPrestart';
import { LldbDebugger } from './lldb/lldbDebugger';

export interface DebuggerChoice {
  kind: DebuggerKind;
  family: TargetFamily;
  gdbPath: string;
  lldbPython: string;
  cwd: string;
}

/** The one place that knows the concrete debuggers: services receive the `Debugger` it returns. */
export async function startDebugger(choice: DebuggerChoice): Promise<Debugger> {
  if (choice.kind === 'gdb') return GdbBackend.start({ gdbPath: choice.gdbPath, cwd: choice.cwd });
  await discardPrestartedGdb();
  return LldbDebugger.start({ python: choice.lldbPython, cwd: choice.cwd, family: choice.family });
}

/**
 * Starts the debugger most launches use (GDB for Arm and RISC-V, `gdb-multiarch`) before the launch
 * request arrives, so that its start-up overlaps the adapter's own; a launch that wants another one
 * ends it (gdb/gdbPrestart.ts).
 */
export function prestartDefaultDebugger(): void {
  prestartGdb('gdb-multiarch');
}

/** Ends a prestarted debugger that the launch did not take (it failed, or wanted another). */
export function releasePrestartedDebugger(): Promise<void> {
  return discardPrestartedGdb();
}
