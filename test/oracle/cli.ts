/**
 * The exact reference profile of a program, from QEMU's instruction trace.
 *
 *   node out/test/oracle/cli.js --elf X [--target rv32|cortex-m4] [--log existing.log]
 *        [--keep-log PATH] [--out summary.json] [--max-instructions N] [--timeout SECONDS]
 *        [--region NAME=START,END]... [--handler SYMBOL]... [--top N]
 *
 * START/END: 0xADDRESS, SYMBOL, SYMBOL+OFFSET or FILE:LINE. See test/oracle/README.md.
 */
import { writeFileSync } from 'node:fs';
import { ToolTarget } from './binutils';
import { OracleOptions, RegionRequest, formatTopTable, runOracle } from './oracle';

function usage(message: string): never {
  process.stderr.write(
    `${message}\nusage: cli.js --elf FILE [--target rv32|cortex-m4] [--log LOG] [--keep-log ` +
      `PATH] [--out JSON] [--max-instructions N] [--timeout S] [--region NAME=START,END]... ` +
      `[--handler SYMBOL]... [--top N]\n`,
  );
  process.exit(2);
}

export function parseArgs(argv: string[]): OracleOptions & { out?: string; top: number } {
  const opts: OracleOptions & { out?: string; top: number } = { elf: '', top: 15 };
  const regions: RegionRequest[] = [];
  const handlers: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) usage(`${flag} needs a value`);
      return v;
    };
    switch (flag) {
      case '--elf':
        opts.elf = value();
        break;
      case '--target': {
        const t = value();
        if (t !== 'rv32' && t !== 'cortex-m4') usage(`--target ${t}: use rv32 or cortex-m4`);
        opts.target = t as ToolTarget;
        break;
      }
      case '--log':
        opts.log = value();
        break;
      case '--keep-log':
        opts.keepLog = value();
        break;
      case '--out':
        opts.out = value();
        break;
      case '--max-instructions':
        opts.maxInstructions = positive(flag, value());
        break;
      case '--timeout':
        opts.timeoutMs = positive(flag, value()) * 1000;
        break;
      case '--top':
        opts.top = positive(flag, value());
        break;
      case '--handler':
        handlers.push(value());
        break;
      case '--region': {
        const m = /^([^=]+)=([^,]+),(.+)$/.exec(value());
        if (!m) usage(`--region wants NAME=START,END`);
        regions.push({ name: m[1]!, start: m[2]!, end: m[3]! });
        break;
      }
      default:
        usage(`unknown argument ${flag}`);
    }
  }
  if (!opts.elf) usage('--elf is required');
  if (regions.length) opts.regions = regions;
  if (handlers.length) opts.handlers = handlers;
  return opts;
}

function positive(flag: string, v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) usage(`${flag} ${v}: expected a positive number`);
  return n;
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const summary = await runOracle(opts);
  if (opts.out) writeFileSync(opts.out, JSON.stringify(summary, null, 1) + '\n');
  process.stdout.write(formatTopTable(summary, opts.top) + '\n');
  if (opts.out) process.stdout.write(`summary: ${opts.out}\n`);
  if (summary.qemu && summary.qemu.exitCode !== 0 && !summary.qemu.stoppedAtLimit) {
    process.stderr.write(
      `warning: QEMU exited with status ${summary.qemu.exitCode} (signal ${summary.qemu.signal ?? 'none'})\n`,
    );
  }
  if (!summary.totals.consistent) process.exitCode = 1;
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
