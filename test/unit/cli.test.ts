import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, describe, it } from 'node:test';
import { parseArgs, parseLocation, parseThreshold } from '../../cli/args';
import { DapClient, DapFramer, DapProtocolError, encodeDapMessage, type DapMessage } from '../../core/dap/dapClient';
import { LaunchConfigError, selectConfiguration, stripJsonComments } from '../../cli/launchConfig';
import { main, type CliIo } from '../../cli/main';
import { loadResultSetDocument } from '../../core/analysis/resultSet';

const dir = mkdtempSync(join(tmpdir(), 'cyclelens-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('cli arguments', () => {
  it('parses a descent with every option', () => {
    const r = parseArgs([
      'descent',
      '--config',
      '.vscode/launch.json',
      '--name',
      'QEMU RISC-V 32',
      '--threshold',
      '1%',
      '--slots',
      '8',
      '--out',
      'r.json',
      '--dot=g.dot',
      '--root',
      'main',
      '--root',
      'trap_entry',
      '--timeout',
      '30',
      '--no-lookahead',
    ]);
    assert.equal(r.kind, 'run');
    if (r.kind !== 'run') return;
    assert.deepEqual(r.command, {
      command: 'descent',
      config: '.vscode/launch.json',
      name: 'QEMU RISC-V 32',
      threshold: { kind: 'share', value: 0.01 },
      slots: 8,
      start: 'main',
      roots: ['main', 'trap_entry'],
      dwell: 10,
      rounds: 1,
      out: 'r.json',
      dot: 'g.dot',
      timeoutMs: 30_000,
      lookahead: false,
      groups: true,
    });
    const g = parseArgs(['descent', '--config', 'l.json', '--name', 'x', '--call-graph', 'calls.json', '--no-groups']);
    assert.ok(g.kind === 'run' && g.command.callGraph === 'calls.json' && g.command.groups === false);
    const c = parseArgs([
      'call-graph',
      '--config',
      'l.json',
      '--name',
      'x',
      '--dynamic',
      '--max-calls',
      '5000',
      '--out',
      'calls.json',
    ]);
    assert.ok(c.kind === 'run' && c.command.command === 'call-graph' && c.command.out === 'calls.json');
    if (c.kind === 'run') assert.deepEqual(c.command.dynamic, { maxCalls: 5000 });
  });

  it('has defaults, and a cyclic profile', () => {
    const d = parseArgs(['descent', '--config', 'l.json', '--name', 'x']);
    assert.ok(
      d.kind === 'run' &&
        d.command.slots === 4 &&
        d.command.threshold.value === 0.01 &&
        d.command.lookahead &&
        d.command.cyclic === undefined,
    );
    const c = parseArgs([
      'profile',
      '--config',
      'l.json',
      '--name',
      'x',
      '--cyclic',
      'idle_point',
      '--dwell',
      '5',
      '--rounds',
      '3',
    ]);
    assert.ok(c.kind === 'run');
    if (c.kind === 'run') {
      assert.deepEqual(c.command.cyclic, { function: 'idle_point' });
      assert.equal(c.command.dwell, 5);
      assert.equal(c.command.rounds, 3);
    }
  });

  it('reads thresholds and locations', () => {
    assert.deepEqual(parseThreshold('5%'), { kind: 'share', value: 0.05 });
    assert.deepEqual(parseThreshold('0.5%'), { kind: 'share', value: 0.005 });
    assert.deepEqual(parseThreshold('0.02'), { kind: 'share', value: 0.02 });
    assert.deepEqual(parseThreshold('5000'), { kind: 'count', value: 5000 });
    assert.match(parseThreshold('150%') as string, /cannot exceed 100%/);
    assert.match(parseThreshold('lots') as string, /give a share/);
    assert.deepEqual(parseLocation('0x8000041A'), { address: '0x8000041a' });
    assert.deepEqual(parseLocation('src/cyclic.c:42'), { path: 'src/cyclic.c', line: 42 });
    assert.deepEqual(parseLocation('idle_point'), { function: 'idle_point' });
    assert.match(parseLocation('a b') as string, /not a location/);
  });

  it('says what is wrong', () => {
    const cases: Array<[string[], RegExp]> = [
      [[], /no command/],
      [['measure'], /unknown command 'measure'/],
      [['descent', '--name', 'x'], /--config is required/],
      [['descent', '--config', 'l.json'], /--name is required/],
      [['descent', '--config', 'l.json', '--name', 'x', '--slots', '0'], /--slots 0: give a whole number >= 1/],
      [['descent', '--config', 'l.json', '--name', 'x', '--slots'], /--slots needs a value/],
      [['descent', '--config', 'l.json', '--name', 'x', '--bogus'], /unknown option --bogus/],
      [['descent', '--config', 'l.json', '--name', 'x', 'extra'], /unexpected argument 'extra'/],
      [['descent', '--config', 'a', '--config', 'b', '--name', 'x'], /--config is given 2 times/],
      [['profile', '--config', 'l.json', '--name', 'x', '--threshold', '1%'], /descent only/],
      [['descent', '--config', 'l.json', '--name', 'x', '--dwell', '3'], /cyclic programs only/],
      [['descent', '--config', 'l.json', '--name', 'x', '--no-lookahead=1'], /takes no value/],
      [
        ['profile', '--config', 'l.json', '--name', 'x', '--call-graph', 'c.json'],
        /--call-graph applies to descent only/,
      ],
      [['call-graph', '--config', 'l.json', '--name', 'x'], /call-graph needs --out FILE/],
      [
        ['call-graph', '--config', 'l.json', '--name', 'x', '--out', 'c.json', '--slots', '2'],
        /--slots does not apply to call-graph/,
      ],
      [['call-graph', '--config', 'l.json', '--name', 'x', '--out', 'c.json', '--max-calls', '10'], /add --dynamic/],
      [['descent', '--config', 'l.json', '--name', 'x', '--dynamic'], /call-graph only/],
    ];
    for (const [argv, message] of cases) {
      const r = parseArgs(argv);
      assert.ok(r.kind === 'error' && message.test(r.message), `${argv.join(' ')}: ${JSON.stringify(r)}`);
    }
    assert.deepEqual(parseArgs(['descent', '--help']), { kind: 'help' });
  });
});

