import { existsSync, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import type { OpenOcdServerArgs } from '../../common/launchArgs';
import { CycleLensError, ErrorCode } from '../errors';
import { Emitter } from '../util/emitter';
import { assertPortFree, freePort } from '../util/ports';
import { OwnedProcess, requireExecutable } from '../util/processes';
import { OutputTail } from './readiness';
import type { GdbServer, ServerContext, ServerExit } from './strategy';
import { TclRpcClient, TclRpcOptions } from './tclRpc';

export interface OpenOcdPorts {
  gdb: number;
  tcl: number;
  telnet: number;
}

export interface OpenOcdOptions {
  /** Fixed ports; any not given is picked free. */
  ports?: Partial<OpenOcdPorts>;
  /**
   * How long OpenOCD may take to listen for GDB (examining a target through a slow probe takes
   * seconds). Default 15 s.
   */
  readyTimeoutMs?: number;
  /** Environment of the OpenOCD process. Default: the adapter's. */
  env?: NodeJS.ProcessEnv;
  tcl?: TclRpcOptions;
}

const SERVICES = ['gdb', 'tcl', 'telnet'] as const;
type Service = (typeof SERVICES)[number];

/** What OpenOCD 0.12 prints at start-up (server.c, gdb_server.c), and what each line means for us. */
const READY = /Listening on port (\d+) for gdb connections/;
/** Printed when no config file created a target; OpenOCD then keeps running without a GDB port. */
const NO_TARGET = /gdb services need one or more targets defined/;
/** A taken gdb port does not stop OpenOCD (it keeps running without GDB); a taken tcl port does. */
const BIND_FAILED = /couldn't bind (gdb|tcl|telnet) to socket on port (\d+)/;

/**
 * OpenOCD in front of a probe and board. It serves GDB, and a Tcl RPC port through which CycleLens
 * reads and writes memory while the core runs (DWT counters, PC sampling) without going through GDB.
 */
export class OpenOcdServer implements GdbServer {
  readonly kind = 'openocd' as const;
  readonly resetCommand = 'reset halt';

  /** OpenOCD's `reset halt` and `reset init` halt at the reset vector; `reset` and `reset run` let the core run. */
  resetKind(command: string): 'halts' | 'runs' | undefined {
    const m = /^(?:reset|soft_reset_halt)(?:\s+(\S+))?\s*$/.exec(command);
    if (!m) return undefined;
    if (command.startsWith('soft_reset_halt') || m[1] === 'halt' || m[1] === 'init') return 'halts';
    return m[1] === undefined || m[1] === 'run' ? 'runs' : undefined;
  }
  private proc: OwnedProcess | undefined;
  private tclClient: TclRpcClient | undefined;
  private chosenPorts: OpenOcdPorts | undefined;
  private ready = false;
  private stopping: Promise<void> | undefined;
  private readonly tail = new OutputTail(20);
  private readonly exitEmitter = new Emitter<ServerExit>();
  readonly onUnexpectedExit = (l: (e: ServerExit) => void): void => void this.exitEmitter.event(l);

  constructor(
    private readonly args: OpenOcdServerArgs,
    private readonly options: OpenOcdOptions = {},
  ) {}

  get gdbAddress(): string {
    return `127.0.0.1:${this.ports.gdb}`;
  }

  get ports(): OpenOcdPorts {
    if (!this.chosenPorts) throw new Error('OpenOCD has not been started');
    return this.chosenPorts;
  }

  /** The Tcl RPC connection, once start() has resolved. */
  get tcl(): TclRpcClient {
    if (!this.tclClient?.isOpen) {
      throw new CycleLensError(
        ErrorCode.NotRunning,
        "OpenOCD's Tcl RPC connection is not open: OpenOCD has not started or has stopped.",
      );
    }
    return this.tclClient;
  }

  async start(ctx: ServerContext): Promise<void> {
    const exe = requireExecutable(
      this.args.path ?? 'openocd',
      'OpenOCD',
      'Install it (Debian: `apt-get install openocd`) or set `server.path` in the launch ' +
        'configuration to the openocd executable.',
    );
    const searchDirs = (this.args.searchDirs ?? []).map((d) => resolve(ctx.cwd, d));
    for (const file of this.args.configFiles) checkConfigFile(file, ctx.cwd, searchDirs, exe);
    this.chosenPorts = await this.choosePorts();
    const argv = openOcdArgv(this.args, searchDirs, this.chosenPorts);
    ctx.log(`Starting ${exe} ${argv.map((a) => (/\s/.test(a) ? JSON.stringify(a) : a)).join(' ')}\n`);

    const proc = OwnedProcess.spawn('openocd', exe, argv, {
      cwd: ctx.cwd,
      env: this.options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.proc = proc;
    const lines = new Emitter<string>();
    for (const stream of [proc.child.stdout, proc.child.stderr]) {
      if (!stream) continue;
      createInterface({ input: stream as Readable, crlfDelay: Infinity }).on('line', (line) => {
        this.tail.push(line);
        ctx.log(`${line}\n`);
        lines.fire(line);
      });
    }
    void proc.exited.then(({ code, signal }) => {
      if (!this.ready || this.stopping) return;
      const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      this.exitEmitter.fire({
        message: `OpenOCD ${how} while the session was running.${this.outputQuote()}`,
        programEnded: false,
      });
    });

    try {
      await this.waitUntilReady(proc, lines);
      this.tclClient = await TclRpcClient.connect(this.chosenPorts.tcl, '127.0.0.1', this.options.tcl);
      this.ready = true;
    } catch (err) {
      await this.stop();
      throw err;
    } finally {
      lines.dispose();
    }
  }

  /** Stops OpenOCD: `shutdown` over Tcl so it releases the probe cleanly, then the process is killed. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      const tcl = this.tclClient;
      this.tclClient = undefined;
      if (tcl) await tcl.shutdown(1000);
      const proc = this.proc;
      if (tcl && proc && !proc.hasExited) {
        // After `shutdown` OpenOCD closes the probe and exits by itself; give it a moment.
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([proc.exited, new Promise((r) => (timer = setTimeout(r, 1000)))]);
        clearTimeout(timer);
      }
      await proc?.kill();
    })();
    return this.stopping;
  }

  private async choosePorts(): Promise<OpenOcdPorts> {
    const fixed = this.options.ports ?? {};
    const ports: Partial<OpenOcdPorts> = {};
    for (const service of SERVICES) {
      const port = fixed[service];
      if (port === undefined) continue;
      await assertPortFree(port, `OpenOCD ${service} port`);
      ports[service] = port;
    }
    for (const service of SERVICES) {
      while (ports[service] === undefined) {
        const port = await freePort();
        if (!Object.values(ports).includes(port)) ports[service] = port;
      }
    }
    return ports as OpenOcdPorts;
  }

  private waitUntilReady(proc: OwnedProcess, lines: Emitter<string>): Promise<void> {
    const gdbPort = this.ports.gdb;
    const timeoutMs = this.options.readyTimeoutMs ?? 15_000;
    return new Promise<void>((resolveReady, rejectReady) => {
      let settled = false;
      const settle = (err?: CycleLensError): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        listener.dispose();
        if (err) rejectReady(err);
        else resolveReady();
      };
      const timer = setTimeout(
        () =>
          settle(
            new CycleLensError(
              ErrorCode.ServerTimeout,
              `OpenOCD did not report "Listening on port ${gdbPort} for gdb connections" within ${timeoutMs / 1000} ` +
                `s.${this.outputQuote()}`,
            ),
          ),
        timeoutMs,
      );
      const listener = lines.event((line) => {
        const ready = READY.exec(line);
        if (ready && Number(ready[1]) === gdbPort) return settle();
        if (NO_TARGET.test(line)) {
          const said = line.replace(/^\w+\s*:\s*/, '');
          return settle(
            new CycleLensError(
              ErrorCode.ServerFailedToStart,
              `OpenOCD started but configured no target: check your -f target/… file. ` +
                `\`server.configFiles\` must include a target configuration that runs \`target create\` ` +
                `(e.g. target/stm32f4x.cfg), after the interface file. OpenOCD said: "${said}".`,
            ),
          );
        }
        const bind = BIND_FAILED.exec(line);
        if (bind) {
          const service = bind[1] as Service;
          const hint =
            this.options.ports?.[service] !== undefined
              ? 'Choose another port, or stop the program using it.'
              : 'Another program took it after CycleLens picked it; start the session again.';
          return settle(
            new CycleLensError(
              ErrorCode.PortInUse,
              `OpenOCD could not listen on port ${bind[2]} (its ${service} port): it is already in use. ${hint}`,
            ),
          );
        }
      });
      proc.child.once('error', (err) =>
        settle(new CycleLensError(ErrorCode.ServerFailedToStart, `OpenOCD could not be started: ${err.message}`)),
      );
      void proc.exited.then(async ({ code, signal }) => {
        // The exit can be reported before the last lines are read from the pipes (a loaded host):
        // they are quoted once both streams have ended.
        await proc.outputEnded();
        const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
        settle(
          new CycleLensError(
            ErrorCode.ServerFailedToStart,
            `OpenOCD ${how} before it was ready for GDB.${this.outputQuote()}\nCheck ` +
              `\`server.configFiles\` (an interface file and a target file) and that the probe is ` +
              `connected.`,
          ),
        );
      });
    });
  }

  private outputQuote(): string {
    return this.tail.text ? ` Its last output:\n${this.tail.text}` : '';
  }
}

