import type { RemoteServerArgs } from '../../common/launchArgs';
import { CycleLensError, ErrorCode } from '../errors';
import { probeGdbServer, waitForTcp } from './readiness';

/** How long a gdbserver gets to answer its first packet; real stubs answer in milliseconds. */
const HANDSHAKE_TIMEOUT_MS = 3_000;
import type { GdbServer, ServerContext, ServerExit } from './strategy';

/** A gdbserver someone else runs (J-Link, pyOCD, nSIM, a board's stub): nothing to start or stop. */
export class RemoteServer implements GdbServer {
  readonly kind = 'remote' as const;
  readonly resetCommand = undefined;

  /** A gdbserver's monitor commands are its own: none is known to reset. */
  resetKind(): undefined {
    return undefined;
  }

  constructor(private readonly args: RemoteServerArgs) {}

  get gdbAddress(): string {
    return this.args.address;
  }

  async start(_ctx: ServerContext): Promise<void> {
    const m = /^(.*):(\d+)$/.exec(this.args.address);
    if (!m) {
      throw new CycleLensError(
        ErrorCode.InvalidLaunchArgs,
        `server.address '${this.args.address}' is not host:port. Write it like "localhost:3333".`,
      );
    }
    const host = m[1] || '127.0.0.1';
    try {
      await waitForTcp(host, Number(m[2]), Date.now() + 3_000, () => undefined);
    } catch {
      throw new CycleLensError(
        ErrorCode.ConnectFailed,
        `Nothing accepts connections at ${this.args.address}. Start the gdbserver first, or correct ` +
          `\`server.address\`.`,
      );
    }
    const probe = await probeGdbServer(host, Number(m[2]), HANDSHAKE_TIMEOUT_MS);
    const hint =
      'Check `server.address`: it must be the GDB port of the server (OpenOCD: 3333, not its ' +
      'telnet 4444 or Tcl 6666; J-Link: 2331; pyOCD: 3333).';
    if (probe.kind === 'silent') {
      throw new CycleLensError(
        ErrorCode.ConnectFailed,
        `Nothing at ${this.args.address} answered as a gdbserver: it accepted the connection but ` +
          `did not answer a GDB remote protocol request within ${HANDSHAKE_TIMEOUT_MS / 1000} s. ${hint}`,
      );
    }
    if (probe.kind === 'other') {
      const said = probe.said
        .replace(/[^\x20-\x7e]+/g, ' ')
        .trim()
        .slice(0, 60);
      throw new CycleLensError(
        ErrorCode.ConnectFailed,
        `Nothing at ${this.args.address} answered as a gdbserver: it replied "${said}", which is ` +
          `not the GDB remote protocol. ${hint}`,
      );
    }
    if (probe.kind === 'closed') {
      throw new CycleLensError(
        ErrorCode.ConnectFailed,
        `Nothing at ${this.args.address} answered as a gdbserver: it closed the connection without ` +
          `answering (a gdbserver that already serves another debugger does this). ${hint}`,
      );
    }
  }

  onUnexpectedExit(_listener: (e: ServerExit) => void): void {
    // Not ours: a lost connection shows up as GDB losing the target.
  }

  async stop(): Promise<void> {
    // Never stop a server we did not start.
  }
}
