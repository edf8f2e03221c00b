import type { ServerArgs, TargetFamily } from '../../common/launchArgs';
import { isUnsupported, type QemuMachine } from '../arch/archPlugin';
import { archFamilies, archPlugin } from '../arch/registry';
import type { MemoryRegion } from '../debugger/types';
import { CycleLensError, ErrorCode } from '../errors';

/**
 * What is known about the target before connecting, computed once per session from the launch
 * arguments and passed to the services that need it (docs/design.md, "Target facts"): the RAM map,
 * the counters that read as zero, and how many core-clock ticks an instruction takes.
 */
export interface TargetFacts {
  readonly family: TargetFamily;
  /** Set when the target is QEMU, whose quirks some counter units work around. */
  readonly emulator?: 'qemu';
  readonly qemu?: {
    readonly machine: string;
    /** `-icount shift=S` (an instruction takes 2^S ns of virtual time); undefined when icount is off. */
    readonly icountShift: number | undefined;
    /** Whether the machine's facts are known (a machine CycleLens was measured on). */
    readonly knownMachine: boolean;
  };
  /** The memory map when known before connecting (QEMU machines); otherwise the debugger's, asked later. */
  readonly memoryMap?: readonly MemoryRegion[];
  /** Counter units or registers that read as zero here (QEMU does not model them). */
  readonly zeroCounters: readonly string[];
  /**
   * Core-clock ticks per executed instruction (Cortex-M SysTick with CLKSOURCE = 1 counts these), when
   * the target fixes the ratio; otherwise why not. Values measured in ticks stay ticks without it.
   */
  readonly coreClockTicksPerInstruction: { fixed: true; value: number } | { fixed: false; reason: string };
}

const NS_PER_SECOND = 1e9;

/**
 * Ticks per instruction of a clock of `clockHz` under `-icount shift=S`. QEMU 7.2: an instruction
 * takes 2^S ns of virtual time, and timers count virtual time; so mps2-an386's 25 MHz SysTick ticks
 * once per 40 ns, i.e. 2^S / 40 ticks per instruction (1/40 at shift 0).
 */
export function ticksPerInstruction(clockHz: number, icountShift: number): number {
  return (2 ** icountShift * clockHz) / NS_PER_SECOND;
}

/**
 * The facts of a target as the launch configuration describes it. Throws when a QEMU launch asks
 * for what cannot work.
 */
export function computeTargetFacts(family: TargetFamily, server: ServerArgs): TargetFacts {
  const plugin = archPlugin(family);
  if (server.type !== 'qemu') {
    return {
      family,
      zeroCounters: [],
      coreClockTicksPerInstruction: {
        fixed: false,
        reason:
          `on ${server.type === 'openocd' ? 'a board reached through OpenOCD' : 'a remote target'} ` +
          `the core's cycles per instruction vary with the code and its memory`,
      },
    };
  }
  const qemu = plugin.qemu;
  if (isUnsupported(qemu)) throw new CycleLensError(ErrorCode.UnsupportedArchitecture, qemu.unsupported);
  const machineName = server.machine ?? qemu.defaultMachine;
  const machine: QemuMachine | undefined = qemu.machines[machineName];
  const icountShift = server.icount === null ? undefined : (server.icount ?? 0);
  return {
    family,
    emulator: 'qemu',
    qemu: { machine: machineName, icountShift, knownMachine: machine !== undefined },
    ...(machine ? { memoryMap: machine.memoryMap } : {}),
    zeroCounters: qemu.zeroCounters,
    coreClockTicksPerInstruction: clockRatio(machineName, machine, icountShift),
  };
}

/** The QEMU machines whose facts are known, by name, across every family. */
export function knownQemuMachines(): ReadonlyMap<string, QemuMachine> {
  const out = new Map<string, QemuMachine>();
  for (const family of archFamilies) {
    const qemu = archPlugin(family).qemu;
    if (!isUnsupported(qemu)) for (const [name, machine] of Object.entries(qemu.machines)) out.set(name, machine);
  }
  return out;
}

/** The memory map of a known QEMU machine (undefined for others). */
export function qemuMemoryMap(machine: string): readonly MemoryRegion[] | undefined {
  return knownQemuMachines().get(machine)?.memoryMap;
}

function clockRatio(
  machineName: string,
  machine: QemuMachine | undefined,
  icountShift: number | undefined,
): TargetFacts['coreClockTicksPerInstruction'] {
  if (!machine)
    return {
      fixed: false,
      reason:
        `the core clock of QEMU machine ${machineName} is not known to CycleLens ` +
        `(known: ${[...knownQemuMachines().keys()].join(', ')})`,
    };
  if (machine.coreClockHz === undefined)
    return { fixed: false, reason: `QEMU machine ${machineName} has no core-clock counter` };
  if (icountShift === undefined) {
    return {
      fixed: false,
      reason:
        'QEMU runs without -icount ("icount": null), so virtual time follows the host and a tick ' +
        'stands for no fixed number of instructions; set "server.icount" to a shift from 0 to 10',
    };
  }
  return { fixed: true, value: ticksPerInstruction(machine.coreClockHz, icountShift) };
}
