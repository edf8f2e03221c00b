/**
 * A small Tcl interpreter for the OpenOCD Tcl RPC double: the part of OpenOCD's Jim Tcl that the
 * adapter's requests use. What it follows (checked against a real OpenOCD 0.12 with the dummy
 * adapter, test/integration/openocd.test.ts):
 *   - words: `{…}` literal (nesting, `\{` escapes), `"…"` and bare words with `$var`, `${var}`,
 *     `$::var`, `[script]` (a bracket's value is its last command's) and backslash escapes;
 *     commands end at a newline or `;`; `#` starts a comment where a command starts;
 *   - an unknown command fails with code 1 and `invalid command name "x"`; a wrong argument count
 *     with `wrong # args: should be "…"`;
 *   - `catch script ?var?` gives the return code; `return -code N` in a proc makes the call return
 *     code N (the client's reply proc returns -600); `capture script` returns what the script
 *     logged, or its result when it logged nothing.
 * Commands of the double's target (read_memory, …) are added with `define`.
 */

/** A non-OK completion: 1 error, 2 return, 3 break, 4 continue, or any other code a command gave. */
export class TclSignal extends Error {
  constructor(
    readonly code: number,
    readonly value: string,
    /** For `return`: the code the enclosing proc call completes with. */
    readonly returnCode = 0,
  ) {
    super(value);
  }
}

export function tclError(message: string): TclSignal {
  return new TclSignal(1, message);
}

export type TclCommand = (args: string[], interp: MiniTcl) => string;

interface Proc {
  params: string[];
  body: string;
}

const VAR_CHAR = /[A-Za-z0-9_]/;

export class MiniTcl {
  private readonly globals = new Map<string, string>();
  private readonly frames: Array<Map<string, string>> = [];
  private readonly commands = new Map<string, TclCommand>();
  private readonly procs = new Map<string, Proc>();
  private readonly captures: string[][] = [];
  /** What was logged outside any `capture` (OpenOCD's console). */
  readonly console: string[] = [];

  constructor() {
    this.define('set', (a) => this.cmdSet(a));
    this.define('list', (a) => formatList(a.slice(1)));
    this.define('proc', (a) => {
      arity(a, 4, 4, 'proc name arglist body');
      this.procs.set(a[1]!, { params: parseList(a[2]!), body: a[3]! });
      return '';
    });
    this.define('return', (a) => this.cmdReturn(a));
    this.define('error', (a) => {
      arity(a, 2, 2, 'error message');
      throw tclError(a[1]!);
    });
    this.define('catch', (a) => this.cmdCatch(a));
    this.define('capture', (a) => this.cmdCapture(a));
    this.define('if', (a) => this.cmdIf(a));
    this.define('expr', (a) => String(this.expr(a.slice(1).join(' '))));
    this.define('string', (a) => this.cmdString(a));
    this.define('echo', (a) => {
      this.log(`${a.slice(1).join(' ')}\n`);
      return '';
    });
    this.define('info', (a) => {
      if (a[1] === 'commands') return formatList(this.commandNames().filter((n) => a[2] === undefined || n === a[2]));
      if (a[1] === 'procs') return formatList([...this.procs.keys()].filter((n) => a[2] === undefined || n === a[2]));
      throw tclError(`bad option "${a[1] ?? ''}": must be commands or procs`);
    });
  }

  define(name: string, command: TclCommand): void {
    this.commands.set(name, command);
  }

  /** Something a command logged: into the innermost `capture`, else the console. */
  log(text: string): void {
    const into = this.captures[this.captures.length - 1] ?? this.console;
    into.push(text);
  }

  /** Runs a top-level command line as OpenOCD's Tcl server does: the result, whatever the code. */
  evalTop(script: string): { code: number; result: string } {
    try {
      return { code: 0, result: this.eval(script) };
    } catch (err) {
      if (!(err instanceof TclSignal)) throw err;
      if (err.code === 2) return { code: err.returnCode === 0 ? 2 : err.returnCode, result: err.value };
      return { code: err.code, result: err.value };
    }
  }

  eval(script: string): string {
    return this.run(script, 0, false).result;
  }

  private commandNames(): string[] {
    return [...this.commands.keys(), ...this.procs.keys()];
  }

  // ---- parsing and evaluation ------------------------------------------------------------------

