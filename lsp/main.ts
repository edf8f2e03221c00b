import { createProfileConnection } from './connection';
import { startProfileServer } from './server';

/**
 * dist/lsp.js: the profile language server as a program of its own. The transport comes from the
 * command line, as LSP clients pass it: `--stdio`, `--node-ipc` (VS Code's language client) or
 * `--socket=PORT`.
 */
startProfileServer(createProfileConnection());
