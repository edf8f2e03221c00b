import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { QemuServerArgs } from '../../common/launchArgs';
import { isUnsupported } from '../arch/archPlugin';
import { archPlugin } from '../arch/registry';
import { CycleLensError, ErrorCode } from '../errors';
import { Emitter } from '../util/emitter';
import { LineCoalescer } from '../util/lineCoalescer';
import { OwnedProcess, requireExecutable } from '../util/processes';
import { freePort } from '../util/ports';
import { qemuPluginPath } from '../sampling/pluginLocation';
import { codeCacheDir } from '../codeCache';
import { FileFollower } from './fileFollower';
import { rememberStart, type QemuCommand } from '../startPlan';
import { DIR_SLOT, instantiate, PORT_SLOT, takePrestartedQemu } from './qemuPrestart';
import { runCountingQemu, type CountingRunResult, type CountingStop } from './qemuCounting';
import { OutputTail, waitForTcp } from './readiness';
import type { GdbServer, ServerContext, ServerExit } from './strategy';

/**
 * QEMU's built-in gdbstub as the server. QEMU starts halted (`-S`) and waits for GDB; the guest's
 * UART goes to a file in the run directory, followed into the Debug Console, and semihosting output
 * arrives on QEMU's stderr; an HMP monitor socket is kept for
 * non-intrusive PC sampling (`info registers` answers while the guest runs).
 */
export class QemuServer implements GdbServer {
  readonly kind = 'qemu' as const;
  readonly resetCommand = 'system_reset';

  /** HMP `system_reset` (QEMU keeps a VM stopped by the gdbstub stopped across it). */
  resetKind(command: string): 'halts' | undefined {
    return /^system_reset\s*$/.test(command) ? 'halts' : undefined;
  }
  private proc: OwnedProcess | undefined;
  private context: ServerContext | undefined;
  private port = 0;
  private stopping = false;
  private runDir: string | undefined;
  private uartFollower: FileFollower | undefined;
  private uartLines: LineCoalescer | undefined;
  private tail = new OutputTail();
  private readonly exitEmitter = new Emitter<ServerExit>();
  readonly onUnexpectedExit = (l: (e: ServerExit) => void): void => void this.exitEmitter.event(l);
  private readonly cleanupEmitter = new Emitter<void>();
  /** QEMU has exited and its run directory (monitor socket, plugin output) is about to be removed. */
  readonly onBeforeCleanup = this.cleanupEmitter.event;

  constructor(private readonly args: QemuServerArgs) {}