  /** Evaluates commands from `pos` to the end (or to the `]` closing a bracket when nested). */
  private run(src: string, pos: number, nested: boolean): { result: string; end: number } {
    let result = '';
    for (;;) {
      while (pos < src.length && /[\s;]/.test(src[pos]!)) pos++;
      if (pos >= src.length) {
        if (nested) throw tclError('missing close-bracket');
        return { result, end: pos };
      }
      if (nested && src[pos] === ']') return { result, end: pos + 1 };
      if (src[pos] === '#') {
        while (pos < src.length && src[pos] !== '\n') pos++;
        continue;
      }
      const words: string[] = [];
      for (;;) {
        while (
          pos < src.length &&
          (src[pos] === ' ' || src[pos] === '\t' || (src[pos] === '\\' && src[pos + 1] === '\n'))
        )
          pos += src[pos] === '\\' ? 2 : 1;
        if (pos >= src.length || src[pos] === '\n' || src[pos] === ';' || (nested && src[pos] === ']')) break;
        const word = this.word(src, pos, nested);
        words.push(word.text);
        pos = word.end;
      }
      if (words.length > 0) result = this.invoke(words);
    }
  }

  private word(src: string, pos: number, nested: boolean): { text: string; end: number } {
    if (src[pos] === '{') {
      let depth = 0;
      for (let i = pos; i < src.length; i++) {
        const c = src[i];
        if (c === '\\') i++;
        else if (c === '{') depth++;
        else if (c === '}' && --depth === 0) {
          if (i + 1 < src.length && !/[\s;]/.test(src[i + 1]!) && !(nested && src[i + 1] === ']'))
            throw tclError('extra characters after close-brace');
          return { text: src.slice(pos + 1, i), end: i + 1 };
        }
      }
      throw tclError('missing close-brace');
    }
    if (src[pos] === '"') {
      const r = this.substitute(src, pos + 1, (c) => c === '"');
      if (r.end >= src.length) throw tclError('missing "');
      return { text: r.text, end: r.end + 1 };
    }
    const r = this.substitute(src, pos, (c) => /\s/.test(c) || c === ';' || (nested && c === ']'));
    return r;
  }

  /** Substitutes `$`, `[…]` and backslashes from `pos` until `stop` says a character ends the word. */
  private substitute(src: string, pos: number, stop: (c: string) => boolean): { text: string; end: number } {
    let text = '';
    while (pos < src.length && !stop(src[pos]!)) {
      const c = src[pos]!;
      if (c === '\\') {
        const e = backslash(src, pos);
        text += e.text;
        pos = e.end;
      } else if (c === '[') {
        const r = this.run(src, pos + 1, true);
        text += r.result;
        pos = r.end;
      } else if (c === '$') {
        const v = this.variableAt(src, pos);
        text += v.text;
        pos = v.end;
      } else {
        text += c;
        pos++;
      }
    }
    return { text, end: pos };
  }

  private variableAt(src: string, pos: number): { text: string; end: number } {
    if (src[pos + 1] === '{') {
      const close = src.indexOf('}', pos + 2);
      if (close < 0) throw tclError('missing close-brace for variable name');
      return { text: this.getVar(src.slice(pos + 2, close)), end: close + 1 };
    }
    let end = pos + 1;
    while (end < src.length && (VAR_CHAR.test(src[end]!) || (src[end] === ':' && src[end + 1] === ':')))
      end += src[end] === ':' ? 2 : 1;
    if (end === pos + 1) return { text: '$', end };
    return { text: this.getVar(src.slice(pos + 1, end)), end };
  }

  private scope(name: string): { map: Map<string, string>; key: string } {
    if (name.startsWith('::')) return { map: this.globals, key: name.slice(2) };
    return { map: this.frames[this.frames.length - 1] ?? this.globals, key: name };
  }

  getVar(name: string): string {
    const { map, key } = this.scope(name);
    const v = map.get(key);
    if (v === undefined) throw tclError(`can't read "${name}": no such variable`);
    return v;
  }

  setVar(name: string, value: string): void {
    const { map, key } = this.scope(name);
    map.set(key, value);
  }

  private invoke(words: string[]): string {
    const name = words[0]!;
    const proc = this.procs.get(name);
    if (proc) return this.callProc(name, proc, words);
    const command = this.commands.get(name);
    if (!command) throw tclError(`invalid command name "${name}"`);
    return command(words, this);
  }

  private callProc(name: string, proc: Proc, words: string[]): string {
    const args = words.slice(1);
    const variadic = proc.params[proc.params.length - 1] === 'args';
    const fixed = variadic ? proc.params.slice(0, -1) : proc.params;
    if (args.length < fixed.length || (!variadic && args.length > fixed.length))
      throw tclError(`wrong # args: should be "${[name, ...proc.params].join(' ')}"`);
    const frame = new Map<string, string>();
    fixed.forEach((p, i) => frame.set(p, args[i]!));
    if (variadic) frame.set('args', formatList(args.slice(fixed.length)));
    this.frames.push(frame);
    try {
      return this.eval(proc.body);
    } catch (err) {
      if (err instanceof TclSignal && err.code === 2) {
        if (err.returnCode === 0) return err.value;
        throw new TclSignal(err.returnCode, err.value);
      }
      throw err;
    } finally {
      this.frames.pop();
    }
  }

