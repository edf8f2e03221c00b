/**
 * Function and region measurement by code injection (docs/design.md, "Measurement semantics").
 * The session builds an InjectionService with the family's support
 * (adapter/arch/riscv/trampolineRv32.ts `rv32InjectionSupport`, adapter/arch/cortex-m/
 * trampolineThumb.ts `thumbInjectionSupport`) and exposes its methods as DAP requests.
 */
export { InjectionService } from './injectionService';
export type {
  Calibration,
  GroupOptions,
  InjectionFamilySupport,
  InjectionServiceOptions,
  MeasureOptions,
  MeasurementKind,
  MeasurementInfo,
  MeasurementResults,
  StopPoint,
  TargetCode,
  TargetRunner,
} from './injectionService';
export { InjectionPlanner, reachableDisplaced } from './planner';
export { soloReason } from './measurementBuilder';
export { ProgramModel } from './programModel';
export { InjectionRefusedError } from './errors';
export { restoreFromJournal, describeRestore, journalDir, journalPath, journalFiles, elfHash } from './journal';
export type { RestoreReport } from './journal';
export { resolveReservedMemory, MINIMUM_RESERVED } from './reservedMemory';
export { memoryKindAt } from './memoryMap';
export type { MemoryKind, MemoryRegion } from './memoryMap';
export { DWT_CYCCNT, MCYCLE, MINSTRET, SYSTICK_CVR } from './types';
export type { CounterSource, InjectionPlan, InjectionRefusal, PayloadKind, ReservedMemory } from './types';
