/** ARCv2 core registers as GDB's org.gnu.gdb.arc.core.v2 feature names them, plus PC and STATUS32. */
export const arcCoreRegisters: ReadonlySet<string> = new Set([
  'r0', 'r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7', 'r8', 'r9', 'r10', 'r11', 'r12', 'r13', 'r14', 'r15',
  'r16', 'r17', 'r18', 'r19', 'r20', 'r21', 'r22', 'r23', 'r24', 'r25', 'gp', 'fp', 'sp', 'ilink', 'r30',
  'blink', 'lp_count', 'pcl', 'pc', 'status32', 'lp_start', 'lp_end', 'bta',
]);
