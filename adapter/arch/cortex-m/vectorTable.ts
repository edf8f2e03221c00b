import type { ElfImage } from '../../elf';

/**
 * The handlers a Cortex-M vector table names (ARMv7-M B1.5.3): word 0 is the initial stack pointer,
 * word 1 the reset handler, words 2-15 the system exceptions, and the external interrupts follow.
 * The table is found in the image's read-only contents as the one whose word 1 is the ELF's entry
 * point with the Thumb bit set, wherever the linker put it (0x0 on QEMU's mps2 boards, the start of
 * flash elsewhere). Reading stops at the first word that is neither 0 (a reserved entry) nor a
 * function's entry with the Thumb bit set, and after 16 + 496 entries, the architecture's most.
 */

const MAX_ENTRIES = 16 + 496;

/** Entry addresses (Thumb bit cleared) of the exception and interrupt handlers, the reset handler left out. */
export function vectorTableHandlers(image: ElfImage, isFunctionEntry: (address: number) => boolean): number[] {
  const contents = image.readOnlyContents() ?? [];
  const entry = image.header.entry | 1;
  for (const c of [...contents].sort((a, b) => a.address - b.address)) {
    if (c.address % 4 !== 0 || c.bytes.length < 8) continue;
    const view = new DataView(c.bytes.buffer, c.bytes.byteOffset, c.bytes.byteLength);
    if (view.getUint32(4, true) !== entry) continue;
    const handlers = new Set<number>();
    for (let i = 2; i < MAX_ENTRIES && 4 * i + 4 <= c.bytes.length; i++) {
      const word = view.getUint32(4 * i, true);
      if (word === 0) continue;
      if ((word & 1) !== 1 || !isFunctionEntry(word - 1)) break;
      if (word !== entry) handlers.add(word - 1);
    }
    return [...handlers];
  }
  return [];
}
