import { open } from 'node:fs/promises';

/**
 * Streaming parser of QEMU's `-d exec,nochain` log under `-singlestep` (QEMU 7.2, checked on
 * qemu-system-arm and qemu-system-riscv32). The lines that matter:
 *
 *   Trace 0: 0x7f1778004d00 [00800408/00000088/00000110/ff020201] sub_isr
 *       one translation block about to run: [cs_base/pc/flags/cflags], then the symbol. With
 *       -singlestep a block is one instruction. The PC never carries the Thumb bit.
 *   Stopped execution of TB chain before 0x7f1778003a40 [0000005e] fib
 *       the block just logged did not run (icount budget spent, interrupt pending): QEMU
 *       logs it again when it really runs, so the preceding Trace line is withdrawn.
 *   cpu_io_recompile: rewound execution of TB to 800000ce
 *       the block was rewound at an I/O access under icount and will be re-executed (and
 *       re-logged): also withdraws the preceding Trace line.
 *
 * Anything else (guest errors, semihosting, our own truncation) is counted and ignored; a Trace
 * line that does not parse is counted as malformed.
 *
 * Bytes are scanned directly: no line is ever turned into a string, so a log of tens of MB
 * parses at several million lines per second with a fixed amount of memory.
 */
export interface TraceStats {
  /** Lines seen (a final line without a newline included). */
  lines: number;
  /** Instructions delivered to the sink. */
  instructions: number;
  /** Trace lines withdrawn by a following Stopped / rewound line. */
  withdrawn: number;
  /** Withdrawal lines whose PC did not match the instruction before them. */
  unmatchedWithdrawals: number;
  /** Trace lines that did not parse (e.g. the last line of a log cut short by a kill). */
  malformed: number;
  /** Other lines. */
  otherLines: number;
  /** Set when maxInstructions stopped the parse early. */
  truncated: boolean;
}

export type PcSink = (pcs: Uint32Array, count: number) => void;

const NL = 0x0a;
const LBRACKET = 0x5b;
const SLASH = 0x2f;
const RBRACKET = 0x5d;
const T = 0x54; // 'T'race
const S = 0x53; // 'S'topped
const C = 0x63; // 'c'pu_io_recompile

const HEX = new Int8Array(256).fill(-1);
for (let i = 0; i < 10; i++) HEX[0x30 + i] = i;
for (let i = 0; i < 6; i++) {
  HEX[0x41 + i] = 10 + i;
  HEX[0x61 + i] = 10 + i;
}

const STOPPED = Buffer.from('Stopped execution of TB chain before ');
const REWOUND = Buffer.from('cpu_io_recompile: rewound execution of TB to ');
const TRACE = Buffer.from('Trace ');

export class TraceLogParser {
  readonly stats: TraceStats = {
    lines: 0,
    instructions: 0,
    withdrawn: 0,
    unmatchedWithdrawals: 0,
    malformed: 0,
    otherLines: 0,
    truncated: false,
  };
  private readonly batch: Uint32Array;
  private n = 0;
  /** The last PC parsed is held back until the next line shows it was not withdrawn. */
  private pending = -1;
  private carry: Buffer | undefined;
  private readonly limit: number;

  /**
   * @param sink receives confirmed PCs in batches (the array is reused after the call returns)
   * @param maxInstructions stop after this many instructions (Infinity: no bound)
   */
  constructor(
    private readonly sink: PcSink,
    maxInstructions = Infinity,
    batchSize = 1 << 16,
  ) {
    this.batch = new Uint32Array(batchSize);
    this.limit = maxInstructions;
  }

  get done(): boolean {
    return this.stats.truncated;
  }

