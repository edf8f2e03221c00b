/**
 * Walks untrusted JSON and names the path of every value it refuses. It reads data and never
 * evaluates anything. Each kind of file (result sets, profiles) says how its paths are written and
 * which error a refusal throws; the checks themselves are written once, here.
 */
export abstract class JsonWalker {
  constructor(
    readonly file: string,
    readonly path: string,
    readonly value: unknown,
  ) {}

  /** Throws the file kind's error, naming the file, this value's path, `what` is wrong and the fix. */
  abstract fail(what: string): never;

  /** A walker of the same kind over `value`, found at `path`. */
  protected abstract at(path: string, value: unknown): this;

  /** The path of member `name` of this object. */
  protected abstract memberPath(name: string): string;

  /** The path of item `index` of this array. */
  protected abstract itemPath(index: number): string;

  /** What was found instead, for messages: short, and never more than 40 characters of a string. */
  protected describe(): string {
    const v = this.value;
    if (v === null) return 'null';
    if (v === undefined) return 'nothing';
    if (Array.isArray(v)) return 'an array';
    if (typeof v === 'string') return `"${v.length > 40 ? `${v.slice(0, 40)}…` : v}"`;
    return typeof v === 'object' ? 'an object' : String(v);
  }

  object(): Record<string, unknown> {
    if (typeof this.value !== 'object' || this.value === null || Array.isArray(this.value))
      this.fail(`must be an object (found ${this.describe()})`);
    return this.value as Record<string, unknown>;
  }

  /** Whether member `name` is present with a value (null counts as absent). */
  has(name: string): boolean {
    const o = this.object();
    return Object.prototype.hasOwnProperty.call(o, name) && o[name] !== undefined && o[name] !== null;
  }

  /** Member `name`; an own property only, so `__proto__` and friends read as absent. */
  field(name: string): this {
    const o = this.object();
    return this.at(this.memberPath(name), Object.prototype.hasOwnProperty.call(o, name) ? o[name] : undefined);
  }

  optional<T>(name: string, read: (r: this) => T): T | undefined {
    return this.has(name) ? read(this.field(name)) : undefined;
  }

  string(maxLength = Number.POSITIVE_INFINITY): string {
    if (typeof this.value !== 'string') this.fail(`must be a string (found ${this.describe()})`);
    if (this.value.length > maxLength) this.fail(`is longer than ${maxLength} characters`);
    return this.value;
  }

  /** A finite number within ±limit. */
  number(limit = Number.POSITIVE_INFINITY): number {
    if (typeof this.value !== 'number' || !Number.isFinite(this.value))
      this.fail(`must be a finite number (found ${this.describe()})`);
    if (Math.abs(this.value) > limit) this.fail(`is ${this.value}, beyond the plausible range ±${limit}`);
    return this.value;
  }

  boolean(): boolean {
    if (typeof this.value !== 'boolean') this.fail(`must be true or false (found ${this.describe()})`);
    return this.value;
  }

  oneOf<T extends string>(values: readonly T[]): T {
    const s = this.string();
    if (!(values as readonly string[]).includes(s))
      this.fail(`must be one of ${values.map((v) => `"${v}"`).join(', ')} (found "${s}")`);
    return s as T;
  }

  array<T>(read: (r: this, index: number) => T, maxLength = Number.POSITIVE_INFINITY): T[] {
    if (!Array.isArray(this.value)) this.fail(`must be an array (found ${this.describe()})`);
    if (this.value.length > maxLength) this.fail(`holds ${this.value.length} entries, more than ${maxLength}`);
    return this.value.map((v, i) => read(this.at(this.itemPath(i), v), i));
  }

  /** A record of numbers keyed by name; keys that could reach a prototype are refused. */
  numberRecord(limit = Number.POSITIVE_INFINITY): Record<string, number> {
    const o = this.object();
    const out: Record<string, number> = {};
    for (const key of Object.keys(o)) {
      if (key === '__proto__' || key === 'constructor' || key === 'prototype')
        this.fail(`has a forbidden key "${key}"`);
      out[key] = this.at(this.memberPath(key), o[key]).number(limit);
    }
    return out;
  }
}