describe('launch configuration', () => {
  const launchJson = `{
    // CycleLens configurations
    "version": "0.2.0",
    "configurations": [
      { "name": "Other", "type": "node", "request": "launch" },
      {
        "name": "QEMU RISC-V 32", /* the fixture */
        "type": "cyclelens",
        "request": "launch",
        "executable": "\${workspaceFolder}/build/fw.elf",
        "server": { "type": "qemu", "machine": "virt", "args": ["-d", "// not a comment", "\${env:CL_TEST_EXTRA}"], },
        "preLaunchTask": "build",
      },
    ],
  }`;

  it('strips comments and trailing commas outside strings', () => {
    assert.deepEqual(JSON.parse(stripJsonComments('{"a": "x // y", /* c */ "b": [1, 2,], // d\n}')), {
      a: 'x // y',
      b: [1, 2],
    });
    assert.deepEqual(JSON.parse(stripJsonComments('{"a": "\\"/* not */\\""}')), { a: '"/* not */"' });
  });

  it('selects by name and substitutes the workspace folder (the parent of .vscode/)', () => {
    const c = selectConfiguration(launchJson, '/work/proj/.vscode/launch.json', 'QEMU RISC-V 32', {
      CL_TEST_EXTRA: '-S',
    });
    assert.equal(c.workspaceFolder, '/work/proj');
    assert.equal(c.args.executable, '/work/proj/build/fw.elf');
    assert.deepEqual((c.args.server as { args: string[] }).args, ['-d', '// not a comment', '-S']);
    assert.equal(c.args.cwd, '/work/proj');
    assert.equal(c.args.preLaunchTask, undefined);
    assert.equal(c.request, 'launch');
  });

  it('explains a wrong name, type or file', () => {
    assert.throws(
      () => selectConfiguration(launchJson, 'l.json', 'QEMU ARM'),
      (e: Error) =>
        e instanceof LaunchConfigError &&
        /no configuration named "QEMU ARM"; CycleLens configurations there: "QEMU RISC-V 32"/.test(e.message),
    );
    assert.throws(() => selectConfiguration(launchJson, 'l.json', 'Other'), /of type "node", not "cyclelens"/);
    assert.throws(() => selectConfiguration('{ "configurations": [', 'l.json', 'x'), /l.json is not valid JSON/);
    assert.throws(() => selectConfiguration('{}', 'l.json', 'x'), /no "configurations" array/);
    assert.throws(
      () =>
        selectConfiguration(
          launchJson.replace('${workspaceFolder}', '${command:pickFile}'),
          'l.json',
          'QEMU RISC-V 32',
        ),
      /\$\{command:pickFile\}, which the CLI cannot substitute/,
    );
  });
});

