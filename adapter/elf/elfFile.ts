import { ByteCursor, stringAt } from './byteCursor';
import type { TargetFamily } from '../../common/launchArgs';
import { corrupt, notAnElf, RELINK_HINT, unsupportedArchitecture } from './errors';

/** e_machine values (System V gABI registry; EM_ARC_COMPACT3 from binutils include/elf/common.h). */
export const EM_ARM = 40;
export const EM_ARC_COMPACT = 93;
export const EM_ARCV2 = 195;
export const EM_RISCV = 243;
export const EM_ARC_COMPACT3 = 255;

const FAMILY_BY_MACHINE: ReadonlyMap<number, TargetFamily> = new Map<number, TargetFamily>([
  [EM_ARM, 'cortex-m'],
  [EM_RISCV, 'riscv'],
  [EM_ARC_COMPACT, 'arc'],
  [EM_ARCV2, 'arc'],
  [EM_ARC_COMPACT3, 'arc'],
]);

/** Names of e_machine values a user is likely to point us at by mistake. */
const MACHINE_NAMES: ReadonlyMap<number, string> = new Map([
  [3, 'x86 (EM_386)'],
  [8, 'MIPS (EM_MIPS)'],
  [20, 'PowerPC (EM_PPC)'],
  [40, 'Arm (EM_ARM)'],
  [45, 'Argonaut RISC Core (EM_ARC)'],
  [62, 'x86-64 (EM_X86_64)'],
  [83, 'AVR (EM_AVR)'],
  [94, 'Tensilica Xtensa (EM_XTENSA)'],
  [105, 'TI MSP430 (EM_MSP430)'],
  [183, 'AArch64 (EM_AARCH64)'],
  [243, 'RISC-V (EM_RISCV)'],
]);

export const ET_REL = 1;
export const ET_EXEC = 2;
export const ET_DYN = 3;

export const SHT_NULL = 0;
export const SHT_PROGBITS = 1;
export const SHT_SYMTAB = 2;
export const SHT_STRTAB = 3;
export const SHT_NOBITS = 8;
export const SHT_DYNSYM = 11;

export const SHF_WRITE = 0x1;
export const SHF_ALLOC = 0x2;
export const SHF_EXECINSTR = 0x4;

export const PT_LOAD = 1;
export const PF_X = 0x1;
export const PF_W = 0x2;
export const PF_R = 0x4;

export interface ElfHeader {
  /** e_machine as found in the file. */
  readonly machine: number;
  readonly family: TargetFamily;
  /** e_type: ET_EXEC for linked firmware. */
  readonly type: number;
  /** e_entry. On Arm the Thumb bit is cleared here; `entryIsThumb` keeps it. */
  readonly entry: number;
  readonly entryIsThumb: boolean;
  /** e_flags (EF_ARM_* ABI version and float ABI, EF_RISCV_RVC/float ABI, ARC CPU flags). */
  readonly flags: number;
}

export interface SectionHeader {
  readonly index: number;
  readonly name: string;
  readonly type: number;
  readonly flags: number;
  readonly addr: number;
  readonly offset: number;
  readonly size: number;
  readonly link: number;
  readonly info: number;
  readonly addralign: number;
  readonly entsize: number;
}

export interface Segment {
  readonly type: number;
  readonly offset: number;
  readonly vaddr: number;
  /** Load address: differs from vaddr for code or data copied from flash to RAM at start-up. */
  readonly paddr: number;
  readonly fileSize: number;
  readonly memSize: number;
  /** PF_R | PF_W | PF_X bits. */
  readonly flags: number;
  readonly align: number;
}

/** The parsed structure of a 32-bit little-endian ELF file: header, sections, segments. */
export class ElfFile {
  readonly header: ElfHeader;
  readonly sections: readonly SectionHeader[];
  readonly segments: readonly Segment[];
  private readonly byName = new Map<string, SectionHeader>();
  private code: SectionHeader[] | undefined;

