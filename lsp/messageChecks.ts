import {
  Disposable,
  ErrorCodes,
  type DataCallback,
  type Message,
  type MessageReader,
  type MessageWriter,
} from 'vscode-languageserver/node';

/**
 * Every message a client sends is checked here before the server sees it: the JSON-RPC envelope
 * (version, method, id) and, for each method the server handles, the shape of its params. A bad
 * request is answered with a JSON-RPC error that names the field and what it must be; a bad
 * notification, which has no reply, is reported in the client's log and dropped. The server's
 * handlers can then rely on the types the protocol promises.
 */

/** A problem with a value, or undefined when it fits. */
type Check = (value: unknown, path: string) => string | undefined;

const found = (v: unknown): string =>
  v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'string' ? 'a string' : typeof v;

const str: Check = (v, p) => (typeof v === 'string' ? undefined : `${p} must be a string (found ${found(v)})`);
const anything: Check = () => undefined;
const uint: Check = (v, p) =>
  typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 2 ** 31 - 1
    ? undefined
    : `${p} must be a whole number from 0 to 2^31-1 (found ${typeof v === 'number' ? v : found(v)})`;
const int: Check = (v, p) =>
  typeof v === 'number' && Number.isInteger(v) && Math.abs(v) <= 2 ** 31
    ? undefined
    : `${p} must be a whole number (found ${typeof v === 'number' ? v : found(v)})`;
const nullable =
  (check: Check): Check =>
  (v, p) =>
    v === null ? undefined : check(v, p);
const either =
  (a: Check, b: Check): Check =>
  (v, p) =>
    a(v, p) === undefined || b(v, p) === undefined ? undefined : a(v, p);
const anyObject: Check = (v, p) =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? undefined : `${p} must be an object (found ${found(v)})`;
const array =
  (item: Check): Check =>
  (v, p) => {
    if (!Array.isArray(v)) return `${p} must be an array (found ${found(v)})`;
    for (let i = 0; i < v.length; i++) {
      const problem = item(v[i], `${p}[${i}]`);
      if (problem) return problem;
    }
    return undefined;
  };
const object =
  (required: Record<string, Check>, optional: Record<string, Check> = {}): Check =>
  (v, p) => {
    const notObject = anyObject(v, p);
    if (notObject) return notObject;
    const o = v as Record<string, unknown>;
    for (const [name, check] of Object.entries(required)) {
      if (!(name in o) || o[name] === undefined) return `${p}.${name} is missing`;
      const problem = check(o[name], `${p}.${name}`);
      if (problem) return problem;
    }
    for (const [name, check] of Object.entries(optional)) {
      if (o[name] === undefined) continue;
      const problem = check(o[name], `${p}.${name}`);
      if (problem) return problem;
    }
    return undefined;
  };

const position = object({ line: uint, character: uint });
const range = object({ start: position, end: position });
const documentId = object({ uri: str });

/** The params of each method the server handles. Other methods pass unchecked (requests get "method not found"). */
const PARAMS: Record<string, Check> = {
  initialize: object(
    { capabilities: anyObject },
    {
      processId: nullable(int),
      rootUri: nullable(str),
      rootPath: nullable(str),
      workspaceFolders: nullable(array(object({ uri: str, name: str }))),
      initializationOptions: anything,
    },
  ),
  'textDocument/didOpen': object({ textDocument: object({ uri: str, languageId: str, version: int, text: str }) }),
  'textDocument/didChange': object({
    textDocument: object({ uri: str, version: int }),
    contentChanges: array(object({ text: str }, { range, rangeLength: uint })),
  }),
  'textDocument/didClose': object({ textDocument: documentId }),
  'textDocument/didSave': object({ textDocument: documentId }, { text: str }),
  'textDocument/willSave': object({ textDocument: documentId, reason: int }),
  'textDocument/codeLens': object({ textDocument: documentId }),
  'textDocument/hover': object({ textDocument: documentId, position }),
  'textDocument/inlayHint': object({ textDocument: documentId, range }),
  'workspace/didChangeConfiguration': object({}, { settings: anything }),
  'workspace/didChangeWatchedFiles': object({ changes: array(object({ uri: str, type: int })) }),
  '$/cancelRequest': object({ id: either(int, str) }),
  '$/setTrace': object({ value: str }),
};

