import type { CycleLensLaunchArgs } from '../../common/launchArgs';

/**
 * Workspace Trust for debug sessions. A launch configuration comes from the workspace and names
 * programs that run on this machine: the debugger (`gdbPath`), the server (`server.path`, QEMU's or
 * OpenOCD's by default), OpenOCD scripts (Tcl, which can run commands), and GDB commands
 * (`initCommands`, `postConnectCommands`: GDB's `shell` runs anything). In Restricted Mode none of
 * them may run, so no session starts. Pure, so it is tested without VS Code.
 */
export function restrictedModeRefusal(trusted: boolean, config: Partial<CycleLensLaunchArgs>): string | undefined {
  if (trusted) return undefined;
  const runs: string[] = [];
  runs.push(`the debugger ${typeof config.gdbPath === 'string' ? `'${config.gdbPath}' (gdbPath)` : '(gdb-multiarch)'}`);
  const server = config.server;
  if (server?.type === 'openocd') {
    runs.push(
      `${typeof server.path === 'string' ? `'${server.path}' (server.path)` : 'OpenOCD'} with the ` +
        `scripts ${Array.isArray(server.configFiles) ? server.configFiles.join(', ') : '(none given)'}`,
    );
  } else if (server?.type !== 'remote') {
    runs.push(typeof server?.path === 'string' ? `'${server.path}' (server.path)` : 'QEMU');
  }
  const commands = [
    ...(Array.isArray(config.initCommands) ? config.initCommands : []),
    ...(Array.isArray(config.postConnectCommands) ? config.postConnectCommands : []),
  ];
  if (commands.length > 0) runs.push(`${commands.length} GDB command(s) from initCommands/postConnectCommands`);
  return (
    `CycleLens does not start debug sessions in Restricted Mode: this launch configuration ` +
    `comes from the workspace and would run ${runs.join(', ')}. If you trust this folder, ` +
    `choose "Manage Workspace Trust" and trust it, then start the session again.`
  );
}
