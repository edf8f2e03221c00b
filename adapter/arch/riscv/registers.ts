import { abiNames } from './rvDecoder';

/** x0..x31 as GDB names them (org.gnu.gdb.riscv.cpu): the psABI names, with x8 as `fp`. */
export const gdbIntegerRegisters: readonly string[] = abiNames.map((name, x) => (x === 8 ? 'fp' : name));

/** RV32 integer registers by ABI name (GDB's org.gnu.gdb.riscv.cpu feature; x8 also as `s0`) and the PC. */
export const riscvCoreRegisters: ReadonlySet<string> = new Set([...gdbIntegerRegisters, 's0', 'pc']);
