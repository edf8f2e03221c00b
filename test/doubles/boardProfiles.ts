import type { FixtureTarget } from '../support/paths';

/**
 * TEST DOUBLE support — part profiles for the board double (boardDouble.ts): what a real part's
 * flash, RAM and debug comparators look like, taken from its reference manual or datasheet, so that
 * the double refuses and delays what that part's probe would. Each fact names its source; a figure
 * the source gives only as a maximum says so.
 *
 * The core behind the profile is QEMU's (mps2-an386's Cortex-M4, virt's RV32), so a profile is only
 * offered for the QEMU target whose core it matches: a Cortex-M4 part on `cortex-m4`, a RISC-V part
 * on `rv32`. QEMU runs the instructions; the profile decides the memory map, flash and comparators.
 */

/** A run of equal sectors, in address order. */
export interface SectorRun {
  count: number;
  size: number;
  /** Modelled time of one sector erase, in milliseconds (datasheet figure; see `sources`). */
  eraseMs: number;
}

export interface FlashProfile {
  /** The part's own flash address (where its reference manual puts the main flash). */
  base: number;
  sectors: readonly SectorRun[];
  /** Bytes the flash controller programs at once; writes are padded with 0xFF to this unit. */
  programUnit: number;
  /** Modelled time to program one unit, in microseconds. */
  programUnitUs: number;
  /**
   * How often a program unit may be written between two erases (nRF52840: twice per word). Absent:
   * any number of times, as long as every write only clears bits.
   */
  writesPerErase?: number;
}

/**
 * Breakpoint and watchpoint comparators. `separate`: Cortex-M's FPB (instruction comparators) and
 * DWT (data comparators) are two units. `shared`: RISC-V's trigger module, where each trigger is an
 * execute match (a breakpoint) or a load/store match (a watchpoint), taken from one pool, as
 * OpenOCD's riscv target allocates them.
 */
export type Comparators =
  | {
      kind: 'separate';
      breakpoints: number;
      watchpoints: number;
      /**
       * FPB revision 1 (Cortex-M3/M4) compares only addresses in the Code region: a hardware
       * breakpoint at or above this address is refused (OpenOCD: "Cortex-M Flash Patch Breakpoint
       * rev.1 cannot handle HW breakpoint above address 0x1FFFFFFE").
       */
      breakpointsBelow?: number;
      /**
       * DWT comparators match an address under a mask: a watched range must be a power of two bytes
       * (up to 32 KiB) and aligned to its size (OpenOCD cortex_m_add_watchpoint).
       */
      watchpointsAligned: boolean;
    }
  | { kind: 'shared'; triggers: number };

/** The line OpenOCD prints when a Cortex-M halts after `reset halt` (armv7m_arch_state). */
export interface HaltReport {
  /** OpenOCD's target name in its `[name]` prefix, as the part's target script names it. */
  target: string;
  /** GDB register numbers in QEMU's M-profile target description: pc, sp and xPSR. */
  registers: { pc: number; sp: number; xpsr: number };
}

export interface PartProfile {
  name: PartName;
  title: string;
  /** The QEMU target whose core this part has. */
  target: FixtureTarget;
  /** The QEMU machine's code address, where the board double places the flash by default. */
  codeAddress: number;
  flash: FlashProfile;
  /** The part's own RAM, for reference (the served memory map marks every gap as RAM, as OpenOCD does). */
  ram: readonly { name: string; start: number; length: number }[];
  comparators: Comparators;
  haltReport?: HaltReport;
  /** Where every figure above comes from. */
  sources: readonly string[];
}

export type PartName = 'stm32f407' | 'nrf52840' | 'esp32c6';

const KiB = 1024;

