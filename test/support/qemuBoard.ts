import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
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

  /**
   * `elf` undefined: a board with nothing in it yet (QEMU without `-kernel`), for a probe's server
   * to program, as the board double does (test/doubles/boardDouble.ts).
   */
  static async start(target: FixtureTarget, elf: string | undefined): Promise<QemuBoard> {
    const port = await freePort();
    const runDir = mkdtempSync(join(tmpdir(), 'cyclelens-board-'));
    const command = new QemuServer({ type: 'qemu' }).commandLine(
      { executable: elf ?? '', family: FAMILY[target], cwd: runDir, log: () => {} },
      port,
      join(runDir, 'monitor.sock'),
    );
    const { binary } = command;
    const argv = elf === undefined ? withoutImage(command.argv) : command.argv;
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

  /** What the guest wrote to its UART so far. */
  uartOutput(): string {
    return existsSync(join(this.runDir, 'uart.log')) ? readFileSync(join(this.runDir, 'uart.log'), 'latin1') : '';
  }

  /**
   * Kills the board and removes its run directory; resolves with whatever of its own is still running
   * after that (nothing, normally).
   */
  async stop(): Promise<LiveProcess[]> {
    this.process.kill('SIGKILL');
    const left = await waitForNoTaggedProcesses(this.tag);
    rmSync(this.runDir, { recursive: true, force: true });
    return left;
  }
}

/** The command line less its `-kernel FILE`. */
function withoutImage(argv: readonly string[]): string[] {
  const at = argv.indexOf('-kernel');
  return at < 0 ? [...argv] : [...argv.slice(0, at), ...argv.slice(at + 2)];
}