  // ---- commands ----------------------------------------------------------------------------------

  private cmdSet(a: string[]): string {
    arity(a, 2, 3, 'set varName ?newValue?');
    if (a.length === 3) this.setVar(a[1]!, a[2]!);
    return this.getVar(a[1]!);
  }

  private cmdReturn(a: string[]): string {
    let code = 0;
    let i = 1;
    if (a[1] === '-code') {
      const names: Record<string, number> = { ok: 0, error: 1, return: 2, break: 3, continue: 4 };
      const given = a[2] ?? '';
      code = names[given] ?? Number(given);
      if (!Number.isInteger(code)) throw tclError(`bad completion code "${given}"`);
      i = 3;
    }
    throw new TclSignal(2, a[i] ?? '', code);
  }

  private cmdCatch(a: string[]): string {
    arity(a, 2, 3, 'catch script ?resultVarName?');
    let code = 0;
    let value: string;
    try {
      value = this.eval(a[1]!);
    } catch (err) {
      if (!(err instanceof TclSignal)) throw err;
      code = err.code;
      value = err.value;
    }
    if (a[2] !== undefined) this.setVar(a[2], value);
    return String(code);
  }

  private cmdCapture(a: string[]): string {
    arity(a, 2, 2, 'capture command');
    const buffer: string[] = [];
    this.captures.push(buffer);
    let result: string;
    try {
      result = this.eval(a[1]!);
    } finally {
      this.captures.pop();
    }
    return buffer.length > 0 ? buffer.join('') : result;
  }

  private cmdIf(a: string[]): string {
    let i = 1;
    for (;;) {
      const cond = a[i];
      let body = a[i + 1];
      if (cond === undefined || body === undefined)
        throw tclError('wrong # args: should be "if cond ?then? body ?elseif cond body ...? ?else body?"');
      let next = i + 2;
      if (body === 'then') {
        body = a[i + 2]!;
        next++;
      }
      if (truthy(this.expr(cond))) return this.eval(body);
      if (a[next] === 'elseif') {
        i = next + 1;
        continue;
      }
      if (a[next] === 'else') return this.eval(a[next + 1] ?? '');
      return '';
    }
  }

  private cmdString(a: string[]): string {
    arity(a, 3, 3, 'string subcommand string');
    if (a[1] === 'bytelength') return String(Buffer.byteLength(a[2]!, 'utf8'));
    if (a[1] === 'length') return String([...a[2]!].length);
    throw tclError(`bad option "${a[1]}": must be bytelength or length`);
  }

  // ---- expressions ---------------------------------------------------------------------------------

  /** Operands ($var, [cmd], numbers, "…", {…}) and binary operators, without parentheses. */
  expr(text: string): string | number {
    const tokens: Array<{ op: string } | { value: string }> = [];
    let pos = 0;
    while (pos < text.length) {
      const c = text[pos]!;
      if (/\s/.test(c)) {
        pos++;
        continue;
      }
      const op = /^(==|!=|<=|>=|&&|\|\||<|>|\+|-(?!\d)|\*|in\b|ni\b|eq\b|ne\b)/.exec(text.slice(pos));
      if (op && tokens.length > 0 && 'value' in tokens[tokens.length - 1]!) {
        tokens.push({ op: op[1]! });
        pos += op[1]!.length;
      } else if (c === '$') {
        const v = this.variableAt(text, pos);
        tokens.push({ value: v.text });
        pos = v.end;
      } else if (c === '[') {
        const r = this.run(text, pos + 1, true);
        tokens.push({ value: r.result });
        pos = r.end;
      } else if (c === '{' || c === '"') {
        const w = this.word(text, pos, true);
        tokens.push({ value: w.text });
        pos = w.end;
      } else {
        const m = /^-?(0x[0-9a-fA-F]+|\d+)/.exec(text.slice(pos));
        if (!m) throw tclError(`syntax error in expression "${text}"`);
        tokens.push({ value: m[0] });
        pos += m[0].length;
      }
    }
    return evaluate(tokens, text);
  }
}

const PRECEDENCE: Record<string, number> = {
  '||': 1,
  '&&': 2,
  '==': 3,
  '!=': 3,
  eq: 3,
  ne: 3,
  in: 3,
  ni: 3,
  '<': 4,
  '<=': 4,
  '>': 4,
  '>=': 4,
  '+': 5,
  '-': 5,
  '*': 6,
};

