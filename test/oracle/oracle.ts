import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ElfImage } from '../../adapter/elf';
import { ToolTarget, targetOfMachine } from './binutils';
import { CodeModel } from './codeModel';
import { QemuRunResult, runQemuTrace } from './qemu';
import {
  AnalysisResult,
  AddressCount,
  Anomaly,
  CallEdge,
  ContextStack,
  FunctionProfile,
  RegionSpec,
  TraceAnalyzer,
} from './traceAnalyzer';
import { TraceStats, parseTraceFile } from './traceLog';

export const SUMMARY_SCHEMA = 'cyclelens-oracle/1';

/** A region endpoint: `0xADDR`, `symbol`, `symbol+OFFSET` or `file:line` (its lowest is_stmt address). */
export interface RegionRequest {
  name: string;
  start: string | number;
  end: string | number;
}

export interface OracleOptions {
  elf: string;
  /** Inferred from the ELF's e_machine when omitted. */
  target?: ToolTarget;
  /** Parse this existing log instead of running QEMU. */
  log?: string;
  /** Where to write the log when QEMU runs (default: a temporary file, deleted afterwards). */
  keepLog?: string;
  maxInstructions?: number;
  timeoutMs?: number;
  regions?: RegionRequest[];
  /** Extra exception handler symbols (beyond the vector table / MRET functions found automatically). */
  handlers?: string[];
}

export interface LineCount {
  file: string;
  line: number;
  count: number;
}

export interface RegionSummary {
  name: string;
  start: number;
  end: number;
  passes: number[];
  passesExcludingInterrupts: number[];
  count: number;
  total: number;
  min: number | null;
  max: number | null;
  mean: number | null;
  restarts: number;
  unmatchedEnds: number;
  openAtEnd: boolean;
}

/** The JSON the oracle writes; documented field by field in test/oracle/README.md. */
export interface OracleSummary {
  schema: typeof SUMMARY_SCHEMA;
  target: ToolTarget;
  elf: string;
  log: string | null;
  qemu: QemuRunResult | null;
  trace: TraceStats & { parseSeconds: number; linesPerSecond: number };
  totals: {
    instructions: number;
    root: string;
    rootInclusive: number;
    exclusiveSum: number;
    /** Instructions at PCs outside every function of the program (QEMU's reset ROM on rv32). */
    outsideProgram: number;
    /** Instructions in the program whose address has no line-table row. */
    withoutLine: number;
    maxStackDepth: number;
    finalStack: string[];
    /** exclusiveSum === instructions and rootInclusive === instructions. */
    consistent: boolean;
  };
  anomalies: Anomaly[];
  functions: FunctionProfile[];
  edges: CallEdge[];
  /** The calling-context tree: every stack the run had, with the instructions run on it. */
  contexts: ContextStack[];
  lines: LineCount[];
  addresses: AddressCount[];
  regions: RegionSummary[];
}

export async function runOracle(options: OracleOptions): Promise<OracleSummary> {
  const elf = resolve(options.elf);
  const img = ElfImage.loadSync(elf);
  const target = options.target ?? targetOfMachine(img.header.machine);
  if (!target) throw new Error(`${elf}: the oracle runs Arm (cortex-m4) and RISC-V (rv32) programs only`);
  const model = CodeModel.fromElf(elf, target, { handlers: options.handlers });
  const regions = (options.regions ?? []).map((r) => resolveRegion(img, r));

  let qemu: QemuRunResult | null = null;
  let log = options.log ? resolve(options.log) : undefined;
  let tempDir: string | undefined;
  try {
    if (!log) {
      if (options.keepLog) {
        log = resolve(options.keepLog);
      } else {
        tempDir = mkdtempSync(join(tmpdir(), 'cyclelens-oracle-'));
        log = join(tempDir, 'trace.log');
      }
      qemu = await runQemuTrace({
        target,
        elf,
        logPath: log,
        timeoutMs: options.timeoutMs,
        maxInstructions: options.maxInstructions,
      });
      if (qemu.timedOut) {
        throw new Error(
          `QEMU did not finish within ${(options.timeoutMs ?? 120_000) / 1000} s: the program may not ` +
            `exit; bound the run with --max-instructions`,
        );
      }
      // A QEMU killed by a signal left a trace that stops mid-program (its log buffer is lost too):
      // every share read from it would be wrong, so it is no reference.
      if (qemu.signal && !qemu.stoppedAtLimit) {
        throw new Error(
          `QEMU was killed by ${qemu.signal} before the program ended, so its trace is incomplete; ` +
            `stderr: ${qemu.stderr.trim().slice(-400) || '(empty)'}`,
        );
      }
    }
    const analyzer = new TraceAnalyzer(model, regions);
    const started = process.hrtime.bigint();
    const stats = await parseTraceFile(log, analyzer.consume, options.maxInstructions);
    const parseSeconds = Number(process.hrtime.bigint() - started) / 1e9;
    return summarize(
      target,
      elf,
      options.log ? log : options.keepLog ? log : null,
      qemu,
      { ...stats, parseSeconds, linesPerSecond: Math.round(stats.lines / Math.max(parseSeconds, 1e-9)) },
      analyzer.result(),
      img,
    );
  } finally {
    if (tempDir) rmSync(tempDir, { recursive: true, force: true });
  }
}

