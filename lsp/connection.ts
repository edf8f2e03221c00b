import {
  createConnection,
  createServerPipeTransport,
  createServerSocketTransport,
  ErrorCodes,
  IPCMessageReader,
  IPCMessageWriter,
  StreamMessageWriter,
  type Connection,
  type Message,
  type MessageReader,
  type MessageWriter,
} from 'vscode-languageserver/node';
import { FrameReader } from './frameReader';
import { CheckedReader, refuse } from './messageChecks';

/**
 * The server's connection on the transport the command line names, as LSP clients pass it
 * (`--stdio`, `--node-ipc`, `--socket=PORT`, `--pipe=NAME`), with every incoming message checked
 * (messageChecks.ts) and, on stdio, framed by a reader that survives bad frames (frameReader.ts).
 */
export function createProfileConnection(argv: readonly string[] = process.argv.slice(2)): Connection {
  const value = (flag: string): string | undefined => {
    const i = argv.findIndex((a) => a === flag || a.startsWith(`${flag}=`));
    if (i < 0) return undefined;
    return argv[i]!.includes('=') ? argv[i]!.slice(flag.length + 1) : argv[i + 1];
  };
  let reader: MessageReader;
  let writer: MessageWriter;
  let shutdown = false;
  const seen = (m: Message): void => {
    if ((m as { method?: unknown }).method === 'shutdown') shutdown = true;
  };
  if (argv.includes('--stdio')) {
    writer = new StreamMessageWriter(process.stdout);
    reader = new FrameReader(process.stdin, (problem, kind) =>
      refuse(writer, {
        ok: false,
        id: null,
        code: kind === 'parse' ? ErrorCodes.ParseError : ErrorCodes.InvalidRequest,
        message: `skipped ${problem}`,
        notification: false,
      }),
    );
    // stdout carries the protocol: anything printed goes to stderr instead.
    console.log = console.info = console.debug = console.error;
    // The client closing stdin ends the server, with LSP's status: 0 after a shutdown request, else 1.
    const ended = (): void => process.exit(shutdown ? 0 : 1);
    process.stdin.on('end', ended);
    process.stdin.on('close', ended);
  } else if (argv.includes('--node-ipc')) {
    reader = new IPCMessageReader(process);
    writer = new IPCMessageWriter(process);
  } else if (value('--socket') !== undefined) {
    [reader, writer] = createServerSocketTransport(Number(value('--socket')));
  } else if (value('--pipe') !== undefined) {
    [reader, writer] = createServerPipeTransport(value('--pipe')!);
  } else {
    throw new Error('the language server needs a transport: --stdio, --node-ipc, --socket=PORT or --pipe=NAME');
  }
  return createConnection(new CheckedReader(reader, writer, seen), writer);
}