function evaluate(tokens: Array<{ op: string } | { value: string }>, text: string): string | number {
  let i = 0;
  const operand = (): string | number => {
    const t = tokens[i++];
    if (!t || !('value' in t)) throw tclError(`syntax error in expression "${text}"`);
    return t.value;
  };
  const climb = (min: number): string | number => {
    let left = operand();
    for (;;) {
      const t = tokens[i];
      if (!t || !('op' in t) || PRECEDENCE[t.op]! < min) return left;
      i++;
      const right = climb(PRECEDENCE[t.op]! + 1);
      left = apply(t.op, left, right);
    }
  };
  const value = climb(1);
  if (i !== tokens.length) throw tclError(`syntax error in expression "${text}"`);
  return typeof value === 'string' && isNumber(value) ? Number(value) : value;
}

function apply(op: string, a: string | number, b: string | number): string | number {
  const numeric = isNumber(a) && isNumber(b);
  const [x, y] = [Number(a), Number(b)];
  switch (op) {
    case 'in':
      return parseList(String(b)).includes(String(a)) ? 1 : 0;
    case 'ni':
      return parseList(String(b)).includes(String(a)) ? 0 : 1;
    case 'eq':
      return String(a) === String(b) ? 1 : 0;
    case 'ne':
      return String(a) !== String(b) ? 1 : 0;
    case '==':
      return (numeric ? x === y : String(a) === String(b)) ? 1 : 0;
    case '!=':
      return (numeric ? x !== y : String(a) !== String(b)) ? 1 : 0;
    case '&&':
      return truthy(a) && truthy(b) ? 1 : 0;
    case '||':
      return truthy(a) || truthy(b) ? 1 : 0;
  }
  if (!numeric) throw tclError(`can't use non-numeric string as operand of "${op}"`);
  switch (op) {
    case '<':
      return x < y ? 1 : 0;
    case '<=':
      return x <= y ? 1 : 0;
    case '>':
      return x > y ? 1 : 0;
    case '>=':
      return x >= y ? 1 : 0;
    case '+':
      return x + y;
    case '-':
      return x - y;
    default:
      return x * y;
  }
}

function isNumber(v: string | number): boolean {
  return typeof v === 'number' || /^\s*-?(0x[0-9a-fA-F]+|\d+(\.\d+)?)\s*$/.test(v);
}

function truthy(v: string | number): boolean {
  if (isNumber(v)) return Number(v) !== 0;
  if (/^(true|yes|on)$/i.test(String(v))) return true;
  if (/^(false|no|off)$/i.test(String(v))) return false;
  throw tclError(`expected boolean value but got "${v}"`);
}

function arity(a: string[], min: number, max: number, usage: string): void {
  if (a.length < min || a.length > max) throw tclError(`wrong # args: should be "${usage}"`);
}

function backslash(src: string, pos: number): { text: string; end: number } {
  const c = src[pos + 1];
  if (c === undefined) return { text: '\\', end: pos + 1 };
  const simple: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\n': ' ' };
  if (simple[c] !== undefined) return { text: simple[c]!, end: pos + 2 };
  if (c === 'x') {
    const m = /^[0-9a-fA-F]{1,2}/.exec(src.slice(pos + 2));
    if (m) return { text: String.fromCharCode(parseInt(m[0], 16)), end: pos + 2 + m[0].length };
  }
  return { text: c, end: pos + 2 };
}

/** A Tcl list's elements: whitespace-separated words, `{…}` and `"…"` grouping. */
export function parseList(text: string): string[] {
  const out: string[] = [];
  let pos = 0;
  while (pos < text.length) {
    while (pos < text.length && /\s/.test(text[pos]!)) pos++;
    if (pos >= text.length) break;
    if (text[pos] === '{') {
      let depth = 0;
      let i = pos;
      for (; i < text.length; i++) {
        if (text[i] === '\\') i++;
        else if (text[i] === '{') depth++;
        else if (text[i] === '}' && --depth === 0) break;
      }
      if (i >= text.length) throw tclError('unmatched open brace in list');
      out.push(text.slice(pos + 1, i));
      pos = i + 1;
    } else if (text[pos] === '"') {
      const close = text.indexOf('"', pos + 1);
      if (close < 0) throw tclError('unmatched open quote in list');
      out.push(text.slice(pos + 1, close));
      pos = close + 1;
    } else {
      let i = pos;
      while (i < text.length && !/\s/.test(text[i]!)) i++;
      out.push(text.slice(pos, i));
      pos = i;
    }
  }
  return out;
}

/** Elements joined into a list; an element that needs it is braced (the double never makes others). */
export function formatList(elements: readonly string[]): string {
  return elements.map((e) => (e === '' ? '{}' : /[\s{}"\\[\]$;]/.test(e) ? `{${e}}` : e)).join(' ');
}
