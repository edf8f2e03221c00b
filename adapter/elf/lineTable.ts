import { posix } from 'node:path';
import { LineProgram, LineRow } from './dwarfLine';

export interface SourceLocation {
  readonly file: string;
  readonly line: number;
  readonly column: number;
}

/** The source lines a range of code (usually one function) was compiled from. */
export interface LineRange {
  /** The file of the range's first row: the function's own source file. */
  readonly file: string;
  readonly firstLine: number;
  readonly lastLine: number;
  /** Every distinct line of `file` with code in the range, ascending. */
  readonly lines: readonly number[];
}

/** One DWARF sequence: rows of ascending address and the address just past its code. */
interface Sequence {
  readonly start: number;
  readonly end: number;
  /** Rows without the end_sequence row, by address. */
  readonly rows: readonly LineRow[];
}

/**
 * Queries over the line-number matrix of a whole program: address to source line, source line
 * to addresses, and the lines of an address range.
 */
export class LineTable {
  /** Every row of every program, in the order the programs produced them. */
  readonly rows: readonly LineRow[];
  private readonly sequences: Sequence[];
  private readonly prefixMaxEnd: Float64Array;
  private byFile: Map<string, Map<number, number[]>> | undefined;

  /**
   * `isCode` filters out sequences of discarded code: with --gc-sections the linker resolves
   * the addresses of removed functions to 0, and their rows would otherwise shadow whatever
   * really lives at low addresses (the Cortex-M vector table and reset code).
   */
  constructor(
    readonly programs: readonly LineProgram[],
    isCode: (address: number) => boolean = () => true,
  ) {
    const all: LineRow[] = [];
    const sequences: Sequence[] = [];
    for (const program of programs) {
      let current: LineRow[] = [];
      for (const row of program.rows) {
        all.push(row);
        if (!row.endSequence) {
          current.push(row);
          continue;
        }
        if (current.length > 0 && isCode(current[0]!.address)) {
          // DWARF requires non-decreasing addresses within a sequence; a stable sort repairs
          // producers that break the rule without reordering rows at one address.
          if (!isSorted(current)) current.sort((a, b) => a.address - b.address);
          sequences.push({ start: current[0]!.address, end: row.address, rows: current });
        }
        current = [];
      }
    }
    sequences.sort((a, b) => a.start - b.start || a.end - b.end);
    this.rows = all;
    this.sequences = sequences;
    this.prefixMaxEnd = new Float64Array(sequences.length);
    let maxEnd = 0;
    sequences.forEach((s, i) => {
      maxEnd = Math.max(maxEnd, s.end);
      this.prefixMaxEnd[i] = maxEnd;
    });
  }

  /** Every file that has rows, as the line programs name them (absolute paths). */
  get files(): string[] {
    return [...this.fileIndex().keys()].sort();
  }

  /**
   * The source location of the instruction at `address`: the last row at or below it in the
   * sequence that covers it (when several rows share an address, the last one wins, as in
   * GNU addr2line).
   */
  lookup(address: number): SourceLocation | undefined {
    const row = this.rowFor(address);
    return row ? { file: row.file, line: row.line, column: row.column } : undefined;
  }

  /** The row that describes the instruction at `address`, or undefined outside any sequence. */
  rowFor(address: number): LineRow | undefined {
    const seqs = this.sequences;
    let lo = 0;
    let hi = seqs.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (seqs[mid]!.start <= address) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    for (let i = found; i >= 0 && this.prefixMaxEnd[i]! > address; i--) {
      const seq = seqs[i]!;
      if (address < seq.end) return lastRowAtOrBelow(seq.rows, address);
    }
    return undefined;
  }

  /**
   * The start addresses of every is_stmt row for `line` of `file`, ascending: where a debugger
   * would stop for that line (a line split by the optimiser has several). `file` may be the
   * absolute path or a trailing part of it (`src/main.c`, `main.c`); the longest match wins.
   */
  addressesForLine(file: string, line: number): number[] {
    const found = new Set<number>();
    for (const f of this.matchFiles(file)) {
      for (const a of this.fileIndex().get(f)?.get(line) ?? []) found.add(a);
    }
    return [...found].sort((a, b) => a - b);
  }

  /** Files of the table that `query` names (exact path, else the longest trailing-path match). */
  matchFiles(query: string): string[] {
    const index = this.fileIndex();
    const normalized = normalize(query);
    if (index.has(normalized)) return [normalized];
    const want = normalized.split('/').filter((p) => p !== '' && p !== '.');
    let best = 0;
    let matches: string[] = [];
    for (const f of index.keys()) {
      const have = normalize(f).split('/');
      let n = 0;
      while (n < want.length && n < have.length && want[want.length - 1 - n] === have[have.length - 1 - n]) n++;
      if (n === 0 || n < best) continue;
      // A relative query must match completely; an absolute one (another checkout) at least by name.
      if (!normalized.startsWith('/') && n < want.length) continue;
      if (n > best) {
        best = n;
        matches = [];
      }
      matches.push(f);
    }
    return matches;
  }

  /** The lines of the code in [start, end): the lines of one function when given its symbol range. */
  lineRange(start: number, end: number): LineRange | undefined {
    const rows: LineRow[] = [];
    for (const seq of this.sequences) {
      if (seq.end <= start || seq.start >= end) continue;
      for (const r of seq.rows) if (r.address >= start && r.address < end) rows.push(r);
    }
    if (rows.length === 0) return undefined;
    rows.sort((a, b) => a.address - b.address);
    const file = (this.rowFor(start) ?? rows[0]!).file;
    const lines = [...new Set(rows.filter((r) => r.file === file && r.line > 0).map((r) => r.line))].sort(
      (a, b) => a - b,
    );
    if (lines.length === 0) return undefined;
    return { file, firstLine: lines[0]!, lastLine: lines[lines.length - 1]!, lines };
  }

  private fileIndex(): Map<string, Map<number, number[]>> {
    if (this.byFile) return this.byFile;
    const byFile = new Map<string, Map<number, number[]>>();
    for (const seq of this.sequences) {
      for (const r of seq.rows) {
        if (!r.isStmt) continue;
        let lines = byFile.get(r.file);
        if (!lines) byFile.set(r.file, (lines = new Map()));
        const list = lines.get(r.line);
        if (list) list.push(r.address);
        else lines.set(r.line, [r.address]);
      }
    }
    this.byFile = byFile;
    return byFile;
  }
}

function isSorted(rows: readonly LineRow[]): boolean {
  for (let i = 1; i < rows.length; i++) if (rows[i]!.address < rows[i - 1]!.address) return false;
  return true;
}

function lastRowAtOrBelow(rows: readonly LineRow[], address: number): LineRow | undefined {
  let lo = 0;
  let hi = rows.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (rows[mid]!.address <= address) {
      found = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return found < 0 ? undefined : rows[found];
}

function normalize(p: string): string {
  return posix.normalize(p.replace(/\\/g, '/'));
}
