import type { TargetFamily } from '../../common/launchArgs';
import type { ArchPlugin } from './archPlugin';
import { arcPlugin } from './arc/plugin';
import { cortexMPlugin } from './cortex-m/plugin';
import { riscvPlugin } from './riscv/plugin';

/**
 * The one place that maps a family to its plugin. Services outside adapter/arch/ ask this registry
 * and never compare family names themselves (scripts/lintBoundaries.mjs).
 */
const plugins: Readonly<Record<TargetFamily, ArchPlugin>> = {
  'cortex-m': cortexMPlugin,
  riscv: riscvPlugin,
  arc: arcPlugin,
};

/** Every family, in the order messages list them. */
export const archFamilies: readonly TargetFamily[] = Object.keys(plugins) as TargetFamily[];

export function archPlugin(family: TargetFamily): ArchPlugin {
  return plugins[family];
}

/** Whether `name` is a family CycleLens supports (launch arguments name it as text). */
export function isTargetFamily(name: unknown): name is TargetFamily {
  return typeof name === 'string' && Object.prototype.hasOwnProperty.call(plugins, name);
}
