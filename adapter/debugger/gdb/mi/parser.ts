import type { MiAsyncKind, MiRecord, MiResultClass, MiStreamKind, MiTuple, MiValue } from './types';

const resultClasses: ReadonlySet<string> = new Set(['done', 'running', 'connected', 'error', 'exit']);
const asyncKinds: Record<string, MiAsyncKind> = { '*': 'exec', '+': 'status', '=': 'notify' };
const streamKinds: Record<string, MiStreamKind> = { '~': 'console', '@': 'target', '&': 'log' };

class MiSyntaxError extends Error {}

/**
 * Parses one line of GDB/MI output. Never throws: anything that is not well-formed MI comes back as
 * an `unparsed` record, because GDB's stdout also carries the inferior's output and partial lines
 * when GDB dies.
 */
export function parseMiLine(rawLine: string): MiRecord {
  const line = rawLine.endsWith('\r') ? rawLine.slice(0, -1) : rawLine;
  if (line === '(gdb) ' || line === '(gdb)') return { type: 'prompt' };
  try {
    return new LineParser(line).record();
  } catch (err) {
    return { type: 'unparsed', line, error: err instanceof MiSyntaxError ? err.message : String(err) };
  }
}

class LineParser {
  private pos = 0;
  constructor(private readonly text: string) {}

  record(): MiRecord {
    const stream = streamKinds[this.text[0] ?? ''];
    if (stream) {
      this.pos = 1;
      const text = this.cString();
      this.expectEnd();
      return { type: stream, text };
    }
    const token = this.token();
    const marker = this.text[this.pos++];
    if (marker === '^') {
      const cls = this.word();
      if (!resultClasses.has(cls)) throw new MiSyntaxError(`unknown result class '${cls}'`);
      return { type: 'result', token, resultClass: cls as MiResultClass, results: this.trailingResults() };
    }
    const kind = asyncKinds[marker ?? ''];
    if (kind) {
      const asyncClass = this.word();
      if (asyncClass === '') throw new MiSyntaxError('missing async class');
      return { type: kind, token, asyncClass, results: this.trailingResults() };
    }
    throw new MiSyntaxError(`not an MI record (starts with ${JSON.stringify(this.text.slice(0, 8))})`);
  }

  private token(): number | undefined {
    const start = this.pos;
    while (this.pos < this.text.length && this.text.charCodeAt(this.pos) >= 48 && this.text.charCodeAt(this.pos) <= 57)
      this.pos++;
    return this.pos > start ? Number(this.text.slice(start, this.pos)) : undefined;
  }

  /** A result class, async class or variable name: everything up to `,` `=` or the end. */
  private word(): string {
    const start = this.pos;
    while (this.pos < this.text.length) {
      const c = this.text[this.pos];
      if (c === ',' || c === '=' || c === '{' || c === '}' || c === '[' || c === ']' || c === '"') break;
      this.pos++;
    }
    return this.text.slice(start, this.pos);
  }

  private trailingResults(): MiTuple {
    const tuple: MiTuple = {};
    while (this.pos < this.text.length) {
      this.expect(',');
      if (this.peek('{')) {
        // GDB's `+download` progress records carry a bare tuple (`+download,{section=…}`),
        // outside the documented grammar: take its fields as the record's own.
        Object.assign(tuple, this.tuple());
        continue;
      }
      this.result(tuple);
    }
    return tuple;
  }

  private result(into: MiTuple): void {
    const name = this.word();
    if (name === '') throw new MiSyntaxError(`expected a variable name at column ${this.pos}`);
    this.expect('=');
    addResult(into, name, this.value());
  }

  private value(): MiValue {
    const c = this.text[this.pos];
    if (c === '"') return this.cString();
    if (c === '{') return this.tuple();
    if (c === '[') return this.list();
    throw new MiSyntaxError(`expected a value at column ${this.pos}`);
  }

  private tuple(): MiTuple {
    this.expect('{');
    const tuple: MiTuple = {};
    if (this.peek('}')) {
      this.pos++;
      return tuple;
    }
    for (;;) {
      this.result(tuple);
      if (this.peek(',')) {
        this.pos++;
        continue;
      }
      this.expect('}');
      return tuple;
    }
  }

  /** Lists hold either values or results; a list of results keeps the values in order. */
  private list(): MiValue[] {
    this.expect('[');
    const items: MiValue[] = [];
    if (this.peek(']')) {
      this.pos++;
      return items;
    }
    for (;;) {
      const c = this.text[this.pos];
      if (c === '"' || c === '{' || c === '[') {
        items.push(this.value());
      } else {
        this.word();
        this.expect('=');
        items.push(this.value());
      }
      if (this.peek(',')) {
        this.pos++;
        continue;
      }
      this.expect(']');
      return items;
    }
  }

