import { createServer } from 'node:net';
import { prestartDefaultDebugger } from './debugger/factory';
import { CycleLensDebugSession } from './session/debugSession';
import { installExitHooks } from './util/processes';

/**
 * The CycleLens debug adapter: a standalone Node program speaking DAP over stdio, or over TCP with
 * `--server=PORT` (one session per connection) for debugging the adapter itself. The loader
 * (loader.ts, dist/adapter.js) calls it once it has started what the launch will need.
 */
export function main(argv: string[]): void {
  installExitHooks();
  const serverArg = argv.find((a) => a.startsWith('--server='));
  if (serverArg) {
    const port = Number(serverArg.slice('--server='.length));
    createServer((socket) => {
      const session = new CycleLensDebugSession();
      session.setRunAsServer(true);
      session.start(socket, socket);
      // Started with --expose-gc (bench/soak.ts), a long-lived adapter collects after each session,
      // so the memory it is measured at is what sessions left alive, not garbage not yet collected.
      const collect = (globalThis as { gc?: () => void }).gc;
      if (collect) socket.on('close', () => setTimeout(collect, 100));
    }).listen(port, '127.0.0.1', () =>
      process.stderr.write(`CycleLens debug adapter listening on 127.0.0.1:${port}\n`),
    );
    return;
  }
  // One session per process: its debugger starts now, while the client sends initialize and launch.
  prestartDefaultDebugger();
  const session = new CycleLensDebugSession();
  process.stdin.on('end', () => session.shutdown());
  session.start(process.stdin, process.stdout);
}

// Run directly (`node dist/adapterMain.js`), it starts at once.
if (require.main === module) main(process.argv.slice(2));
