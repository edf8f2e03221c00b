import type { MemoryKind, MemoryRegion } from '../types';

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
    const kind: MemoryKind = attrs.includes('flash')
      ? 'flash'
      : attrs.includes('ro')
        ? 'rom'
        : attrs.includes('rw')
          ? 'ram'
          : 'unknown';
    out.push({ start, size: end - start, kind });
  }
  return out;
}
