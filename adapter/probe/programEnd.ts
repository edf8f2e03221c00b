import type { CodeLocation } from '../../common/dapCustom';
import type { DisassembledProgram } from './callGraph';
import type { FunctionCode } from './injection/types';

/**
 * Where a single-pass program's work ends, found in its code when the launch configuration names
 * no `programEnd` and the program has no `exit`/`_exit` (those come first: launchValidation.ts).
 * In order:
 *  1. `main`'s last instruction is a call: a call that is the last thing a function does and is
 *     followed by no return can only be to a function that does not return (`exit`, a semihosting
 *     `board_exit`, a `halt`): the run ends at that function's entry.
 *  2. `main` returns: the run ends at the instruction after the one call of `main` in the startup
 *     code (newlib's and picolibc's `exit(main())`, a `Reset_Handler` that loops or halts after it).
 * Nothing found: the caller asks for `programEnd`, with an example.
 */
export interface ProgramEnd {
  location: CodeLocation;
  /** Says how it was found, for the log and the result set. */
  how: string;
}

export function findProgramEnd(program: DisassembledProgram, start = 'main'): ProgramEnd | undefined {
  const main = program.functions.find((f) => f.name === start);
  if (!main) return undefined;
  const byStart = new Map(program.functions.map((f) => [f.start, f]));
  const last = lastMeaningful(main);
  if (last?.kind === 'call' && last.target !== undefined) {
    const callee = byStart.get(last.target);
    if (callee && callee !== main) {
      return {
        location: { function: callee.name },
        how: `${start}'s last instruction calls ${callee.name}, which does not return`,
      };
    }
  }
  const sites = program.functions.flatMap((f) =>
    f === main ? [] : f.instructions.filter((i) => i.kind === 'call' && i.target === main.start).map((i) => ({ f, i })),
  );
  if (sites.length === 1) {
    const { f, i } = sites[0]!;
    const after = i.address + i.length;
    if (f.instructions.some((x) => x.address === after)) {
      return {
        location: { address: `0x${after.toString(16)}` },
        how: `where ${start} returns to ${f.name} (0x${after.toString(16)})`,
      };
    }
  }
  return undefined;
}

/**
 * The last instruction that does work: trailing branches to themselves (`b .`, `j .`: a halt loop
 * the compiler adds after a call it cannot prove noreturn) and `nop` padding are skipped.
 */
function lastMeaningful(fn: FunctionCode): FunctionCode['instructions'][number] | undefined {
  for (let k = fn.instructions.length - 1; k >= 0; k--) {
    const insn = fn.instructions[k]!;
    if (insn.mnemonic === 'nop' || insn.mnemonic === 'c.nop') continue;
    if ((insn.kind === 'branch' || insn.kind === 'condBranch') && insn.target === insn.address) continue;
    return insn;
  }
  return undefined;
}

/** The message when nothing marks the end: names the setting and gives an example. */
export function noProgramEndMessage(executable: string, start = 'main'): string {
  return (
    `CycleLens cannot tell where ${executable} ends: it has no \`exit\` or \`_exit\`, ${start}'s ` +
    `last instruction is not a call to a function that does not return, ` +
    (`and ${start} is not called once from the startup code. Set \`programEnd\` in the launch ` +
      `configuration to the function the program calls when its work is done, `) +
    'for example "programEnd": "halt" (or "programEnd": "board_exit").'
  );
}
