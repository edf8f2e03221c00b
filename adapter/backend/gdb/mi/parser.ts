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
    while (this.pos < this.text.length && this.text.charCodeAt(this.pos) >= 48 && this.text.charCodeAt(this.pos) <= 57) this.pos++;
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

  /** A C string as GDB writes it: backslash escapes, including three-digit octal for raw bytes. */
  private cString(): string {
    this.expect('"');
    const bytes: number[] = [];
    let out = '';
    const flushBytes = (): void => {
      if (bytes.length > 0) {
        out += Buffer.from(bytes).toString('utf8');
        bytes.length = 0;
      }
    };
    while (this.pos < this.text.length) {
      const c = this.text[this.pos++]!;
      if (c === '"') {
        flushBytes();
        return out;
      }
      if (c !== '\\') {
        flushBytes();
        out += c;
        continue;
      }
      const e = this.text[this.pos++];
      if (e === undefined) break;
      if (e >= '0' && e <= '7') {
        let digits = e;
        while (digits.length < 3 && /[0-7]/.test(this.text[this.pos] ?? '')) digits += this.text[this.pos++];
        bytes.push(parseInt(digits, 8) & 0xff);
        continue;
      }
      flushBytes();
      out += simpleEscapes[e] ?? e;
    }
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

const simpleEscapes: Record<string, string> = { n: '\n', t: '\t', r: '\r', '"': '"', '\\': '\\', a: '\x07', b: '\b', f: '\f', v: '\v', e: '\x1b' };

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

/** Splits GDB's stdout into lines across arbitrary chunk boundaries. */
export class MiLineSplitter {
  private pending = '';

  push(chunk: string): string[] {
    this.pending += chunk;
    const lines = this.pending.split('\n');
    this.pending = lines.pop() ?? '';
    return lines;
  }

  /** What is left when the stream ends (a partial last line, e.g. from a crashed GDB). */
  flush(): string[] {
    const rest = this.pending;
    this.pending = '';
    return rest === '' ? [] : [rest];
  }
}