  constructor(
    readonly bytes: Uint8Array,
    readonly fileName: string,
  ) {
    this.header = readHeader(bytes, fileName);
    const c = new ByteCursor(bytes);
    c.pos = 0x18 + 4; // e_phoff (after e_entry)
    const phoff = c.u32();
    const shoff = c.u32();
    c.skip(4 + 2); // e_flags, e_ehsize
    const phentsize = c.u16();
    let phnum = c.u16();
    const shentsize = c.u16();
    let shnum = c.u16();
    let shstrndx = c.u16();

    let section0: RawSection | undefined;
    if (shoff !== 0) {
      if (shentsize < 40)
        throw notAnElf(fileName, `has a bad section header size (e_shentsize ${shentsize}, expected 40)`, RELINK_HINT);
      section0 = readSectionHeader(bytes, fileName, shoff, 0);
      // Extended numbering (gABI): the real counts live in section 0 when they overflow 16 bits.
      if (shnum === 0) shnum = section0.size;
      if (shstrndx === 0xffff) shstrndx = section0.link;
      if (phnum === 0xffff) phnum = section0.info;
    }
    if (shoff !== 0 && shoff + shnum * shentsize > bytes.length) {
      throw notAnElf(
        fileName,
        `is truncated: its section headers (${shnum} at offset 0x${shoff.toString(16)}) run past ` +
          `the end of the file (${bytes.length} bytes)`,
        RELINK_HINT,
      );
    }
    const raw: RawSection[] = [];
    for (let i = 0; i < (shoff === 0 ? 0 : shnum); i++)
      raw.push(i === 0 && section0 ? section0 : readSectionHeader(bytes, fileName, shoff + i * shentsize, i));
    const names = shstrndx < raw.length ? raw[shstrndx]! : undefined;
    const nameTable =
      names && names.type !== SHT_NOBITS
        ? this.sliceChecked(names.offset, names.size, 'the section name table')
        : undefined;
    const sections: SectionHeader[] = raw.map(({ nameOffset, ...s }) => {
      let name = '';
      if (nameTable && s.index !== 0) {
        try {
          name = stringAt(nameTable, nameOffset);
        } catch (err) {
          throw corrupt(fileName, `the name of section ${s.index}`, err);
        }
      }
      return { ...s, name };
    });
    for (const s of sections) if (s.name && !this.byName.has(s.name)) this.byName.set(s.name, s);
    this.sections = sections;

    if (phoff !== 0 && phnum > 0) {
      if (phentsize < 32)
        throw notAnElf(fileName, `has a bad program header size (e_phentsize ${phentsize}, expected 32)`, RELINK_HINT);
      if (phoff + phnum * phentsize > bytes.length) {
        throw notAnElf(
          fileName,
          `is truncated: its program headers run past the end of the file (${bytes.length} bytes)`,
          RELINK_HINT,
        );
      }
    }
    const segments: Segment[] = [];
    for (let i = 0; i < (phoff === 0 ? 0 : phnum); i++) {
      const p = new ByteCursor(bytes, phoff + i * phentsize, phoff + i * phentsize + 32);
      segments.push({
        type: p.u32(),
        offset: p.u32(),
        vaddr: p.u32(),
        paddr: p.u32(),
        fileSize: p.u32(),
        memSize: p.u32(),
        flags: p.u32(),
        align: p.u32(),
      });
    }
    this.segments = segments;
  }

  section(name: string): SectionHeader | undefined {
    return this.byName.get(name);
  }

  /** The file bytes of a section (empty for SHT_NOBITS such as .bss). */
  sectionData(s: SectionHeader): Uint8Array {
    if (s.type === SHT_NOBITS || s.type === SHT_NULL) return new Uint8Array(0);
    return this.sliceChecked(s.offset, s.size, `section ${s.name || s.index}`);
  }

  /** PT_LOAD segments: what the loader (or the flash programmer) places in memory. */
  get loadSegments(): Segment[] {
    return this.segments.filter((p) => p.type === PT_LOAD);
  }

  /** Allocated sections holding instructions, by address. */
  get codeSections(): readonly SectionHeader[] {
    this.code ??= this.sections
      .filter((s) => (s.flags & SHF_ALLOC) !== 0 && (s.flags & SHF_EXECINSTR) !== 0 && s.size > 0)
      .sort((a, b) => a.addr - b.addr);
    return this.code;
  }

