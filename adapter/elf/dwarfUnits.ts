import { ByteCursor } from './byteCursor';
import { FormContext, readForm, readUnitLength } from './dwarfForms';

const DW_AT_name = 0x03;
const DW_AT_stmt_list = 0x10;
const DW_AT_comp_dir = 0x1b;
const DW_FORM_implicit_const = 0x21;

const DW_UT_type = 0x02;
const DW_UT_skeleton = 0x04;
const DW_UT_split_compile = 0x05;
const DW_UT_split_type = 0x06;

/** What a line program needs from the compilation unit that owns it. */
export interface UnitInfo {
  /** DW_AT_comp_dir: the directory relative file names of DWARF 2–4 line tables start from. */
  compDir?: string;
  /** DW_AT_name: the primary source file. */
  name?: string;
}

export interface DebugSections {
  info?: Uint8Array;
  abbrev?: Uint8Array;
  str?: Uint8Array;
  lineStr?: Uint8Array;
}

interface AttributeSpec {
  attribute: number;
  form: number;
  implicitConst: number;
}

/**
 * Reads only the first DIE (DW_TAG_compile_unit) of each unit in .debug_info and returns its
 * comp_dir and name keyed by DW_AT_stmt_list, the offset of the unit's line program. Before
 * DWARF 5 the line table does not hold the compilation directory, so this is the only way to turn
 * `main.c` into an absolute path.
 */
export function unitsByLineOffset(sections: DebugSections): Map<number, UnitInfo> {
  const result = new Map<number, UnitInfo>();
  const { info, abbrev } = sections;
  if (!info || !abbrev) return result;
  const abbrevCache = new Map<number, Map<number, AttributeSpec[]>>();
  const c = new ByteCursor(info);
  while (c.remaining > 0) {
    const unitStart = c.pos;
    const { length, offsetSize } = readUnitLength(c);
    const unitEnd = c.pos + length;
    if (unitEnd > info.length)
      throw new RangeError(`unit at 0x${unitStart.toString(16)} runs past the end of the section`);
    const u = new ByteCursor(info, c.pos, unitEnd);
    const version = u.u16();
    if (version < 2 || version > 5)
      throw new RangeError(`unit at 0x${unitStart.toString(16)} has unsupported DWARF version ${version}`);
    let addressSize: number;
    let abbrevOffset: number;
    if (version >= 5) {
      const unitType = u.u8();
      addressSize = u.u8();
      abbrevOffset = u.uN(offsetSize);
      if (unitType === DW_UT_skeleton || unitType === DW_UT_split_compile) u.skip(8);
      if (unitType === DW_UT_type || unitType === DW_UT_split_type) u.skip(8 + offsetSize);
    } else {
      abbrevOffset = u.uN(offsetSize);
      addressSize = u.u8();
    }
    c.pos = unitEnd;
    let table = abbrevCache.get(abbrevOffset);
    if (!table) {
      table = readAbbrevTable(abbrev, abbrevOffset);
      abbrevCache.set(abbrevOffset, table);
    }
    const code = u.uleb();
    const specs = table.get(code);
    if (code === 0 || !specs) continue;
    const ctx: FormContext = {
      offsetSize,
      addressSize,
      version,
      debugStr: sections.str,
      debugLineStr: sections.lineStr,
    };
    const unit: UnitInfo = {};
    let stmtList: number | undefined;
    for (const spec of specs) {
      const value = readForm(u, spec.form, ctx, spec.implicitConst);
      if (spec.attribute === DW_AT_stmt_list && typeof value === 'number') stmtList = value;
      else if (spec.attribute === DW_AT_comp_dir && typeof value === 'string') unit.compDir = value;
      else if (spec.attribute === DW_AT_name && typeof value === 'string') unit.name = value;
    }
    if (stmtList !== undefined && !result.has(stmtList)) result.set(stmtList, unit);
  }
  return result;
}

function readAbbrevTable(abbrev: Uint8Array, offset: number): Map<number, AttributeSpec[]> {
  const table = new Map<number, AttributeSpec[]>();
  const c = new ByteCursor(abbrev, offset);
  for (;;) {
    const code = c.uleb();
    if (code === 0) break;
    c.uleb(); // tag
    c.u8(); // has_children
    const specs: AttributeSpec[] = [];
    for (;;) {
      const attribute = c.uleb();
      const form = c.uleb();
      if (attribute === 0 && form === 0) break;
      const implicitConst = form === DW_FORM_implicit_const ? c.sleb() : 0;
      specs.push({ attribute, form, implicitConst });
    }
    table.set(code, specs);
  }
  return table;
}
