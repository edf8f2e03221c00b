import type { TargetFamily } from '../../common/launchArgs';
import type { CounterUnit } from '../probe/counters';
import type { TargetAccess } from '../probe/targetAccess';
import { DeferredAuxAccess } from './arc/auxAccess';
import { ArcPctUnit } from './arc/pctCounters';
import { DwtCounters } from './cortex-m/dwt';
import { PmuCounters } from './cortex-m/pmu';
import { SysTickCounters } from './cortex-m/sysTick';
import { CoreExecutedStore, type StepInstruction } from './cortex-m/sysTickCoreStore';
import { qemuHpmEvents, RiscvCounters } from './riscv/counters';

export interface CounterUnitOptions {
  /**
   * The target is an emulator with known quirks: QEMU's RISC-V mhpmevent numbers are named, and its
   * Cortex-M peripherals can only be written by the core (see sysTickCoreStore.ts).
   */
  emulator?: 'qemu';
  /**
   * Steps one instruction on the halted core. Lets the SysTick unit write its registers by running a
   * store on the core where the debugger's writes are dropped (QEMU); without it SysTick is read-only there.
   */
  stepInstruction?: StepInstruction;
}

/** The counter units of a core family, in the order a user would pick them. */
export function createCounterUnits(family: TargetFamily, access: TargetAccess, options: CounterUnitOptions = {}): CounterUnit[] {
  switch (family) {
    case 'riscv':
      return [new RiscvCounters(access, options.emulator === 'qemu' ? { hpmEvents: qemuHpmEvents, virtualClock: true } : {})];
    case 'cortex-m': {
      const coreStore = options.stepInstruction ? new CoreExecutedStore(access, options.stepInstruction) : undefined;
      const sysTick = new SysTickCounters(access, { coreStore, ...(options.emulator === 'qemu' ? { virtualClock: true } : {}) });
      // Without CYCCNT, the DWT's 8-bit counters are bounded by SysTick while it runs on the processor clock.
      const dwt = new DwtCounters(access, { cycleClock: () => sysTick.cycleClock() });
      return [dwt, new PmuCounters(access), sysTick];
    }
    case 'arc':
      return [new ArcPctUnit(new DeferredAuxAccess(access))];
    default: {
      const unknown: never = family;
      throw new Error(`no counter units for family ${String(unknown)}`);
    }
  }
}
