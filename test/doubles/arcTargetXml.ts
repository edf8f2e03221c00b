import { REG } from './arcCpuModel';
import { PCT_REGISTER_NAMES } from './arcPctModel';

/**
 * TEST DOUBLE — the target description the double sends for `qXfer:features:read:target.xml`.
 *
 * What GDB 13 requires (gdb/arc-tdep.c, arc_tdesc_init / arc_check_tdesc_feature, and the
 * shipped gdb/features/arc/v2-core.xml and v2-aux.xml):
 *  - feature `org.gnu.gdb.arc.core` with r0–r3, r10–r15, gp, fp, sp, r30, blink and pcl required;
 *    r4–r9, r16–r25, ilink, lp_count optional;
 *  - feature `org.gnu.gdb.arc.aux` with pc and status32 required; lp_start, lp_end, bta optional;
 *  - the core feature set is chosen from the BFD machine, so the description names the
 *    architecture `arc:ARCv2` (bfd/cpu-arc.c: bfd_mach_arc_arcv2 "ARCv2").
 * Any other feature is accepted as-is; GDB shows its registers by name. OpenOCD's ARC target puts
 * extra aux registers in `org.gnu.gdb.arc.aux-other`, and so do we for the PCT registers.
 *
 * Remote register numbers are given explicitly (`regnum`), in the order the `g` packet carries them.
 */

const CORE_NAMES: readonly string[] = [
  'r0',
  'r1',
  'r2',
  'r3',
  'r4',
  'r5',
  'r6',
  'r7',
  'r8',
  'r9',
  'r10',
  'r11',
  'r12',
  'r13',
  'r14',
  'r15',
  'r16',
  'r17',
  'r18',
  'r19',
  'r20',
  'r21',
  'r22',
  'r23',
  'r24',
  'r25',
  'gp',
  'fp',
  'sp',
  'ilink',
  'r30',
  'blink',
];

/** First remote register number of the PCT registers (after the 39 core + aux registers). */
export const FIRST_PCT_REGNUM = REG.G_PACKET_COUNT;

function reg(name: string, regnum: number, type: string, group?: string): string {
  const groupAttribute = group !== undefined ? ` group="${group}"` : '';
  return `    <reg name="${name}" bitsize="32" regnum="${regnum}" type="${type}"${groupAttribute}/>`;
}

function coreType(name: string): string {
  if (name === 'gp' || name === 'fp' || name === 'sp') return 'data_ptr';
  if (name === 'blink' || name === 'ilink') return 'code_ptr';
  return 'int';
}

/** The XML text; `withPctRegisters: false` describes a gdbserver that does not expose them. */
export function arcTargetXml(withPctRegisters: boolean): string {
  const lines = [
    '<?xml version="1.0"?>',
    '<!DOCTYPE target SYSTEM "gdb-target.dtd">',
    '<target version="1.0">',
    '  <architecture>arc:ARCv2</architecture>',
    '  <feature name="org.gnu.gdb.arc.core">',
    ...CORE_NAMES.map((name, i) => reg(name, i, coreType(name), name === 'r30' ? '' : undefined)),
    reg('lp_count', REG.LP_COUNT, 'uint32'),
    reg('pcl', REG.PCL, 'code_ptr', ''),
    '  </feature>',
    '  <feature name="org.gnu.gdb.arc.aux">',
    reg('pc', REG.PC, 'code_ptr'),
    reg('status32', REG.STATUS32, 'uint32'),
    reg('lp_start', REG.LP_START, 'code_ptr'),
    reg('lp_end', REG.LP_END, 'code_ptr'),
    reg('bta', REG.BTA, 'code_ptr'),
    '  </feature>',
  ];
  if (withPctRegisters) {
    lines.push('  <feature name="org.gnu.gdb.arc.aux-other">');
    PCT_REGISTER_NAMES.forEach(([name], i) => lines.push(reg(name, FIRST_PCT_REGNUM + i, 'uint32')));
    lines.push('  </feature>');
  }
  lines.push('</target>', '');
  return lines.join('\n');
}
