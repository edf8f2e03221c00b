import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QemuServer } from '../../adapter/servers/qemu';
import { waitForTcp } from '../../adapter/servers/readiness';
import { freePort } from '../../adapter/util/ports';
import { OWNER_TAG_VAR, newOwnerTag, waitForNoTaggedProcesses, type LiveProcess } from './ownedProcesses';
import type { FixtureTarget } from './paths';

const FAMILY = { 'cortex-m4': 'cortex-m', rv32: 'riscv' } as const;

/**
 * A QEMU a test starts itself and points a `remote` launch at: a board the sessions neither own nor
 * load. Its command line is the one the adapter's QEMU server builds (QemuServer.commandLine:
 * halted with `-S`, `-icount shift=0`, the gdbstub on a free port), its run directory and process
 * its own, under an owner tag of its own, so that stopping a session's harness leaves it running.
 */
export class QemuBoard {
  private constructor(
    readonly process: ChildProcess,
    /** `127.0.0.1:PORT`, for `server: { type: 'remote', address }`. */
    readonly address: string,
    private readonly tag: string,
    private readonly runDir: string,
  ) {}

  static async start(target: FixtureTarget, elf: string): Promise<QemuBoard> {
    const port = await freePort();
    const runDir = mkdtempSync(join(tmpdir(), 'cyclelens-board-'));
    const { binary, argv } = new QemuServer({ type: 'qemu' }).commandLine(
      { executable: elf, family: FAMILY[target], cwd: runDir, log: () => {} },
      port,
      join(runDir, 'monitor.sock'),
    );
    const tag = newOwnerTag();
    const child = spawn(binary, argv, { stdio: 'ignore', env: { ...process.env, [OWNER_TAG_VAR]: tag } });
    const board = new QemuBoard(child, `127.0.0.1:${port}`, tag, runDir);
    try {
      await waitForTcp('127.0.0.1', port, Date.now() + 10_000, () => (child.exitCode !== null ? 'exited' : undefined));
    } catch (err) {
      await board.stop();
      throw err;
    }
    return board;
  }

  /** Kills the board and removes its run directory; resolves with whatever of its own is still running after that (nothing, normally). */
  async stop(): Promise<LiveProcess[]> {
    this.process.kill('SIGKILL');
    const left = await waitForNoTaggedProcesses(this.tag);
    rmSync(this.runDir, { recursive: true, force: true });
    return left;
  }
}
