import { execFileSync, spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * The GNU tools of each oracle target. Test-side only: the product reads ELF files itself
 * (adapter/elf/), the tests and the oracle check it against these.
 */
export type ToolTarget = 'cortex-m4' | 'rv32';

const PREFIX: Record<ToolTarget, string> = {
  'cortex-m4': 'arm-none-eabi-',
  rv32: 'riscv64-unknown-elf-',
};

export const COMPILE_FLAGS: Record<ToolTarget, string[]> = {
  'cortex-m4': ['-mcpu=cortex-m4', '-mthumb'],
  rv32: ['-march=rv32imac_zicsr', '-mabi=ilp32'],
};

export function tool(target: ToolTarget, name: 'gcc' | 'objdump' | 'nm' | 'readelf' | 'addr2line'): string {
  return PREFIX[target] + name;
}

export function hasTool(command: string): boolean {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    try {
      accessSync(join(dir, command), constants.X_OK);
      return true;
    } catch {
      // keep looking
    }
  }
  return false;
}

/** Runs a tool to completion and returns its stdout; throws with its stderr on failure. */
export function run(command: string, args: string[], input?: string): string {
  const r = spawnSync(command, args, { input, encoding: 'utf8', maxBuffer: 1 << 30 });
  if (r.error) throw new Error(`${command} could not run: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}

/** `objdump -d` text of every code section; RISC-V without aliases so mnemonics are exact. */
export function disassemble(target: ToolTarget, elf: string): string {
  const args = ['-d', '-w', elf];
  if (target === 'rv32') args.unshift('-M', 'no-aliases');
  return execFileSync(tool(target, 'objdump'), args, { encoding: 'utf8', maxBuffer: 1 << 30 });
}

/** The oracle target an ELF belongs to, from its e_machine. */
export function targetOfMachine(machine: number): ToolTarget | undefined {
  if (machine === 40) return 'cortex-m4';
  if (machine === 243) return 'rv32';
  return undefined;
}
