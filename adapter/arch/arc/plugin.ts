import type { ArchPlugin } from '../archPlugin';
import { ArcCodec } from './arcIsaDecoder';
import { ArcRelocator } from './arcIsaRelocator';
import { DeferredAuxAccess } from './auxAccess';
import { ArcPctUnit } from './pctCounters';
import { arcCoreRegisters } from './registers';

/** ARCv2 (ARC EM/HS), through nSIM or a board's gdbserver. */
export const arcPlugin: ArchPlugin = {
  family: 'arc',
  displayName: 'ARC',
  // ARCv2: 16/32-bit plus a 32-bit long immediate.
  traits: { coreRegisters: arcCoreRegisters, maxInstructionLength: 8, instructionAlignment: 2 },
  codec: new ArcCodec(),
  relocator: new ArcRelocator(),
  abi: {
    returnAddressRegister: 'blink',
    returnHooks: 'none yet: functions are not patched on ARC.',
  },
  createCounterUnits: (access) => [new ArcPctUnit(new DeferredAuxAccess(access))],
  injection: {
    unsupported:
      'Injected measurements are not available on ARC yet: use breakpoint-bounded measurements ' +
      '(Measure Selected Lines) with the PCT counters.',
  },
  callGraph: {
    unsupported:
      'there is no static disassembly for ARC yet, so there is no call graph (Cortex-M and RV32 are supported)',
  },
  qemu: {
    unsupported:
      'QEMU has no ARC target. Use `"server": { "type": "remote", "address": "host:port" }` with ' +
      "nSIM's or a board's gdbserver instead.",
  },
  defaultGdb: 'arc-elf32-gdb',
  lldb: {
    unsupported: 'LLDB has no ARC target: use `"debugger": "gdb"` (with arc-elf32-gdb) in the launch configuration.',
  },
  sampling: {},
  defaultMemoryKind: () => undefined,
};
