import type { TargetFamily } from '../../common/launchArgs';
import type { CounterUnit } from '../probe/counters';
import type { TargetAccess } from '../probe/targetAccess';
import type { CounterUnitOptions } from './archPlugin';
import { archPlugin } from './registry';

export type { CounterUnitOptions };

/** The counter units of a core family, in the order a user would pick them (the family's plugin builds them). */
export function createCounterUnits(
  family: TargetFamily,
  access: TargetAccess,
  options: CounterUnitOptions = {},
): CounterUnit[] {
  return archPlugin(family).createCounterUnits(access, options);
}
