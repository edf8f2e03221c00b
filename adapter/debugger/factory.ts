import type { DebuggerKind, TargetFamily } from '../../common/launchArgs';
import type { Debugger } from './debugger';
import { GdbBackend } from './gdb/gdbBackend';
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
  return LldbDebugger.start({ python: choice.lldbPython, cwd: choice.cwd, family: choice.family });
}