  get gdbAddress(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Path of the HMP monitor's unix socket while QEMU runs. */
  get monitorSocket(): string | undefined {
    return this.runDir ? join(this.runDir, 'monitor.sock') : undefined;
  }

  /** Where the instruction-counting plugin writes its snapshots, when `instructionCounts` loaded it. */
  get instructionCountsFile(): string | undefined {
    return this.runDir && this.args.instructionCounts ? join(this.runDir, 'insn-counts.txt') : undefined;
  }

  /** Whether every translation block is one instruction (the monitor then reads exact PCs). */
  get singlestep(): boolean {
    return this.args.singlestep === true;
  }

  /** The full command line, for logs and tests. */
  commandLine(ctx: ServerContext, port: number | string, monitorSocket: string): { binary: string; argv: string[] } {
    const { binary, machine, tail } = this.guest(ctx);
    const argv = [
      ...machine,
      '-display',
      'none',
      // A file, not stdio: see FileFollower for why the guest's UART must never wait on a pipe.
      '-serial',
      `file:${join(dirname(monitorSocket), 'uart.log')}`,
      '-monitor',
      `unix:${monitorSocket},server=on,wait=off`,
      '-gdb',
      `tcp:127.0.0.1:${port}`,
      '-S',
      // QEMU 7.2 has no `-accel tcg,one-insn-per-tb=on` yet: `-singlestep` is its spelling.
      ...(this.args.singlestep ? ['-singlestep'] : []),
      ...(this.args.instructionCounts
        ? ['-plugin', `${qemuPluginPath()},out=${join(dirname(monitorSocket), 'insn-counts.txt')},period_ms=100`]
        : []),
      ...tail,
    ];
    return { binary, argv };
  }

  /**
   * The same guest run free, without a debugger, with the counting plugin writing `countsFile` at
   * exit: the machine, semihosting, icount and image of the session's own command line, so that
   * under -icount it executes exactly what the session's runs execute (executionCounts.ts).
   */
  countingCommandLine(ctx: ServerContext, countsFile: string, stop?: CountingStop): { binary: string; argv: string[] } {
    const { binary, machine, tail } = this.guest(ctx);
    return {
      binary,
      argv: [
        ...machine,
        '-display',
        'none',
        '-serial',
        'null',
        '-monitor',
        'none',
        '-plugin',
        `${qemuPluginPath()},out=${countsFile},period_ms=60000` +
          (stop ? `,stop_at=0x${stop.address.toString(16)},stop_hits=${stop.hits}` : ''),
        ...tail,
      ],
    };
  }

  /**
   * What both command lines share: the family's QEMU target (docs/design.md, "Truth: the oracle"),
   * the image, the user's own arguments.
   */
  private guest(ctx: ServerContext): { binary: string; machine: string[]; tail: string[] } {
    const defaults = archPlugin(ctx.family).qemu;
    if (isUnsupported(defaults)) throw new CycleLensError(ErrorCode.UnsupportedArchitecture, defaults.unsupported);
    const machine = [
      '-M',
      this.args.machine ?? defaults.defaultMachine,
      ...(this.args.cpu ? ['-cpu', this.args.cpu] : []),
      ...defaults.args,
      // sleep=off: virtual time never follows the host clock (a wfi would otherwise make runs differ).
      ...(this.args.icount === null ? [] : ['-icount', `shift=${this.args.icount ?? 0},sleep=off`]),
      '-kernel',
      ctx.executable,
    ];
    return { binary: this.args.path ?? defaults.binary, machine, tail: [...(this.args.args ?? [])] };
  }

  /**
   * Runs the session's guest once more in a QEMU of its own, free and without a debugger, and
   * returns how often each instruction ran (runCountingQemu). The session's QEMU is not touched.
   */
  async countInstructions(timeoutMs: number, signal?: AbortSignal, stop?: CountingStop): Promise<CountingRunResult> {
    const ctx = this.context;
    if (!ctx) return { counted: false, reason: 'QEMU has not been started', elapsedMs: 0 };
    return await runCountingQemu({
      binary: this.countingCommandLine(ctx, '').binary,
      argv: (file) => this.countingCommandLine(ctx, file, stop).argv,
      cwd: ctx.cwd,
      timeoutMs,
      ...(signal ? { signal } : {}),
    });
  }

  async start(ctx: ServerContext): Promise<void> {
    this.context = ctx;
    // Built as a template (port and run directory left open): the QEMU started ahead of this launch
    // by the loader is taken when it runs this very command (qemuPrestart.ts).
    const template = this.commandLine(ctx, PORT_SLOT, join(DIR_SLOT, 'monitor.sock'));
    const qemu = archPlugin(ctx.family).qemu;
    const debianPackage = isUnsupported(qemu) ? 'qemu-system' : qemu.debianPackage;
    const exe = requireExecutable(
      template.binary,
      'QEMU',
      `Install it (Debian: \`apt-get install ${debianPackage}\`) or set \`server.path\` in the launch configuration.`,
    );
    const command = { binary: exe, argv: template.argv, cwd: ctx.cwd };
    rememberStart({ qemu: command }, process.env, codeCacheDir());
    const ahead = takePrestartedQemu(command);
    if (ahead) {
      try {
        await this.run(ctx, command, {
          port: ahead.port,
          dir: ahead.dir,
          proc: OwnedProcess.adopt('qemu', ahead.child),
        });
        return;
      } catch {
        // It did not come up (its port was taken meanwhile, say): start one as if it had not been there.
        this.proc = undefined;
        this.stopping = false;
        this.tail = new OutputTail();
      }
    }
    await this.run(ctx, command, undefined);
  }

  private async run(
    ctx: ServerContext,
    command: QemuCommand,
    ahead: { port: number; dir: string; proc: OwnedProcess } | undefined,
  ): Promise<void> {
    this.port = ahead?.port ?? (await freePort());
    this.runDir = ahead?.dir ?? mkdtempSync(join(tmpdir(), 'cyclelens-qemu-'));
    const argv = instantiate(command.argv, this.port, this.runDir);
    ctx.log(`${ahead ? 'Started ahead of the launch:' : 'Starting'} ${command.binary} ${argv.join(' ')}\n`);
    const proc = ahead?.proc ?? OwnedProcess.spawn('qemu', command.binary, argv, { cwd: command.cwd });
    this.proc = proc;
    proc.child.stdout?.setEncoding('utf8');
    proc.child.stderr?.setEncoding('utf8');
    const uart = new LineCoalescer(ctx.log);
    this.uartLines = uart;
    proc.child.stdout?.on('data', (text: string) => uart.push(text));
    const follower = new FileFollower(join(this.runDir, 'uart.log'), (text) => uart.push(text));
    this.uartFollower = follower;
    follower.start();
    proc.child.stderr?.on('data', (text: string) => {
      this.tail.push(text);
      ctx.log(text);
    });
    let spawnError: string | undefined;
    proc.child.once('error', (err) => (spawnError = `QEMU could not be started: ${err.message}`));
    void proc.exited.then(async ({ code, signal }) => {
      // The guest's last words reach the Debug Console before the session hears that QEMU ended.
      await follower.stop();
      uart.flush();
      // A QEMU stopped by the adapter, or one given up for another (see start), is no news.
      if (this.stopping || this.proc !== proc) return;
      await proc.outputEnded(); // the last lines on stderr, quoted below
      if (code === 0) {
        this.exitEmitter.fire({ message: 'QEMU ended with status 0', programEnded: true });
        return;
      }
      const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      const lastOutput = this.tail.text ? ` Its last output:\n${this.tail.text}` : '';
      this.exitEmitter.fire({
        message: `QEMU ${how} while the session was running.${lastOutput}`,
        programEnded: false,
      });
    });
    try {
      await waitForTcp(
        '127.0.0.1',
        this.port,
        Date.now() + 10_000,
        () => spawnError ?? (proc.hasExited ? 'exited' : undefined),
      );
    } catch (err) {
      await this.stop();
      const output = this.tail.text;
      if (/Address already in use|Failed to find an available port/i.test(output)) {
        throw new CycleLensError(
          ErrorCode.PortInUse,
          `QEMU could not listen for GDB on port ${this.port}: it is already in use. Try again; ` +
            `CycleLens picks a free port each time.`,
        );
      }
      const why =
        err instanceof Error && err.message === 'timeout'
          ? 'did not open its GDB port within 10 s'
          : 'exited before GDB could connect';
      throw new CycleLensError(
        ErrorCode.ServerFailedToStart,
        `QEMU ${why}.${output ? ` It printed:\n${output}` : ''}\nCheck \`server.machine\` (${argv[1]}) ` +
          `and that the executable is built for it.`,
      );
    }
  }

  /** Delivers the guest's UART output written so far (it is otherwise followed every 50 ms). */
  async flushOutput(): Promise<void> {
    await this.uartFollower?.drain();
    this.uartLines?.flush();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.proc?.kill();
    await this.uartFollower?.stop();
    if (this.runDir) this.cleanupEmitter.fire();
    if (this.runDir) rmSync(this.runDir, { recursive: true, force: true });
    this.runDir = undefined;
  }
}
