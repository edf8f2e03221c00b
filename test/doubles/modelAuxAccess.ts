import type { AuxRegisterAccess } from '../../adapter/arch/arc/auxAccess';
import { IllegalAuxRegister } from './arcPctModel';

/** Anything with aux registers by number: the PCT model alone, or the whole CPU double. */
export interface AuxRegisterFile {
  readAux?(aux: number): number;
  writeAux?(aux: number, value: number): void;
  read?(aux: number): number;
  write?(aux: number, value: number): void;
}

export interface AuxAccessRecord {
  op: 'read' | 'write';
  aux: number;
  value: number;
}

/**
 * TEST DOUBLE — an in-memory AuxRegisterAccess straight over the register model, with no GDB in
 * between, so unit tests exercise ArcPctUnit against the same model the gdbserver double serves.
 * Every access is recorded for tests that check the programming sequence.
 */
export class ModelAuxAccess implements AuxRegisterAccess {
  readonly via = 'the in-memory register model (test double)';
  readonly log: AuxAccessRecord[] = [];

  constructor(private readonly file: AuxRegisterFile) {}

  async read(aux: number): Promise<number> {
    const value = this.file.readAux ? this.file.readAux(aux) : this.file.read!(aux);
    this.log.push({ op: 'read', aux, value });
    return value >>> 0;
  }

  async write(aux: number, value: number): Promise<void> {
    this.log.push({ op: 'write', aux, value: value >>> 0 });
    if (this.file.writeAux) this.file.writeAux(aux, value >>> 0);
    else this.file.write!(aux, value >>> 0);
  }
}

export { IllegalAuxRegister };
