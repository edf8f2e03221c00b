import { MINSTRET } from '../../probe/injection/types';
import type { ArchPlugin } from '../archPlugin';
import { qemuHpmEvents, RiscvCounters } from './counters';
import { rv32InterruptSampler } from './interruptSamplerRv32';
import { riscvCoreRegisters } from './registers';
import { Rv32Codec } from './rvDecoder';
import { Rv32Relocator } from './rvRelocator';
import { rv32InjectionArch, rv32InjectionSupport } from './trampolineRv32';

const MiB = 1024 * 1024;
const rvArch = rv32InjectionArch();

/** RISC-V RV32IMC, machine mode, ILP32. */
export const riscvPlugin: ArchPlugin = {
  family: 'riscv',
  displayName: 'RISC-V',
  // RV32 with C: 16- or 32-bit instructions, halfword aligned.
  traits: { coreRegisters: riscvCoreRegisters, maxInstructionLength: 4, instructionAlignment: 2 },
  codec: new Rv32Codec(),
  relocator: new Rv32Relocator(),
  abi: {
    returnAddressRegister: 'ra',
    // A trap handler's frame is unwound through ra, the interrupted function's own return address.
    interruptedPcRegister: 'mepc',
    freeAtEntry: rvArch.freeAtEntry,
    ...(rvArch.liveness ? { stubClobbers: rvArch.liveness.stubClobbers } : {}),
    threadPointerRegister: 'tp',
    returnHooks:
      'ra is redirected to the exit stub at entry (any link register a call names: rd of ' +
      'jal/jalr); trap handlers return with mret and are measured through their own entry.',
  },
  createCounterUnits: (access, options) => [
    new RiscvCounters(access, options.emulator === 'qemu' ? { hpmEvents: qemuHpmEvents, virtualClock: true } : {}),
  ],
  injection: {
    arch: () => rv32InjectionArch(),
    // minstret counts instructions: one unit per payload instruction on every target.
    support: () => ({ support: rv32InjectionSupport(MINSTRET) }),
  },
  callGraph: { disassembly: () => rv32InjectionArch() },
  qemu: {
    binary: 'qemu-system-riscv32',
    debianPackage: 'qemu-system-misc',
    defaultMachine: 'virt',
    // picolibc's `--oslib=semihost` (without it its `ebreak` sequence traps into the debugger); no BIOS.
    // The RTC on the virtual clock: the interrupt sampler's alarms then fire after exact instruction counts.
    args: ['-bios', 'none', '-semihosting-config', 'enable=on,target=native', '-rtc', 'clock=vm'],
    machines: {
      // virt: DRAM at 0x80000000 (128 MiB default). Its counters count instructions themselves.
      virt: { memoryMap: [{ start: 0x80000000, size: 128 * MiB, kind: 'ram', name: 'DRAM' }] },
    },
    // QEMU 7.2 counts only its two SBI events (cycles, instructions) on mhpmcounter3..; programmed
    // with any other selector, a counter reads zero (counters.ts).
    zeroCounters: ['mhpmcounter3..31 with selectors other than 1 (cycles) and 2 (instructions)'],
  },
  defaultGdb: 'gdb-multiarch',
  lldb: { unsupported: 'LLDB 14 has no RISC-V support: use `"debugger": "gdb"` in the launch configuration.' },
  // QEMU 7.2 prints ` pc       80000e40` in `info registers`.
  sampling: { monitorPc: /(?:^|\n)\s*pc\s+([0-9a-f]{8,16})\b/i, interruptSampler: rv32InterruptSampler },
  defaultMemoryKind: () => undefined,
};