const stm32f407: PartProfile = {
  name: 'stm32f407',
  title: 'STM32F407 (Cortex-M4F, 1 MiB flash in 12 sectors)',
  target: 'cortex-m4',
  codeAddress: 0x0,
  flash: {
    base: 0x0800_0000,
    sectors: [
      { count: 4, size: 16 * KiB, eraseMs: 250 },
      { count: 1, size: 64 * KiB, eraseMs: 550 },
      { count: 7, size: 128 * KiB, eraseMs: 1000 },
    ],
    programUnit: 4,
    programUnitUs: 16,
  },
  ram: [
    { name: 'SRAM1+SRAM2', start: 0x2000_0000, length: 128 * KiB },
    { name: 'CCM data RAM', start: 0x1000_0000, length: 64 * KiB },
  ],
  comparators: {
    kind: 'separate',
    breakpoints: 6,
    watchpoints: 4,
    breakpointsBelow: 0x2000_0000,
    watchpointsAligned: true,
  },
  haltReport: { target: 'stm32f4x.cpu', registers: { pc: 15, sp: 13, xpsr: 25 } },
  sources: [
    'RM0090 (STM32F405/415/407/417/427/437/429/439 reference manual) §3.3 "Embedded flash memory", its flash ' +
      'module organisation table: ' +
      'sectors 0-3 of 16 KiB, sector 4 of 64 KiB, sectors 5-11 of 128 KiB from 0x0800 0000; §2.3 memory map: ' +
      'SRAM1 112 KiB + SRAM2 16 KiB from 0x2000 0000, CCM 64 KiB at 0x1000 0000',
    'RM0090 §3.5.4 "Programming": successive writes may change bits from 1 to 0 without an erase; ' +
      'writing a 1 needs an erase',
    'DS8626 (STM32F405xx/407xx datasheet), "Flash memory programming" table, x32 parallelism, typical: ' +
      'word 16 µs; sector erase 250 ms (16 KiB), 550 ms (64 KiB), 1 s (128 KiB); maxima 100 µs, 500 ms, 1.1 s, 2 s',
    'Cortex-M4 Technical Reference Manual (r0p1), "Debug" chapter: FPB with 6 instruction comparators ' +
      '(and 2 literal), DWT with 4 comparators; ARMv7-M ARM C1.11: FPB revision 1 matches the Code region ' +
      '(below 0x2000 0000) only',
  ],
};

const nrf52840: PartProfile = {
  name: 'nrf52840',
  title: 'nRF52840 (Cortex-M4F, 1 MiB flash in 256 pages of 4 KiB)',
  target: 'cortex-m4',
  codeAddress: 0x0,
  flash: {
    base: 0x0,
    sectors: [{ count: 256, size: 4 * KiB, eraseMs: 85 }],
    programUnit: 4,
    programUnitUs: 41,
    writesPerErase: 2,
  },
  ram: [{ name: 'RAM', start: 0x2000_0000, length: 256 * KiB }],
  comparators: {
    kind: 'separate',
    breakpoints: 6,
    watchpoints: 4,
    breakpointsBelow: 0x2000_0000,
    watchpointsAligned: true,
  },
  haltReport: { target: 'nrf52.cpu', registers: { pc: 15, sp: 13, xpsr: 25 } },
  sources: [
    'nRF52840 Product Specification, "Memory" and "NVMC - Non-volatile memory controller": 1 MiB flash of ' +
      '256 pages of 4 KiB at 0x0, 256 KiB RAM at 0x2000 0000; only 1s can be written to 0s, a word at most ' +
      'twice (nWRITE) between erases',
    'nRF52840 Product Specification, NVMC electrical specification, maxima (no typical given): ' +
      'tWRITE 41 µs per word, tERASEPAGE 85 ms',
    'Cortex-M4 Technical Reference Manual (r0p1), "Debug" chapter: FPB with 6 instruction comparators, DWT with 4 ' +
      'comparators; ARMv7-M ARM C1.11: FPB revision 1 matches the Code region only',
  ],
};

