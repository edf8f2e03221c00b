import type { Debugger } from '../debugger/debugger';
import type { TargetRunner } from './injection/injectionService';

/**
 * Run control for calibration straight over a debugger, for code that has no DebugTarget (tests,
 * benchmarks): a hidden run-to. The session goes through DebugTarget.runTo instead.
 */
export function debuggerTargetRunner(debug: Debugger): TargetRunner {
  return {
    async runTo(address: number, timeoutMs: number): Promise<boolean> {
      return (await debug.runTo(BigInt(address), { hidden: true, timeoutMs })).reached;
    },
  };
}
