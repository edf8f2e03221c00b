import { posix, win32 } from 'node:path';
import { ByteCursor } from './byteCursor';
import { FormContext, readForm, readUnitLength } from './dwarfForms';
import { UnitInfo } from './dwarfUnits';

/** One row of the line-number matrix (DWARF 5 section 6.2.2). */
export interface LineRow {
  readonly address: number;
  /** Absolute path when the producer recorded the directories (GCC and Clang always do). */
  readonly file: string;
  readonly line: number;
  /** 0 = unknown (the whole line). */
  readonly column: number;
  readonly isStmt: boolean;
  /** The first address past the end of a sequence: no code of this row lives here. */
  readonly endSequence: boolean;
  readonly discriminator: number;
}

/** The decoded line program of one compilation unit. */
export interface LineProgram {
  /** Offset of the program in .debug_line (what DW_AT_stmt_list points at). */
  readonly offset: number;
  readonly version: number;
  /** The file table, resolved; index as the program uses it (DWARF 5 from 0, earlier from 1). */
  readonly files: readonly string[];
  readonly rows: readonly LineRow[];
}

// Standard opcodes (DWARF 5 section 6.2.5.2).
const DW_LNS_copy = 1;
const DW_LNS_advance_pc = 2;
const DW_LNS_advance_line = 3;
const DW_LNS_set_file = 4;
const DW_LNS_set_column = 5;
const DW_LNS_negate_stmt = 6;
const DW_LNS_set_basic_block = 7;
const DW_LNS_const_add_pc = 8;
const DW_LNS_fixed_advance_pc = 9;
const DW_LNS_set_prologue_end = 10;
const DW_LNS_set_epilogue_begin = 11;
const DW_LNS_set_isa = 12;
// Extended opcodes.
const DW_LNE_end_sequence = 1;
const DW_LNE_set_address = 2;
const DW_LNE_define_file = 3;
const DW_LNE_set_discriminator = 4;
// DWARF 5 line table content types (section 6.2.4.1).
const DW_LNCT_path = 1;
const DW_LNCT_directory_index = 2;

export interface LineSections {
  line: Uint8Array;
  str?: Uint8Array;
  lineStr?: Uint8Array;
}

/** Decodes every line program in .debug_line, DWARF versions 2 to 5. */
export function decodeLinePrograms(sections: LineSections, units: ReadonlyMap<number, UnitInfo>): LineProgram[] {
  const programs: LineProgram[] = [];
  const c = new ByteCursor(sections.line);
  while (c.remaining > 0) {
    const offset = c.pos;
    const { length, offsetSize } = readUnitLength(c);
    const end = c.pos + length;
    if (end > sections.line.length) {
      throw new RangeError(
        `the line program at 0x${offset.toString(16)} claims ${length} bytes, past the end of the section`,
      );
    }
    programs.push(
      decodeProgram(new ByteCursor(sections.line, c.pos, end), offset, offsetSize, sections, units.get(offset)),
    );
    c.pos = end;
  }
  return programs;
}

