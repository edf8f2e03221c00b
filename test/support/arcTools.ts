import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, toolCache } from './paths';

/**
 * Real ARC tools for the ARC tests: a GDB built for arc-elf32 (scripts/buildArcGdb.sh, cached
 * outside the repository) and, when scripts/buildArcBinutils.sh has run, a tiny ARC ELF for that
 * GDB to load.
 */

export const arcGdbPath = join(toolCache, 'arc-gdb', 'bin', 'arc-elf32-gdb');

/**
 * Returns the path of arc-elf32-gdb, building it first if the cache does not have it (a first
 * build takes many minutes; later calls return at once). Throws with the script's output on failure.
 */
export function ensureArcGdb(): string {
  const script = join(repoRoot, 'scripts', 'buildArcGdb.sh');
  const r = spawnSync('bash', [script], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, CYCLELENS_CACHE: toolCache },
  });
  if (r.status !== 0 || !existsSync(arcGdbPath)) {
    throw new Error(
      `scripts/buildArcGdb.sh failed (${r.status ?? r.signal}):\n` +
        `${(r.stdout ?? '').slice(-3000)}${(r.stderr ?? '').slice(-3000)}`,
    );
  }
  return arcGdbPath;
}

const arcBinutilsBin = join(toolCache, 'arc-binutils', 'install', 'bin');

export interface TinyArcElf {
  path: string;
  /** Load address and bytes of .text, for the gdbserver double's memory. */
  textBase: number;
  text: Uint8Array;
  symbols: Map<string, number>;
}

/** Slots `from` to `to` (exclusive) of the loop: slot k has the model's kind k % 4. */
function loopSlots(from: number, to: number): string {
  const byKind = ['add r2, r2, 1', 'ld r3, [r4, 0]', 'st r3, [r4, 4]', 'sub r5, r5, 1'];
  return Array.from({ length: to - from }, (_, i) => `  ${byKind[(from + i) % 4]}\n`).join('');
}

/**
 * The loop the gdbserver double executes (test/doubles/arcCpuModel.ts), as real ARC code: 16
 * four-byte instructions at 0x1000 whose slot kinds (alu, load, store, alu, …) match the model,
 * ending in a 32-bit branch back. Only 32-bit encodings are used so that the model's 4-byte PC steps
 * land on instruction boundaries. `mid` is slot 8.
 */
const tinyLoopSource = `
  .text
  .global loop_start
loop_start:
${loopSlots(0, 8)}  .global mid
mid:
${loopSlots(8, 15)}  .global loop_end
loop_end:
  b loop_start
`;

/** Assembles and links the tiny loop with arc-elf32 binutils; undefined when they are not built. */
export function buildTinyArcElf(dir: string): TinyArcElf | undefined {
  const tool = (name: string): string => join(arcBinutilsBin, `arc-elf32-${name}`);
  if (!['as', 'ld', 'objcopy', 'nm'].every((t) => existsSync(tool(t)))) return undefined;
  mkdirSync(dir, { recursive: true });
  const run = (file: string, args: string[]): string => {
    const r = spawnSync(file, args, { cwd: dir, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${file} ${args.join(' ')} failed:\n${r.stderr}${r.stdout}`);
    return r.stdout;
  };
  writeFileSync(join(dir, 'loop.s'), tinyLoopSource);
  run(tool('as'), ['-mcpu=em4', '-o', 'loop.o', 'loop.s']);
  run(tool('ld'), ['-Ttext=0x1000', '-e', 'loop_start', '-o', 'loop.elf', 'loop.o']);
  run(tool('objcopy'), ['-O', 'binary', '-j', '.text', 'loop.elf', 'loop.bin']);
  const symbols = new Map<string, number>();
  for (const line of run(tool('nm'), ['loop.elf']).split('\n')) {
    const m = /^([0-9a-f]+) \w (\S+)$/.exec(line.trim());
    if (m) symbols.set(m[2]!, parseInt(m[1]!, 16));
  }
  const text = new Uint8Array(readFileSync(join(dir, 'loop.bin')));
  const textBase = symbols.get('loop_start');
  if (textBase === undefined || text.length !== 16 * 4 || symbols.get('loop_end') !== textBase + 15 * 4) {
    throw new Error(`the tiny ARC loop did not assemble to 16 four-byte instructions (got ${text.length} bytes)`);
  }
  return { path: join(dir, 'loop.elf'), textBase, text, symbols };
}
