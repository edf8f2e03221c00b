/**
 * What kind of memory an address is: patches may only be written where a debugger write sticks
 * (RAM). Sources, best first: the gdbserver's memory map (Debugger.memoryRegions, which OpenOCD
 * fills with its flash banks), the known maps of the QEMU machines, and the architecture's default map.
 */
import type { MemoryKind, MemoryRegion } from '../../debugger/types';

export type { MemoryKind, MemoryRegion };

const KiB = 1024;
const MiB = 1024 * KiB;

/**
 * QEMU 7.2 machines of the fixtures. mps2-an386: code memory is SSRAM1 (4 MiB at 0, writable
 * through the gdbstub), data SSRAM2/3 at 0x20000000. virt: DRAM at 0x80000000 (128 MiB default).
 */
export const QEMU_MEMORY_MAPS: Readonly<Record<string, readonly MemoryRegion[]>> = {
  'mps2-an386': [
    { start: 0x00000000, size: 4 * MiB, kind: 'ram', name: 'SSRAM1 (code)' },
    { start: 0x20000000, size: 4 * MiB, kind: 'ram', name: 'SSRAM2/3' },
  ],
  virt: [{ start: 0x80000000, size: 128 * MiB, kind: 'ram', name: 'DRAM' }],
};

/** The kind of [address, address + length); 'unknown' when no region covers it. */
export function memoryKindAt(map: readonly MemoryRegion[] | undefined, address: number, length = 1, family?: 'riscv' | 'cortex-m'): MemoryKind {
  const r = map?.find((x) => address >= x.start && address + length <= x.start + x.size);
  if (r) return r.kind;
  // ARMv7-M B3.1 default memory map: the Code region (0x00000000-0x1FFFFFFF) is where parts put
  // their flash. Without a map that says otherwise, treat it as flash.
  if (!map?.length && family === 'cortex-m' && address < 0x20000000) return 'flash';
  return 'unknown';
}
