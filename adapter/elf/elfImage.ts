import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { TargetFamily } from '../../common/launchArgs';
import { CycleLensError, ErrorCode } from '../errors';
import { TruncatedData } from './byteCursor';
import { decodeLinePrograms } from './dwarfLine';
import { unitsByLineOffset } from './dwarfUnits';
import { ElfFile, ElfHeader, Segment, SectionHeader, PF_X, SHF_ALLOC, SHF_WRITE, SHT_NOBITS } from './elfFile';
import { corrupt, debugInfoCorrupt } from './errors';
import { LineRange, LineTable } from './lineTable';
import { ElfSymbol, SymbolTable } from './symbols';

/**
 * A linked firmware image as the adapter sees it: architecture, memory layout, symbols and the
 * source-line table. Parsing is eager for the structure (cheap, and a bad file should fail at
 * launch) and lazy for symbols and DWARF.
 */
/** Bytes the file places at `address` in the target. */
export interface ReadOnlyContents {
  readonly address: number;
  readonly bytes: Uint8Array;
}

export class ElfImage {
  readonly file: ElfFile;
  private symbolTable: SymbolTable | undefined;
  private lines: LineTable | undefined;

  private constructor(
    bytes: Uint8Array,
    readonly path: string,
  ) {
    try {
      this.file = new ElfFile(bytes, path);
    } catch (err) {
      throw corrupt(path, 'the ELF header', err);
    }
  }

  static fromBytes(bytes: Uint8Array, path: string): ElfImage {
    return new ElfImage(bytes, path);
  }

  static async load(path: string): Promise<ElfImage> {
    let bytes: Uint8Array;
    try {
      bytes = await readFile(path);
    } catch (err) {
      throw readError(path, err);
    }
    return new ElfImage(bytes, path);
  }

  static loadSync(path: string): ElfImage {
    let bytes: Uint8Array;
    try {
      bytes = readFileSync(path);
    } catch (err) {
      throw readError(path, err);
    }
    return new ElfImage(bytes, path);
  }

  get header(): ElfHeader {
    return this.file.header;
  }

  get family(): TargetFamily {
    return this.file.header.family;
  }

  get sections(): readonly SectionHeader[] {
    return this.file.sections;
  }

  section(name: string): SectionHeader | undefined {
    return this.file.section(name);
  }

  get loadSegments(): Segment[] {
    return this.file.loadSegments;
  }

  /** Loadable segments with execute permission: the code, wherever it runs. */
  get codeSegments(): Segment[] {
    return this.file.loadSegments.filter((p) => (p.flags & PF_X) !== 0 && p.memSize > 0);
  }

  /**
   * The contents of the allocated sections without SHF_WRITE (code, constants, vector tables): what
   * a debugger that trusts read-only sections answers from the file. Undefined when one of them has
   * no contents in the file (a read-only NOLOAD section): a debugger would answer zeros there.
   */
  readOnlyContents(): ReadOnlyContents[] | undefined {
    const out: ReadOnlyContents[] = [];
    for (const s of this.file.sections) {
      if ((s.flags & SHF_ALLOC) === 0 || (s.flags & SHF_WRITE) !== 0 || s.size === 0) continue;
      if (s.type === SHT_NOBITS) return undefined;
      out.push({ address: s.addr, bytes: this.file.sectionData(s) });
    }
    return out;
  }

  /** True when `address` lies inside an allocated code section. */
  isCode(address: number): boolean {
    return this.file.codeSections.some((s) => address >= s.addr && address < s.addr + s.size);
  }

  get symbols(): SymbolTable {
    this.symbolTable ??= SymbolTable.read(this.file);
    return this.symbolTable;
  }

  functionNamed(name: string): ElfSymbol | undefined {
    return this.symbols.functionNamed(name);
  }

  functionContaining(address: number): ElfSymbol | undefined {
    return this.symbols.functionContaining(address);
  }

  /** Whether the build kept DWARF (`-g`): source lines and breakpoints by line need it. */
  get hasDebugInfo(): boolean {
    return nonEmpty(this.section('.debug_info')) || nonEmpty(this.section('.debug_line'));
  }

  /** The decoded .debug_line of the whole program (empty when built without -g). */
  get lineTable(): LineTable {
    if (this.lines) return this.lines;
    const line = this.data('.debug_line');
    if (!line) {
      this.lines = new LineTable([]);
      return this.lines;
    }
    const str = this.data('.debug_str');
    const lineStr = this.data('.debug_line_str');
    let units;
    try {
      units = unitsByLineOffset({ info: this.data('.debug_info'), abbrev: this.data('.debug_abbrev'), str, lineStr });
    } catch (err) {
      throw debugInfoCorrupt(this.path, '.debug_info', err);
    }
    try {
      const programs = decodeLinePrograms({ line, str, lineStr }, units);
      const code = this.file.codeSections;
      this.lines = new LineTable(programs, (a) => code.some((s) => a >= s.addr && a < s.addr + s.size));
    } catch (err) {
      throw debugInfoCorrupt(this.path, '.debug_line', err);
    }
    return this.lines;
  }

  /** The source lines of a function (by name or symbol). */
  functionLines(fn: string | ElfSymbol): LineRange | undefined {
    const sym = typeof fn === 'string' ? this.functionNamed(fn) : fn;
    if (!sym) return undefined;
    return this.lineTable.lineRange(sym.address, sym.address + Math.max(sym.size, 1));
  }

  private data(name: string): Uint8Array | undefined {
    const s = this.section(name);
    if (!s || s.size === 0) return undefined;
    try {
      return this.file.sectionData(s);
    } catch (err) {
      throw err instanceof TruncatedData ? corrupt(this.path, `section ${name}`, err) : err;
    }
  }
}

function nonEmpty(s: SectionHeader | undefined): boolean {
  return s !== undefined && s.size > 0;
}

function readError(path: string, err: unknown): CycleLensError {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOENT') {
    return new CycleLensError(
      ErrorCode.ExecutableNotFound,
      `${path} does not exist: build the firmware first, or fix \`executable\` in the launch configuration`,
    );
  }
  if (code === 'EISDIR') {
    return new CycleLensError(
      ErrorCode.ExecutableNotFound,
      `${path} is a directory: point \`executable\` at the linked .elf file inside it`,
    );
  }
  return new CycleLensError(
    ErrorCode.ExecutableNotFound,
    `${path} cannot be read (${err instanceof Error ? err.message : String(err)}): check the file's permissions`,
  );
}
