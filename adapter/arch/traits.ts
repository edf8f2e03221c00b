import type { TargetFamily } from '../../common/launchArgs';
import { cortexMCoreRegisters } from './cortex-m/registers';
import { riscvCoreRegisters } from './riscv/registers';
import { arcCoreRegisters } from './arc/registers';

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

const traits: Record<TargetFamily, FamilyTraits> = {
  // Thumb-2: 16- or 32-bit instructions, halfword aligned.
  'cortex-m': { coreRegisters: cortexMCoreRegisters, maxInstructionLength: 4, instructionAlignment: 2 },
  // RV32 with C: 16- or 32-bit instructions, halfword aligned.
  riscv: { coreRegisters: riscvCoreRegisters, maxInstructionLength: 4, instructionAlignment: 2 },
  // ARCv2: 16/32-bit plus a 32-bit long immediate.
  arc: { coreRegisters: arcCoreRegisters, maxInstructionLength: 8, instructionAlignment: 2 },
};

export function familyTraits(family: TargetFamily): FamilyTraits {
  return traits[family];
}