export type Verdict =
  { ok: true } | { ok: false; id: number | string | null; code: number; message: string; notification: boolean };

/** Whether a parsed message may go to the server, and if not, what the client is told. */
export function checkMessage(message: unknown): Verdict {
  const bad = (
    message: string,
    id: number | string | null = null,
    notification = false,
    code: number = ErrorCodes.InvalidRequest,
  ): Verdict => ({
    ok: false,
    id,
    code,
    message,
    notification,
  });
  if (typeof message !== 'object' || message === null || Array.isArray(message))
    return bad(`a JSON-RPC message must be an object (found ${found(message)})`);
  const m = message as Record<string, unknown>;
  const hasId = 'id' in m && m.id !== undefined;
  const id = typeof m.id === 'string' || (typeof m.id === 'number' && Number.isInteger(m.id)) ? m.id : null;
  if (m.jsonrpc !== '2.0') return bad(`"jsonrpc" must be "2.0" (found ${JSON.stringify(m.jsonrpc) ?? 'nothing'})`, id);
  if (!('method' in m)) {
    // A response to one of the server's own requests (configuration, refresh).
    if (hasId && ('result' in m || 'error' in m)) return { ok: true };
    return bad('a message needs a "method" (a request or notification) or a "result"/"error" (a response)', id);
  }
  if (typeof m.method !== 'string') return bad(`"method" must be a string (found ${found(m.method)})`, id, !hasId);
  if (hasId && id === null)
    return bad(`${m.method}: "id" must be a whole number or a string (found ${found(m.id)})`, null);
  if (m.params !== undefined && m.params !== null && typeof m.params !== 'object')
    return bad(`${m.method}: "params" must be an object or an array (found ${found(m.params)})`, id, !hasId);
  const check = PARAMS[m.method];
  const problem = check?.(m.params, 'params');
  if (problem) return bad(`${m.method}: ${problem}`, id, !hasId, ErrorCodes.InvalidParams);
  return { ok: true };
}

/**
 * A reader that passes on only the messages checkMessage accepts, and answers the others itself
 * through `writer` (an error response, or a log message for a notification).
 */
export class CheckedReader implements MessageReader {
  constructor(
    private readonly inner: MessageReader,
    private readonly writer: MessageWriter,
    private readonly seen: (message: Message) => void = () => undefined,
  ) {}

  get onError(): MessageReader['onError'] {
    return this.inner.onError;
  }

  get onClose(): MessageReader['onClose'] {
    return this.inner.onClose;
  }

  get onPartialMessage(): MessageReader['onPartialMessage'] {
    return this.inner.onPartialMessage;
  }

  listen(callback: DataCallback): Disposable {
    return this.inner.listen((message) => {
      const verdict = checkMessage(message);
      if (verdict.ok) {
        this.seen(message);
        callback(message);
      } else refuse(this.writer, verdict);
    });
  }

  dispose(): void {
    this.inner.dispose();
  }
}

/** Tells the client about a message the server did not take. */
export function refuse(writer: MessageWriter, verdict: Extract<Verdict, { ok: false }>): void {
  const text = `CycleLens language server: ${verdict.message}.`;
  const reply = verdict.notification
    ? {
        jsonrpc: '2.0',
        method: 'window/logMessage',
        params: { type: 1, message: `${text} The notification was ignored.` },
      }
    : { jsonrpc: '2.0', id: verdict.id, error: { code: verdict.code, message: text } };
  void writer.write(reply as Message).catch(() => undefined);
}
