import assert from 'node:assert/strict';
import { createServer, Server, Socket } from 'node:net';
import { describe, test } from 'node:test';
import { CycleLensError, ErrorCode } from '../../adapter/errors';
import {
  failureMessage,
  parseFrame,
  TclCommandError,
  TclFrameDecoder,
  TclNotification,
  tclQuote,
  TclRpcClient,
  wrapCommand,
} from '../../adapter/servers/tclRpc';

const Z = 0x1a;

/** A wrapped reply as OpenOCD sends it for our wrapper: `#id code resultBytes logBytes result log` + 0x1a. */
function replyBytes(id: number, code: number, result: string | Buffer, log = ''): Buffer {
  const r = Buffer.isBuffer(result) ? result : Buffer.from(result, 'utf8');
  const l = Buffer.from(log, 'utf8');
  return Buffer.concat([Buffer.from(`#${id} ${code} ${r.length} ${l.length} `, 'latin1'), r, l, Buffer.of(Z)]);
}

/**
 * Parses one Tcl word in the three forms tclQuote produces (bare, braced, backslash-escaped), to check
 * that quoting round-trips. The integration test checks the same against OpenOCD's own Jim.
 */
function unquote(word: string): string {
  if (word.startsWith('{') && word.endsWith('}')) return word.slice(1, -1);
  let out = '';
  for (let i = 0; i < word.length; i++) {
    const ch = word[i]!;
    if (ch !== '\\') {
      assert.ok(!/[\s;$[\]"{}]/.test(ch), `unescaped '${ch}' in ${JSON.stringify(word)}`);
      out += ch;
      continue;
    }
    const next = word[++i]!;
    if (next === 'x') {
      const hex = /^[0-9a-fA-F]{1,2}/.exec(word.slice(i + 1))![0];
      out += String.fromCharCode(parseInt(hex, 16));
      i += hex.length;
    } else {
      out += { n: '\n', t: '\t', r: '\r' }[next] ?? next;
    }
  }
  return out;
}

describe('tclQuote', () => {
  test('leaves plain words alone and quotes the empty word', () => {
    assert.equal(tclQuote('read_memory'), 'read_memory');
    assert.equal(tclQuote('0x20000000'), '0x20000000');
    assert.equal(tclQuote(32), '32');
    assert.equal(tclQuote('target/stm32f4x.cfg'), 'target/stm32f4x.cfg');
    assert.equal(tclQuote(''), '{}');
  });

  test('braces words with spaces, $, [ ] and balanced braces', () => {
    assert.equal(tclQuote('a b'), '{a b}');
    assert.equal(tclQuote('$x [y]'), '{$x [y]}');
    assert.equal(tclQuote('{1 2} {3}'), '{{1 2} {3}}');
    assert.equal(tclQuote('two\nlines'), '{two\nlines}');
  });

  test('escapes what braces cannot hold: unbalanced braces, backslashes, 0x1a and NUL', () => {
    assert.equal(tclQuote('a}b'), 'a\\}b');
    assert.equal(tclQuote('{'), '\\{');
    assert.equal(tclQuote('C:\\dir name'), 'C:\\\\dir\\ name');
    assert.equal(tclQuote('a\x1ab'), 'a\\x1ab');
    assert.equal(tclQuote('\x00'), '\\x00');
    assert.equal(tclQuote('"q";'), '{"q";}');
    assert.equal(tclQuote('}"q";'), '\\}\\"q\\"\\;');
  });

  test('round-trips awkward strings', () => {
    const samples = [
      '',
      'x',
      ' ',
      '{',
      '}',
      '}{',
      '{}',
      '\\',
      '\\{',
      'a\\',
      '$',
      '[',
      ']',
      '"',
      ';',
      '#c',
      'é ü',
      '\x1a',
      '\x00\x01\x7f',
      'a\nb\tc\rd',
      '{a\\}',
      'end\\',
    ];
    for (const s of samples) assert.equal(unquote(tclQuote(s)), s, JSON.stringify(s));
    for (let n = 0; n < 500; n++) {
      const s = Array.from({ length: 1 + (n % 9) }, (_, i) => '{}[]$\\";\n\t \x1a\x00ab'[(n * 7 + i * 13) % 15]).join(
        '',
      );
      assert.equal(unquote(tclQuote(s)), s, JSON.stringify(s));
    }
  });
});

describe('wrapCommand', () => {
  test('carries the id and the quoted script, and never a raw terminator', () => {
    const script = 'echo "a\x1ab"';
    const w = wrapCommand(17, script);
    assert.ok(w.startsWith(`set ::cyclelens_cmd ${tclQuote(script)}; `));
    assert.match(w, /"#17 \$::cyclelens_rc /);
    assert.ok(!w.includes('\x1a'));
    assert.ok(!w.includes('\x00'));
  });
});

describe('TclFrameDecoder', () => {
  const decodeAll = (chunks: Buffer[]): string[] => {
    const d = new TclFrameDecoder();
    const frames = chunks.flatMap((c) => d.push(c)).map((f) => f.toString('latin1'));
    assert.equal(d.pendingBytes, 0);
    return frames;
  };

  test('several frames in one chunk, and empty frames', () => {
    assert.deepEqual(decodeAll([Buffer.from('a\x1a\x1abc\x1a', 'latin1')]), ['a', '', 'bc']);
  });

  test('a frame split at every possible byte', () => {
    const stream = Buffer.concat([
      Buffer.from('type target_event event halted\r\n\x1a', 'latin1'),
      replyBytes(3, 0, 'result one'),
      replyBytes(4, 1, '', 'log'),
    ]);
    const whole = decodeAll([stream]);
    assert.equal(whole.length, 3);
    for (let cut = 1; cut < stream.length; cut++) {
      assert.deepEqual(decodeAll([stream.subarray(0, cut), stream.subarray(cut)]), whole, `cut at ${cut}`);
    }
    assert.deepEqual(decodeAll([...stream].map((b) => Buffer.of(b))), whole);
  });

  test('keeps an incomplete frame until its end arrives', () => {
    const d = new TclFrameDecoder();
    assert.deepEqual(d.push(Buffer.from('#1 0 5 0 hel')), []);
    assert.equal(d.pendingBytes, 12);
    assert.deepEqual(d.push(Buffer.from('lo\x1a#2')).map(String), ['#1 0 5 0 hello']);
    assert.equal(d.pendingBytes, 2);
  });

  test('is binary-safe: a reply may hold 0x1a, NUL and any byte, split anywhere', () => {
    const payload = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const stream = Buffer.concat([replyBytes(9, 0, payload), replyBytes(10, 0, 'next')]);
    for (let cut = 0; cut <= stream.length; cut += 7) {
      const d = new TclFrameDecoder();
      const frames = [...d.push(stream.subarray(0, cut)), ...d.push(stream.subarray(cut))];
      assert.equal(frames.length, 2);
      const first = parseFrame(frames[0]!);
      assert.equal(first.kind, 'reply');
      assert.deepEqual(frames[0]!.subarray(frames[0]!.length - 256), payload);
      assert.deepEqual(parseFrame(frames[1]!), { kind: 'reply', id: 10, code: 0, result: 'next', log: '' });
    }
  });

  test('a frame that only looks like a reply header still ends at its terminator', () => {
    assert.deepEqual(decodeAll([Buffer.from('#1 0 2 0 abcdef\x1aafter\x1a', 'latin1')]), ['#1 0 2 0 abcdef', 'after']);
  });
});

describe('parseFrame', () => {
  test('replies: result and log separated by their byte counts (UTF-8 included)', () => {
    const frame = replyBytes(5, -4, 'é', 'Target not examined yet\n');
    assert.deepEqual(parseFrame(frame.subarray(0, frame.length - 1)), {
      kind: 'reply',
      id: 5,
      code: -4,
      result: 'é',
      log: 'Target not examined yet\n',
    });
    assert.deepEqual(parseFrame(Buffer.from('#1 0 0 0 ')), { kind: 'reply', id: 1, code: 0, result: '', log: '' });
  });

  test('notifications as OpenOCD formats them', () => {
    assert.deepEqual(parseFrame(Buffer.from('type target_event event halted\r\n')), {
      kind: 'notification',
      notification: { type: 'target_event', key: 'event', value: 'halted' },
    });
    assert.deepEqual(parseFrame(Buffer.from('type target_reset mode halt\r\n')), {
      kind: 'notification',
      notification: { type: 'target_reset', key: 'mode', value: 'halt' },
    });
  });

  test('anything else is unknown', () => {
    assert.deepEqual(parseFrame(Buffer.from('line too long\n')), { kind: 'unknown', text: 'line too long\n' });
  });
});

describe('failureMessage', () => {
  test('result first, then log lines it does not repeat', () => {
    assert.equal(
      failureMessage(
        1,
        'read_memory: failed to read memory',
        'Target not examined yet\nread_memory: failed to read memory\n',
      ),
      'read_memory: failed to read memory\nTarget not examined yet',
    );
    assert.equal(failureMessage(-4, '', 'Target not examined yet\n'), 'Target not examined yet');
    assert.equal(failureMessage(-4, '', ''), 'failed with code -4 and no message');
  });
});

// ---------------------------------------------------------------------------------------------------
// The client against a small stand-in for OpenOCD's Tcl server.

interface Request {
  id: number;
  command: string;
  socket: Socket;
}

/** Accepts connections, decodes wrapped requests and hands them to `handle`; answers the handshake itself. */
class FakeOpenOcd {
  readonly server: Server;
  readonly requests: string[] = [];
  readonly sockets: Socket[] = [];
  handle: (req: Request) => void = (req) => this.reply(req, 0, '');

  constructor() {
    this.server = createServer((socket) => {
      this.sockets.push(socket);
      const decoder = new TclFrameDecoder();
      socket.on('data', (chunk: Buffer) => {
        for (const frame of decoder.push(chunk)) {
          const text = frame.toString('utf8');
          const id = Number(/"#(\d+) \$::cyclelens_rc /.exec(text)![1]);
          const command = unquote(/^set ::cyclelens_cmd (.*?); set ::cyclelens_log \[capture /s.exec(text)![1]!);
          if (command.startsWith('proc cyclelens_reply')) {
            this.reply({ id, command, socket }, 0, 'cyclelens_reply');
            continue;
          }
          this.requests.push(command);
          this.handle({ id, command, socket });
        }
      });
      socket.on('error', () => undefined);
    });
  }

  async listen(): Promise<number> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return (this.server.address() as { port: number }).port;
  }

  reply(req: Request, code: number, result: string, log = ''): void {
    if (!req.socket.destroyed) req.socket.write(replyBytes(req.id, code, result, log));
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server.close(r));
  }
}

async function withFake(
  run: (fake: FakeOpenOcd, client: TclRpcClient) => Promise<void>,
  timeoutMs = 2000,
): Promise<void> {
  const fake = new FakeOpenOcd();
  const port = await fake.listen();
  const client = await TclRpcClient.connect(port, '127.0.0.1', { timeoutMs });
  try {
    await run(fake, client);
  } finally {
    await client.close();
    await fake.close();
  }
}

function isCode(code: ErrorCode, pattern?: RegExp) {
  return (err: unknown): boolean => {
    assert.ok(err instanceof CycleLensError, `not a CycleLensError: ${String(err)}`);
    assert.equal(err.code, code, err.message);
    if (pattern) assert.match(err.message, pattern);
    return true;
  };
}

describe('TclRpcClient', () => {
  /** A broken queue shows up as a hang: fail it instead. */
  const limit = { timeout: 5000 };
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  test('returns results, including empty ones', limit, () =>
    withFake(async (fake, client) => {
      fake.handle = (req) => fake.reply(req, 0, req.command === 'version' ? 'Open On-Chip Debugger 0.12.0' : '');
      assert.equal(await client.command('version'), 'Open On-Chip Debugger 0.12.0');
      assert.equal(await client.command('set x ""'), '');
      assert.deepEqual(fake.requests, ['version', 'set x ""']);
    }),
  );

  test("turns a Tcl error into TclCommandError carrying OpenOCD's message and log", limit, () =>
    withFake(async (fake, client) => {
      fake.handle = (req) =>
        req.command === 'halt'
          ? fake.reply(req, -4, '', 'Target not examined yet\n')
          : fake.reply(req, 1, 'invalid command name "nosuch"');
      await assert.rejects(client.command('nosuch'), (err: unknown) => {
        assert.ok(err instanceof TclCommandError);
        assert.equal(err.code, ErrorCode.TclError);
        assert.equal(err.returnCode, 1);
        assert.equal(err.openOcdMessage, 'invalid command name "nosuch"');
        assert.match(err.message, /`nosuch` failed: invalid command name "nosuch"/);
        return true;
      });
      await assert.rejects(client.halt(), isCode(ErrorCode.TclError, /Target not examined yet/));
      // `return` (code 2) and `shutdown` (-600) are successes.
      fake.handle = (req) => fake.reply(req, req.command === 'shutdown' ? -600 : 2, 'ok');
      assert.equal(await client.command('return ok'), 'ok');
    }),
  );

  test('sends one request at a time, in call order', limit, () =>
    withFake(async (fake, client) => {
      let outstanding = 0;
      let maxOutstanding = 0;
      fake.handle = (req) => {
        outstanding++;
        maxOutstanding = Math.max(maxOutstanding, outstanding);
        // Answer the first ones slowest: order must still follow the calls.
        setTimeout(
          () => {
            outstanding--;
            fake.reply(req, 0, `r-${req.command}`);
          },
          30 - Number(req.command.slice(1)) * 5,
        );
      };
      const results = await Promise.all(['c1', 'c2', 'c3', 'c4', 'c5'].map((c) => client.command(c)));
      assert.deepEqual(results, ['r-c1', 'r-c2', 'r-c3', 'r-c4', 'r-c5']);
      assert.deepEqual(fake.requests, ['c1', 'c2', 'c3', 'c4', 'c5']);
      assert.equal(maxOutstanding, 1);
    }),
  );

  test('times out a request, moves on, and drops its late reply', limit, () =>
    withFake(async (fake, client) => {
      let hung: Request | undefined;
      fake.handle = (req) => {
        if (req.command === 'hang') hung = req;
        else {
          // The late answer to the timed-out request arrives first; it must not be taken for this one.
          if (hung) fake.reply(hung, 0, 'late');
          fake.reply(req, 0, `r-${req.command}`);
        }
      };
      const started = Date.now();
      await assert.rejects(
        client.command('hang', 100),
        isCode(ErrorCode.TclTimeout, /did not answer `hang` within 100 ms/),
      );
      assert.ok(Date.now() - started < 1000);
      assert.equal(await client.command('next'), 'r-next');
    }),
  );

  test('rejects everything pending when the connection is lost, and later calls at once', limit, () =>
    withFake(async (fake, client) => {
      const closes: CycleLensError[] = [];
      client.onClose((reason) => closes.push(reason));
      fake.handle = (req) => {
        if (req.command === 'die') setTimeout(() => req.socket.destroy(), 20);
      };
      const inFlight = client.command('die');
      const queued = client.command('queued');
      await assert.rejects(
        inFlight,
        isCode(ErrorCode.TclConnectionLost, /connection to OpenOCD \(127\.0\.0\.1:\d+\) was lost.*`die`/s),
      );
      await assert.rejects(queued, isCode(ErrorCode.TclConnectionLost, /`queued`/));
      await assert.rejects(client.command('after'), isCode(ErrorCode.TclConnectionLost));
      assert.equal(closes.length, 1);
      assert.equal(client.isOpen, false);
      assert.deepEqual(fake.requests, ['die']);
    }),
  );

  test('close() rejects pending requests and is idempotent', limit, () =>
    withFake(async (fake, client) => {
      fake.handle = () => undefined;
      const pending = client.command('never');
      await sleep(20);
      await client.close();
      await client.close();
      await assert.rejects(pending, isCode(ErrorCode.TclConnectionLost, /closed before OpenOCD answered/));
    }),
  );

  test('delivers notifications separately from replies', limit, () =>
    withFake(async (fake, client) => {
      const seen: TclNotification[] = [];
      client.onNotification((n) => seen.push(n));
      fake.handle = (req) => {
        req.socket.write('type target_event event halted\r\n\x1atype target_state state halted\r\n\x1a');
        fake.reply(req, 0, '');
      };
      await client.enableNotifications();
      assert.match(fake.requests[0]!, /tcl_notifications on/);
      assert.deepEqual(seen, [
        { type: 'target_event', key: 'event', value: 'halted' },
        { type: 'target_state', key: 'state', value: 'halted' },
      ]);
    }),
  );

  test('rejects a reply it cannot read', limit, () =>
    withFake(async (fake, client) => {
      fake.handle = (req) => req.socket.write('line too long\n\x1a');
      await assert.rejects(client.command('x'), isCode(ErrorCode.TclError, /not a CycleLens Tcl reply/));
    }),
  );

  test('readMemory, writeMemory, targetState, halt and resume send the 0.12 commands', limit, () =>
    withFake(async (fake, client) => {
      fake.handle = (req) => {
        if (req.command.startsWith('read_memory 0x20000000 32 3')) fake.reply(req, 0, '0x1 0xdeadbeef 0x0');
        else if (req.command.startsWith('read_memory')) fake.reply(req, 0, '0x1');
        else if (req.command === '[target current] curstate') fake.reply(req, 0, 'halted');
        else fake.reply(req, 0, '');
      };
      assert.deepEqual(await client.readMemory(0x20000000, 32, 3), [1, 0xdeadbeef, 0]);
      await assert.rejects(client.readMemory(0x20000000, 16, 2), isCode(ErrorCode.TclError, /not 2 number/));
      await assert.rejects(client.readMemory(0, 12 as 8, 1), isCode(ErrorCode.InvalidRequest, /8, 16 or 32/));
      await assert.rejects(client.writeMemory(0, 8, [256]), isCode(ErrorCode.InvalidRequest, /does not fit in 8 bits/));
      assert.equal(await client.targetState(), 'halted');
      await client.halt();
      await client.resume();
      fake.requests.length = 0;
      const values = Array.from({ length: 1500 }, (_, i) => i);
      await client.writeMemory(0x1000, 16, values);
      assert.equal(fake.requests.length, 2);
      assert.ok(fake.requests[0]!.startsWith('write_memory 0x1000 16 {0x0 0x1 0x2 '));
      // The second chunk starts 1024 halfwords on.
      assert.ok(fake.requests[1]!.startsWith(`write_memory 0x${(0x1000 + 2048).toString(16)} 16 {0x400 `));
      assert.equal(await client.call('string', 'length', 'a b{'), '');
      assert.equal(fake.requests.at(-1), 'string length a\\ b\\{');
    }),
  );

  test('connecting to a closed port fails clearly', limit, async () => {
    const fake = new FakeOpenOcd();
    const port = await fake.listen();
    await fake.close();
    await assert.rejects(
      TclRpcClient.connect(port),
      isCode(ErrorCode.ConnectFailed, new RegExp(`Tcl RPC port at 127\\.0\\.0\\.1:${port}`)),
    );
  });
});
