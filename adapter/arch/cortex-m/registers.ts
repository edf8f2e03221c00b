/** ARMv7-M/v8-M general-purpose registers and xPSR as GDB's org.gnu.gdb.arm.m-profile feature names them. */
export const cortexMCoreRegisters: ReadonlySet<string> = new Set([
  'r0', 'r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7', 'r8', 'r9', 'r10', 'r11', 'r12', 'sp', 'lr', 'pc', 'xpsr',
]);
