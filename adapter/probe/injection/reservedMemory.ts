import type { ElfImage } from '../../elf';
import { hex, refusal } from './errors';
import type { MemoryRegion } from './memoryMap';
import type { InjectionRefusal, ReservedMemory } from './types';

/** Smallest useful reservation: control block, shadow stack, runtime and a few measurements. */
export const MINIMUM_RESERVED = 2048;
/** How much of an unused gap the injector takes: room for hundreds of stubs. */
const UNUSED_GAP_USED = 64 * 1024;

const START_SYMBOL = '__cyclelens_scratch_start';
const END_SYMBOL = '__cyclelens_scratch_end';

export interface ReservedMemoryRequest {
  /** From the launch configuration: takes precedence. */
  launch?: { start: number; size: number };
  /** RAM regions of the target, for the last resort (a gap no section occupies). */
  memoryMap?: readonly MemoryRegion[];
  minimumSize?: number;
}

/**
 * The RAM the injector may own, in order: the launch configuration, the linker symbols
 * `__cyclelens_scratch_start`/`__cyclelens_scratch_end`, or (with a warning) a gap in RAM that no
 * section of the ELF occupies and that lies below the stack and heap symbols. A refusal says how
 * to reserve memory.
 */
export function resolveReservedMemory(
  elf: ElfImage,
  req: ReservedMemoryRequest = {},
): ReservedMemory | InjectionRefusal {
  const minimum = req.minimumSize ?? MINIMUM_RESERVED;
  const occupied = elf.sections
    .filter((s) => (s.flags & 0x2) !== 0 && s.size > 0)
    .map((s) => ({ start: s.addr, end: s.addr + s.size, name: s.name }));
  // Initial data copied at start-up lies at its load address too (picolibc on virt: right after the
  // code), which no section names: a run that restarts the program copies it again.
  for (const p of elf.loadSegments) {
    if (p.paddr !== p.vaddr && p.fileSize > 0)
      occupied.push({
        start: p.paddr,
        end: p.paddr + p.fileSize,
        name: `${elf.sections.find((x) => x.addr === p.vaddr)?.name ?? hex(p.vaddr)} load image`,
      });
  }
  const overlap = (start: number, end: number): string | undefined =>
    occupied.find((o) => o.name !== '.cyclelens_scratch' && start < o.end && o.start < end)?.name;

  if (req.launch) {
    const { start, size } = req.launch;
    if (!Number.isInteger(start) || !Number.isInteger(size) || size <= 0) {
      return refusal(
        'memory',
        `The reserved memory in the launch configuration (start ${start}, size ${size}) is not a valid address range.`,
      );
    }
    const hit = overlap(start, start + size);
    if (hit)
      return refusal(
        'memory',
        `The reserved memory ${hex(start)}-${hex(start + size)} from the launch configuration ` +
          `overlaps the program's ${hit} section; reserve RAM the program does not use.`,
        start,
      );
    if (size < minimum)
      return refusal(
        'memory',
        `The reserved memory from the launch configuration is ${size} bytes; the injector needs at least ${minimum}.`,
        start,
      );
    return { start, size, source: 'launch' };
  }

  const s = elf.symbols.named(START_SYMBOL)[0];
  const e = elf.symbols.named(END_SYMBOL)[0];
  if (s && e) {
    if (e.address <= s.address)
      return refusal(
        'memory',
        `${END_SYMBOL} (${hex(e.address)}) is not above ${START_SYMBOL} (${hex(s.address)}) in ${elf.path}.`,
      );
    const size = e.address - s.address;
    if (size < minimum)
      return refusal(
        'memory',
        `The linker reserves ${size} bytes between ${START_SYMBOL} and ${END_SYMBOL}; the injector ` +
          `needs at least ${minimum}.`,
        s.address,
      );
    return { start: s.address, size, source: 'linker' };
  }

  const found = findGap(elf, req.memoryMap ?? [], minimum, occupied);
  if (found) {
    // Only the start of the gap: the code usually ends right below it, and a cave that is small and
    // near lets RV32 patch with a 4-byte `jal` (+/-1 MiB, which must reach the whole cave) instead of
    // the 8-byte auipc + jalr, which more short functions cannot hold.
    const gap = { start: found.start, size: Math.min(found.size, UNUSED_GAP_USED) };
    return {
      ...gap,
      source: 'unused',
      warning:
        `No RAM is reserved for CycleLens; using ${gap.size} bytes at ${hex(gap.start)}, which no ` +
        `section of the ELF occupies. If the program uses that memory at run time (heap, stack, ` +
        `DMA), reserve RAM in the linker script (${START_SYMBOL}/${END_SYMBOL}) or in the launch ` +
        `configuration.`,
    };
  }
  return refusal(
    'memory',
    `No RAM is reserved for injected code: define ${START_SYMBOL} and ${END_SYMBOL} in the ` +
      `linker script (at least ${minimum} bytes the program never touches), or give the reserved ` +
      `memory in the launch configuration.`,
  );
}

/** The highest gap between sections inside a RAM region, below any stack/heap symbol above the sections. */
function findGap(
  elf: ElfImage,
  map: readonly MemoryRegion[],
  minimum: number,
  occupied: Array<{ start: number; end: number }>,
): { start: number; size: number } | undefined {
  const markers = [
    '_estack',
    '__stack_top',
    '__StackTop',
    '_end',
    'end',
    '__heap_start',
    '__HeapBase',
    '__end__',
    '_ebss',
  ]
    .map((n) => elf.symbols.named(n)[0]?.address)
    .filter((a): a is number => a !== undefined);
  let best: { start: number; size: number } | undefined;
  for (const r of map.filter((x) => x.kind === 'ram')) {
    const inside = occupied
      .filter((o) => o.end > r.start && o.start < r.start + r.size)
      .sort((a, b) => a.start - b.start);
    if (inside.length === 0) continue; // a region the program does not use at all may not be wired up
    const top = inside.reduce((m, o) => Math.max(m, o.end), 0);
    // Above the last section a heap or a stack may grow: stop below the lowest marker found there.
    const limit = Math.min(r.start + r.size, ...markers.filter((m) => m >= top));
    let at = r.start;
    for (const o of inside) {
      const gapEnd = Math.min(o.start, limit);
      if (gapEnd - at >= minimum && (!best || gapEnd - at > best.size))
        best = { start: align16(at), size: (gapEnd - align16(at)) & ~15 };
      at = Math.max(at, o.end);
    }
    if (limit === r.start + r.size && markers.every((m) => m < top)) continue; // nothing says the end of RAM is free
    if (limit - at >= minimum && (!best || limit - at > best.size))
      best = { start: align16(at), size: (limit - align16(at)) & ~15 };
  }
  return best;
}

const align16 = (a: number): number => ((a + 15) & ~15) >>> 0;
