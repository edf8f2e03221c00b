import type { TargetFamily } from '../../common/launchArgs';
import { archPlugin } from './registry';

/** The PC in QEMU's HMP `info registers` reply (the family's plugin knows where), or undefined when the reply has none. */
export function pcFromMonitorRegisters(family: TargetFamily, text: string): number | undefined {
  const m = archPlugin(family).sampling.monitorPc?.exec(text);
  return m ? Number.parseInt(m[1]!, 16) : undefined;
}

/**
 * One monitor read: the PC of running code, a return token (the core is completing an exception
 * return and no instruction address is held), or undefined when the reply has no PC.
 */
export function sampleFromMonitorRegisters(family: TargetFamily, text: string): { pc: number } | 'return-token' | undefined {
  const pc = pcFromMonitorRegisters(family, text);
  if (pc === undefined) return undefined;
  return archPlugin(family).sampling.isReturnToken?.(pc) ? 'return-token' : { pc };
}
