import type { TargetFamily } from '../../common/launchArgs';
import { archPlugin } from './registry';

/** What the session needs to know about a core family, without knowing the family. */
export interface FamilyTraits {
  /**
   * Registers shown first in the Registers scope; the rest (system registers, CSRs, aux registers)
   * go under a nested group, since RISC-V and ARC targets describe hundreds of them.
   */
  coreRegisters: ReadonlySet<string>;
  /** Longest instruction in bytes: bounds how far back to disassemble to find N instructions. */
  maxInstructionLength: number;
  /** Instruction alignment in bytes. */
  instructionAlignment: number;
}

export function familyTraits(family: TargetFamily): FamilyTraits {
  return archPlugin(family).traits;
}
