import { cortexMInterruptSampler } from './interruptSamplerM';
import { CycleLensError, ErrorCode } from '../../errors';
import { DWT_CYCCNT, SYSTICK_CVR } from '../../probe/injection/types';
import type { CounterUnitInfo } from '../../probe/counters';
import type { TargetFacts } from '../../target/targetFacts';
import { vectorTableHandlers } from './vectorTable';
import type { ArchPlugin } from '../archPlugin';
import { DwtCounters } from './dwt';
import { PmuCounters } from './pmu';
import { cortexMCoreRegisters } from './registers';
import { SysTickCounters } from './sysTick';
import { CoreExecutedStore } from './sysTickCoreStore';
import { ThumbCodec } from './thumbDecoder';
import { ThumbRelocator } from './thumbRelocator';
import { thumbInjectionArch, thumbInjectionSupport } from './trampolineThumb';

const KiB = 1024;
const MiB = 1024 * KiB;
const thumbArch = thumbInjectionArch();

/** Whether discovery found a working DWT cycle counter (QEMU's DWT reads as zero). */
function hasCycleCounter(units: readonly CounterUnitInfo[]): boolean {
  return units.some((u) => u.unit === 'DWT' && u.present && u.slots.some((s) => s.name === 'CYCCNT'));
}

/** Cortex-M (ARMv6-M to ARMv8.1-M), Thumb-2. */
export const cortexMPlugin: ArchPlugin = {
  family: 'cortex-m',
  displayName: 'Cortex-M',
  // Thumb-2: 16- or 32-bit instructions, halfword aligned.
  traits: { coreRegisters: cortexMCoreRegisters, maxInstructionLength: 4, instructionAlignment: 2 },
  codec: new ThumbCodec(),
  relocator: new ThumbRelocator('armv7e-m'),
  abi: {
    returnAddressRegister: 'lr',
    freeAtEntry: thumbArch.freeAtEntry,
    returnHooks:
      'LR is redirected to the exit stub at entry; EXC_RETURN (0xFFxxxxxx) is redirected like a ' +
      'return address and the exit stub performs the exception return; FNC_RETURN (0xFExxxxxx) ' +
      'entries stay untracked.',
  },
  createCounterUnits: (access, options) => {
    const coreStore = options.stepInstruction ? new CoreExecutedStore(access, options.stepInstruction) : undefined;
    const sysTick = new SysTickCounters(access, {
      coreStore,
      ...(options.emulator === 'qemu' ? { virtualClock: true } : {}),
    });
    // Without CYCCNT, the DWT's 8-bit counters are bounded by SysTick while it runs on the processor clock.
    const readsAsZero = (unit: string): boolean => options.readsAsZero?.includes(unit) ?? false;
    const dwt = new DwtCounters(access, { cycleClock: () => sysTick.cycleClock(), readsAsZero: readsAsZero('DWT') });
    return [dwt, new PmuCounters(access, { readsAsZero: readsAsZero('PMU') }), sysTick];
  },
  injection: {
    arch: () => thumbInjectionArch(),
    support: (units: readonly CounterUnitInfo[], facts: TargetFacts) => {
      if (hasCycleCounter(units)) return { support: thumbInjectionSupport(DWT_CYCCNT) };
      // SysTick counts core-clock ticks; the payload's own instructions are compensated in ticks,
      // which needs the ratio the target facts fix (QEMU under -icount).
      const ratio = facts.coreClockTicksPerInstruction;
      if (ratio.fixed)
        return {
          support: thumbInjectionSupport(SYSTICK_CVR, { counterUnitsPerInstruction: ratio.value }),
          counterUnitsPerInstruction: ratio.value,
        };
      if (facts.emulator === 'qemu') {
        throw new CycleLensError(
          ErrorCode.Unsupported,
          `Injected measurements on QEMU Cortex-M read SysTick, whose ticks per instruction are not ` +
            `fixed here: ${ratio.reason}.`,
        );
      }
      // A core without CYCCNT (Cortex-M0/M0+): SysTick counts cycles, and the payload's cost is
      // compensated at one cycle per instruction.
      return { support: thumbInjectionSupport(SYSTICK_CVR) };
    },
  },
  callGraph: { disassembly: () => thumbInjectionArch(), handlerEntries: vectorTableHandlers },
  qemu: {
    binary: 'qemu-system-arm',
    debianPackage: 'qemu-system-arm',
    defaultMachine: 'mps2-an386',
    // Semihosting lets firmware print and exit (SYS_EXIT) through newlib's rdimon.
    args: ['-semihosting-config', 'enable=on,target=native'],
    machines: {
      // mps2-an386 (Cortex-M4): code memory is SSRAM1 (4 MiB at 0, writable through the gdbstub),
      // data SSRAM2/3 at 0x20000000. SysTick's processor clock is the 25 MHz board clock.
      'mps2-an386': {
        memoryMap: [
          { start: 0x00000000, size: 4 * MiB, kind: 'ram', name: 'SSRAM1 (code)' },
          { start: 0x20000000, size: 4 * MiB, kind: 'ram', name: 'SSRAM2/3' },
        ],
        coreClockHz: 25_000_000,
      },
    },
    // QEMU 7.2 answers the whole DWT and the Armv8.1-M PMU with zeros (dwt.ts, pmu.ts).
    zeroCounters: ['DWT', 'PMU'],
  },
  defaultGdb: 'gdb-multiarch',
  // LLDB 14 decodes no code for a thumbv7em triple; armv7em selects Thumb by the M profile itself.
  lldb: { triple: 'armv7em-none-eabi' },
  // QEMU 7.2 prints `R15=000004b2` in `info registers` (M-profile PCs carry no Thumb bit there).
  sampling: {
    monitorPc: /\bR15=([0-9a-f]{8})\b/,
    // ARMv7-M B1.5.8 / ARMv8-M: a branch to 0xFEFFFFFE or above (EXC_RETURN 0xFFxxxxxx, FNC_RETURN
    // 0xFEFFFFFF) returns from an exception or a secure call; the region is execute-never, so no
    // instruction lives there. QEMU keeps the token in R15 (bit 0 clear) until the return is done.
    isReturnToken: (pc) => pc >= 0xfefffffe,
    // ARMv7-M C1.8.8 / ARMv8-M: DWT_PCSR, optional on ARMv6-M; reads 0xFFFFFFFF while halted or asleep.
    pcSampleRegister: 0xe000101c,
    interruptSampler: cortexMInterruptSampler,
  },
  // ARMv7-M B3.1 default memory map: the Code region (0x00000000-0x1FFFFFFF) is where parts put
  // their flash. Without a map that says otherwise, treat it as flash.
  defaultMemoryKind: (address) => (address < 0x20000000 ? 'flash' : undefined),
};
