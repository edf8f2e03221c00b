import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MiLineSplitter, parseMiLine } from '../../adapter/debugger/gdb/mi/parser';
import {
  MiShapeError,
  miInt,
  miList,
  miQuote,
  miString,
  miTuple,
  miTupleList,
} from '../../adapter/debugger/gdb/mi/values';

/** Matches a MiShapeError that names `field`. */
const miShapeErrorFor =
  (field: string) =>
  (err: unknown): boolean =>
    err instanceof MiShapeError && err.message.includes(`'${field}'`);

describe('GDB/MI parser', () => {
  it('parses a result record with token, tuple and list of results', () => {
    const r = parseMiLine(
      '12^done,stack=[frame={level="0",addr="0x800006b0",func="summarise_window",file="src/dsp.c"' +
        ',line="128"},frame={level="1",addr="0x80000734",func="analyse_samples"}]',
    );
    assert.equal(r.type, 'result');
    if (r.type !== 'result') return;
    assert.equal(r.token, 12);
    assert.equal(r.resultClass, 'done');
    const frames = miTupleList(r.results, 'stack');
    assert.equal(frames.length, 2);
    assert.equal(miString(frames[0]!, 'func'), 'summarise_window');
    assert.equal(miInt(frames[0]!, 'line'), 128);
    assert.equal(miString(frames[1]!, 'addr'), '0x80000734');
  });

  it('parses exec, status and notify async records', () => {
    const stopped = parseMiLine(
      '*stopped,reason="breakpoint-hit",disp="keep",bkptno="2",frame={addr="0x1a2",func="main",ar' +
        'gs=[]},thread-id="1",stopped-threads="all"',
    );
    assert.equal(stopped.type, 'exec');
    if (stopped.type === 'exec') {
      assert.equal(stopped.asyncClass, 'stopped');
      assert.equal(miString(stopped.results, 'reason'), 'breakpoint-hit');
      assert.deepEqual(miList(miTuple(stopped.results, 'frame'), 'args'), []);
    }
    const running = parseMiLine('*running,thread-id="all"');
    assert.deepEqual(running, {
      type: 'exec',
      token: undefined,
      asyncClass: 'running',
      results: { 'thread-id': 'all' },
    });
    // GDB's load progress uses a bare tuple, outside the grammar; it must not leak out as text.
    assert.deepEqual(parseMiLine('+download,{section=".text",section-size="1234"}'), {
      type: 'status',
      token: undefined,
      asyncClass: 'download',
      results: { section: '.text', 'section-size': '1234' },
    });
    const notify = parseMiLine('=breakpoint-modified,bkpt={number="1",times="3"}');
    assert.equal(notify.type, 'notify');
  });

  it('decodes C-string escapes, including octal bytes as UTF-8', () => {
    const r = parseMiLine('~"line\\tone\\n\\"quoted\\" back\\\\slash \\303\\251t\\303\\251\\n"');
    assert.deepEqual(r, { type: 'console', text: 'line\tone\n"quoted" back\\slash été\n' });
    assert.deepEqual(parseMiLine('@"monitor reply\\r\\n"'), { type: 'target', text: 'monitor reply\r\n' });
    assert.deepEqual(parseMiLine('&"warning: x\\n"'), { type: 'log', text: 'warning: x\n' });
  });

  it('keeps every value of a key repeated inside one tuple', () => {
    const r = parseMiLine('^done,bkpt={number="1"},bkpt={number="1.1"}');
    assert.equal(r.type, 'result');
    if (r.type === 'result') {
      const v = r.results['bkpt'];
      assert.ok(Array.isArray(v) && v.length === 2);
    }
  });

  it('handles empty tuples, empty lists, lists of values and nested lists', () => {
    const r = parseMiLine('^done,a={},b=[],c=["x","y"],d=[[],["z"]],e=[{k="v"}]');
    assert.equal(r.type, 'result');
    if (r.type !== 'result') return;
    assert.deepEqual(r.results, { a: {}, b: [], c: ['x', 'y'], d: [[], ['z']], e: [{ k: 'v' }] });
  });

  it('recognises the prompt and every result class', () => {
    assert.deepEqual(parseMiLine('(gdb) '), { type: 'prompt' });
    assert.deepEqual(parseMiLine('(gdb)\r'), { type: 'prompt' });
    for (const cls of ['done', 'running', 'connected', 'error', 'exit']) {
      const r = parseMiLine(`^${cls}`);
      assert.equal(r.type === 'result' && r.resultClass, cls);
    }
    const err = parseMiLine('5^error,msg="No symbol \\"nope\\" in current context."');
    assert.equal(err.type === 'result' && miString(err.results, 'msg'), 'No symbol "nope" in current context.');
  });

  it('returns malformed and partial input as unparsed, with the reason, never throwing', () => {
    const cases = [
      '^done,stack=[frame={level="0"',
      '^done,a="unterminated',
      '^bogus',
      '12',
      '*',
      '~"text"trailing',
      'Hello from the inferior',
      '^done,=x',
      '^done,a=b',
      '',
    ];
    for (const line of cases) {
      const r = parseMiLine(line);
      assert.equal(r.type, 'unparsed', `'${line}' should be unparsed`);
      if (r.type === 'unparsed') {
        assert.equal(r.line, line);
        assert.ok(r.error && r.error.length > 0);
      }
    }
  });

  it('splits a stream into lines across arbitrary chunk boundaries', () => {
    const text = '1^done,value="42"\n*stopped,reason="end-stepping-range"\r\n(gdb) \n~"partial';
    for (let cut = 0; cut <= text.length; cut++) {
      const s = new MiLineSplitter();
      const lines = [...s.push(text.slice(0, cut)), ...s.push(text.slice(cut))];
      assert.deepEqual(lines, ['1^done,value="42"', '*stopped,reason="end-stepping-range"\r', '(gdb) ']);
      assert.deepEqual(s.flush(), ['~"partial']);
      assert.deepEqual(s.flush(), []);
    }
  });

  it('reads fields by name and says which field is wrong', () => {
    const r = parseMiLine('^done,value="7",list=["a"],tuple={x="1"}');
    assert.equal(r.type, 'result');
    if (r.type !== 'result') return;
    assert.throws(() => miString(r.results, 'missing'), miShapeErrorFor('missing'));
    assert.throws(() => miTuple(r.results, 'value'), miShapeErrorFor('value'));
    assert.throws(() => miTupleList(r.results, 'list'), /item 0 of MI list 'list'/);
    assert.deepEqual(miList(r.results, 'absent'), []);
  });

  it('quotes command arguments only when needed', () => {
    assert.equal(miQuote('main'), 'main');
    assert.equal(miQuote('/src/dsp.c:128'), '/src/dsp.c:128');
    assert.equal(miQuote('*0x800006b0'), '*0x800006b0');
    assert.equal(miQuote('a b'), '"a b"');
    assert.equal(miQuote('say "hi"\\'), '"say \\"hi\\"\\\\"');
    assert.equal(miQuote('-x'), '"-x"');
    assert.equal(miQuote(''), '""');
  });
});
