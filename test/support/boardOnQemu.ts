import { ElfImage } from '../../adapter/elf';
import { BoardDouble, type BoardDoubleOptions } from '../doubles/boardDouble';
import { DEFAULT_PROFILE, partProfile, type PartName } from '../doubles/boardProfiles';
import type { LiveProcess } from './ownedProcesses';
import type { FixtureTarget } from './paths';
import { QemuBoard } from './qemuBoard';

export interface BoardOnQemuOptions extends Omit<BoardDoubleOptions, 'profile' | 'qemu'> {
  profile?: PartName;
  /** Programs this ELF before anyone connects, as a board flashed earlier holds its firmware. */
  programmed?: string;
}

/**
 * The board double in front of a QEMU of its own (test/doubles/boardDouble.ts): QEMU halted and
 * without an image, the double connected to its gdbstub and listening for GDB. `address` is what a
 * `remote` launch configuration, or `target remote`, connects to.
 */
export class BoardOnQemu {
  private constructor(
    readonly qemu: QemuBoard,
    readonly board: BoardDouble,
  ) {}

  static async start(target: FixtureTarget, options: BoardOnQemuOptions = {}): Promise<BoardOnQemu> {
    const qemu = await QemuBoard.start(target, undefined);
    try {
      const { profile, programmed, ...rest } = options;
      const board = await BoardDouble.start({
        ...rest,
        profile: partProfile(profile ?? DEFAULT_PROFILE[target], target),
        qemu: qemu.address,
      });
      if (programmed) await board.program(loadSegments(programmed));
      board.resetStats();
      return new BoardOnQemu(qemu, board);
    } catch (err) {
      await qemu.stop();
      throw err;
    }
  }

  get address(): string {
    return this.board.address;
  }

  /** Ends the double and QEMU; resolves with whatever of QEMU is still running (nothing, normally). */
  async stop(): Promise<LiveProcess[]> {
    await this.board.close();
    return await this.qemu.stop();
  }
}

/** An ELF's PT_LOAD contents at their load addresses: what GDB's `load` writes. */
export function loadSegments(elf: string): Array<{ address: number; data: Uint8Array }> {
  const file = ElfImage.loadSync(elf).file;
  return file.loadSegments
    .filter((s) => s.fileSize > 0)
    .map((s) => ({ address: s.paddr, data: file.bytes.subarray(s.offset, s.offset + s.fileSize) }));
}
