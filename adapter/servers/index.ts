import type { ServerArgs } from '../../common/launchArgs';
import { OpenOcdServer } from './openocd';
import { QemuServer } from './qemu';
import { RemoteServer } from './remote';
import type { GdbServer } from './strategy';

/** Picks the server strategy for a launch configuration's `server.type`. */
export function createServer(args: ServerArgs): GdbServer {
  switch (args.type) {
    case 'qemu':
      return new QemuServer(args);
    case 'openocd':
      return new OpenOcdServer(args, {
        ports: {
          ...(args.gdbPort !== undefined ? { gdb: args.gdbPort } : {}),
          ...(args.tclPort !== undefined ? { tcl: args.tclPort } : {}),
          ...(args.telnetPort !== undefined ? { telnet: args.telnetPort } : {}),
        },
      });
    case 'remote':
      return new RemoteServer(args);
    default: {
      const never: never = args;
      throw new Error(`unknown server ${JSON.stringify(never)}`);
    }
  }
}
