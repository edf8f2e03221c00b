import { CycleLensError, ErrorCode } from '../errors';
import { TruncatedData } from './byteCursor';

/**
 * All ELF/DWARF reading errors go through here so each message names the file, says what is
 * wrong and what to do about it.
 */
export function notAnElf(file: string, what: string, hint: string): CycleLensError {
  return new CycleLensError(ErrorCode.NotAnElf, `${file} ${what}: ${hint}`);
}

export const RELINK_HINT =
  'point `executable` at the linked .elf that the build produced (not the .bin/.hex), and ' +
  'rebuild it if it was cut short';

/** Wraps a low-level read failure inside `structure` into the user-facing error. */
export function corrupt(file: string, structure: string, err: unknown): CycleLensError {
  if (err instanceof CycleLensError) return err;
  const detail =
    err instanceof TruncatedData
      ? `is truncated (${err.message})`
      : `is corrupt (${err instanceof Error ? err.message : String(err)})`;
  return new CycleLensError(ErrorCode.NotAnElf, `${file}: ${structure} ${detail}: ${RELINK_HINT}`);
}

export function debugInfoCorrupt(file: string, section: string, err: unknown): CycleLensError {
  if (err instanceof CycleLensError) return err;
  const detail =
    err instanceof TruncatedData
      ? `is truncated (${err.message})`
      : `is corrupt (${err instanceof Error ? err.message : String(err)})`;
  return new CycleLensError(
    ErrorCode.NotAnElf,
    `${file}: the debug information in ${section} ${detail}: rebuild the program with -g (a ` +
      `current GCC or Clang), or check that no tool stripped or rewrote it`,
  );
}

export function unsupportedArchitecture(file: string, what: string): CycleLensError {
  return new CycleLensError(
    ErrorCode.UnsupportedArchitecture,
    `${file} ${what}: CycleLens profiles 32-bit little-endian Arm Cortex-M, RISC-V and ARC ` +
      `firmware; point \`executable\` at a program built for one of those`,
  );
}
