/**
 * What kind of memory an address is: patches may only be written where a debugger write sticks
 * (RAM). Sources, best first: the gdbserver's memory map (Debugger.memoryRegions, which OpenOCD
 * fills with its flash banks), the known maps of the QEMU machines (TargetFacts.memoryMap), and the
 * architecture's default map (ArchPlugin.defaultMemoryKind).
 */
import type { TargetFamily } from '../../../common/launchArgs';
import { archPlugin } from '../../arch/registry';
import type { MemoryKind, MemoryRegion } from '../../debugger/types';

export type { MemoryKind, MemoryRegion };

/** The kind of [address, address + length); 'unknown' when no region covers it. */
export function memoryKindAt(
  map: readonly MemoryRegion[] | undefined,
  address: number,
  length = 1,
  family?: TargetFamily,
): MemoryKind {
  const r = map?.find((x) => address >= x.start && address + length <= x.start + x.size);
  if (r) return r.kind;
  if (!map?.length && family !== undefined) return archPlugin(family).defaultMemoryKind(address) ?? 'unknown';
  return 'unknown';
}
