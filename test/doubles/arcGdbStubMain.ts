import { ArcGdbStub } from './arcGdbStub';
import { DEFAULT_CONDITIONS, shuffledConditions } from './arcPctModel';

/**
 * TEST DOUBLE — runs the ARC gdbserver double on its own, for poking at it with a real GDB:
 *
 *   node out/test/doubles/arcGdbStubMain.js --port 3333 [--counters 8] [--width 48]
 *        [--shuffle SEED] [--no-pct-registers] [--no-pct] [--monitor-format hex|decimal] [--log]
 *   arc-elf32-gdb -ex 'target remote :3333' -ex 'p/x $pct_build' -ex 'monitor arc jtag get-aux-reg 0xf5'
 */

function parseArgs(argv: string[]): Map<string, string | true> {
  const out = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('--')) throw new Error(`unexpected argument '${a}'`);
    const next = argv[i + 1];
    if (next !== undefined && !next.startsWith('--')) {
      out.set(a.slice(2), next);
      i++;
    } else {
      out.set(a.slice(2), true);
    }
  }
  return out;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const str = (k: string): string | undefined => {
    const v = args.get(k);
    return typeof v === 'string' ? v : undefined;
  };
  const width = Number(str('width') ?? 32);
  if (width !== 32 && width !== 48 && width !== 64) throw new Error('--width must be 32, 48 or 64');
  const format = str('monitor-format') ?? 'hex';
  if (format !== 'hex' && format !== 'decimal') throw new Error('--monitor-format must be hex or decimal');
  const seed = str('shuffle');
  const stub = new ArcGdbStub({
    build: {
      present: !args.has('no-pct'),
      counters: Number(str('counters') ?? 2),
      width,
      conditions: seed !== undefined ? shuffledConditions(Number(seed)) : DEFAULT_CONDITIONS,
    },
    exposePctRegisters: !args.has('no-pct-registers'),
    monitorNumberFormat: format,
    ...(args.has('log') ? { log: (line: string) => process.stderr.write(`${line}\n`) } : {}),
  });
  const port = await stub.listen(Number(str('port') ?? 0));
  // Readiness line in the style of OpenOCD, so a server strategy's readiness pattern can match it.
  process.stdout.write(`ARC gdbserver test double: Listening on port ${port} for gdb connections\n`);
  const stop = (): void => {
    void stub.close().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(2);
});
