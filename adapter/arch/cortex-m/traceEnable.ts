import type { TargetAccess } from '../../probe/targetAccess';

/**
 * DEMCR.TRCENA, ARMv7-M ARM (DDI 0403) C1.6.5: DEMCR at 0xE000EDFC, bit 24 TRCENA powers the
 * trace and profiling components, the DWT and (Armv8.1-M) the PMU among them, which neither count
 * nor keep their settings until it is set. A unit sets it before its work and, on release, clears
 * it only if it set it: a firmware or probe that enabled trace keeps it.
 *
 * The unit's own registers go through read and write here too, at the 32-bit addresses the
 * ARM ARM prints (TargetAccess takes bigints).
 */

const DEMCR = 0xe000edfc;
const TRCENA = 1 << 24;

export class TraceEnable {
  /** TRCENA was clear and this object set it: release clears it again. */
  private setHere = false;

  constructor(private readonly access: TargetAccess) {}

  /**
   * Sets TRCENA if it is clear. Returns whether it is set afterwards: false when the write did not
   * take (QEMU 7.2 drops the debugger's writes to DEMCR).
   */
  async enable(): Promise<boolean> {
    const demcr = await this.read(DEMCR);
    if (demcr & TRCENA) return true;
    await this.write(DEMCR, demcr | TRCENA);
    const took = ((await this.read(DEMCR)) & TRCENA) !== 0;
    this.setHere = took;
    return took;
  }

  /** Clears TRCENA if enable() set it; leaves it alone otherwise. */
  async restore(): Promise<void> {
    if (!this.setHere) return;
    const demcr = await this.read(DEMCR);
    await this.write(DEMCR, demcr & ~TRCENA);
    this.setHere = false;
  }

  read(address: number): Promise<number> {
    return this.access.readU32(BigInt(address));
  }

  write(address: number, value: number): Promise<void> {
    return this.access.writeU32(BigInt(address), value >>> 0);
  }
}