describe('DAP framing and client', () => {
  it('frames messages split anywhere and several per chunk', () => {
    const a = encodeDapMessage({ seq: 1, type: 'event', event: 'output', body: { output: 'héllo\r\n\r\n' } });
    const b = encodeDapMessage({ seq: 2, type: 'response', request_seq: 1, success: true, command: 'x' });
    const all = Buffer.concat([a, b]);
    for (const cut of [1, 7, 17, a.length, a.length + 3, all.length - 1]) {
      const f = new DapFramer();
      const got = [...f.push(all.subarray(0, cut)), ...f.push(all.subarray(cut))];
      assert.deepEqual(
        got.map((m) => m.seq),
        [1, 2],
        `cut at ${cut}`,
      );
      assert.equal(
        (got[0]!.body as { output: string }).output,
        'héllo\r\n\r\n',
        'Content-Length counts bytes, not characters',
      );
    }
    assert.match(a.subarray(0, 24).toString(), /^Content-Length: \d+\r\n\r\n/);
  });

  it('rejects a stream that is not DAP', () => {
    assert.throws(() => new DapFramer().push('Content-Type: x\r\n\r\n{}'), DapProtocolError);
    assert.throws(() => new DapFramer().push('Content-Length: 3\r\n\r\nabc'), /not JSON/);
    assert.throws(() => new DapFramer().push('x'.repeat(9000)), /not speaking DAP/);
  });

  function pair(): { client: DapClient; adapterIn: PassThrough; adapterOut: PassThrough; sent: DapMessage[] } {
    const adapterIn = new PassThrough(); // what the client writes
    const adapterOut = new PassThrough(); // what the client reads
    const sent: DapMessage[] = [];
    const f = new DapFramer();
    adapterIn.on('data', (c: Buffer) => sent.push(...f.push(c)));
    return { client: new DapClient(adapterOut, adapterIn), adapterIn, adapterOut, sent };
  }
  const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

  it('matches responses to requests by sequence number, in any order', async () => {
    const { client, adapterOut, sent } = pair();
    const first = client.request('threads');
    const second = client.customRequest('cyclelens/read', { unit: 'x' });
    await tick();
    assert.deepEqual(
      sent.map((m) => [m.seq, m.command, m.arguments]),
      [
        [1, 'threads', undefined],
        [2, 'cyclelens/read', { unit: 'x' }],
      ],
    );
    adapterOut.write(
      encodeDapMessage({
        seq: 10,
        type: 'response',
        request_seq: 2,
        success: true,
        command: 'cyclelens/read',
        body: { values: [] },
      }),
    );
    adapterOut.write(
      encodeDapMessage({
        seq: 11,
        type: 'response',
        request_seq: 1,
        success: false,
        command: 'threads',
        message: 'x',
        body: { error: { id: 3, format: 'No {what} here', variables: { what: 'target' } } },
      }),
    );
    assert.deepEqual(await second, { values: [] });
    await assert.rejects(first, /No target here/);
  });

  it('delivers events, answers reverse requests, and fails everything pending when the adapter goes', async () => {
    const { client, adapterOut, sent } = pair();
    const stopped = client.waitForEvent('stopped', 0, (e) => (e.body as { reason: string }).reason === 'breakpoint');
    adapterOut.write(encodeDapMessage({ seq: 1, type: 'event', event: 'stopped', body: { reason: 'entry' } }));
    adapterOut.write(encodeDapMessage({ seq: 2, type: 'event', event: 'stopped', body: { reason: 'breakpoint' } }));
    assert.equal(((await stopped).body as { reason: string }).reason, 'breakpoint');
    adapterOut.write(encodeDapMessage({ seq: 3, type: 'request', command: 'runInTerminal', arguments: {} }));
    await tick();
    const answer = sent.find((m) => m.type === 'response')!;
    assert.equal(answer.request_seq, 3);
    assert.equal(answer.success, false);
    const pending = client.request('continue');
    const waiting = client.waitForEvent('terminated');
    adapterOut.end();
    await assert.rejects(pending, /continue: the debug adapter closed its output/);
    await assert.rejects(waiting, /waiting for 'terminated'/);
    await assert.rejects(client.request('next'), /closed/);
  });

  it('times out a request the adapter never answers', async () => {
    const { client } = pair();
    await assert.rejects(client.request('slow', undefined, 20), /no answer from the debug adapter within 0.02 s/);
  });
});

