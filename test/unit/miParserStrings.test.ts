import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MiLineSplitter, parseMiLine } from '../../adapter/debugger/gdb/mi/parser';
import { miString, miTupleList } from '../../adapter/debugger/gdb/mi/values';

/**
 * Writes text as GDB writes a C string: printable ASCII as is, quote and backslash escaped, the
 * usual control escapes, everything else as three-digit octal bytes of its UTF-8 encoding. Written
 * from the format, independently of the parser.
 */
function gdbQuote(text: string, rawUtf8 = false): string {
  const named: Record<number, string> = {
    10: '\\n',
    9: '\\t',
    13: '\\r',
    34: '\\"',
    92: '\\\\',
    7: '\\a',
    8: '\\b',
    12: '\\f',
    11: '\\v',
    27: '\\e',
  };
  let out = '"';
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (named[code]) out += named[code];
    else if (code >= 32 && code < 127) out += ch;
    else if (rawUtf8 && code >= 128) out += ch;
    else for (const byte of Buffer.from(ch, 'utf8')) out += `\\${byte.toString(8).padStart(3, '0')}`;
  }
  return `${out}"`;
}

describe('GDB/MI parser: C strings and long lines', () => {
  it('decodes any text GDB can write, escaped or raw, inside results and streams', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 60 }), fc.boolean(), (text, raw) => {
        const quoted = gdbQuote(text, raw);
        assert.deepEqual(parseMiLine(`~${quoted}`), { type: 'console', text });
        const r = parseMiLine(`7^done,a=${quoted},b=[${quoted},{c=${quoted}}]`);
        assert.equal(r.type, 'result');
        if (r.type !== 'result') return;
        assert.equal(miString(r.results, 'a'), text);
        assert.deepEqual(r.results['b'], [text, { c: text }]);
      }),
      { numRuns: 500 },
    );
  });

  it('reads escapes at the edges of a string and next to each other', () => {
    assert.deepEqual(parseMiLine('~"\\"\\\\\\n"'), { type: 'console', text: '"\\\n' });
    assert.deepEqual(parseMiLine('~"\\303\\251"'), { type: 'console', text: 'é' });
    // Octal takes at most three digits: the fourth is a plain character.
    assert.deepEqual(parseMiLine('~"\\1011"'), { type: 'console', text: 'A1' });
    // Fewer than three digits end at the first non-octal character.
    assert.deepEqual(parseMiLine('~"\\0x\\18"'), { type: 'console', text: '\0x\x018' });
    assert.deepEqual(parseMiLine('~""'), { type: 'console', text: '' });
    assert.equal(parseMiLine('~"ends in an escape\\"').type, 'unparsed');
    assert.equal(parseMiLine('~"ends in a backslash\\').type, 'unparsed');
    assert.equal(parseMiLine('^done,a="x\\",b="y').type, 'unparsed');
  });

  it('reads a 64 KiB memory block as one string, exactly', () => {
    const bytes = Buffer.alloc(65536);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7919 + (i >> 8)) & 0xff;
    const hex = bytes.toString('hex');
    const line = `12^done,memory=[{begin="0x20000000",offset="0x00000000",end="0x20010000",contents="${hex}"}]`;
    const r = parseMiLine(line);
    assert.equal(r.type, 'result');
    if (r.type !== 'result') return;
    const block = miTupleList(r.results, 'memory')[0]!;
    assert.equal(miString(block, 'end'), '0x20010000');
    assert.ok(Buffer.from(miString(block, 'contents'), 'hex').equals(bytes));
  });

  it('splits a stream into the same lines whatever the chunking, long lines included', () => {
    const long = `5^done,contents="${'ab'.repeat(40_000)}"`;
    const lines = ['1^done', long, '*stopped,reason="end-stepping-range"', '', '(gdb) ', long];
    const stream = `${lines.join('\n')}\n~"tail`;
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: stream.length }), { maxLength: 40 }), (cuts) => {
        const at = [0, ...[...new Set(cuts)].sort((a, b) => a - b), stream.length];
        const s = new MiLineSplitter();
        const got: string[] = [];
        for (let i = 1; i < at.length; i++) got.push(...s.push(stream.slice(at[i - 1], at[i])));
        assert.deepEqual(got, lines);
        assert.deepEqual(s.flush(), ['~"tail']);
      }),
      { numRuns: 200 },
    );
  });
});
