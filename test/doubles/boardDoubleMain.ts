import { BoardOnQemu } from '../support/boardOnQemu';
import type { FixtureTarget } from '../support/paths';
import { DEFAULT_PROFILE, PART_PROFILES, type FlashPlacement, type PartName } from './boardProfiles';

/**
 * TEST DOUBLE — the board double (boardDouble.ts) on its own, in front of a QEMU it starts, for
 * poking at it with a real GDB:
 *
 *   node out/test/doubles/boardDoubleMain.js --target cortex-m4 [--profile stm32f407|nrf52840]
 *        [--placement code|own] [--port 3333] [--delay MS] [--flash-time-scale X]
 *        [--breakpoints N] [--watchpoints N] [--triggers N] [--program ELF] [--log]
 *   gdb-multiarch -ex 'target remote :3333' -ex 'info mem' -ex load -ex 'monitor reset halt' FILE.elf
 *
 * `--target rv32` takes `--profile esp32c6`. It prints its counts as JSON on SIGUSR1 and when it
 * ends (SIGINT, SIGTERM, or QEMU gone); `monitor board status` prints them in GDB.
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
  const num = (k: string): number | undefined => {
    const v = str(k);
    if (v === undefined) return undefined;
    if (!/^\d+(\.\d+)?$/.test(v)) throw new Error(`--${k} takes a number (got '${v}')`);
    return Number(v);
  };
  const target = str('target') ?? 'cortex-m4';
  if (target !== 'cortex-m4' && target !== 'rv32') throw new Error('--target must be cortex-m4 or rv32');
  const placement = str('placement') ?? 'code';
  if (placement !== 'code' && placement !== 'own') throw new Error('--placement must be code or own');
  const profile = (str('profile') ?? DEFAULT_PROFILE[target]) as PartName;
  const comparators = {
    ...(num('breakpoints') !== undefined ? { breakpoints: num('breakpoints') } : {}),
    ...(num('watchpoints') !== undefined ? { watchpoints: num('watchpoints') } : {}),
    ...(num('triggers') !== undefined ? { triggers: num('triggers') } : {}),
  };
  const board = await BoardOnQemu.start(target as FixtureTarget, {
    profile,
    placement: placement as FlashPlacement,
    ...(num('port') !== undefined ? { port: num('port') } : {}),
    ...(num('delay') !== undefined ? { packetDelayMs: num('delay') } : {}),
    ...(num('flash-time-scale') !== undefined ? { flashTimeScale: num('flash-time-scale') } : {}),
    comparators,
    ...(str('program') ? { programmed: str('program') } : {}),
    ...(args.has('log') ? { log: (line: string) => process.stderr.write(`${line}\n`) } : {}),
  });
  const layout = board.board.layout;
  const p = PART_PROFILES[profile];
  const flashEnd = layout.flashStart + layout.flashSize - 1;
  process.stdout.write(
    `Board double: ${p.title}, flash 0x${layout.flashStart.toString(16)}-0x${flashEnd.toString(16)} ` +
      `(${layout.sectors.length} sectors), QEMU ${target} at ${board.qemu.address}\n` +
      // Readiness line in OpenOCD's words, so a server strategy's readiness pattern matches it.
      `Listening on port ${board.board.port} for gdb connections\n`,
  );
  const report = (): void => void process.stdout.write(`${JSON.stringify(board.board.stats())}\n`);
  let ending = false;
  const end = (code: number): void => {
    if (ending) return;
    ending = true;
    report();
    void board.stop().then(() => process.exit(code));
  };
  process.on('SIGUSR1', report);
  process.on('SIGINT', () => end(0));
  process.on('SIGTERM', () => end(0));
  board.board.onGone((why) => {
    process.stderr.write(`${why}\n`);
    end(0);
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(2);
});