// ---- the whole CLI against a stand-in adapter ---------------------------------------------------

/** A DAP adapter in plain JavaScript: a synthetic single-pass program, counters and injection. */
const FAKE_ADAPTER =
  String.raw`
const fs = require('fs');
const log = (line) => fs.appendFileSync(process.env.FAKE_LOG, line + '\n');
const functions = ['main', 'work', 'tiny', 'leaf', 'cold', 'isr'];
const edges = [['main', 'work'], ['main', 'cold'], ['work', 'tiny'], ['tiny', 'leaf'], ['isr', 'leaf']];
const value = { main: 10000, work: 9000, tiny: 7000, leaf: 6900, cold: 50, isr: 100 };
const OVERHEAD = 7;
// A group (members that never call one another) counts the sum of its members.
const valueOf = (m) => (m.members ? m.members.reduce((s, n) => s + value[n], 0) : value[m.name]);
let counter = 0, seq = 1, injected = [], nextId = 1, buf = Buffer.alloc(0);
function send(m) { const j = Buffer.from(JSON.stringify({ seq: seq++, ...m })); ` +
  String.raw`process.stdout.write('Content-Length: ' + j.length + '\r\n\r\n'); process.stdout.write(j); }
function reply(req, body, error) { send(error` +
  String.raw` ? { type: 'response', request_seq: req.seq, command: req.command, success: false, message: error }` +
  String.raw` : { type: 'response', request_seq: req.seq, command: req.command, success: true, body }); }
function handle(req) {
  const a = req.arguments || {};
  log(req.command + ' ' + JSON.stringify(a));
  switch (req.command) {
    case 'initialize': return reply(req, { supportsConfigurationDoneRequest: true });
    case 'launch':
      if (String(a.executable).includes('missing'))` +
  String.raw` return reply(req, undefined, a.executable + ' does not exist: build the firmware first');
      send({ type: 'event', event: 'initialized' }); return reply(req, {});
    case 'configurationDone': reply(req, {}); ` +
  String.raw`return send({ type: 'event', event: 'stopped', body: { reason: 'entry', threadId: 1 } });
    case 'cyclelens/callGraph': return reply(req, {` +
  String.raw` functions: functions.map((name, i) => ({ name, address: 0x100 * (i + 1), size: 64 })),` +
  String.raw` edges: edges.map(([caller, callee], i) => ({ caller, callee, kind: 'call', sites: [0x1000 + i] })),` +
  String.raw` indirectCallers: [] });
    case 'cyclelens/counters': return reply(req, { units: [{ unit: 'RISC-V counters', present: true, resolution: 1,` +
  String.raw` slots: [{ index: 2, name: 'minstret', width: 64, fixedEvent: 'instructions', running: true }] }] });
    case 'cyclelens/configure': return reply(req, { units: [] });
    case 'cyclelens/read': return reply(req, { values: [{ unit: 'RISC-V counters', slot: 2, event: 'instructions',` +
  String.raw` value: String(counter), reliable: true }] });
    case 'cyclelens/run':
      if (process.env.FAKE_FAIL_RUN) return reply(req, undefined, 'GDB lost the connection to the target');
      if (a.restart) { counter = 5; return reply(req, { reached: true }); }
      counter += value.main + injected.reduce((s, m) => s + OVERHEAD * 3, 0);
      return reply(req, { reached: true });
    case 'cyclelens/inject': {
      const out = { injected: [], refused: [] };
      for (const t of a.targets) {
        if (t.group) { const m = { id: nextId++, name: t.group.join(' + '), kind: 'group', members: t.group,` +
  String.raw` payload: 'software', counter: 'minstret', warnings: [] }; injected.push(m); out.injected.push(m); }
        else if (t.function === 'tiny')` +
  String.raw` out.refused.push({ target: t, reason: 'tiny is 2 bytes long: too short for a 4-byte patch' });
        else { const m = { id: nextId++, name: t.function, kind: 'function',` +
  String.raw` payload: 'software', counter: 'minstret', warnings: [] }; injected.push(m); out.injected.push(m); }
      }
      return reply(req, out);
    }
    case 'cyclelens/injectedResults': return reply(req, { results: injected.map((m) => ({ id: m.id, name: m.name,` +
  String.raw` counter: 'minstret', calls: 3, passes: 3, untracked: 0, total: valueOf(m) + OVERHEAD,` +
  String.raw` compensatedTotal: valueOf(m), overheadPerPass: 2, min: 1, max: 2, mean: 1.5,` +
  String.raw` meanCompensated: 1, lastPasses: [] })) });
    case 'cyclelens/planInjection': return reply(req, { functions: a.functions.map((name) => name === 'tiny'` +
  String.raw` ? { name, entry: false, callSites: false,` +
  String.raw` reason: 'tiny is 2 bytes long: too short for a 4-byte patch' }` +
  String.raw` : { name, entry: true }) });
    case 'cyclelens/removeInjections': injected = injected.filter((m) => !(a.ids || []).includes(m.id));` +
  String.raw` return reply(req, {});
    case 'disconnect': reply(req, {}); setTimeout(() => process.exit(0), 10); return;
    default: return reply(req, undefined, 'unknown request ' + req.command);
  }
}
process.stdin.on('data', (c) => {
  buf = Buffer.concat([buf, c]);
  for (;;) {
    const end = buf.indexOf('\r\n\r\n'); if (end < 0) return;
    const len = Number(/Content-Length: (\d+)/.exec(buf.subarray(0, end).toString())[1]);
    if (buf.length < end + 4 + len) return;
    const msg = JSON.parse(buf.subarray(end + 4, end + 4 + len).toString()); buf = buf.subarray(end + 4 + len);
    handle(msg);
  }
});
process.stdin.on('end', () => process.exit(0));
`;

