import type { TargetAccess } from '../../probe/targetAccess';

/**
 * Writing a Cortex-M peripheral register when the debugger's own memory writes do not reach it.
 *
 * QEMU's gdbstub writes memory with `cpu_memory_rw_debug`, which stores only into RAM and ROM and
 * silently drops writes to device regions (measured on QEMU 7.2 mps2-an386: writing SYST_RVR,
 * SYST_CSR or DEMCR through GDB answers OK and changes nothing; reads work). A store executed by the
 * core itself does reach them, so this helper runs one: `STR r1, [r0]` placed at the current PC,
 * single-stepped, and everything it touched restored.
 */

/** Runs exactly one instruction on the halted core (GDB: `-exec-step-instruction`, then wait for the stop). */
export type StepInstruction = () => Promise<void>;

/** A 32-bit store to a device register. */
export interface PeripheralStore {
  store32(address: number, value: number): Promise<void>;
}

/** The debugger's memory write: right for hardware, where the debug port reaches every register. */
export class DebuggerStore implements PeripheralStore {
  constructor(private readonly access: TargetAccess) {}

  store32(address: number, value: number): Promise<void> {
    return this.access.writeU32(BigInt(address), value >>> 0);
  }
}

/** Thumb T1 `STR Rt, [Rn, #0]` = 0b01100_00000_nnn_ttt (ARMv7-M ARM A7.7.158). With Rn = r0, Rt = r1: 0x6001. */
const strR1AtR0 = 0x6001;
/** Thumb T1 `BX Rm` = 0b010001110_mmmm_000 (A7.7.20). With Rm = r2: 0x4710. */
const bxR2 = 0x4710;
/** xPSR IT/ICI bits [26:25] and [15:10]: cleared so the stepped stub is never conditional (B1.4.2). */
const itBits = (0x3n << 25n) | (0x3fn << 10n);
const saved = ['r0', 'r1', 'r2', 'xpsr'] as const;

export class CoreExecutedStore implements PeripheralStore {
  /**
   * @param stubAddress where the 4-byte stub goes; default the current PC (code memory must be
   *   writable by the debugger: RAM, or ROM on QEMU, whose debug writes do reach ROM).
   */
  constructor(
    private readonly access: TargetAccess,
    private readonly step: StepInstruction,
    private readonly stubAddress?: bigint,
  ) {}

  /**
   * The stub is `STR r1, [r0]; BX r2` with r2 = the PC to come back to, stepped twice. Returning by
   * executing a branch rather than by writing the PC matters: GDB steps over a breakpoint at the PC
   * on the next continue only if the PC is where the target last stopped. Had the PC been written
   * back after a step that stopped elsewhere, the next continue would report the same breakpoint
   * again at once, without running anything.
   */
  async store32(address: number, value: number): Promise<void> {
    const regs = new Map<string, bigint>();
    for (const reg of saved) regs.set(reg, await this.access.readRegister(reg));
    const pc = await this.access.readRegister('pc');
    const at = this.stubAddress ?? pc;
    const code = await this.access.readMemory(at, 4);
    const stub = Buffer.alloc(4);
    stub.writeUInt16LE(strR1AtR0, 0);
    stub.writeUInt16LE(bxR2, 2);
    await this.access.writeMemory(at, stub);
    try {
      await this.access.writeRegister('r0', BigInt(address >>> 0));
      await this.access.writeRegister('r1', BigInt(value >>> 0));
      await this.access.writeRegister('r2', pc | 1n);
      await this.access.writeRegister('xpsr', regs.get('xpsr')! & ~itBits);
      if (at !== pc) await this.access.writeRegister('pc', at);
      await this.step();
      await this.step();
    } finally {
      await this.access.writeMemory(at, code);
      for (const reg of saved) await this.access.writeRegister(reg, regs.get(reg)!);
      // Only if the stub did not come back (a step failed): then the PC must be put back by hand.
      if ((await this.access.readRegister('pc')) !== pc) await this.access.writeRegister('pc', pc);
    }
  }
}
