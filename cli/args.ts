import type { CodeLocation } from '../common/dapCustom';
import { formatIds, exportFormat } from '../core/export/formats';
import { parseExportSpec, type ExportTarget } from '../core/export/writeExport';

/**
 * Command-line arguments of `cyclelens`, parsed into a typed command or a usage error that says
 * what is wrong. No I/O here.
 */

export const USAGE = `usage:
  cyclelens descent --config .vscode/launch.json --name "QEMU RISC-V 32" [--threshold 1%] [options]
  cyclelens profile --config .vscode/launch.json --name "QEMU RISC-V 32" [options]
  cyclelens call-graph --config .vscode/launch.json --name "QEMU RISC-V 32" --dynamic --out graph.json
  cyclelens lsp --stdio
  cyclelens export RESULTS.json --format pprof -o profile.pb.gz

  descent     measure hot functions only: breadth-first from the roots, pruning every function whose
              callers bound it below the threshold
  profile     the exact full profile: every function, in batches of --slots
  call-graph  save the program's call graph; with --dynamic, run the program once from --start with
              an entry breakpoint on every function and save the calls it made (slow: one halt per
              call; meant to be recorded once and given to descent with --call-graph)
  lsp         the profile language server for any LSP editor (Neovim, Helix, Emacs …), on stdin and
              stdout: CodeLens, hovers, line-cost inlay hints and hot-function diagnostics from the
              newest profile in the workspace's .cyclelens/
  export      convert saved result sets (or a .profile.json) to another tool's format

options:
  --config FILE        launch.json with the configuration (comments allowed)
  --name NAME          the configuration's "name"
  --threshold T        descent only: "1%" (share of the run) or a count (e.g. 5000); default 1%
  --slots K            functions measured per run (default 4)
  --start FUNCTION     where each run starts, and the function that spans it (default main)
  --root FUNCTION      a root of the descent (repeatable; default: --start and the functions nobody
                       calls that cannot reach it, such as interrupt handlers)
  --cyclic LOCATION    the program never ends: measure in windows at this safe stop (a function,
                       0xADDRESS or file.c:LINE), e.g. --cyclic idle_point
  --dwell N            cyclic: passes through the safe stop per window (default 10)
  --rounds N           cyclic profile: rounds over all batches (default 1)
  --out FILE           write the result sets (JSON, cyclelens-resultset/1)
  --resume FILE        descent only: continue from the result sets of an earlier --out (same program)
  --dot FILE           write the annotated call graph (Graphviz DOT)
  --export FMT:FILE    descent/profile: also write the profile as FMT (repeatable; checked writable
                       before the first run). FMT is one of: ${formatIds()}
  --format FMT, -o FILE  export: the format and the file to write
  --jobs N             descent/profile: runs at once, each in its own QEMU session (default: the
                       number of cores; never more than there are batches). QEMU targets only: with
                       OpenOCD or a remote gdbserver (one real board) the runs go one at a time
  --timeout S          seconds one run may take (default 120)
  --adapter FILE       the debug adapter (default: adapter.js next to the CLI)
  --no-lookahead       descent: leave spare slots empty rather than measure ahead
  --call-graph FILE    descent: a dynamic call graph saved by \`call-graph --dynamic\` (same build); its
                       call counts tell which functions look cold, and those are measured together,
                       one slot per group, and pruned together when the group stays below the threshold
  --no-groups          descent: measure one function per slot even with --call-graph
  --dynamic            call-graph: record the calls of one run (otherwise the static graph is saved)
  --max-calls N        call-graph --dynamic: stop recording after N calls (default 200000)
  -h, --help           this text
`;

export type Threshold = { kind: 'share'; value: number } | { kind: 'count'; value: number };

