/**
 * Reading linked 32-bit little-endian firmware images: ELF structure, symbols and the DWARF
 * line table, in pure TypeScript (the adapter never shells out to binutils).
 */
export { ElfImage } from './elfImage';
export type { ElfHeader, SectionHeader, Segment } from './elfFile';
export {
  ElfFile,
  EM_ARM,
  EM_ARCV2,
  EM_ARC_COMPACT,
  EM_ARC_COMPACT3,
  EM_RISCV,
  PF_R,
  PF_W,
  PF_X,
  SHF_ALLOC,
  SHF_EXECINSTR,
  SHF_WRITE,
} from './elfFile';
export type { ElfSymbol, SymbolBinding, SymbolKind } from './symbols';
export { SymbolTable } from './symbols';
export type { LineProgram, LineRow } from './dwarfLine';
export type { LineRange, SourceLocation } from './lineTable';
export { LineTable } from './lineTable';
