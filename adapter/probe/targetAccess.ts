import type { GdbBackend } from '../backend/gdb/gdbBackend';
import { CycleLensError, ErrorCode } from '../errors';

/**
 * What counter backends and the injector need from a halted target: memory, registers by name,
 * and the gdbserver's monitor. Backends depend on this interface only, so the same ARC code runs
 * over GDB register names or over OpenOCD's aux-register commands.
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

/** TargetAccess over GDB/MI. Every call is a round trip to the target; callers batch where they can. */
export class GdbTargetAccess implements TargetAccess {
  constructor(private readonly gdb: GdbBackend) {}

  readMemory(address: bigint, length: number): Promise<Buffer> {
    return this.gdb.dataReadMemoryBytes(address, length);
  }

  writeMemory(address: bigint, data: Uint8Array): Promise<void> {
    return this.gdb.dataWriteMemoryBytes(address, data);
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
    return (await this.gdb.dataListRegisterNames()).includes(name);
  }

  readRegister(name: string): Promise<bigint> {
    return this.gdb.readRegister(name);
  }

  writeRegister(name: string, value: bigint): Promise<void> {
    return this.gdb.writeRegister(name, value);
  }

  async monitor(command: string): Promise<string> {
    if (this.gdb.isRunning) throw new CycleLensError(ErrorCode.NotStopped, 'The target must be halted to reach its counters.');
    return this.gdb.monitor(command);
  }
}
