import { open, stat } from 'node:fs/promises';
import { OwnedProcess, installExitHooks } from '../../adapter/util/processes';
import { ToolTarget } from './binutils';

/**
 * Runs a program under QEMU with the instruction trace on: one log line per executed instruction
 * (`-singlestep -d exec,nochain`) and virtual time proportional to instructions (`-icount
 * shift=0`), so a run is deterministic. The machine lines are those of test/fixtures/README.md.
 */
export interface QemuRunOptions {
  target: ToolTarget;
  elf: string;
  logPath: string;
  /** Kill QEMU after this long (default 120 s). */
  timeoutMs?: number;
  /** Kill QEMU once the log holds this many lines (plus a little slack for withdrawn lines). */
  maxInstructions?: number;
  /** Extra QEMU arguments. */
  extraArgs?: string[];
}

export interface QemuRunResult {
  command: string[];
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  stoppedAtLimit: boolean;
  seconds: number;
  /** What the program printed on its UART (stdout), capped at 64 KiB. */
  uart: string;
  stderr: string;
}

export function qemuCommand(target: ToolTarget, elf: string, logPath: string): string[] {
  // sleep=off: with the default, QEMU 7.2 advances virtual time with host time while the core
  // sleeps in WFI, so interrupts land elsewhere from run to run (test/fixtures/README.md); the
  // reference must repeat exactly.
  const trace = ['-icount', 'shift=0,sleep=off', '-singlestep', '-d', 'exec,nochain', '-D', logPath];
  const common = ['-nographic', '-monitor', 'none'];
  if (target === 'rv32')
    return [
      'qemu-system-riscv32',
      '-M',
      'virt',
      '-bios',
      'none',
      ...common,
      '-semihosting-config',
      'enable=on,target=native',
      '-kernel',
      elf,
      ...trace,
    ];
  return [
    'qemu-system-arm',
    '-M',
    'mps2-an386',
    ...common,
    '-semihosting-config',
    'enable=on,target=native',
    '-kernel',
    elf,
    ...trace,
  ];
}

/** Lines of slack over maxInstructions: a few log lines are withdrawals, not instructions. */
const LIMIT_SLACK = 4096;
const POLL_MS = 25;
const OUTPUT_CAP = 64 * 1024;

export async function runQemuTrace(options: QemuRunOptions): Promise<QemuRunResult> {
  installExitHooks();
  const [command, ...args] = [
    ...qemuCommand(options.target, options.elf, options.logPath),
    ...(options.extraArgs ?? []),
  ];
  const started = Date.now();
  const qemu = OwnedProcess.spawn('qemu', command!, args);
  let uart = '';
  let stderr = '';
  qemu.child.stdout?.on('data', (d: Buffer) => {
    if (uart.length < OUTPUT_CAP) uart += d.toString('latin1');
  });
  qemu.child.stderr?.on('data', (d: Buffer) => {
    if (stderr.length < OUTPUT_CAP) stderr += d.toString('latin1');
  });
  const spawnError = new Promise<Error>((resolve) => qemu.child.once('error', resolve));

  let timedOut = false;
  let stoppedAtLimit = false;
  const timeout = setTimeout(() => {
    timedOut = true;
    void qemu.kill(500);
  }, options.timeoutMs ?? 120_000);

  let watcher: LineWatcher | undefined;
  let poll: NodeJS.Timeout | undefined;
  // The count in progress when QEMU ends: the log is closed only after it, so no read of a closed
  // file is left running.
  let counting: Promise<void> = Promise.resolve();
  let finished = false;
  if (options.maxInstructions !== undefined) {
    watcher = new LineWatcher(options.logPath);
    const limit = options.maxInstructions + LIMIT_SLACK;
    const tick = async (): Promise<void> => {
      if (finished || qemu.hasExited) return;
      if ((await watcher!.count()) >= limit) {
        stoppedAtLimit = true;
        await qemu.kill(500);
        return;
      }
      if (!finished) poll = setTimeout(() => (counting = tick()), POLL_MS);
    };
    poll = setTimeout(() => (counting = tick()), POLL_MS);
  }

  const outcome = await Promise.race([qemu.exited, spawnError]);
  finished = true;
  clearTimeout(timeout);
  if (poll) clearTimeout(poll);
  await counting.catch(() => undefined);
  await watcher?.close();
  if (outcome instanceof Error) {
    throw new Error(
      `${command} could not be started (${outcome.message}): install QEMU (Debian: qemu-system-arm, qemu-system-misc)`,
    );
  }
  return {
    command: [command!, ...args],
    exitCode: outcome.code,
    signal: outcome.signal,
    timedOut,
    stoppedAtLimit: stoppedAtLimit && !timedOut,
    seconds: (Date.now() - started) / 1000,
    uart,
    stderr,
  };
}

/** Counts newlines of a file that is still being written, reading only what is new. */
class LineWatcher {
  private offset = 0;
  private lines = 0;
  private readonly buf = Buffer.allocUnsafe(1 << 20);
  private handle: Awaited<ReturnType<typeof open>> | undefined;

  constructor(private readonly path: string) {}

  async count(): Promise<number> {
    try {
      this.handle ??= await open(this.path, 'r');
    } catch {
      return this.lines; // not created yet
    }
    const size = (await stat(this.path)).size;
    while (this.offset < size) {
      const { bytesRead } = await this.handle.read(
        this.buf,
        0,
        Math.min(this.buf.length, size - this.offset),
        this.offset,
      );
      if (bytesRead === 0) break;
      const fresh = this.buf.subarray(0, bytesRead);
      for (let i = fresh.indexOf(10); i >= 0; i = fresh.indexOf(10, i + 1)) this.lines++;
      this.offset += bytesRead;
    }
    return this.lines;
  }

  async close(): Promise<void> {
    await this.handle?.close();
  }
}