/**
 * OpenOCD's command line: search dirs, config files, ports, then the user's commands. OpenOCD runs
 * `-f`/`-c` in order and calls `init` after the last one, so the ports are set before servers start.
 */
export function openOcdArgv(args: OpenOcdServerArgs, searchDirs: string[], ports: OpenOcdPorts): string[] {
  return [
    ...searchDirs.flatMap((d) => ['-s', d]),
    ...args.configFiles.flatMap((f) => ['-f', f]),
    ...SERVICES.flatMap((s) => ['-c', portCommand(s, ports[s])]),
    ...(args.commands ?? []).flatMap((c) => ['-c', c]),
  ];
}

/**
 * 0.12 only knows `gdb_port N`; later releases add `gdb port N` and deprecate the underscore name.
 * The group command (`gdb`) exists exactly when the new form does.
 */
function portCommand(service: Service, port: number): string {
  return `if {[info commands ${service}] ne ""} {${service} port ${port}} else {${service}_port ${port}}`;
}

/**
 * Fails early, naming the file and the folders searched, when a config file is nowhere OpenOCD
 * would look: as given (relative to its working directory), then each script search directory
 * (`-s`, $OPENOCD_SCRIPTS, the user's config folders, the installation's site and scripts folders).
 */
function checkConfigFile(file: string, cwd: string, searchDirs: string[], exe: string): void {
  const asGiven = isAbsolute(file) ? file : resolve(cwd, file);
  if (isFile(asGiven)) return;
  const installDir = join(dirname(realpathSync(exe)), '..', 'share', 'openocd');
  const dirs = isAbsolute(file)
    ? []
    : [
        ...searchDirs,
        ...(process.env['OPENOCD_SCRIPTS'] ? [process.env['OPENOCD_SCRIPTS']] : []),
        join(process.env['XDG_CONFIG_HOME'] ?? join(homedir(), '.config'), 'openocd'),
        join(homedir(), '.openocd'),
        join(installDir, 'site'),
        join(installDir, 'scripts'),
      ];
  if (dirs.some((d) => isFile(join(d, file)))) return;
  // An installation laid out differently has script folders we cannot see: let OpenOCD decide.
  if (!isAbsolute(file) && !existsSync(join(installDir, 'scripts'))) return;
  const looked = isAbsolute(file) ? '' : ` Looked in: ${[cwd, ...dirs.map((d) => resolve(d))].join(', ')}.`;
  throw new CycleLensError(
    ErrorCode.InvalidLaunchArgs,
    `OpenOCD configuration file '${file}' was not found.${looked} Correct ` +
      `\`server.configFiles\`, or add the folder that holds it to \`server.searchDirs\`.`,
  );
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
