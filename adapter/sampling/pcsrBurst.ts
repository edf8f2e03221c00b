import { CycleLensError, ErrorCode } from '../errors';

/**
 * The Tcl side of DWT_PCSR sampling through OpenOCD, as pure functions (unit-tested without a
 * socket). Facts used, ARMv7-M ARM (DDI 0403) C1.8 and ARMv6-M ARM C1.7.2:
 *   DWT_PCSR 0xE000101C is word-readable while the core runs, without disturbing it. A read returns
 *   the address of a recently executed instruction, or 0xFFFFFFFF while the core is in Debug state
 *   (halted), where non-invasive debug is not permitted, or when no recent address is available
 *   (a core asleep in WFI/WFE).
 *   DEMCR 0xE000EDFC bit 24 TRCENA powers the DWT; without it PCSR is not usable (C1.6.5).
 *   DWT_CTRL 0xE0001000 is a plain status/control read with no side effect: it spaces reads.
 */
export const DWT_PCSR = 0xe000101c;
export const DWT_CTRL = 0xe0001000;
export const DEMCR = 0xe000edfc;
export const TRCENA = 1 << 24;
/** What PCSR reads while the core is halted or asleep: never an instruction address. */
export const PCSR_NO_SAMPLE = 0xffffffff;

export interface BurstPlan {
  /** One Tcl script: one round trip to OpenOCD for the whole burst. */
  script: string;
  /** PCSR values the reply carries, in read order. */
  reads: number;
  /** Spacer reads of DWT_CTRL put before each PCSR read (for tests and figures). */
  spacers: number[];
}

/**
 * The script for one burst of `reads` PCSR reads. OpenOCD's `read_memory addr 32 N` reads N
 * consecutive words (the address increments), so N reads of the one register are N commands: each
 * `[read_memory 0xe000101c 32 1]` is one list element of the reply.
 *
 * Reads inside a burst run back to back at the probe's pace, so no host timer can place them.
 * To keep them from landing at a fixed period that a loop in the firmware could divide (TIP, MICRO
 * 2021, on aliasing), each PCSR read is preceded by a random number (0..maxSpacers) of DWT_CTRL
 * reads inside the same bracket, whose result Tcl drops (a bracket's value is its last command's).
 */
export function planBurst(reads: number, maxSpacers: number, random: () => number = Math.random): BurstPlan {
  if (!Number.isInteger(reads) || reads < 1)
    throw new CycleLensError(
      ErrorCode.InvalidRequest,
      `A PCSR burst needs a positive whole number of reads (got ${reads}).`,
    );
  if (!Number.isInteger(maxSpacers) || maxSpacers < 0)
    throw new CycleLensError(
      ErrorCode.InvalidRequest,
      `PCSR spacer reads must be a whole number of 0 or more (got ${maxSpacers}).`,
    );
  const pcsr = `read_memory ${hex(DWT_PCSR)} 32 1`;
  const spacer = `read_memory ${hex(DWT_CTRL)} 32 1; `;
  const spacers: number[] = [];
  const words: string[] = [];
  for (let i = 0; i < reads; i++) {
    const n = Math.min(maxSpacers, Math.floor(random() * (maxSpacers + 1)));
    spacers.push(n);
    words.push(`[${spacer.repeat(n)}${pcsr}]`);
  }
  return { script: `list ${words.join(' ')}`, reads, spacers };
}

/**
 * The values of a burst's reply: a Tcl list of `expected` words, each a 32-bit number as OpenOCD
 * 0.12 prints it (`0x8000134`). Anything else is an error that quotes the reply, since a list of
 * another length would shift every sample onto the wrong read.
 */
export function parseBurstReply(reply: string, expected: number): number[] {
  const words = reply.split(/\s+/).filter((w) => w !== '');
  const values = words.map(parseWord);
  if (words.length !== expected || values.some((v) => v === undefined)) {
    const shown = reply.length > 120 ? `${reply.slice(0, 119)}…` : reply;
    throw new CycleLensError(
      ErrorCode.TclError,
      `OpenOCD answered a burst of ${expected} DWT_PCSR reads with '${shown}', which is not a ` +
        `list of ${expected} 32-bit numbers. Is the target a Cortex-M with a DWT, and is this ` +
        `OpenOCD 0.12 or later?`,
    );
  }
  return values as number[];
}

function parseWord(word: string): number | undefined {
  if (!/^(0x[0-9a-fA-F]+|[0-9]+)$/.test(word)) return undefined;
  const v = Number(word);
  return Number.isSafeInteger(v) && v <= 0xffffffff ? v : undefined;
}

/** A burst's values split into code addresses and reads that found the core asleep or halted. */
export interface BurstTally {
  addresses: number[];
  asleepOrHalted: number;
}

export function tallyBurst(values: readonly number[]): BurstTally {
  const addresses: number[] = [];
  let asleepOrHalted = 0;
  for (const v of values) {
    if (v === PCSR_NO_SAMPLE) asleepOrHalted++;
    else addresses.push(v);
  }
  return { addresses, asleepOrHalted };
}

export function hex(n: number): string {
  return `0x${n.toString(16)}`;
}
