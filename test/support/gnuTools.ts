import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toolCache } from './paths';

/**
 * The real GNU assembler and disassembler as the oracle for the instruction codecs: tests assemble
 * snippets with `as` + `ld`, take the bytes with `objcopy`, and read what `objdump` says each
 * instruction is. Nothing here knows an encoding.
 */

export interface GnuToolchain {
  readonly name: 'thumb' | 'rv32' | 'arc';
  /** Tool path prefix, e.g. `arm-none-eabi-`; tools are `${prefix}as` and so on. */
  readonly prefix: string;
  /** Lines put before every assembled snippet. */
  readonly header: string;
  readonly asFlags: readonly string[];
  readonly ldFlags: readonly string[];
  readonly objdumpFlags: readonly string[];
  /** objcopy output format/arch that wraps raw bytes into an ELF object objdump disassembles. */
  readonly rawElf: { format: string; arch: string };
  /** What starts objdump's trailing comment: `@` (Arm; `#` marks immediates there), `#` (RISC-V), `;` (ARC). */
  readonly commentChar: '@' | '#' | ';';
  readonly gcc?: string;
}

/** `cpu` is a -mcpu name, or `arch:NAME` for an architecture gas 2.40 knows no core of (armv8.1-m.main). */
export const thumbToolchain = (cpu = 'cortex-m4', fpu = 'fpv4-sp-d16'): GnuToolchain => ({
  name: 'thumb',
  prefix: 'arm-none-eabi-',
  header:
    '.syntax unified\n.thumb\n' +
    `${cpu.startsWith('arch:') ? `.arch ${cpu.slice(5)}` : `.cpu ${cpu}`}\n${fpu ? `.fpu ${fpu}\n` : ''}`,
  asFlags: [cpu.startsWith('arch:') ? `-march=${cpu.slice(5)}` : `-mcpu=${cpu}`, '-mthumb'],
  ldFlags: [],
  // Raw bytes carry no mapping symbols, so tell objdump they are Thumb.
  objdumpFlags: ['-M', 'force-thumb'],
  rawElf: { format: 'elf32-littlearm', arch: 'arm' },
  commentChar: '@',
  gcc: 'arm-none-eabi-gcc',
});

export const rv32Toolchain = (): GnuToolchain => ({
  name: 'rv32',
  prefix: 'riscv64-unknown-elf-',
  // Without relaxation gas resolves local branches itself and never rewrites what we wrote.
  header: '.option norelax\n.option arch, +c\n',
  asFlags: ['-march=rv32imac_zicsr_zifencei', '-mabi=ilp32'],
  ldFlags: ['-m', 'elf32lriscv', '--no-relax'],
  objdumpFlags: ['-M', 'no-aliases'],
  rawElf: { format: 'elf32-littleriscv', arch: 'riscv:rv32' },
  commentChar: '#',
  gcc: 'riscv64-unknown-elf-gcc',
});

/** Where scripts/buildArcBinutils.sh installs arc-elf32 binutils. */
export const arcBinutilsDir = join(toolCache, 'arc-binutils', 'install', 'bin');

/** ARC binutils from the build cache, else from PATH; undefined when neither exists. */
export function arcToolchain(cpu = 'em4_fpuda'): GnuToolchain | undefined {
  const cached = join(arcBinutilsDir, 'arc-elf32-');
  let prefix: string | undefined;
  if (existsSync(`${cached}as`) && existsSync(`${cached}objdump`)) prefix = cached;
  else if (spawnSync('arc-elf32-as', ['--version']).status === 0) prefix = 'arc-elf32-';
  if (!prefix) return undefined;
  return {
    name: 'arc',
    prefix,
    header: '',
    asFlags: [`-mcpu=${cpu}`],
    ldFlags: [],
    objdumpFlags: ['-M', `cpu=${cpu}`],
    rawElf: { format: 'elf32-littlearc', arch: 'arc' },
    commentChar: ';',
  };
}

