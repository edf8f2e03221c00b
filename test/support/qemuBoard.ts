import { spawn, type ChildProcess } from 'node:child_process';
import { isUnsupported } from '../../adapter/arch/archPlugin';
import { archPlugin } from '../../adapter/arch/registry';
import { waitForTcp } from '../../adapter/servers/readiness';
import { freePort } from '../../adapter/util/ports';
import { OWNER_TAG_VAR, newOwnerTag, waitForNoTaggedProcesses, type LiveProcess } from './ownedProcesses';
import type { FixtureTarget } from './paths';

const FAMILY = { 'cortex-m4': 'cortex-m', rv32: 'riscv' } as const;

/**
 * A QEMU a test starts itself and points a `remote` launch at: a board the sessions neither own nor
 * load. It runs halted (`-S`) as the adapter would run it (the family's binary, machine and
 * arguments, `-icount shift=0`), its gdbstub on a free port, under an owner tag of its own, so that
 * stopping a session's harness leaves it running.
 */
export class QemuBoard {
  private constructor(
    readonly process: ChildProcess,
    /** `127.0.0.1:PORT`, for `server: { type: 'remote', address }`. */
    readonly address: string,
    private readonly tag: string,
  ) {}

  static async start(target: FixtureTarget, elf: string): Promise<QemuBoard> {
    const qemu = archPlugin(FAMILY[target]).qemu;
    if (isUnsupported(qemu)) throw new Error(`no QEMU for ${target}: ${qemu.unsupported}`);
    const port = await freePort();
    const tag = newOwnerTag();
    const args = ['-M', qemu.defaultMachine, ...qemu.args, '-icount', 'shift=0,sleep=off', '-kernel', elf];
    const child = spawn(qemu.binary, [...args, '-display', 'none', '-serial', 'null', '-monitor', 'none', '-gdb', `tcp:127.0.0.1:${port}`, '-S'], {
      stdio: 'ignore',
      env: { ...process.env, [OWNER_TAG_VAR]: tag },
    });
    const board = new QemuBoard(child, `127.0.0.1:${port}`, tag);
    try {
      await waitForTcp('127.0.0.1', port, Date.now() + 10_000, () => (child.exitCode !== null ? 'exited' : undefined));
    } catch (err) {
      await board.stop();
      throw err;
    }
    return board;
  }

  /** Kills the board; resolves with whatever of its own is still running after that (nothing, normally). */
  async stop(): Promise<LiveProcess[]> {
    this.process.kill('SIGKILL');
    return waitForNoTaggedProcesses(this.tag);
  }
}
