import type { TargetFamily } from '../../common/launchArgs';
import type { MemoryKind, MemoryRegion } from '../debugger/types';
import type { CounterUnit, CounterUnitInfo } from '../probe/counters';
import type { InjectionFamilySupport } from '../probe/injection/injectionService';
import type { InjectionArch } from '../probe/injection/types';
import type { TargetAccess } from '../probe/targetAccess';
import type { InterruptSamplerArch } from '../sampling/interruptTypes';
import type { TargetFacts } from '../target/targetFacts';
import type { ElfImage } from '../elf';
import type { InstructionCodec, InstructionRelocator } from './codec';
import type { FamilyTraits } from './traits';

/**
 * Everything generic services need to know about a core family (docs/design.md, "Ports inside the
 * adapter"). One object per family, exported from `adapter/arch/<family>/plugin.ts` and reached only
 * through `archPlugin(family)` (adapter/arch/registry.ts): no code outside adapter/arch/ compares
 * family names (scripts/lintBoundaries.mjs fails the build when one does).
 */
export interface ArchPlugin {
  readonly family: TargetFamily;
  /** How people name the family in messages ("Cortex-M", "RISC-V", "ARC"). */
  readonly displayName: string;
  /** Registers shown first, instruction sizes (the Registers scope, the disassembly window). */
  readonly traits: FamilyTraits;
  /** The instruction codec and relocator (adapter/arch/codec.ts). */
  readonly codec: InstructionCodec;
  readonly relocator: InstructionRelocator;
  readonly abi: ArchAbi;
  /** The family's counter units in the order a user would pick them; each discovers its own slots. */
  createCounterUnits(access: TargetAccess, options: CounterUnitOptions): CounterUnit[];
  /** Injected measurements: trampolines, payloads and the planner's ISA knowledge; a reason when there are none. */
  readonly injection: ArchInjection | { unsupported: string };
  /** The static disassembly the call graph reads (the injection planner's own); a reason when there is none. */
  readonly callGraph:
    | {
        disassembly(): InjectionArch;
        /**
         * Entry addresses of the code the core enters asynchronously (exception and interrupt
         * handlers) that the image names, where the family has a table of them (Cortex-M's vector
         * table). `isFunctionEntry` says whether an address starts a function.
         */
        handlerEntries?(image: ElfImage, isFunctionEntry: (address: number) => boolean): number[];
      }
    | { unsupported: string };
  /** Running the family's firmware on QEMU; a reason when QEMU has no such target. */
  readonly qemu: ArchQemu | { unsupported: string };
  /** The GDB that debugs this family when the launch names none. */
  readonly defaultGdb: string;
  /** The LLVM triple LLDB needs for this family, or why LLDB cannot debug it (the message names the fix). */
  readonly lldb: { triple: string } | { unsupported: string };
  readonly sampling: ArchSampling;
  /**
   * The architecture's default memory map, for targets that tell none: the kind of memory at
   * `address`, or undefined when the architecture says nothing about it.
   */
  defaultMemoryKind(address: number): MemoryKind | undefined;
}

/** Calling-convention facts (the ABI of the family's usual toolchain). */
export interface ArchAbi {
  /** Where a call leaves its return address (Thumb LR, RV32 ra, ARC blink); return hooks redirect it. */
  readonly returnAddressRegister: string;
  /**
   * Where the interrupted PC sits while a trap handler runs, when the debugger's unwinder does not
   * reach it (RISC-V mepc: GDB unwinds a handler through ra, the interrupted function's own return
   * address). Undefined where the unwinder follows the exception frame (Cortex-M).
   */
  readonly interruptedPcRegister?: string;
  /**
   * Registers the calling convention lets a function entry clobber (bit mask of register numbers),
   * and the registers the injector's stubs leave changed; undefined where nothing is injected.
   */
  readonly freeAtEntry?: number;
  readonly stubClobbers?: number;
  /** The thread-pointer register the injector may hold its cave base in, when the program never names it. */
  readonly threadPointerRegister?: string;
  /**
   * Return-hook rules: which return addresses a function-entry patch redirects to its exit stub,
   * in words (the payload generators implement them).
   */
  readonly returnHooks: string;
}

export interface CounterUnitOptions {
  /**
   * The target is an emulator with known quirks (TargetFacts.emulator): QEMU's RISC-V mhpmevent
   * numbers are named, and its Cortex-M peripherals can only be written by the core (see sysTickCoreStore.ts).
   */
  emulator?: 'qemu';
  /**
   * Steps one instruction on the halted core. Lets the SysTick unit write its registers by running a
   * store on the core where the debugger's writes are dropped (QEMU); without it SysTick is read-only there.
   */
  stepInstruction?: () => Promise<void>;
  /**
   * Counter units the target facts say answer every read with zero (TargetFacts.zeroCounters: QEMU
   * does not model them). Such a unit confirms it with one read instead of probing every register,
   * and is probed in full should that read answer.
   */
  readsAsZero?: readonly string[];
}

/** What the injection service needs from a family. */
export interface ArchInjection {
  /** The planner's ISA knowledge (codec, patch shapes, liveness). */
  arch(): InjectionArch;
  /**
   * The counter payloads read and the ratio of counter units to instructions, chosen from the
   * counters discovery found and the target facts. Throws a user-facing error when no counter fits
   * (the message names the fix).
   */
  support(
    counters: readonly CounterUnitInfo[],
    facts: TargetFacts,
  ): { support: InjectionFamilySupport; counterUnitsPerInstruction?: number };
}

/** How QEMU runs this family. */
export interface ArchQemu {
  readonly binary: string;
  /** The Debian package that installs `binary`. */
  readonly debianPackage: string;
  /** The machine when the launch names none. */
  readonly defaultMachine: string;
  /** Arguments every run gets (semihosting, no BIOS). */
  readonly args: readonly string[];
  /** The machines whose facts are known (measured on QEMU 7.2), by QEMU machine name. */
  readonly machines: Readonly<Record<string, QemuMachine>>;
  /** Counters QEMU does not model for this family: they read as zero, whatever the machine. */
  readonly zeroCounters: readonly string[];
}

export interface QemuMachine {
  /** RAM and ROM as QEMU maps them (where debugger writes stick). */
  readonly memoryMap: readonly MemoryRegion[];
  /**
   * The clock the core's cycle timer counts (SysTick with CLKSOURCE = 1 on Cortex-M), in Hz of
   * virtual time; undefined when no counter of the family counts it.
   */
  readonly coreClockHz?: number;
}

export interface ArchSampling {
  /** Where the PC is in QEMU's HMP `info registers` text; undefined without a QEMU target. */
  readonly monitorPc?: RegExp;
  /**
   * Whether a PC the monitor reads is a return token rather than an instruction address: on
   * Cortex-M, QEMU holds an EXC_RETURN or FNC_RETURN value in R15 while it completes the return
   * from an exception. Such reads are counted apart, never as code; undefined where the family has none.
   */
  readonly isReturnToken?: (pc: number) => boolean;
  /**
   * The address of a register the debug port reads while the core runs, holding a recently
   * executed PC (Cortex-M DWT_PCSR); undefined where the family has none.
   */
  readonly pcSampleRegister?: number;
  /** The on-target interrupt sampler (adapter/sampling/interruptTypes.ts); undefined where the family has none. */
  readonly interruptSampler?: InterruptSamplerArch;
}

export function isUnsupported<T extends object>(x: T | { unsupported: string }): x is { unsupported: string } {
  return 'unsupported' in x;
}
