import type { RemoteServerArgs } from '../../common/launchArgs';
import { CycleLensError, ErrorCode } from '../errors';
import { waitForTcp } from './readiness';
import type { GdbServer, ServerContext, ServerExit } from './strategy';

/** A gdbserver someone else runs (J-Link, pyOCD, nSIM, a board's stub): nothing to start or stop. */
export class RemoteServer implements GdbServer {
  readonly kind = 'remote' as const;
  readonly resetCommand = undefined;

  constructor(private readonly args: RemoteServerArgs) {}

  get gdbAddress(): string {
    return this.args.address;
  }

  async start(_ctx: ServerContext): Promise<void> {
    const m = /^(.*):(\d+)$/.exec(this.args.address);
    if (!m) {
      throw new CycleLensError(ErrorCode.InvalidLaunchArgs, `server.address '${this.args.address}' is not host:port. Write it like "localhost:3333".`);
    }
    const host = m[1] || '127.0.0.1';
    try {
      await waitForTcp(host, Number(m[2]), Date.now() + 3_000, () => undefined);
    } catch {
      throw new CycleLensError(ErrorCode.ConnectFailed, `Nothing accepts connections at ${this.args.address}. Start the gdbserver first, or correct \`server.address\`.`);
    }
  }

  onUnexpectedExit(_listener: (e: ServerExit) => void): void {
    // Not ours: a lost connection shows up as GDB losing the target.
  }

  async stop(): Promise<void> {
    // Never stop a server we did not start.
  }
}
