import type { FlashSector } from './boardProfiles';

/**
 * TEST DOUBLE support — the memory map a probe's gdbserver serves (`qXfer:memory-map:read`), in
 * GDB's memory-map format (GDB manual, "Memory Map Format"; DTD `gdb-memory-map.dtd`): one
 * `flash` element per run of equal sectors, with its `blocksize`, and, as OpenOCD's
 * gdb_memory_map() does, every address outside the flash as `ram`, so that GDB (whose
 * `mem inaccessible-by-default` is on once a map exists) may still reach RAM and peripherals.
 */
export function memoryMapXml(sectors: readonly FlashSector[], addressSpaceEnd = 0x1_0000_0000): string {
  const lines = [
    '<?xml version="1.0"?>',
    '<!DOCTYPE memory-map PUBLIC "+//IDN gnu.org//DTD GDB Memory Map V1.0//EN" ' +
      '"http://sourceware.org/gdb/gdb-memory-map.dtd">',
    '<memory-map>',
  ];
  const first = sectors[0];
  const last = sectors[sectors.length - 1];
  if (!first || !last) throw new Error('a flash without sectors');
  if (first.start > 0) lines.push(ram(0, first.start));
  let run: { start: number; length: number; blocksize: number } | undefined;
  const flush = (): void => {
    if (!run) return;
    lines.push(
      `<memory type="flash" start="${addr(run.start)}" length="${addr(run.length)}">` +
        `<property name="blocksize">0x${run.blocksize.toString(16)}</property></memory>`,
    );
    run = undefined;
  };
  for (const s of sectors) {
    if (run && run.blocksize === s.size && run.start + run.length === s.start) run.length += s.size;
    else {
      flush();
      run = { start: s.start, length: s.size, blocksize: s.size };
    }
  }
  flush();
  const end = last.start + last.size;
  if (end < addressSpaceEnd) lines.push(ram(end, addressSpaceEnd - end));
  lines.push('</memory-map>');
  return lines.join('\n');
}

function ram(start: number, length: number): string {
  return `<memory type="ram" start="${addr(start)}" length="${addr(length)}"/>`;
}

/** OpenOCD prints addresses as `0x%8.8lx`. */
function addr(value: number): string {
  return `0x${value.toString(16).padStart(8, '0')}`;
}
