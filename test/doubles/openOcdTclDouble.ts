import { createServer, Server, Socket } from 'node:net';
import { MiniTcl, parseList, TclSignal, tclError } from './miniTcl';
import type { PcsrCoreModel } from './pcsrCoreModel';

/**
 * A test double of OpenOCD's Tcl RPC server (`tcl_port`) in front of a Cortex-M, on a real TCP
 * socket. Wire protocol as OpenOCD 0.12's tcl_server.c: a command line is everything up to byte
 * 0x1a; the whole line is evaluated; the Tcl result goes back followed by 0x1a, whatever the return
 * code (an error's reply is its message: the protocol has no status). Every connection has its own
 * interpreter here (OpenOCD shares one; CycleLens defines the same procs on each connection).
 *
 * OpenOCD commands it answers, with OpenOCD 0.12's messages (seen on a real OpenOCD with the dummy
 * adapter): `read_memory address width count ['phys']` (a Tcl list of `0x…` words; the address
 * increments per word; a fault fails with "read_memory: failed to read memory" and logs the
 * access), `write_memory address width data ['phys']`, `halt`, `resume`, `echo`, `capture`,
 * `shutdown`. Anything else fails as Jim does: `invalid command name "x"`. Memory is
 * `PcsrCoreModel`, 32-bit accesses only (what DWT and SCS registers take).
 */
export interface TclDoubleOptions {
  /** 0: an ephemeral port. */
  port?: number;
}

const TERMINATOR = 0x1a;

export class OpenOcdTclDouble {
  /** Command lines received, in order (for tests that look at what a client sent). */
  readonly received: string[] = [];
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
    readonly core: PcsrCoreModel,
  ) {}

  static async start(core: PcsrCoreModel, options: TclDoubleOptions = {}): Promise<OpenOcdTclDouble> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('the Tcl double has no TCP port');
    const double = new OpenOcdTclDouble(server, address.port, core);
    server.on('connection', (socket) => double.serve(socket));
    return double;
  }

  get connections(): number {
    return this.sockets.size;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private serve(socket: Socket): void {
    this.sockets.add(socket);
    socket.setNoDelay(true);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => undefined);
    const interp = openOcdInterpreter(this.core);
    let pending = Buffer.alloc(0);
    let closing = false;
    interp.define('shutdown', () => {
      closing = true;
      throw new TclSignal(-600, 'shutdown command invoked');
    });
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      // `shutdown` (evaluated below) sets `closing`: the commands after it in this chunk go unanswered.
      for (let end = pending.indexOf(TERMINATOR); end >= 0; end = pending.indexOf(TERMINATOR)) {
        if (closing) break;
        const line = pending.subarray(0, end).toString('utf8');
        pending = pending.subarray(end + 1);
        this.received.push(line);
        const { result } = interp.evalTop(line);
        socket.write(Buffer.concat([Buffer.from(result, 'utf8'), Buffer.of(TERMINATOR)]));
      }
      if (closing) socket.end();
    });
  }
}

/** An interpreter with the double's OpenOCD commands over `core` (also used without a socket). */
export function openOcdInterpreter(core: PcsrCoreModel): MiniTcl {
  const interp = new MiniTcl();
  interp.define('read_memory', (a) => {
    if (a.length < 4 || a.length > 5)
      throw tclError('wrong # args: should be "read_memory address width count [\'phys\']"');
    const [address, width, count] = [number(a[1]!, 'address'), number(a[2]!, 'width'), number(a[3]!, 'count')];
    checkWidth(width);
    const words: string[] = [];
    for (let i = 0; i < count; i++) {
      const value = core.read(address + i * 4);
      if (value === undefined) {
        interp.log(`read_memory: read at 0x${address.toString(16)} with width=${width} and count=${count} failed\n`);
        throw tclError('read_memory: failed to read memory');
      }
      words.push(`0x${value.toString(16)}`);
    }
    return words.join(' ');
  });
  interp.define('write_memory', (a) => {
    if (a.length < 4 || a.length > 5)
      throw tclError('wrong # args: should be "write_memory address width data [\'phys\']"');
    const [address, width] = [number(a[1]!, 'address'), number(a[2]!, 'width')];
    checkWidth(width);
    parseList(a[3]!).forEach((word, i) => {
      if (!core.write(address + i * 4, number(word, 'data'))) {
        interp.log(`write_memory: write at 0x${(address + i * 4).toString(16)} with width=${width} failed\n`);
        throw tclError('write_memory: failed to write memory');
      }
    });
    return '';
  });
  interp.define('halt', () => {
    if (!core.halted) interp.log('[cortex_m] halted due to debug-request\n');
    core.halted = true;
    return '';
  });
  interp.define('resume', () => {
    core.halted = false;
    return '';
  });
  return interp;
}

function number(word: string, what: string): number {
  if (!/^(0x[0-9a-fA-F]+|\d+)$/.test(word)) throw tclError(`${what}: expected a number but got '${word}'`);
  return Number(word);
}

/** The double models 32-bit registers only; OpenOCD itself takes 8, 16, 32 and 64. */
function checkWidth(width: number): void {
  if (![8, 16, 32, 64].includes(width)) throw tclError(`invalid width: ${width}, must be 8, 16, 32 or 64`);
  if (width !== 32) throw tclError(`the Tcl double models 32-bit accesses only (asked for ${width})`);
}
