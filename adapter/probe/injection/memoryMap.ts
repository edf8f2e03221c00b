/**
 * What kind of memory an address is: patches may only be written where a debugger write sticks
 * (RAM). Sources, best first: the gdbserver's memory map (GDB `info mem`, which OpenOCD fills
 * with its flash banks), the known maps of the QEMU machines, and the architecture's default map.
 */
export type MemoryKind = 'ram' | 'flash' | 'rom' | 'unknown';

export interface MemoryRegion {
  start: number;
  size: number;
  kind: MemoryKind;
  name?: string;
}

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

/**
 * Parses GDB's `info mem` (from the target's memory-map XML), e.g.
 *   0   y   0x00000000 0x00100000 flash blocksize 0x800 nocache
 *   1   y   0x20000000 0x20020000 rw nocache
 */
export function parseGdbMemoryMap(text: string): MemoryRegion[] {
  const out: MemoryRegion[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*\d+\s+[yn]\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(.*)$/i.exec(line);
    if (!m) continue;
    const start = parseInt(m[1]!, 16);
    const end = parseInt(m[2]!, 16);
    const attrs = m[3]!.toLowerCase().split(/\s+/);
    const kind: MemoryKind = attrs.includes('flash') ? 'flash' : attrs.includes('ro') ? 'rom' : attrs.includes('rw') ? 'ram' : 'unknown';
    out.push({ start, size: end - start, kind });
  }
  return out;
}

/** The kind of [address, address + length); 'unknown' when no region covers it. */
export function memoryKindAt(map: readonly MemoryRegion[] | undefined, address: number, length = 1, family?: 'riscv' | 'cortex-m'): MemoryKind {
  const r = map?.find((x) => address >= x.start && address + length <= x.start + x.size);
  if (r) return r.kind;
  // ARMv7-M B3.1 default memory map: the Code region (0x00000000-0x1FFFFFFF) is where parts put
  // their flash. Without a map that says otherwise, treat it as flash.
  if (!map?.length && family === 'cortex-m' && address < 0x20000000) return 'flash';
  return 'unknown';
}
