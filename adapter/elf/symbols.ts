import { ByteCursor, stringAt } from './byteCursor';
import { EM_ARM, ElfFile, SHF_EXECINSTR, SHT_DYNSYM, SHT_NOBITS, SHT_SYMTAB } from './elfFile';
import { corrupt } from './errors';

export type SymbolKind = 'function' | 'object' | 'label' | 'section' | 'file' | 'other';
export type SymbolBinding = 'local' | 'global' | 'weak' | 'other';

export interface ElfSymbol {
  readonly name: string;
  /** Address of the first byte. For Arm functions the Thumb bit is cleared here. */
  readonly address: number;
  readonly size: number;
  readonly kind: SymbolKind;
  readonly binding: SymbolBinding;
  /** Arm: st_value had bit 0 set, i.e. the code is Thumb (always so on Cortex-M). */
  readonly thumb: boolean;
  /** st_shndx: the section it is defined in (0 = undefined, 0xfff1 = absolute). */
  readonly sectionIndex: number;
}

const STT_NOTYPE = 0;
const STT_OBJECT = 1;
const STT_FUNC = 2;
const STT_SECTION = 3;
const STT_FILE = 4;
const SHN_UNDEF = 0;

const KIND: Record<number, SymbolKind> = {
  [STT_NOTYPE]: 'label',
  [STT_OBJECT]: 'object',
  [STT_FUNC]: 'function',
  [STT_SECTION]: 'section',
  [STT_FILE]: 'file',
};
const BINDING: Record<number, SymbolBinding> = { 0: 'local', 1: 'global', 2: 'weak' };

/**
 * The symbol table of a linked program: functions and objects by name and by address.
 * Several symbols may name one function (weak aliases of a default handler, `__foo` / `foo`);
 * lookups by address return one canonical symbol: global before weak before local, then the
 * first in the table.
 */
export class SymbolTable {
  readonly symbols: readonly ElfSymbol[];
  /** Canonical function symbols sorted by address, one per distinct start address. */
  readonly functions: readonly ElfSymbol[];
  readonly objects: readonly ElfSymbol[];
  private readonly byName = new Map<string, ElfSymbol[]>();
  private readonly aliasesByAddress = new Map<number, ElfSymbol[]>();
  /** prefixMaxEnd[i] = largest end address among functions[0..i]: bounds the backward scan. */
  private readonly prefixMaxEnd: Float64Array;
  /** FUNC and NOTYPE symbols in code sections, sorted: the fallback owner of unsized code. */
  private readonly codeLabels: readonly ElfSymbol[];

  constructor(symbols: ElfSymbol[], executableSections: ReadonlySet<number>) {
    this.symbols = symbols;
    for (const s of symbols) {
      if (!s.name) continue;
      const list = this.byName.get(s.name);
      if (list) list.push(s);
      else this.byName.set(s.name, [s]);
    }
    const funcs = symbols.filter((s) => s.kind === 'function' && s.sectionIndex !== SHN_UNDEF && s.name !== '');
    for (const f of funcs) {
      const list = this.aliasesByAddress.get(f.address);
      if (list) list.push(f);
      else this.aliasesByAddress.set(f.address, [f]);
    }
    const canonical: ElfSymbol[] = [];
    for (const list of this.aliasesByAddress.values()) {
      list.sort(preferCanonical);
      canonical.push(list[0]!);
    }
    canonical.sort((a, b) => a.address - b.address || b.size - a.size);
    this.functions = canonical;
    this.prefixMaxEnd = new Float64Array(canonical.length);
    let maxEnd = 0;
    canonical.forEach((f, i) => {
      maxEnd = Math.max(maxEnd, f.address + f.size);
      this.prefixMaxEnd[i] = maxEnd;
    });
    this.objects = symbols
      .filter((s) => s.kind === 'object' && s.sectionIndex !== SHN_UNDEF)
      .sort((a, b) => a.address - b.address);
    this.codeLabels = symbols
      .filter(
        (s) =>
          (s.kind === 'function' || s.kind === 'label') && executableSections.has(s.sectionIndex) && isRealName(s.name),
      )
      .sort((a, b) => a.address - b.address || rank(a) - rank(b));
  }