  /**
   * A C string as GDB writes it: backslash escapes, including three-digit octal for raw bytes.
   * Plain runs are found with indexOf and taken as slices: a memory read is one 128 KiB string, and
   * walking it a character at a time was most of the cost of reading memory.
   */
  private cString(): string {
    this.expect('"');
    const text = this.text;
    let pos = this.pos;
    let quote = text.indexOf('"', pos);
    let backslash = text.indexOf('\\', pos);
    if (quote >= 0 && (backslash < 0 || backslash > quote)) {
      this.pos = quote + 1;
      return text.slice(pos, quote);
    }
    let out = '';
    // Octal escapes are bytes of a UTF-8 sequence: collected, then decoded together.
    let bytes: number[] = [];
    const flushBytes = (): void => {
      if (bytes.length > 0) {
        out += Buffer.from(bytes).toString('utf8');
        bytes = [];
      }
    };
    for (;;) {
      if (quote < 0) break;
      if (backslash < 0 || backslash > quote) {
        flushBytes();
        out += text.slice(pos, quote);
        this.pos = quote + 1;
        return out;
      }
      if (backslash > pos) {
        flushBytes();
        out += text.slice(pos, backslash);
      }
      const e = text.charCodeAt(backslash + 1);
      if (Number.isNaN(e)) break;
      pos = backslash + 2;
      if (e >= 48 && e <= 55) {
        let value = e - 48;
        for (let n = 1; n < 3 && pos < text.length; n++) {
          const d = text.charCodeAt(pos);
          if (d < 48 || d > 55) break;
          value = value * 8 + (d - 48);
          pos++;
        }
        bytes.push(value & 0xff);
      } else {
        flushBytes();
        const c = text[backslash + 1]!;
        out += simpleEscapes[c] ?? c;
      }
      // An escaped quote is not the closing one: look again past what was consumed.
      if (quote < pos) quote = text.indexOf('"', pos);
      backslash = text.indexOf('\\', pos);
    }
    this.pos = text.length;
    throw new MiSyntaxError('unterminated string');
  }

  private peek(c: string): boolean {
    return this.text[this.pos] === c;
  }

  private expect(c: string): void {
    if (this.text[this.pos] !== c) {
      const found = this.pos < this.text.length ? `'${this.text[this.pos]}'` : 'end of line';
      throw new MiSyntaxError(`expected '${c}' at column ${this.pos}, found ${found}`);
    }
    this.pos++;
  }

  private expectEnd(): void {
    if (this.pos !== this.text.length) throw new MiSyntaxError(`trailing text at column ${this.pos}`);
  }
}

const simpleEscapes: Record<string, string> = {
  n: '\n',
  t: '\t',
  r: '\r',
  '"': '"',
  '\\': '\\',
  a: '\x07',
  b: '\b',
  f: '\f',
  v: '\v',
  e: '\x1b',
};

/** Old GDBs repeat a key inside one tuple (e.g. several `bkpt=`); keep every value, in order. */
function addResult(into: MiTuple, name: string, value: MiValue): void {
  const existing = into[name];
  if (existing === undefined) {
    into[name] = value;
  } else if (Array.isArray(existing) && (existing as unknown as { repeated?: boolean }).repeated) {
    existing.push(value);
  } else {
    const repeated: MiValue[] = [existing, value];
    Object.defineProperty(repeated, 'repeated', { value: true });
    into[name] = repeated;
  }
}

/**
 * Splits GDB's stdout into lines across arbitrary chunk boundaries. A long line (a memory read) comes
 * in many chunks: only each new chunk is searched for the line end, and the pieces are joined once.
 */
export class MiLineSplitter {
  private pieces: string[] = [];

  push(chunk: string): string[] {
    if (chunk.indexOf('\n') < 0) {
      if (chunk !== '') this.pieces.push(chunk);
      return [];
    }
    const lines = chunk.split('\n');
    if (this.pieces.length > 0) {
      this.pieces.push(lines[0]!);
      lines[0] = this.pieces.join('');
    }
    const rest = lines.pop()!;
    this.pieces = rest === '' ? [] : [rest];
    return lines;
  }

  /** What is left when the stream ends (a partial last line, e.g. from a crashed GDB). */
  flush(): string[] {
    const rest = this.pieces.join('');
    this.pieces = [];
    return rest === '' ? [] : [rest];
  }
}
