/**
 * The one error type every profile loader and importer throws: a file that is not what it claims
 * to be is the user's problem to fix, and the message says where and how.
 */
export type ProfileErrorKind = 'io' | 'notJson' | 'notProfile' | 'version' | 'malformed' | 'unsupported';

export class ProfileError extends Error {
  override name = 'ProfileError';
  constructor(
    readonly kind: ProfileErrorKind,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Plausibility limits for imported numbers: a finite number can still be a damaged file. No window
 * of a 32-bit target counts 2^60 of anything in a lifetime, and JSON numbers lose integer precision
 * beyond 2^53, so counts above that are refused rather than silently rounded.
 */
export const MAX_COUNT = Number.MAX_SAFE_INTEGER;
/** Addresses: 64-bit at most (a host profile); embedded ones fit in 32 bits. */
export const MAX_ADDRESS = 2 ** 64;
/** Source lines: no C file has ten million of them. */
export const MAX_LINE = 10_000_000;

/** Walks untrusted JSON with a JSON path for messages; reads data, never evaluates anything. */
export class JsonReader {
  constructor(
    private readonly file: string,
    readonly path: string,
    readonly value: unknown,
  ) {}

  fail(what: string): never {
    throw new ProfileError('malformed', `${this.file}: ${this.path || '$'} ${what}. The file is damaged or was not written by CycleLens; export the profile again.`);
  }

  private describe(): string {
    const v = this.value;
    if (v === null) return 'null';
    if (v === undefined) return 'nothing';
    if (Array.isArray(v)) return 'an array';
    if (typeof v === 'string') return `"${v.length > 40 ? `${v.slice(0, 40)}…` : v}"`;
    return typeof v === 'object' ? 'an object' : String(v);
  }

  object(): Record<string, unknown> {
    if (typeof this.value !== 'object' || this.value === null || Array.isArray(this.value)) this.fail(`must be an object (found ${this.describe()})`);
    return this.value as Record<string, unknown>;
  }

  has(name: string): boolean {
    const o = this.object();
    return Object.prototype.hasOwnProperty.call(o, name) && o[name] !== undefined && o[name] !== null;
  }

  field(name: string): JsonReader {
    const o = this.object();
    return new JsonReader(this.file, `${this.path || '$'}.${name}`, Object.prototype.hasOwnProperty.call(o, name) ? o[name] : undefined);
  }

  optional<T>(name: string, read: (r: JsonReader) => T): T | undefined {
    return this.has(name) ? read(this.field(name)) : undefined;
  }

  string(maxLength = 4096): string {
    if (typeof this.value !== 'string') this.fail(`must be a string (found ${this.describe()})`);
    if (this.value.length > maxLength) this.fail(`is longer than ${maxLength} characters`);
    return this.value;
  }

  /** A finite number within ±limit. */
  number(limit = MAX_COUNT): number {
    if (typeof this.value !== 'number' || !Number.isFinite(this.value)) this.fail(`must be a finite number (found ${this.describe()})`);
    if (Math.abs(this.value) > limit) this.fail(`is ${this.value}, beyond the plausible range ±${limit}`);
    return this.value;
  }

  /** A non-negative finite number (a count, a value in the profile's unit). */
  amount(limit = MAX_COUNT): number {
    const n = this.number(limit);
    if (n < 0) this.fail(`must not be negative (found ${n})`);
    return n;
  }

  integer(min: number, max: number): number {
    const n = this.number(Math.max(Math.abs(min), Math.abs(max), MAX_COUNT));
    if (!Number.isInteger(n) || n < min || n > max) this.fail(`must be a whole number from ${min} to ${max} (found ${n})`);
    return n;
  }

  boolean(): boolean {
    if (typeof this.value !== 'boolean') this.fail(`must be true or false (found ${this.describe()})`);
    return this.value;
  }

  oneOf<T extends string>(values: readonly T[]): T {
    const s = this.string();
    if (!(values as readonly string[]).includes(s)) this.fail(`must be one of ${values.map((v) => `"${v}"`).join(', ')} (found "${s}")`);
    return s as T;
  }

  array<T>(read: (r: JsonReader, index: number) => T, maxLength = 10_000_000): T[] {
    if (!Array.isArray(this.value)) this.fail(`must be an array (found ${this.describe()})`);
    if (this.value.length > maxLength) this.fail(`holds ${this.value.length} entries, more than ${maxLength}`);
    return this.value.map((v, i) => read(new JsonReader(this.file, `${this.path || '$'}[${i}]`, v), i));
  }
}