  static read(elf: ElfFile): SymbolTable {
    const table = elf.sections.find((s) => s.type === SHT_SYMTAB) ?? elf.sections.find((s) => s.type === SHT_DYNSYM);
    const executable = new Set(elf.sections.filter((s) => (s.flags & SHF_EXECINSTR) !== 0).map((s) => s.index));
    if (!table || table.type === SHT_NOBITS) return new SymbolTable([], executable);
    const isArm = elf.header.machine === EM_ARM;
    const symbols: ElfSymbol[] = [];
    try {
      const data = elf.sectionData(table);
      const strings = table.link < elf.sections.length ? elf.sectionData(elf.sections[table.link]!) : new Uint8Array(0);
      const entsize = table.entsize >= 16 ? table.entsize : 16;
      const count = Math.floor(data.length / entsize);
      for (let i = 1; i < count; i++) {
        const c = new ByteCursor(data, i * entsize, i * entsize + 16);
        const nameOffset = c.u32();
        const value = c.u32();
        const size = c.u32();
        const info = c.u8();
        c.u8(); // st_other
        const sectionIndex = c.u16();
        const type = info & 0xf;
        const name = nameOffset === 0 ? '' : stringAt(strings, nameOffset);
        const thumb = isArm && type === STT_FUNC && (value & 1) === 1;
        symbols.push({
          name,
          address: thumb ? value - 1 : value,
          size,
          kind: KIND[type] ?? 'other',
          binding: BINDING[info >> 4] ?? 'other',
          thumb,
          sectionIndex,
        });
      }
    } catch (err) {
      throw corrupt(elf.fileName, `the symbol table (${table.name})`, err);
    }
    return new SymbolTable(symbols, executable);
  }

  /** All symbols with this name (static functions of different files may share one). */
  named(name: string): readonly ElfSymbol[] {
    return this.byName.get(name) ?? [];
  }

  /** The function called `name`, preferring a global definition. */
  functionNamed(name: string): ElfSymbol | undefined {
    return this.named(name)
      .filter((s) => s.kind === 'function' && s.sectionIndex !== SHN_UNDEF)
      .sort(preferCanonical)[0];
  }

  objectNamed(name: string): ElfSymbol | undefined {
    return this.named(name)
      .filter((s) => s.kind === 'object' && s.sectionIndex !== SHN_UNDEF)
      .sort(preferCanonical)[0];
  }

  /** Every function symbol at `address` (canonical one first). */
  aliasesAt(address: number): readonly ElfSymbol[] {
    return this.aliasesByAddress.get(address) ?? [];
  }

  /** The function whose [address, address + size) holds `address` (binary search). */
  functionContaining(address: number): ElfSymbol | undefined {
    const fns = this.functions;
    let lo = 0;
    let hi = fns.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (fns[mid]!.address <= address) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    // Usually the nearest start holds the address; walk back only while an earlier, longer
    // function could still reach it (overlapping symbols are rare but legal).
    for (let i = found; i >= 0 && this.prefixMaxEnd[i]! > address; i--) {
      const f = fns[i]!;
      if (address < f.address + f.size || (f.size === 0 && address === f.address)) return f;
    }
    return undefined;
  }

  /**
   * The nearest code symbol (function or plain label such as an assembly `_start` without
   * `.type`/`.size`) at or below `address`: the owner of code that no sized function covers.
   */
  codeLabelAtOrBefore(address: number): ElfSymbol | undefined {
    const labels = this.codeLabels;
    let lo = 0;
    let hi = labels.length - 1;
    let found: ElfSymbol | undefined;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (labels[mid]!.address <= address) {
        found = labels[mid];
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    if (found === undefined) return undefined;
    // Several labels at one address: the first after sorting by rank is the best name.
    let i = labels.indexOf(found);
    while (i > 0 && labels[i - 1]!.address === found.address) i--;
    return labels[i];
  }
}

/** Mapping symbols ($a, $t, $d, $x…) and assembler locals (.L…) name no code of their own. */
function isRealName(name: string): boolean {
  return name !== '' && !name.startsWith('$') && !name.startsWith('.L');
}

function rank(s: ElfSymbol): number {
  const binding = s.binding === 'global' ? 0 : s.binding === 'weak' ? 1 : 2;
  return (s.kind === 'function' ? 0 : 3) + binding;
}

function preferCanonical(a: ElfSymbol, b: ElfSymbol): number {
  return rank(a) - rank(b);
}