  /** Feeds the next bytes of the log. Lines may be split across chunks. */
  push(chunk: Uint8Array): void {
    if (this.stats.truncated) return;
    let buf: Buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.carry) {
      buf = Buffer.concat([this.carry, buf]);
      this.carry = undefined;
    }
    let pos = 0;
    const len = buf.length;
    while (pos < len) {
      const nl = buf.indexOf(NL, pos);
      if (nl < 0) {
        this.carry = Buffer.from(buf.subarray(pos));
        return;
      }
      this.line(buf, pos, nl);
      pos = nl + 1;
      if (this.stats.truncated) return;
    }
  }

  /** Ends the input: a last line without newline is parsed, the held-back PC is delivered. */
  end(): TraceStats {
    if (this.carry && !this.stats.truncated) {
      const c = this.carry;
      this.carry = undefined;
      this.line(c, 0, c.length);
    }
    if (this.pending >= 0 && !this.stats.truncated) this.confirm();
    this.flush();
    return this.stats;
  }

  private line(buf: Buffer, start: number, end: number): void {
    this.stats.lines++;
    const first = buf[start];
    if (first === T && startsWith(buf, start, end, TRACE)) {
      const pc = parseTracePc(buf, start, end);
      if (pc < 0) {
        this.stats.malformed++;
        return;
      }
      if (this.pending >= 0) {
        this.confirm();
        if (this.stats.truncated) return;
      }
      this.pending = pc;
      return;
    }
    if (
      (first === S && startsWith(buf, start, end, STOPPED)) ||
      (first === C && startsWith(buf, start, end, REWOUND))
    ) {
      const pc =
        first === S ? parseBracketed(buf, start + STOPPED.length, end) : parseHex(buf, start + REWOUND.length, end);
      if (pc >= 0 && pc === this.pending) {
        this.pending = -1;
        this.stats.withdrawn++;
      } else {
        this.stats.unmatchedWithdrawals++;
      }
      return;
    }
    this.stats.otherLines++;
  }

  private confirm(): void {
    if (this.stats.instructions >= this.limit) {
      this.stats.truncated = true;
      return;
    }
    this.batch[this.n++] = this.pending;
    this.pending = -1;
    this.stats.instructions++;
    if (this.n === this.batch.length) this.flush();
  }

  private flush(): void {
    if (this.n > 0) this.sink(this.batch, this.n);
    this.n = 0;
  }
}

function startsWith(buf: Buffer, start: number, end: number, prefix: Buffer): boolean {
  if (end - start < prefix.length) return false;
  for (let i = 1; i < prefix.length; i++) if (buf[start + i] !== prefix[i]) return false;
  return true;
}

/** The PC of a Trace line: the hex field after the first '/' inside the brackets. */
function parseTracePc(buf: Buffer, start: number, end: number): number {
  const lb = buf.indexOf(LBRACKET, start);
  if (lb < 0 || lb >= end) return -1;
  let i = lb + 1;
  while (i < end && buf[i] !== SLASH) i++;
  if (i >= end) return -1;
  let v = 0;
  let digits = 0;
  for (i++; i < end; i++) {
    const d = HEX[buf[i]!]!;
    if (d < 0) break;
    v = v * 16 + d;
    digits++;
  }
  return digits > 0 && digits <= 16 && buf[i] === SLASH ? v : -1;
}

function parseBracketed(buf: Buffer, start: number, end: number): number {
  const lb = buf.indexOf(LBRACKET, start);
  if (lb < 0 || lb >= end) return -1;
  const v = parseHex(buf, lb + 1, end);
  return v;
}

function parseHex(buf: Buffer, start: number, end: number): number {
  let v = 0;
  let i = start;
  for (; i < end; i++) {
    const d = HEX[buf[i]!]!;
    if (d < 0) break;
    v = v * 16 + d;
  }
  if (i === start) return -1;
  return i === end || buf[i] === RBRACKET || buf[i] === 0x20 || buf[i] === 0x0d ? v : -1;
}

/** Parses a whole log file in chunks; never holds more than one chunk in memory. */
export async function parseTraceFile(path: string, sink: PcSink, maxInstructions = Infinity): Promise<TraceStats> {
  const parser = new TraceLogParser(sink, maxInstructions);
  const fh = await open(path, 'r');
  try {
    const chunk = Buffer.allocUnsafe(4 << 20);
    for (;;) {
      const { bytesRead } = await fh.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      parser.push(chunk.subarray(0, bytesRead));
      if (parser.done) break;
    }
  } finally {
    await fh.close();
  }
  return parser.end();
}
