import type { TargetFamily } from '../../common/launchArgs';
import { archPlugin } from './registry';

/** The PC in QEMU's HMP `info registers` reply (the family's plugin knows where), or undefined when the reply has none. */
export function pcFromMonitorRegisters(family: TargetFamily, text: string): number | undefined {
  const m = archPlugin(family).sampling.monitorPc?.exec(text);
  return m ? Number.parseInt(m[1]!, 16) : undefined;
}
