import type { DebuggerKind, TargetFamily } from '../../common/launchArgs';
import { archFamilies, archPlugin } from '../arch/registry';
import type { Debugger } from './debugger';
import { GdbDebugger } from './gdb/gdbDebugger';
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
  if (choice.kind === 'gdb') return GdbDebugger.start({ gdbPath: choice.gdbPath, cwd: choice.cwd });
  await discardPrestartedGdb();
  return LldbDebugger.start({ python: choice.lldbPython, cwd: choice.cwd, family: choice.family });
}

/**
 * Starts the debugger most launches use before the launch request arrives (the default GDB that the
 * most families share: `gdb-multiarch` for Arm and RISC-V), so that its start-up overlaps the
 * adapter's own; a launch that wants another one ends it (gdb/gdbPrestart.ts).
 */
export function prestartDefaultDebugger(): void {
  const families = new Map<string, number>();
  for (const family of archFamilies) {
    const gdb = archPlugin(family).defaultGdb;
    families.set(gdb, (families.get(gdb) ?? 0) + 1);
  }
  const [mostUsed] = [...families].sort((a, b) => b[1] - a[1])[0] ?? [];
  if (mostUsed) prestartGdb(mostUsed);
}

/** Ends a prestarted debugger that the launch did not take (it failed, or wanted another). */
export function releasePrestartedDebugger(): Promise<void> {
  return discardPrestartedGdb();
}
