import { parseObjdump } from '../support/gnuTools';
import { disassemble, run, tool, type ToolTarget } from './binutils';

/**
 * The functions whose address a linked program takes, as the GNU tools show them, for checking
 * what the injector decides about indirect calls (planSupport.ts `takenAddresses`) without asking
 * it. A function counts as taken where
 * - objdump's listing shows an instruction that is not a jump, call or branch resolving to its
 *   entry (on RISC-V objdump joins `lui`/`auipc` with the `addi` after it and prints the address:
 *   `addi a0,a0,-1234 # 80004720 <commands>`), or
 * - an aligned 32-bit word of a loaded section (`objdump -s`) outside every instruction of the
 *   listing holds its entry (a table of handlers, a FILE's callbacks in .data, .init_array).
 */
export interface TakenFunctions {
  /** Entry address to the names of the FUNC symbols there (readelf). */
  functions: Map<number, string[]>;
  /** Entry address of each function taken, to where (`addi at 0x80000360`, `word at 0x80004720`). */
  taken: Map<number, string[]>;
  /** Upper halves objdump shows loaded whole (`lui a5,0x80000`: 0x80000000), for explaining extras. */
  upperConstants: Set<number>;
}

/** Calls, jumps and branches: their targets are reached, not taken (RISC-V, `-M no-aliases`; Arm). */
const CONTROL = new RegExp(
  '^(' +
    /jal|jalr|c\.j|c\.jal|c\.jr|c\.jalr|beq|bne|blt|bge|bltu|bgeu|/.source +
    /c\.beqz|c\.bnez|b|bl|blx|bx|cbz|cbnz|b\.w|b[a-z]{2}(\.w|\.n)?/.source +
    ')$',
);

export function takenFunctions(target: ToolTarget, elf: string): TakenFunctions {
  const functions = new Map<number, string[]>();
  for (const line of run(tool(target, 'readelf'), ['-sW', elf]).split('\n')) {
    const m = /^\s*\d+:\s+([0-9a-f]+)\s+\d+\s+FUNC\s+\S+\s+\S+\s+\d+\s+(\S+)/.exec(line);
    if (!m) continue;
    const address = parseInt(m[1]!, 16) & (target === 'cortex-m4' ? ~1 : ~0);
    functions.set(address >>> 0, [...(functions.get(address >>> 0) ?? []), m[2]!]);
  }
  const taken = new Map<number, string[]>();
  const take = (address: number, where: string): void => {
    if (functions.has(address)) taken.set(address, [...(taken.get(address) ?? []), where]);
  };

  const upperConstants = new Set<number>();
  const instructions: Array<[number, number]> = [];
  for (const l of parseObjdump(disassemble(target, elf), target === 'rv32' ? '#' : '@')) {
    if (l.isData || l.mnemonic === '' || l.mnemonic === '...') continue;
    instructions.push([l.address, l.address + l.length]);
    const lui = /^(lui|c\.lui)$/.test(l.mnemonic) ? /,\s*(0x[0-9a-f]+)$/.exec(l.operands) : null;
    if (lui) upperConstants.add((parseInt(lui[1]!, 16) << 12) >>> 0);
    if (CONTROL.test(l.mnemonic)) continue;
    const shown = /\b([0-9a-f]+) <[^>]+>/.exec(l.comment);
    if (shown)
      take(
        (parseInt(shown[1]!, 16) & (target === 'cortex-m4' ? ~1 : ~0)) >>> 0,
        `${l.mnemonic} at 0x${l.address.toString(16)}`,
      );
  }

  const loaded: string[] = [];
  for (const line of run(tool(target, 'readelf'), ['-SW', elf]).split('\n')) {
    const m = /^\s*\[\s*\d+\]\s+(\S+)\s+(\S+)\s+[0-9a-f]+\s+[0-9a-f]+\s+[0-9a-f]+\s+[0-9a-f]+\s+(\S*)/.exec(line);
    if (m && m[2] !== 'NOBITS' && m[3]!.includes('A')) loaded.push(m[1]!);
  }
  const bytes = new Map<number, number>();
  const dump = run(tool(target, 'objdump'), ['-s', ...loaded.flatMap((s) => ['-j', s]), elf]);
  for (const line of dump.split('\n')) {
    const m = /^ ([0-9a-f]{4,16})((?: [0-9a-f]{2,8}){1,4}) /.exec(line);
    if (!m) continue;
    let at = parseInt(m[1]!, 16);
    for (const group of m[2]!.trim().split(' '))
      for (let i = 0; i < group.length; i += 2) bytes.set(at++, parseInt(group.slice(i, i + 2), 16));
  }
  instructions.sort((a, b) => a[0] - b[0]);
  const inInstruction = (address: number): boolean => {
    let lo = 0;
    let hi = instructions.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (instructions[mid]![0] <= address) lo = mid + 1;
      else hi = mid;
    }
    return lo > 0 && address < instructions[lo - 1]![1];
  };
  for (const [address] of bytes) {
    if (address % 4 !== 0) continue;
    const b = [0, 1, 2, 3].map((i) => bytes.get(address + i));
    if (b.some((x) => x === undefined) || [0, 1, 2, 3].some((i) => inInstruction(address + i))) continue;
    const word = (b[0]! | (b[1]! << 8) | (b[2]! << 16) | (b[3]! << 24)) >>> 0;
    take((word & (target === 'cortex-m4' ? ~1 : ~0)) >>> 0, `word at 0x${address.toString(16)}`);
  }
  return { functions, taken, upperConstants };
}
