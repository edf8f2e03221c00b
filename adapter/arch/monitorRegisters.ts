import type { TargetFamily } from '../../common/launchArgs';
import { archPlugin } from './registry';

/**
 * The PC in QEMU's HMP `info registers` reply (the family's plugin knows where), or undefined when
 * the reply has none.
 */
export function pcFromMonitorRegisters(family: TargetFamily, text: string): number | undefined {
  return pcIn(archPlugin(family).sampling.monitorPc, text);
}

function pcIn(monitorPc: RegExp | undefined, text: string): number | undefined {
  const m = monitorPc?.exec(text);
  return m ? Number.parseInt(m[1]!, 16) : undefined;
}

/**
 * One monitor read: the PC of running code, a return token (the core is completing an exception
 * return), or undefined when the reply has no PC.
 */
export type MonitorSample = { pc: number } | 'return-token' | undefined;

/**
 * A reader of `info registers` replies for one family, with the family's facts looked up once (it
 * runs for every sample).
 */
export function monitorSampleReader(family: TargetFamily): (text: string) => MonitorSample {
  const { monitorPc, isReturnToken } = archPlugin(family).sampling;
  return (text) => {
    const pc = pcIn(monitorPc, text);
    if (pc === undefined) return undefined;
    return isReturnToken?.(pc) ? 'return-token' : { pc };
  };
}