const esp32c6: PartProfile = {
  name: 'esp32c6',
  title: 'ESP32-C6-like (RV32IMAC, SPI NOR flash in 4 KiB sectors, 4 triggers)',
  target: 'rv32',
  codeAddress: 0x8000_0000,
  flash: {
    base: 0x4200_0000,
    // The first MiB of the part's 4 MiB: QEMU virt's fixtures keep their RAM 1 MiB above the code.
    sectors: [{ count: 256, size: 4 * KiB, eraseMs: 45 }],
    programUnit: 256,
    programUnitUs: 400,
  },
  ram: [
    { name: 'HP SRAM', start: 0x4080_0000, length: 512 * KiB },
    { name: 'LP SRAM', start: 0x5000_0000, length: 16 * KiB },
  ],
  comparators: { kind: 'shared', triggers: 4 },
  sources: [
    'ESP32-C6 Technical Reference Manual §"System and Memory": external flash mapped through the cache from ' +
      '0x4200 0000, HP SRAM 512 KiB at 0x4080 0000, LP SRAM 16 KiB at 0x5000 0000',
    'ESP-IDF "JTAG Debugging", "Tips and Quirks": ESP32-C6 has 4 hardware breakpoints and 4 watchpoints ' +
      '(RISC-V Debug Specification 0.13 §5: triggers are one pool, each an execute or a load/store match)',
    'Winbond W25Q32JV datasheet, AC electrical characteristics (a 4 MiB SPI NOR of the kind such modules carry), ' +
      'typical: sector erase (4 KiB) 45 ms, page program (256 bytes) 0.4 ms; a program only turns 1s into 0s',
  ],
};

export const PART_PROFILES: Readonly<Record<PartName, PartProfile>> = { stm32f407, nrf52840, esp32c6 };

/** The profile a QEMU target gets when none is named. */
export const DEFAULT_PROFILE: Readonly<Record<FixtureTarget, PartName>> = { 'cortex-m4': 'stm32f407', rv32: 'esp32c6' };

/**
 * Where the flash sits. `code` (default): at the QEMU machine's code address, so the firmware runs
 * from flash. `own`: at the part's own flash address, with QEMU's code memory served as RAM: a build
 * that runs from RAM (as an STM32F4 booted from SRAM, which RM0090 §2.4 aliases at 0x0; or code in
 * an ESP32's IRAM).
 */
export type FlashPlacement = 'code' | 'own';

export interface FlashSector {
  index: number;
  start: number;
  size: number;
  eraseMs: number;
}

export interface BoardLayout {
  profile: PartProfile;
  placement: FlashPlacement;
  flashStart: number;
  flashSize: number;
  sectors: readonly FlashSector[];
  /** Whether QEMU has memory under the flash: then programmed bytes are mirrored there, and run. */
  flashBackedByQemu: boolean;
}

export function flashSize(profile: PartProfile): number {
  return profile.flash.sectors.reduce((sum, run) => sum + run.count * run.size, 0);
}

/** The profile's sectors at their addresses for a placement. */
export function boardLayout(profile: PartProfile, placement: FlashPlacement = 'code'): BoardLayout {
  if (placement === 'own' && profile.flash.base === profile.codeAddress) {
    throw new Error(
      `${profile.name} has its flash at 0x${profile.flash.base.toString(16)}, where the QEMU machine has its code: ` +
        'a RAM-resident build needs a part whose flash lies elsewhere (stm32f407 on cortex-m4, esp32c6 on rv32).',
    );
  }
  const start = placement === 'code' ? profile.codeAddress : profile.flash.base;
  const sectors: FlashSector[] = [];
  let at = start;
  for (const run of profile.flash.sectors) {
    for (let i = 0; i < run.count; i++) {
      sectors.push({ index: sectors.length, start: at, size: run.size, eraseMs: run.eraseMs });
      at += run.size;
    }
  }
  return {
    profile,
    placement,
    flashStart: start,
    flashSize: at - start,
    sectors,
    flashBackedByQemu: placement === 'code',
  };
}

/** The profile named `name`, checked against the QEMU target it is to run on. */
export function partProfile(name: string, target: FixtureTarget): PartProfile {
  const profile = (PART_PROFILES as Record<string, PartProfile | undefined>)[name];
  if (!profile) throw new Error(`unknown part profile '${name}': choose ${Object.keys(PART_PROFILES).join(', ')}`);
  if (profile.target !== target) {
    throw new Error(
      `${profile.title} has the core of QEMU's ${profile.target}, not ${target}: ` +
        `choose ${Object.values(PART_PROFILES)
          .filter((p) => p.target === target)
          .map((p) => p.name)
          .join(' or ')}`,
    );
  }
  return profile;
}
