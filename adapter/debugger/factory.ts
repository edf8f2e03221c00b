import type { DebuggerKind, TargetFamily } from '../../common/launchArgs';
import { CycleLensError, ErrorCode } from '../errors';
import type { Debugger } from './debugger';
import { GdbBackend } from './gdb/gdbBackend';

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
  throw new CycleLensError(ErrorCode.Unsupported, 'This build has no LLDB backend: use `"debugger": "gdb"`.');
}
