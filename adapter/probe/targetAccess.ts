import type { Debugger } from '../debugger/debugger';
import { CycleLensError, ErrorCode } from '../errors';

/**
 * What counter backends and the injector need from a halted target: memory, registers by name,
 * and the gdbserver's monitor. Backends depend on this interface only, so the same ARC code runs
 * over the debugger's register names or over OpenOCD's aux-register commands.
 */
export interface TargetAccess {
  readMemory(address: bigint, length: number): Promise<Buffer>;
  writeMemory(address: bigint, data: Uint8Array): Promise<void>;
  readU32(address: bigint): Promise<number>;
  writeU32(address: bigint, value: number): Promise<void>;
  /** Whether the debugger's target description has a register of this name. */
  hasRegister(name: string): Promise<boolean>;
  readRegister(name: string): Promise<bigint>;
  writeRegister(name: string, value: bigint): Promise<void>;
  monitor(command: string): Promise<string>;
}

/** TargetAccess through the debugger. Every call is a round trip to the target; callers batch where they can. */
export class DebuggerTargetAccess implements TargetAccess {
  constructor(private readonly debug: Debugger) {}

  readMemory(address: bigint, length: number): Promise<Buffer> {
    return this.debug.readMemory(address, length);
  }

  writeMemory(address: bigint, data: Uint8Array): Promise<void> {
    return this.debug.writeMemory(address, data);
  }

  async readU32(address: bigint): Promise<number> {
    return (await this.readMemory(address, 4)).readUInt32LE(0);
  }

  async writeU32(address: bigint, value: number): Promise<void> {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(value >>> 0, 0);
    await this.writeMemory(address, b);
  }

  async hasRegister(name: string): Promise<boolean> {
    return (await this.debug.registerNames()).includes(name);
  }

  readRegister(name: string): Promise<bigint> {
    return this.debug.readRegister(name);
  }

  writeRegister(name: string, value: bigint): Promise<void> {
    return this.debug.writeRegister(name, value);
  }

  async monitor(command: string): Promise<string> {
    if (this.debug.isRunning)
      throw new CycleLensError(ErrorCode.NotStopped, 'The target must be halted to reach its counters.');
    return this.debug.monitor(command);
  }
}