export function summarize(
  target: ToolTarget,
  elf: string,
  log: string | null,
  qemu: QemuRunResult | null,
  trace: OracleSummary['trace'],
  result: AnalysisResult,
  img: ElfImage | undefined,
): OracleSummary {
  const outside = result.functions.find((f) => f.name === '[outside program]');
  const byLine = new Map<string, LineCount>();
  let withoutLine = 0;
  const table = img?.lineTable;
  for (const a of result.addresses) {
    const loc = table?.lookup(a.address);
    if (!loc || loc.line === 0) {
      if (a.function !== '[outside program]') withoutLine += a.count;
      continue;
    }
    const key = `${loc.file}:${loc.line}`;
    const entry = byLine.get(key);
    if (entry) entry.count += a.count;
    else byLine.set(key, { file: loc.file, line: loc.line, count: a.count });
  }
  const lines = [...byLine.values()].sort(
    (a, b) => b.count - a.count || a.file.localeCompare(b.file) || a.line - b.line,
  );
  const exclusiveSum = result.functions.reduce((s, f) => s + f.exclusive, 0);
  const rootInclusive = result.functions.find((f) => f.name === result.root)?.inclusive ?? 0;
  return {
    schema: SUMMARY_SCHEMA,
    target,
    elf,
    log,
    qemu,
    trace,
    totals: {
      instructions: result.total,
      root: result.root,
      rootInclusive,
      exclusiveSum,
      outsideProgram: outside?.exclusive ?? 0,
      withoutLine,
      maxStackDepth: result.maxStackDepth,
      finalStack: result.finalStack,
      consistent: exclusiveSum === result.total && rootInclusive === result.total,
    },
    anomalies: result.anomalies,
    functions: result.functions,
    edges: result.edges,
    contexts: result.contexts,
    lines,
    addresses: result.addresses,
    regions: result.regions.map((r) => {
      const total = r.passes.reduce((s, p) => s + p, 0);
      return {
        ...r,
        count: r.passes.length,
        total,
        min: r.passes.length ? Math.min(...r.passes) : null,
        max: r.passes.length ? Math.max(...r.passes) : null,
        mean: r.passes.length ? total / r.passes.length : null,
      };
    }),
  };
}

function resolveRegion(img: ElfImage, r: RegionRequest): RegionSpec {
  return { name: r.name, start: resolveLocation(img, r.start, r.name), end: resolveLocation(img, r.end, r.name) };
}

/** `0xADDR` | `symbol` | `symbol+OFFSET` | `file:line` → an instruction address. */
export function resolveLocation(img: ElfImage, spec: string | number, region: string): number {
  if (typeof spec === 'number') return spec;
  const s = spec.trim();
  if (/^0x[0-9a-f]+$/i.test(s)) return parseInt(s, 16);
  const fileLine = /^(.+):(\d+)$/.exec(s);
  if (fileLine) {
    const addresses = img.lineTable.addressesForLine(fileLine[1]!, Number(fileLine[2]));
    if (addresses.length === 0)
      throw new Error(
        `region ${region}: no code for ${s} (is the line a statement, and was the program built with -g?)`,
      );
    return addresses[0]!;
  }
  const sym = /^([A-Za-z_.$][\w.$]*)(?:\+(0x[0-9a-f]+|\d+))?$/i.exec(s);
  if (sym) {
    const f = img.functionNamed(sym[1]!) ?? img.symbols.named(sym[1]!)[0];
    if (!f) throw new Error(`region ${region}: no symbol ${sym[1]} in ${img.path}`);
    return f.address + (sym[2] ? Number(sym[2]) : 0);
  }
  throw new Error(`region ${region}: cannot read '${spec}': use 0xADDRESS, SYMBOL, SYMBOL+OFFSET or FILE:LINE`);
}

/** A short table of the top functions, for the terminal. */
export function formatTopTable(summary: OracleSummary, topN = 15): string {
  const t = summary.totals;
  const pct = (n: number): string => `${((100 * n) / Math.max(1, t.instructions)).toFixed(2)}%`;
  const rows = summary.functions
    .slice(0, topN)
    .map((f) => [
      f.name,
      String(f.exclusive),
      pct(f.exclusive),
      String(f.inclusive),
      pct(f.inclusive),
      String(f.calls),
      f.interrupts ? String(f.interrupts) : '',
    ]);
  const header = ['function', 'exclusive', '%', 'inclusive', '%', 'calls', 'irqs'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const fmt = (r: string[]): string =>
    r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  const out = [
    `${summary.target} ${summary.elf}`,
    `${t.instructions} instructions (${summary.trace.lines} log lines, ${summary.trace.withdrawn} ` +
      `withdrawn; parsed at ${(summary.trace.linesPerSecond / 1e6).toFixed(1)} M lines/s); root ${t.root}; ` +
      `${t.consistent ? 'consistent' : 'INCONSISTENT'}`,
    fmt(header),
    ...rows.map(fmt),
  ];
  for (const r of summary.regions) {
    out.push(
      `region ${r.name} 0x${r.start.toString(16)}..0x${r.end.toString(16)}: ${r.count} passes, ` +
        `min ${r.min ?? '-'}, max ${r.max ?? '-'}, mean ${r.mean === null ? '-' : r.mean.toFixed(1)}`,
    );
  }
  for (const a of summary.anomalies) out.push(`anomaly ${a.kind}: ${a.count}`);
  return out.join('\n');
}