export interface CliCommand {
  command: 'descent' | 'profile' | 'call-graph';
  config: string;
  name: string;
  threshold: Threshold;
  slots: number;
  start: string;
  roots: string[];
  cyclic?: CodeLocation;
  dwell: number;
  rounds: number;
  out?: string;
  dot?: string;
  resume?: string;
  timeoutMs: number;
  adapter?: string;
  lookahead: boolean;
  /** descent: a saved dynamic call graph whose counts drive group measurements. */
  callGraph?: string;
  groups: boolean;
  /** call-graph: record a dynamic graph, up to this many calls. */
  dynamic?: { maxCalls: number };
  /** descent/profile: runs at once, one session each (--jobs); undefined: the number of cores. */
  jobs?: number;
  /** descent/profile: exports written from the finished profile (--export, repeatable). */
  exports?: ExportTarget[];
}

/** `cyclelens export INPUT --format F -o OUTPUT`. */
export interface ExportCommand {
  command: 'export';
  input: string;
  target: ExportTarget;
}

export type ParsedArgs =
  | { kind: 'help' }
  | { kind: 'run'; command: CliCommand }
  | { kind: 'lsp' }
  | { kind: 'export'; command: ExportCommand }
  | { kind: 'error'; message: string };

function parseExportCommand(rest: readonly string[]): ParsedArgs {
  let input: string | undefined;
  let format: string | undefined;
  let output: string | undefined;
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    if (flag === '--format' || flag === '-o' || flag === '--output') {
      const value = eq > 0 ? arg.slice(eq + 1) : rest[++i];
      if (value === undefined || value === '') return { kind: 'error', message: `${flag} needs a value` };
      if (flag === '--format') format = value;
      else output = value;
    } else if (arg.startsWith('-')) {
      return { kind: 'error', message: `unknown option ${arg} for export (use --format and -o)` };
    } else if (input === undefined) {
      input = arg;
    } else {
      return { kind: 'error', message: `export takes one input file; '${arg}' is a second one` };
    }
  }
  if (!input)
    return {
      kind: 'error',
      message:
        'export needs the result-set or profile file to read, e.g. cyclelens export ' +
        '.cyclelens/results/descent.json --format pprof -o profile.pb.gz',
    };
  if (!format) return { kind: 'error', message: `export needs --format (one of ${formatIds()})` };
  const f = exportFormat(format);
  if (!f) return { kind: 'error', message: `--format ${format}: unknown format; use one of ${formatIds()}` };
  if (!output)
    return {
      kind: 'error',
      message: `export needs -o FILE (where to write the ${f.label} file, e.g. profile${f.extension})`,
    };
  return { kind: 'export', command: { command: 'export', input, target: { format: f, path: output } } };
}

/** `cyclelens lsp --stdio`: the transport is named, as LSP clients expect to pass it. */
function parseLspArgs(rest: readonly string[]): ParsedArgs {
  const unknown = rest.filter((a) => a !== '--stdio');
  if (unknown.length > 0)
    return {
      kind: 'error',
      message: `lsp: unexpected argument '${unknown[0]}': the language server takes --stdio only`,
    };
  if (!rest.includes('--stdio'))
    return { kind: 'error', message: 'lsp needs --stdio: the server talks LSP on stdin and stdout' };
  return { kind: 'lsp' };
}

export function parseThreshold(text: string): Threshold | string {
  const t = text.trim();
  const pct = /^(\d+(?:\.\d+)?)\s*%$/.exec(t);
  if (pct) {
    const v = Number(pct[1]) / 100;
    return v > 1 ? `--threshold ${text}: a share cannot exceed 100%` : { kind: 'share', value: v };
  }
  if (/^\d+(?:\.\d+)?$/.test(t)) {
    const v = Number(t);
    // A bare fraction reads as a share (0.05 = 5%), a larger number as a count of the run's event.
    return v < 1 ? { kind: 'share', value: v } : { kind: 'count', value: v };
  }
  return `--threshold ${text}: give a share such as 1% or 0.01, or a count such as 5000`;
}

