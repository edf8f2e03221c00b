import type { TargetAccess } from '../../adapter/probe/targetAccess';

const hex = (address: bigint | number): string => `0x${address.toString(16)}`;

/**
 * The base of the unit tests' register models. Every TargetAccess method fails with an error that
 * names the model and the call, so a unit that reaches past what its test models fails there instead
 * of going on with made-up values.
 *
 * A model overrides what it models: the hooks read32/write32 for memory-mapped registers at their
 * 32-bit addresses (readU32/writeU32 go through them), or the TargetAccess methods themselves for
 * registers by name or for memory.
 */
export class FakeTargetAccess implements TargetAccess {
  async readMemory(address: bigint, length: number): Promise<Buffer> {
    throw this.unmodelled(`readMemory(${hex(address)}, ${length})`);
  }

  async writeMemory(address: bigint, data: Uint8Array): Promise<void> {
    throw this.unmodelled(`writeMemory(${hex(address)}, ${data.length} bytes)`);
  }

  async readU32(address: bigint): Promise<number> {
    return this.read32(Number(address));
  }

  async writeU32(address: bigint, value: number): Promise<void> {
    this.write32(Number(address), value);
  }

  async hasRegister(name: string): Promise<boolean> {
    throw this.unmodelled(`hasRegister('${name}')`);
  }

  async readRegister(name: string): Promise<bigint> {
    throw this.unmodelled(`readRegister('${name}')`);
  }

  async writeRegister(name: string, value: bigint): Promise<void> {
    throw this.unmodelled(`writeRegister('${name}', ${hex(value)})`);
  }

  async monitor(command: string): Promise<string> {
    throw this.unmodelled(`monitor('${command}')`);
  }

  /** What the debugger reads from the 32-bit register at `address`. */
  protected read32(address: number): number {
    throw this.unmodelled(`readU32(${hex(address)})`);
  }

  /** The debugger writes `value` to the 32-bit register at `address`. */
  protected write32(address: number, value: number): void {
    throw this.unmodelled(`writeU32(${hex(address)}, ${hex(value)})`);
  }

  private unmodelled(call: string): Error {
    return new Error(
      `${this.constructor.name} does not model ${call}: the unit under test went beyond what this test models.`,
    );
  }
}
