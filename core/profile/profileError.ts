import { JsonWalker } from '../json/jsonWalker';

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
/**
 * Names (functions, files, the program): C++ and Rust symbols with their template arguments run
 * past 4,096 characters; every importer, exporter and loader accepts names up to this length.
 */
export const MAX_NAME_LENGTH = 64 * 1024;
/** Source lines: no C file has ten million of them. */
export const MAX_LINE = 10_000_000;

/**
 * Walks a profile's untrusted JSON with JSON paths (`$.functions[3].name`) for messages. Profile
 * fields are bounded by default: strings to 4,096 characters, numbers to MAX_COUNT, arrays to ten
 * million entries.
 */
export class JsonReader extends JsonWalker {
  fail(what: string): never {
    throw new ProfileError(
      'malformed',
      `${this.file}: ${this.path || '$'} ${what}. The file is damaged or was not written by ` +
        `CycleLens; export the profile again.`,
    );
  }

  protected at(path: string, value: unknown): this {
    return new JsonReader(this.file, path, value) as this;
  }

  protected memberPath(name: string): string {
    return `${this.path || '$'}.${name}`;
  }

  protected itemPath(index: number): string {
    return `${this.path || '$'}[${index}]`;
  }

  override string(maxLength = 4096): string {
    return super.string(maxLength);
  }

  override number(limit = MAX_COUNT): number {
    return super.number(limit);
  }

  /** A non-negative finite number (a count, a value in the profile's unit). */
  amount(limit = MAX_COUNT): number {
    const n = this.number(limit);
    if (n < 0) this.fail(`must not be negative (found ${n})`);
    return n;
  }

  integer(min: number, max: number): number {
    const n = this.number(Math.max(Math.abs(min), Math.abs(max), MAX_COUNT));
    if (!Number.isInteger(n) || n < min || n > max)
      this.fail(`must be a whole number from ${min} to ${max} (found ${n})`);
    return n;
  }

  override array<T>(read: (r: this, index: number) => T, maxLength = 10_000_000): T[] {
    return super.array(read, maxLength);
  }
}