describe('cyclelens CLI end to end (stand-in adapter)', () => {
  const work = join(dir, 'ws');
  mkdirSync(join(work, '.vscode'), { recursive: true });
  const adapter = join(dir, 'fakeAdapter.js');
  writeFileSync(adapter, FAKE_ADAPTER);
  const config = join(work, '.vscode', 'launch.json');
  writeFileSync(
    config,
    JSON.stringify({
      configurations: [
        {
          name: 'Fake',
          type: 'cyclelens',
          request: 'launch',
          executable: '${workspaceFolder}/fw.elf',
          server: { type: 'qemu' },
        },
        {
          name: 'Missing',
          type: 'cyclelens',
          request: 'launch',
          executable: '${workspaceFolder}/missing.elf',
          server: { type: 'qemu' },
        },
      ],
    }),
  );

  async function run(
    argv: string[],
    env: Record<string, string> = {},
  ): Promise<{ code: number; out: string; err: string; log: string[] }> {
    const logFile = join(dir, `adapter-${Math.random().toString(36).slice(2)}.log`);
    writeFileSync(logFile, '');
    const saved = { ...process.env };
    Object.assign(process.env, { FAKE_LOG: logFile, ...env });
    let out = '';
    let err = '';
    const io: CliIo = { out: (t) => (out += t), err: (t) => (err += t), onInterrupt: () => () => undefined };
    try {
      const code = await main([...argv, '--adapter', adapter], io);
      return { code, out, err, log: readFileSync(logFile, 'utf8').split('\n').filter(Boolean) };
    } finally {
      process.env = saved;
    }
  }

  it('runs a descent, prints the report, writes result sets and DOT, and disconnects', async () => {
    const out = join(dir, 'results.json');
    const dot = join(dir, 'graph.dot');
    const r = await run([
      'descent',
      '--config',
      config,
      '--name',
      'Fake',
      '--threshold',
      '1%',
      '--slots',
      '2',
      '--out',
      out,
      '--dot',
      dot,
    ]);
    assert.equal(r.code, 0, r.err);
    assert.match(
      r.out,
      /Call-graph descent of fw\.elf \(software injection, minstret; total from a run without injections\)/,
    );
    assert.match(r.out, /^main\s+whole run\s+10,000/m);
    assert.match(r.out, /^work\s+measured\s+9,000/m);
    assert.match(r.out, /^tiny\s+refused/m);
    assert.match(r.out, /tiny: tiny is 2 bytes long/);
    assert.match(r.out, /^leaf\s+measured\s+6,900/m, 'bounded through the refused tiny');
    assert.match(r.out, /^cold\s+measured/m);
    assert.ok(
      !r.log.some((l) => l.startsWith('cyclelens/inject ') && l.includes('"main"')),
      'main spans the run: never injected',
    );
    assert.equal(r.log[r.log.length - 1]!.split(' ')[0], 'disconnect');
    assert.match(
      r.log.find((l) => l.startsWith('launch'))!,
      /"stopAtEntry":"main"/,
    );
    const saved = await loadResultSetDocument(out);
    assert.equal(saved.analysis?.scenario, 'descent');
    assert.ok(
      saved.resultSets.every((rs) => rs.run.totals.instructions === 10_000),
      'the baseline total, without payload overhead',
    );
    assert.match(readFileSync(dot, 'utf8'), /^digraph cyclelens/);
  });

  it('continues a descent from its saved result sets', async () => {
    const first = join(dir, 'first.json');
    await run(['descent', '--config', config, '--name', 'Fake', '--slots', '2', '--out', first]);
    const r = await run(['descent', '--config', config, '--name', 'Fake', '--slots', '2', '--resume', first]);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.log.filter((l) => l.startsWith('cyclelens/inject ')).length, 0, 'everything was decided already');
    assert.match(r.out, /^work\s+measured\s+9,000/m);
    const other = join(dir, 'other.json');
    const doc = JSON.parse(readFileSync(first, 'utf8'));
    doc.resultSets[0].program.executable = '/elsewhere/fw.elf';
    writeFileSync(other, JSON.stringify(doc));
    const mixed = await run(['descent', '--config', config, '--name', 'Fake', '--resume', other]);
    assert.equal(mixed.code, 1);
    assert.match(mixed.err, /not of .*fw\.elf: ratios of different programs do not mix/);
  });

  it('runs the exact full profile', async () => {
    const r = await run(['profile', '--config', config, '--name', 'Fake', '--slots', '3']);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^Exact full profile/);
    assert.equal(
      r.log.filter((l) => l.startsWith('cyclelens/inject ')).length,
      2,
      '5 functions (main spans) in batches of 3',
    );
  });

  it('fails clearly and still disconnects', async () => {
    const unknown = await run(['descent', '--config', config, '--name', 'Nope']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.err, /no configuration named "Nope"; CycleLens configurations there: "Fake", "Missing"/);
    assert.deepEqual(unknown.log, [], 'no adapter started');

    const missing = await run(['descent', '--config', config, '--name', 'Missing']);
    assert.equal(missing.code, 1);
    assert.match(missing.err, /launch failed: .*missing\.elf does not exist: build the firmware first/);
    assert.equal(missing.log[missing.log.length - 1]!.split(' ')[0], 'disconnect');

    const broken = await run(['descent', '--config', config, '--name', 'Fake'], { FAKE_FAIL_RUN: '1' });
    assert.equal(broken.code, 1);
    assert.match(broken.err, /cyclelens\/run failed: GDB lost the connection to the target/);
    assert.equal(broken.log[broken.log.length - 1]!.split(' ')[0], 'disconnect');

    const noConfig = await run(['descent', '--config', join(dir, 'none.json'), '--name', 'Fake']);
    assert.equal(noConfig.code, 1);
    assert.match(noConfig.err, /none\.json does not exist/);

    const usage = await run(['descent', '--name', 'Fake']);
    assert.equal(usage.code, 2);
    assert.match(usage.err, /--config is required[\s\S]*usage:/);
    assert.ok(!existsSync(join(dir, 'results.json.tmp')));
  });
});
