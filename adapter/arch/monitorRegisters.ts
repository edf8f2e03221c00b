import type { TargetFamily } from '../../common/launchArgs';

/**
 * Where the PC is in QEMU's HMP `info registers` text, per family (QEMU 7.2): RISC-V prints
 * ` pc       80000e40`, Arm prints `R15=000004b2` (M-profile PCs carry no Thumb bit there).
 */
const pcPatterns: Record<TargetFamily, RegExp | undefined> = {
  riscv: /(?:^|\n)\s*pc\s+([0-9a-f]{8,16})\b/i,
  'cortex-m': /\bR15=([0-9a-f]{8})\b/,
  arc: undefined,
};

/** The PC in an `info registers` reply, or undefined when the reply has none. */
export function pcFromMonitorRegisters(family: TargetFamily, text: string): number | undefined {
  const m = pcPatterns[family]?.exec(text);
  return m ? Number.parseInt(m[1]!, 16) : undefined;
}