/** `idle_point`, `0x80000412`, `src/cyclic.c:42`. */
export function parseLocation(text: string): CodeLocation | string {
  const t = text.trim();
  if (/^0x[0-9a-f]+$/i.test(t)) return { address: t.toLowerCase() };
  const fileLine = /^(.+):(\d+)$/.exec(t);
  if (fileLine) return { path: fileLine[1]!, line: Number(fileLine[2]) };
  if (/^[A-Za-z_.$][\w.$@]*$/.test(t)) return { function: t };
  return `'${text}' is not a location: give a function name, 0xADDRESS or file.c:LINE`;
}

function positiveInteger(flag: string, text: string): number | string {
  if (!/^\d+$/.test(text) || Number(text) < 1) return `${flag} ${text}: give a whole number >= 1`;
  return Number(text);
}

export function parseArgs(argv: readonly string[]): ParsedArgs {
  if (argv.length === 0) return { kind: 'error', message: 'no command given' };
  if (argv.includes('-h') || argv.includes('--help')) return { kind: 'help' };
  const [command, ...rest] = argv;
  if (command === 'lsp') return parseLspArgs(rest);
  if (command === 'export') return parseExportCommand(rest);
  if (command !== 'descent' && command !== 'profile' && command !== 'call-graph')
    return { kind: 'error', message: `unknown command '${command}': use descent, profile, call-graph, export or lsp` };
  const values = new Map<string, string[]>();
  const flags = new Set<string>();
  const withValue = new Set([
    '--config',
    '--name',
    '--threshold',
    '--slots',
    '--start',
    '--root',
    '--cyclic',
    '--dwell',
    '--rounds',
    '--out',
    '--dot',
    '--resume',
    '--timeout',
    '--adapter',
    '--call-graph',
    '--max-calls',
    '--export',
    '--jobs',
  ]);
  const switches = new Set(['--no-lookahead', '--no-groups', '--dynamic']);
  for (let i = 0; i < rest.length; i++) {
    let arg = rest[i]!;
    let value: string | undefined;
    const eq = arg.indexOf('=');
    if (arg.startsWith('--') && eq > 0) {
      value = arg.slice(eq + 1);
      arg = arg.slice(0, eq);
    }
    if (switches.has(arg)) {
      if (value !== undefined) return { kind: 'error', message: `${arg} takes no value` };
      flags.add(arg);
      continue;
    }
    if (!withValue.has(arg))
      return { kind: 'error', message: arg.startsWith('-') ? `unknown option ${arg}` : `unexpected argument '${arg}'` };
    if (value === undefined) {
      value = rest[++i];
      if (value === undefined || (value.startsWith('--') && withValue.has(value)))
        return { kind: 'error', message: `${arg} needs a value` };
    }
    const list = values.get(arg) ?? [];
    list.push(value);
    values.set(arg, list);
  }
  const one = (flag: string): string | undefined => {
    const list = values.get(flag);
    return list ? list[list.length - 1] : undefined;
  };
  for (const [flag, list] of values)
    if (list.length > 1 && flag !== '--root' && flag !== '--export')
      return { kind: 'error', message: `${flag} is given ${list.length} times` };

  const config = one('--config');
  if (!config) return { kind: 'error', message: '--config is required (the launch.json that holds the configuration)' };
  const name = one('--name');
  if (!name) return { kind: 'error', message: '--name is required (the "name" of the launch configuration)' };
  const thresholdText = one('--threshold');
  if (thresholdText !== undefined && command === 'profile')
    return { kind: 'error', message: '--threshold applies to descent only; profile measures every function' };
  const threshold =
    thresholdText !== undefined ? parseThreshold(thresholdText) : ({ kind: 'share', value: 0.01 } as const);
  if (typeof threshold === 'string') return { kind: 'error', message: threshold };
  const slots = one('--slots') !== undefined ? positiveInteger('--slots', one('--slots')!) : 4;
  if (typeof slots === 'string') return { kind: 'error', message: slots };
  const dwell = one('--dwell') !== undefined ? positiveInteger('--dwell', one('--dwell')!) : 10;
  if (typeof dwell === 'string') return { kind: 'error', message: dwell };
  const rounds = one('--rounds') !== undefined ? positiveInteger('--rounds', one('--rounds')!) : 1;
  if (typeof rounds === 'string') return { kind: 'error', message: rounds };
  const timeout = one('--timeout') !== undefined ? positiveInteger('--timeout', one('--timeout')!) : 120;
  if (typeof timeout === 'string') return { kind: 'error', message: timeout };
  const jobs = one('--jobs') !== undefined ? positiveInteger('--jobs', one('--jobs')!) : undefined;
  if (typeof jobs === 'string')
    return { kind: 'error', message: `${jobs} (runs at once; leave --jobs out for the number of cores)` };
  const cyclicText = one('--cyclic');
  let cyclic: CodeLocation | undefined;
  if (cyclicText !== undefined) {
    const loc = parseLocation(cyclicText);
    if (typeof loc === 'string') return { kind: 'error', message: `--cyclic: ${loc}` };
    cyclic = loc;
  } else if (values.has('--dwell') || values.has('--rounds')) {
    return { kind: 'error', message: '--dwell and --rounds apply to cyclic programs only: add --cyclic SAFE_STOP' };
  }
  if (values.has('--rounds') && command !== 'profile')
    return { kind: 'error', message: '--rounds applies to profile only' };
  const out = one('--out');
  const dot = one('--dot');
  const resume = one('--resume');
  if (resume !== undefined && command !== 'descent')
    return { kind: 'error', message: '--resume applies to descent only' };
  const adapter = one('--adapter');
  const callGraph = one('--call-graph');
  if (callGraph !== undefined && command !== 'descent')
    return { kind: 'error', message: '--call-graph applies to descent only (call-graph writes the file with --out)' };
  if (flags.has('--no-groups') && command !== 'descent')
    return { kind: 'error', message: '--no-groups applies to descent only' };
  if ((flags.has('--dynamic') || values.has('--max-calls')) && command !== 'call-graph')
    return { kind: 'error', message: '--dynamic and --max-calls apply to call-graph only' };
  if (values.has('--max-calls') && !flags.has('--dynamic'))
    return { kind: 'error', message: '--max-calls applies to a dynamic call graph: add --dynamic' };
  const maxCalls = one('--max-calls') !== undefined ? positiveInteger('--max-calls', one('--max-calls')!) : 200_000;
  if (typeof maxCalls === 'string') return { kind: 'error', message: maxCalls };
  const exports: ExportTarget[] = [];
  for (const spec of values.get('--export') ?? []) {
    const target = parseExportSpec(spec);
    if (typeof target === 'string') return { kind: 'error', message: target };
    exports.push(target);
  }
  if (exports.length > 0 && command === 'call-graph')
    return {
      kind: 'error',
      message: '--export applies to descent and profile (call-graph writes the graph with --out)',
    };
  if (command === 'call-graph') {
    if (out === undefined) return { kind: 'error', message: 'call-graph needs --out FILE (where to save the graph)' };
    const other = ['--threshold', '--slots', '--root', '--cyclic', '--dot', '--resume', '--jobs'].find((f) =>
      values.has(f),
    );
    if (other) return { kind: 'error', message: `${other} does not apply to call-graph` };
  }
  return {
    kind: 'run',
    command: {
      command,
      config,
      name,
      threshold,
      slots,
      start: one('--start') ?? 'main',
      roots: values.get('--root') ?? [],
      ...(cyclic ? { cyclic } : {}),
      dwell,
      rounds,
      ...(out !== undefined ? { out } : {}),
      ...(dot !== undefined ? { dot } : {}),
      ...(resume !== undefined ? { resume } : {}),
      timeoutMs: timeout * 1000,
      ...(adapter !== undefined ? { adapter } : {}),
      lookahead: !flags.has('--no-lookahead'),
      ...(callGraph !== undefined ? { callGraph } : {}),
      groups: !flags.has('--no-groups'),
      ...(flags.has('--dynamic') ? { dynamic: { maxCalls } } : {}),
      ...(exports.length > 0 ? { exports } : {}),
      ...(jobs !== undefined ? { jobs } : {}),
    },
  };
}
