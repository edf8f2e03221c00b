import { ByteCursor, stringAt } from './byteCursor';

/** DWARF attribute forms (DWARF 5 section 7.5.6, plus the GNU extensions GCC emits). */
export const DW_FORM = {
  addr: 0x01,
  block2: 0x03,
  block4: 0x04,
  data2: 0x05,
  data4: 0x06,
  data8: 0x07,
  string: 0x08,
  block: 0x09,
  block1: 0x0a,
  data1: 0x0b,
  flag: 0x0c,
  sdata: 0x0d,
  strp: 0x0e,
  udata: 0x0f,
  ref_addr: 0x10,
  ref1: 0x11,
  ref2: 0x12,
  ref4: 0x13,
  ref8: 0x14,
  ref_udata: 0x15,
  indirect: 0x16,
  sec_offset: 0x17,
  exprloc: 0x18,
  flag_present: 0x19,
  strx: 0x1a,
  addrx: 0x1b,
  ref_sup4: 0x1c,
  strp_sup: 0x1d,
  data16: 0x1e,
  line_strp: 0x1f,
  ref_sig8: 0x20,
  implicit_const: 0x21,
  loclistx: 0x22,
  rnglistx: 0x23,
  ref_sup8: 0x24,
  strx1: 0x25,
  strx2: 0x26,
  strx3: 0x27,
  strx4: 0x28,
  addrx1: 0x29,
  addrx2: 0x2a,
  addrx3: 0x2b,
  addrx4: 0x2c,
  GNU_addr_index: 0x1f01,
  GNU_str_index: 0x1f02,
  GNU_ref_alt: 0x1f20,
  GNU_strp_alt: 0x1f21,
} as const;

export interface FormContext {
  /** 4 for 32-bit DWARF, 8 for 64-bit DWARF. */
  offsetSize: number;
  addressSize: number;
  version: number;
  debugStr?: Uint8Array;
  debugLineStr?: Uint8Array;
}

/** A decoded attribute value: a number, a string, raw bytes (blocks, MD5), or "unresolvable". */
export type FormValue = number | string | Uint8Array | undefined;

/**
 * Reads one value of `form`. Values that need tables this reader does not load (string/address
 * indices of split DWARF, the supplementary object file) come back as undefined: the caller only
 * needs names, directories and offsets, and those forms never carry them in a linked program built
 * without -gsplit-dwarf.
 */
export function readForm(c: ByteCursor, form: number, ctx: FormContext, implicitConst = 0): FormValue {
  switch (form) {
    case DW_FORM.addr:
      return c.uN(ctx.addressSize);
    case DW_FORM.data1:
    case DW_FORM.ref1:
    case DW_FORM.flag:
    case DW_FORM.strx1:
    case DW_FORM.addrx1:
      return c.u8();
    case DW_FORM.data2:
    case DW_FORM.ref2:
    case DW_FORM.strx2:
    case DW_FORM.addrx2:
      return c.u16();
    case DW_FORM.strx3:
    case DW_FORM.addrx3: {
      const lo = c.u16();
      return lo + c.u8() * 0x10000;
    }
    case DW_FORM.data4:
    case DW_FORM.ref4:
    case DW_FORM.ref_sup4:
    case DW_FORM.strx4:
    case DW_FORM.addrx4:
      return c.u32();
    case DW_FORM.data8:
    case DW_FORM.ref8:
    case DW_FORM.ref_sig8:
    case DW_FORM.ref_sup8: {
      // Hashes and signatures: keep the bytes, they need not fit a number.
      const at = c.pos;
      c.skip(8);
      return c.bytes.slice(at, at + 8);
    }
    case DW_FORM.data16: {
      const at = c.pos;
      c.skip(16);
      return c.bytes.slice(at, at + 16);
    }
    case DW_FORM.sdata:
      return c.sleb();
    case DW_FORM.udata:
    case DW_FORM.ref_udata:
    case DW_FORM.strx:
    case DW_FORM.addrx:
    case DW_FORM.loclistx:
    case DW_FORM.rnglistx:
    case DW_FORM.GNU_addr_index:
    case DW_FORM.GNU_str_index:
      return c.uleb();
    case DW_FORM.string:
      return c.cstring();
    case DW_FORM.strp:
      return stringFrom(ctx.debugStr, c.uN(ctx.offsetSize), '.debug_str');
    case DW_FORM.line_strp:
      return stringFrom(ctx.debugLineStr, c.uN(ctx.offsetSize), '.debug_line_str');
    case DW_FORM.sec_offset:
    case DW_FORM.strp_sup:
    case DW_FORM.GNU_ref_alt:
    case DW_FORM.GNU_strp_alt:
      return c.uN(ctx.offsetSize);
    case DW_FORM.ref_addr:
      // DWARF 2 sized this like an address, later versions like a section offset.
      return c.uN(ctx.version <= 2 ? ctx.addressSize : ctx.offsetSize);
    case DW_FORM.block1:
      return block(c, c.u8());
    case DW_FORM.block2:
      return block(c, c.u16());
    case DW_FORM.block4:
      return block(c, c.u32());
    case DW_FORM.block:
    case DW_FORM.exprloc:
      return block(c, c.uleb());
    case DW_FORM.flag_present:
      return 1;
    case DW_FORM.implicit_const:
      return implicitConst;
    case DW_FORM.indirect:
      return readForm(c, c.uleb(), ctx, implicitConst);
    default:
      throw new RangeError(`unknown attribute form 0x${form.toString(16)}`);
  }
}

function block(c: ByteCursor, length: number): Uint8Array {
  const at = c.pos;
  c.skip(length);
  return c.bytes.subarray(at, at + length);
}

function stringFrom(table: Uint8Array | undefined, offset: number, section: string): string {
  if (!table) throw new RangeError(`a string refers to ${section}, but the file has no ${section} section`);
  return stringAt(table, offset);
}

/** Reads a unit_length field; returns the length and whether the unit uses 64-bit DWARF. */
export function readUnitLength(c: ByteCursor): { length: number; offsetSize: number } {
  const first = c.u32();
  if (first === 0xffffffff) return { length: c.u64(), offsetSize: 8 };
  if (first >= 0xfffffff0) throw new RangeError(`reserved unit length 0x${first.toString(16)}`);
  return { length: first, offsetSize: 4 };
}