function run(file: string, args: readonly string[], cwd: string): string {
  const r = spawnSync(file, args, { cwd, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (r.error) throw new Error(`${file}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${file} ${args.join(' ')} failed (${r.status}):\n${r.stderr}${r.stdout}`);
  return r.stdout;
}

function withTempDir<T>(body: (dir: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'cyclelens-gnu-'));
  try {
    return body(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One line of `objdump -d` output. */
export interface ObjdumpLine {
  address: number;
  /** Bytes the line covers (continuation lines folded in). */
  length: number;
  mnemonic: string;
  operands: string;
  /** Text after the operands (`@ ...` on Arm, `;...` on ARC, `# ...` on RISC-V), or ''. */
  comment: string;
  /** `.word`/`.short`/`.byte` and the like: data, not an instruction. */
  isData: boolean;
  text: string;
}

const lineRe = /^\s*([0-9a-f]+):\t((?:[0-9a-f]{2,8} )*[0-9a-f]{2,8})\s*(?:\t(.*))?$/;

/**
 * Parses `objdump -d --insn-width=16` text (no wrapped byte lines). Byte groups are hex numbers of
 * 1, 2 or 4 bytes each. ARC's objdump sometimes prints a "guessed opcode class" warning between
 * the bytes and the instruction text; the text then follows on a line of its own.
 */
export function parseObjdump(text: string, commentChar: GnuToolchain['commentChar']): ObjdumpLine[] {
  const out: ObjdumpLine[] = [];
  let awaitingText: ObjdumpLine | undefined;
  const fill = (line: ObjdumpLine, insn: string): void => {
    const [mnemonic = '', ...rest] = insn.split('\t');
    const tail = rest.join('\t');
    const commentAt = tail.indexOf(commentChar);
    line.mnemonic = mnemonic.trim();
    line.operands = (commentAt >= 0 ? tail.slice(0, commentAt) : tail).trim();
    line.comment = commentAt >= 0 ? tail.slice(commentAt + 1).trim() : '';
    line.isData = /^\.(word|short|byte|2byte|4byte|long|inst)/.test(line.mnemonic) || line.mnemonic === 'unknown';
    line.text = insn.trim();
  };
  for (const raw of text.split('\n')) {
    if (raw.trim() === '...') {
      // objdump skipped a run of zero bytes: record a data gap so walkers resynchronise.
      const prev = out[out.length - 1];
      const address = prev ? prev.address + prev.length : 0;
      out.push({ address, length: 0, mnemonic: '...', operands: '', comment: '', isData: true, text: '...' });
      continue;
    }
    const m = lineRe.exec(raw);
    if (!m) {
      if (awaitingText && /^\t+\S/.test(raw)) {
        fill(awaitingText, raw.replace(/^\t+/, ''));
        awaitingText = undefined;
      }
      continue;
    }
    const line: ObjdumpLine = {
      address: parseInt(m[1]!, 16),
      length: m[2]!.split(' ').reduce((n, g) => n + g.length / 2, 0),
      mnemonic: '',
      operands: '',
      comment: '',
      isData: false,
      text: '',
    };
    out.push(line);
    if (m[3] === undefined || m[3].trim() === '') awaitingText = line;
    else {
      awaitingText = undefined;
      fill(line, m[3]);
    }
  }
  return out;
}

/**
 * The absolute address objdump shows an instruction refers to: `1234 <sym>` (linked or symbolised
 * output), else the last `0x...` in the comment of a `[pc, ...]` load, else a bare `0x...` operand
 * (a branch in raw output).
 */
export function referencedAddress(line: ObjdumpLine): number | undefined {
  const both = `${line.operands} ${line.comment}`;
  const sym = /(?:0x)?\b([0-9a-f]+) <[^>]+>/.exec(both);
  if (sym) return parseInt(sym[1]!, 16);
  // Arm prints a literal's address as a bare `@ 0x...` comment, but also the hex of plain immediates.
  const inComment = /\[pc\b/.test(line.operands) ? [...line.comment.matchAll(/0x([0-9a-f]+)/g)].pop() : undefined;
  if (inComment) return parseInt(inComment[1]!, 16);
  const operand = /(?:^|,\s*)0x([0-9a-f]+)$/.exec(line.operands);
  return operand ? parseInt(operand[1]!, 16) : undefined;
}

export interface AssembledProgram {
  /** Address of the first byte of `.text`. */
  base: number;
  text: Uint8Array;
  symbols: Map<string, number>;
  lines: ObjdumpLine[];
}

function readText(
  tc: GnuToolchain,
  elf: string,
  dir: string,
): { base: number; text: Uint8Array; lines: ObjdumpLine[]; symbols: Map<string, number> } {
  const headers = run(`${tc.prefix}objdump`, ['-h', elf], dir);
  const h = /^\s*\d+\s+\.text\s+([0-9a-f]+)\s+([0-9a-f]+)/m.exec(headers);
  if (!h) throw new Error(`no .text section in ${elf}`);
  const bin = join(dir, 'text.bin');
  run(`${tc.prefix}objcopy`, ['-O', 'binary', '-j', '.text', elf, bin], dir);
  const symbols = new Map<string, number>();
  for (const line of run(`${tc.prefix}nm`, [elf], dir).split('\n')) {
    const s = /^([0-9a-f]+) \w (\S+)$/.exec(line.trim());
    if (s) symbols.set(s[2]!, parseInt(s[1]!, 16));
  }
  const flags = tc.name === 'thumb' ? [] : tc.objdumpFlags; // a linked Thumb ELF has mapping symbols
  return {
    base: parseInt(h[2]!, 16),
    text: new Uint8Array(readFileSync(bin)),
    lines: parseObjdump(
      run(`${tc.prefix}objdump`, ['-d', '-j', '.text', '--insn-width=16', ...flags, elf], dir),
      tc.commentChar,
    ),
    symbols,
  };
}

/**
 * Assembles `source` (after the toolchain's header), links `.text` at `base`, and disassembles it.
 * With `link: false` the object file itself is read (`.text` at 0; relocations left unresolved),
 * for sources that reference symbols defined nowhere.
 */
export function assemble(tc: GnuToolchain, source: string, base = 0x1000, link = true): AssembledProgram {
  return withTempDir((dir) => {
    writeFileSync(join(dir, 'a.s'), `${tc.header}.text\n.global start\nstart:\n${source}\n`);
    run(`${tc.prefix}as`, [...tc.asFlags, '-o', 'a.o', 'a.s'], dir);
    if (!link) return readText(tc, join(dir, 'a.o'), dir);
    run(`${tc.prefix}ld`, [...tc.ldFlags, `-Ttext=0x${base.toString(16)}`, '-e', 'start', '-o', 'a.elf', 'a.o'], dir);
    return readText(tc, join(dir, 'a.elf'), dir);
  });
}

/** Disassembles raw bytes placed at `address`. */
export function disassembleBytes(tc: GnuToolchain, bytes: Uint8Array, address: number): ObjdumpLine[] {
  return withTempDir((dir) => {
    writeFileSync(join(dir, 'raw.bin'), bytes);
    run(
      `${tc.prefix}objcopy`,
      [
        '-I',
        'binary',
        '-O',
        tc.rawElf.format,
        '-B',
        tc.rawElf.arch,
        '--rename-section',
        '.data=.text,alloc,code,contents,load',
        'raw.bin',
        'raw.o',
      ],
      dir,
    );
    const out = run(
      `${tc.prefix}objdump`,
      ['-d', '--insn-width=16', `--adjust-vma=0x${address.toString(16)}`, ...tc.objdumpFlags, 'raw.o'],
      dir,
    );
    return parseObjdump(out, tc.commentChar);
  });
}

/**
 * Compiles a C file with the toolchain's gcc (no libc) and returns its linked `.text`. `libs` are
 * linked after it (`-lgcc` brings division and soft float: more real code to walk; Debian's RISC-V
 * gcc has no rv32 libgcc).
 */
export function compileC(
  tc: GnuToolchain,
  cSource: string,
  gccFlags: readonly string[],
  libs: readonly string[] = [],
): AssembledProgram {
  if (!tc.gcc) throw new Error(`${tc.name}: no C compiler configured`);
  const gcc = tc.gcc;
  return withTempDir((dir) => {
    writeFileSync(join(dir, 'p.c'), cSource);
    run(gcc, [...gccFlags, '-nostdlib', '-ffreestanding', '-Wl,-e,main', '-o', 'p.elf', 'p.c', ...libs], dir);
    return readText(tc, join(dir, 'p.elf'), dir);
  });
}

/** `.text` of an existing ELF (e.g. a fixture from test/fixtures/build). */
export function readElfText(tc: GnuToolchain, elf: string): AssembledProgram {
  return withTempDir((dir) => readText(tc, elf, dir));
}
