import { createProfileConnection } from '../lsp/connection';
import { startProfileServer } from '../lsp/server';

/**
 * `cyclelens lsp --stdio`: the profile language server of lsp/ on stdin and stdout. The connection
 * reads `--stdio` from the command line and sends console output to the client, so nothing else
 * writes to stdout. It resolves when the client closes the connection (after `exit`, the library
 * ends the process itself with the status LSP prescribes).
 */
export function runLanguageServer(): Promise<number> {
  const connection = createProfileConnection();
  const closed = new Promise<number>((resolve) => connection.onExit(() => resolve(0)));
  startProfileServer(connection);
  return closed;
}