function decodeProgram(
  c: ByteCursor,
  offset: number,
  offsetSize: number,
  sections: LineSections,
  unit: UnitInfo | undefined,
): LineProgram {
  const version = c.u16();
  if (version < 2 || version > 5)
    throw new RangeError(`the line program at 0x${offset.toString(16)} has unsupported version ${version}`);
  let addressSize = 4;
  if (version >= 5) {
    addressSize = c.u8();
    c.u8(); // segment_selector_size
  }
  const headerLength = c.uN(offsetSize);
  const programStart = c.pos + headerLength;
  if (programStart > c.end)
    throw new RangeError(`the line program header at 0x${offset.toString(16)} is longer than its unit`);
  const minInstLength = c.u8();
  const maxOpsPerInst = version >= 4 ? c.u8() : 1;
  const defaultIsStmt = c.u8() !== 0;
  const lineBase = c.i8();
  const lineRange = c.u8();
  const opcodeBase = c.u8();
  if (lineRange === 0) throw new RangeError(`the line program at 0x${offset.toString(16)} has line_range 0`);
  if (maxOpsPerInst === 0)
    throw new RangeError(`the line program at 0x${offset.toString(16)} has maximum_operations_per_instruction 0`);
  const standardLengths: number[] = [0];
  for (let i = 1; i < opcodeBase; i++) standardLengths.push(c.u8());

  const ctx: FormContext = { offsetSize, addressSize, version, debugStr: sections.str, debugLineStr: sections.lineStr };
  let dirs: string[];
  let files: string[];
  if (version >= 5) {
    const rawDirs = readEntryTable(c, ctx).map((e) => e.path);
    // Directory 0 is the compilation directory; the others may be relative to it.
    const base = joinPath(unit?.compDir ?? '', rawDirs[0] ?? '');
    dirs = rawDirs.map((d, i) => (i === 0 ? base : joinPath(base, d)));
    files = readEntryTable(c, ctx).map((e) => joinPath(dirs[e.dir] ?? base, e.path));
  } else {
    const compDir = unit?.compDir ?? '';
    dirs = [compDir];
    for (;;) {
      const d = c.cstring();
      if (d === '') break;
      dirs.push(joinPath(compDir, d));
    }
    files = [''];
    for (;;) {
      const name = c.cstring();
      if (name === '') break;
      const dir = c.uleb();
      c.uleb(); // modification time
      c.uleb(); // length
      files.push(joinPath(dirs[dir] ?? compDir, name));
    }
  }
  c.pos = programStart;

  const rows: LineRow[] = [];
  const fileName = (index: number): string => files[index] ?? `<file ${index}>`;
  // State machine registers (DWARF 5 section 6.2.2).
  let address = 0;
  let opIndex = 0;
  let file = 1;
  let line = 1;
  let column = 0;
  let isStmt = defaultIsStmt;
  let discriminator = 0;
  const reset = (): void => {
    address = 0;
    opIndex = 0;
    file = 1;
    line = 1;
    column = 0;
    isStmt = defaultIsStmt;
    discriminator = 0;
  };
  const emit = (endSequence: boolean): void => {
    rows.push({ address, file: fileName(file), line, column, isStmt, endSequence, discriminator });
    discriminator = 0;
  };
  // "operation advance" (DWARF 5 section 6.2.5.1): VLIW op_index arithmetic, which reduces to
  // address += advance * min_inst_length when max_ops is 1, as on every target we support.
  const advance = (operationAdvance: number): void => {
    if (maxOpsPerInst === 1) {
      address = (address + minInstLength * operationAdvance) >>> 0;
    } else {
      const total = opIndex + operationAdvance;
      address = (address + minInstLength * Math.floor(total / maxOpsPerInst)) >>> 0;
      opIndex = total % maxOpsPerInst;
    }
  };

  while (c.remaining > 0) {
    const opcode = c.u8();
    if (opcode >= opcodeBase) {
      const adjusted = opcode - opcodeBase;
      advance(Math.floor(adjusted / lineRange));
      line += lineBase + (adjusted % lineRange);
      emit(false);
      continue;
    }
    switch (opcode) {
      case 0: {
        const length = c.uleb();
        if (length === 0) break;
        const end = c.pos + length;
        if (end > c.end)
          throw new RangeError(
            `extended opcode at 0x${(c.pos - 1).toString(16)} runs past the end of its line program`,
          );
        const sub = c.u8();
        switch (sub) {
          case DW_LNE_end_sequence:
            emit(true);
            reset();
            break;
          case DW_LNE_set_address:
            // The operand fills the rest of the opcode: trust the length over address_size.
            address = c.uN(length - 1) >>> 0;
            opIndex = 0;
            break;
          case DW_LNE_define_file: {
            const name = c.cstring();
            const dir = c.uleb();
            files.push(joinPath(dirs[dir] ?? dirs[0] ?? '', name));
            break;
          }
          case DW_LNE_set_discriminator:
            discriminator = c.uleb();
            break;
          default:
            break; // vendor extension: skipped by its length
        }
        c.pos = end;
        break;
      }
      case DW_LNS_copy:
        emit(false);
        break;
      case DW_LNS_advance_pc:
        advance(c.uleb());
        break;
      case DW_LNS_advance_line:
        line += c.sleb();
        break;
      case DW_LNS_set_file:
        file = c.uleb();
        break;
      case DW_LNS_set_column:
        column = c.uleb();
        break;
      case DW_LNS_negate_stmt:
        isStmt = !isStmt;
        break;
      case DW_LNS_set_basic_block:
      case DW_LNS_set_prologue_end:
      case DW_LNS_set_epilogue_begin:
        break;
      case DW_LNS_const_add_pc:
        advance(Math.floor((255 - opcodeBase) / lineRange));
        break;
      case DW_LNS_fixed_advance_pc:
        address = (address + c.u16()) >>> 0;
        opIndex = 0;
        break;
      case DW_LNS_set_isa:
        c.uleb();
        break;
      default:
        // A standard opcode newer than this reader: skip its ULEB operands as the header declares.
        for (let i = 0; i < standardLengths[opcode]!; i++) c.uleb();
        break;
    }
  }
  return { offset, version, files, rows };
}

interface Entry {
  path: string;
  dir: number;
}

/** A DWARF 5 directory or file-name table: a format description, then the entries. */
function readEntryTable(c: ByteCursor, ctx: FormContext): Entry[] {
  const formatCount = c.u8();
  const format: Array<[number, number]> = [];
  for (let i = 0; i < formatCount; i++) format.push([c.uleb(), c.uleb()]);
  const count = c.uleb();
  // Every real entry takes at least one byte (a path is required): a count beyond the bytes
  // left is corruption, and trusting it would loop (and allocate) for as long as it says.
  if (count > c.remaining)
    throw new RangeError(`a directory/file table claims ${count} entries in ${c.remaining} bytes`);
  const entries: Entry[] = [];
  for (let i = 0; i < count; i++) {
    const entry: Entry = { path: '', dir: 0 };
    for (const [contentType, form] of format) {
      const value = readForm(c, form, ctx);
      if (contentType === DW_LNCT_path && typeof value === 'string') entry.path = value;
      else if (contentType === DW_LNCT_directory_index && typeof value === 'number') entry.dir = value;
      // DW_LNCT_timestamp, size, MD5 and vendor types are read (to stay in step) and dropped.
    }
    entries.push(entry);
  }
  return entries;
}

const WINDOWS_ABSOLUTE = /^([A-Za-z]:[\\/]|\\\\)/;

export function isAbsolutePath(p: string): boolean {
  return p.startsWith('/') || WINDOWS_ABSOLUTE.test(p);
}

/** Joins a DWARF directory and name, keeping Windows paths Windows-style (cross builds). */
export function joinPath(dir: string, name: string): string {
  const windows = WINDOWS_ABSOLUTE.test(dir) || WINDOWS_ABSOLUTE.test(name);
  if (isAbsolutePath(name)) return windows ? win32.normalize(name) : posix.normalize(name);
  if (dir === '') return name;
  return windows ? win32.join(dir, name) : posix.join(dir, name);
}