  /**
   * Reads `length` bytes of initialised memory at `address` (from the section that holds it), or
   * undefined when that memory has no file contents.
   */
  readMemory(address: number, length: number): Uint8Array | undefined {
    for (const s of this.sections) {
      if ((s.flags & SHF_ALLOC) === 0 || s.type === SHT_NOBITS) continue;
      if (address >= s.addr && address + length <= s.addr + s.size) {
        return this.sectionData(s).subarray(address - s.addr, address - s.addr + length);
      }
    }
    return undefined;
  }

  private sliceChecked(offset: number, size: number, what: string): Uint8Array {
    if (offset + size > this.bytes.length) {
      throw notAnElf(
        this.fileName,
        `is truncated: ${what} (${size} bytes at offset 0x${offset.toString(16)}) runs past the end ` +
          `of the file (${this.bytes.length} bytes)`,
        RELINK_HINT,
      );
    }
    return this.bytes.subarray(offset, offset + size);
  }
}

interface RawSection extends Omit<SectionHeader, 'name'> {
  nameOffset: number;
}

function readSectionHeader(bytes: Uint8Array, file: string, at: number, index: number): RawSection {
  try {
    const c = new ByteCursor(bytes, at, at + 40);
    return {
      index,
      nameOffset: c.u32(),
      type: c.u32(),
      flags: c.u32(),
      addr: c.u32(),
      offset: c.u32(),
      size: c.u32(),
      link: c.u32(),
      info: c.u32(),
      addralign: c.u32(),
      entsize: c.u32(),
    };
  } catch (err) {
    throw corrupt(file, `section header ${index}`, err);
  }
}

function readHeader(bytes: Uint8Array, file: string): ElfHeader {
  if (bytes.length < 4 || bytes[0] !== 0x7f || bytes[1] !== 0x45 || bytes[2] !== 0x4c || bytes[3] !== 0x46) {
    throw notAnElf(file, 'is not an ELF file (bad magic)', 'point `executable` at the linked .elf, not the .bin/.hex');
  }
  if (bytes.length < 52) {
    throw notAnElf(file, `is truncated: ${bytes.length} bytes, shorter than an ELF header (52 bytes)`, RELINK_HINT);
  }
  const elfClass = bytes[4];
  const data = bytes[5];
  if (elfClass === 2) throw unsupportedArchitecture(file, 'is a 64-bit ELF file');
  if (elfClass !== 1) throw notAnElf(file, `has an invalid ELF class (${elfClass})`, RELINK_HINT);
  if (data === 2) throw unsupportedArchitecture(file, 'is a big-endian ELF file');
  if (data !== 1) throw notAnElf(file, `has an invalid ELF data encoding (${data})`, RELINK_HINT);

  const c = new ByteCursor(bytes, 16, 52);
  const type = c.u16();
  const machine = c.u16();
  c.skip(4); // e_version
  const rawEntry = c.u32();
  c.skip(8); // e_phoff, e_shoff
  const flags = c.u32();

  const family = FAMILY_BY_MACHINE.get(machine);
  if (!family) {
    const name = MACHINE_NAMES.get(machine);
    throw unsupportedArchitecture(file, `is built for e_machine ${machine}${name ? ` (${name})` : ''}`);
  }
  if (type === ET_REL) {
    throw notAnElf(
      file,
      'is a relocatable object (.o), not a linked program',
      'point `executable` at the linked .elf that the build produced',
    );
  }
  if (type !== ET_EXEC && type !== ET_DYN) {
    throw notAnElf(
      file,
      `is an ELF file of type ${type}, not an executable`,
      'point `executable` at the linked .elf that the build produced',
    );
  }
  // Arm entry points carry the Thumb bit (bit 0); the instruction itself is at the even address.
  const entryIsThumb = machine === EM_ARM && (rawEntry & 1) === 1;
  return { machine, family, type, entry: entryIsThumb ? rawEntry - 1 : rawEntry, entryIsThumb, flags };
}
