import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, it } from 'node:test';
import { DecodeError, decodeAll } from '../../adapter/arch/codec';
import { thumbInjectionArch } from '../../adapter/arch/cortex-m/trampolineThumb';
import { rv32AddressTaking } from '../../adapter/arch/riscv/rvAddressTaking';
import { Rv32Codec } from '../../adapter/arch/riscv/rvDecoder';
import { rv32InjectionArch } from '../../adapter/arch/riscv/trampolineRv32';
import { ElfImage } from '../../adapter/elf';
import { takenAddresses } from '../../adapter/probe/injection/planSupport';
import { InjectionPlanner } from '../../adapter/probe/injection/planner';
import { ProgramModel } from '../../adapter/probe/injection/programModel';
import type { InjectionArch } from '../../adapter/probe/injection/types';
import { takenFunctions } from '../oracle/takenAddresses';
import { assemble, rv32Toolchain } from '../support/gnuTools';
import { fixtureElf, fixturesDir, type FixtureTarget } from '../support/paths';

/**
 * Which functions an indirect call may reach (planSupport.ts `takenAddresses`) on the real
 * programs of test/fixtures/programs, against what objdump and readelf show of the same ELF
 * (test/oracle/takenAddresses.ts): every function whose address the program holds is found, and a
 * function measured at its call sites carries the "indirect calls may also reach" note only then.
 */
const haveTools = ['riscv64-unknown-elf-objdump', 'arm-none-eabi-objdump'].every(
  (t) => spawnSync(t, ['--version']).status === 0,
);
const programElf = (target: FixtureTarget, program: string): string =>
  join(fixturesDir, 'build', target, 'programs', `${program}.elf`);
const shell = programElf('rv32', 'shell');
const skip = !haveTools
  ? 'GNU binutils for both targets not installed'
  : !existsSync(shell)
    ? 'fixtures not built (make -C test/fixtures)'
    : false;
const hex = (n: number): string => `0x${n.toString(16)}`;
const ARCH: Record<FixtureTarget, () => InjectionArch> = {
  rv32: () => rv32InjectionArch(),
  'cortex-m4': () => thumbInjectionArch(),
};

function found(target: FixtureTarget, elf: string): { model: ProgramModel; taken: Set<number> } {
  const model = new ProgramModel(ElfImage.loadSync(elf), ARCH[target]());
  const taken = takenAddresses(model);
  assert.ok(typeof taken !== 'string', `${elf}: ${String(taken)}`);
  return { model, taken };
}

describe('addresses a program takes', { skip }, () => {
  it(
    "RV32 shell: the command table's handlers and every other function the tools show taken are " +
      'found; strcpy is not',
    () => {
      const truth = takenFunctions('rv32', shell);
      const { model, taken } = found('rv32', shell);
      // The handlers named in the command table's initialiser, called through its pointers.
      const source = readFileSync(join(fixturesDir, 'programs', 'shell', 'commands.c'), 'utf8');
      const handlers = [...source.matchAll(/\{"\w+", (cmd_\w+),/g)].map((m) => m[1]!);
      assert.ok(handlers.length >= 5, `the command table lists its handlers: ${handlers.join(', ')}`);
      const truthNames = new Set([...truth.taken.keys()].flatMap((a) => truth.functions.get(a)!));
      for (const h of handlers) {
        assert.ok(truthNames.has(h), `objdump shows ${h} in the command table`);
        assert.ok(taken.has(model.functionNamed(h)!.start), `${h} is found taken`);
      }
      for (const [address, where] of truth.taken) {
        assert.ok(
          taken.has(address),
          `${truth.functions.get(address)!.join('/')} at ${hex(address)} is taken (${where.join(', ')}) but not found`,
        );
      }
      const strcpy = model.functionNamed('strcpy')!;
      assert.ok(!truth.taken.has(strcpy.start), 'the tools show no take of strcpy');
      assert.ok(!taken.has(strcpy.start), 'strcpy is not found taken');
    },
  );

  it(
    'RV32 shell: a function found beyond the tools is one whose entry an upper half loads whole ' +
      '(a constant such as LONG_MIN)',
    () => {
      const truth = takenFunctions('rv32', shell);
      const { model, taken } = found('rv32', shell);
      const extra = model.functions.filter((f) => taken.has(f.start) && !truth.taken.has(f.start));
      for (const f of extra)
        assert.ok(
          truth.upperConstants.has(f.start),
          `${f.name} at ${hex(f.start)} is found taken, but nothing the tools show takes it`,
        );
      assert.ok(extra.length < model.functions.length / 10, `few extras: ${extra.map((f) => f.name).join(', ')}`);
    },
  );

  it(
    'RV32 shell: a call-site measurement notes the indirect calls exactly for functions whose ' + 'address is taken',
    () => {
      const truth = takenFunctions('rv32', shell);
      const { model } = found('rv32', shell);
      const planner = new InjectionPlanner(model, rv32InjectionArch(), {
        start: 0x80300000,
        size: 4096,
        threadPointerBase: 0x80300800,
      });
      let planned = 0;
      let noted = 0;
      for (const fn of model.functions) {
        const plan = planner.planCallSites(fn.start);
        if (!plan.ok) continue;
        planned++;
        const note = plan.warnings.find((w) => w.code === 'indirectCallsMissed');
        if (truth.taken.has(fn.start))
          assert.ok(note, `${fn.name}: taken (${truth.taken.get(fn.start)!.join(', ')}) but no note`);
        else if (!truth.upperConstants.has(fn.start))
          assert.equal(note, undefined, `${fn.name}: nothing takes it, yet ${note?.message}`);
        if (note) {
          assert.match(note.message, new RegExp(`may also reach ${fn.name.replace(/[$.]/g, '\\$&')}`));
          noted++;
        }
      }
      const strcpy = planner.planCallSites('strcpy');
      assert.ok(strcpy.ok, JSON.stringify(strcpy));
      assert.deepEqual(
        strcpy.warnings.filter((w) => w.code === 'indirectCallsMissed'),
        [],
        'strcpy is measured at its call sites without the note',
      );
      assert.ok(
        planned > 20 && noted < planned,
        `${planned} functions planned at their call sites, ${noted} with the note`,
      );
    },
  );

  it('the suite programs and the firmware fixtures, both targets: no function the tools show taken is missed', () => {
    for (const target of ['rv32', 'cortex-m4'] as const) {
      const programs = ['crc32', 'sha256', 'sorting', 'json', 'report', 'statemachine', 'shell'].map((p) =>
        programElf(target, p),
      );
      for (const elf of [...programs, fixtureElf(target, 'firmware'), fixtureElf(target, 'isrload')]) {
        const program = basename(elf);
        if (!existsSync(elf)) continue;
        const truth = takenFunctions(target, elf);
        const { taken } = found(target, elf);
        for (const [address, where] of truth.taken) {
          assert.ok(
            taken.has(address),
            `${program} on ${target}: ${truth.functions.get(address)!.join('/')} (${where.join(', ')}) not found`,
          );
        }
      }
    }
  });
});

/**
 * The forms one at a time, assembled by the GNU assembler without relaxation (what the compiler
 * emits before the linker may shorten it). Expected addresses are the assembler's symbols.
 */
describe('RV32 address forms', { skip: haveTools ? false : 'riscv64-unknown-elf binutils not installed' }, () => {
  const formed = (source: string, gp?: string): { set: Set<number> | string; sym: Map<string, number> } => {
    const p = assemble(rv32Toolchain(), source, 0x80000000);
    const instructions = decodeAll(new Rv32Codec(), p.text, p.base);
    const fn = { name: 'start', start: p.base, end: p.base + p.text.length, instructions };
    const r = rv32AddressTaking.formed(fn, {
      symbolAddress: (n) => (n === '__global_pointer$' && gp ? p.symbols.get(gp) : undefined),
      tableTargets: () => undefined,
    });
    return { set: typeof r === 'string' ? r : new Set(r), sym: p.symbols };
  };

  it('an upper half hoisted out of a loop, completed inside it after a call, is a take', () => {
    const { set, sym } = formed(`
        lui s1, %hi(handler)
    1:  addi a0, s1, %lo(handler)
        call other
        addi s0, s0, -1
        bnez s0, 1b
        ret
    other: ret
    .balign 8
    .skip 2052
    handler: ret`);
    assert.ok(
      typeof set !== 'string' && set.has(sym.get('handler')!),
      `handler formed: ${[...(set as Set<number>)].map(hex)}`,
    );
  });

  it('auipc + jalr is a call; an address used only as a load base is read, not taken', () => {
    const { set, sym } = formed(`
        call far
        lui t1, %hi(table)
        lw t2, %lo(table)(t1)
    2:  auipc t3, %pcrel_hi(table)
        lw t4, %pcrel_lo(2b)(t3)
        ret
    .skip 3000
    far: ret
    .balign 4
    .skip 1000
    table: .word 0`);
    assert.ok(typeof set !== 'string');
    assert.ok(!set.has(sym.get('far')!), 'the callee of auipc + jalr');
    assert.ok(!set.has(sym.get('table')!), 'a word only loaded');
  });

  it('auipc + addi stored to memory, and an addi from gp, are takes; without __global_pointer$ gp says why not', () => {
    const source = `
    3:  auipc a5, %pcrel_hi(cb)
        addi a5, a5, %pcrel_lo(3b)
        sw a5, 0(a0)
        addi a1, gp, -2000
        ret
    .skip 3000
    cb: ret
    .balign 4
    .skip 2000
    anchor: ret`;
    const { set, sym } = formed(source, 'anchor');
    assert.ok(typeof set !== 'string');
    assert.ok(set.has(sym.get('cb')!), 'auipc + addi + sw');
    assert.ok(set.has(sym.get('anchor')! - 2000), 'addi from gp');
    const blind = formed(source).set;
    assert.ok(
      typeof blind === 'string' && /addi at 0x[0-9a-f]+ forms an address from gp.*no __global_pointer\$/.test(blind),
      String(blind),
    );
  });
  it('code the walk does not reach from the entry (entered from elsewhere) is walked too', () => {
    const { set, sym } = formed(`
        ret
    side:
        lui t0, %hi(handler)
        addi a0, t0, %lo(handler)
        ret
    .balign 8
    .skip 2100
    handler: ret`);
    assert.ok(typeof set !== 'string' && set.has(sym.get('handler')!), 'handler formed after the entry returned');
  });

  it('code that could not be decoded may form anything: the finder says so instead of guessing', () => {
    const p = assemble(rv32Toolchain(), 'addi a0, a0, 1\n.word 0x0000007f\nret', 0x80000000);
    const codec = new Rv32Codec();
    const instructions = [codec.decode(p.text, p.base)];
    const at = p.base + instructions[0]!.length;
    assert.throws(() => codec.decode(p.text.subarray(at - p.base), at), DecodeError);
    const fn = {
      name: 'start',
      start: p.base,
      end: p.base + p.text.length,
      instructions,
      undecodable: { address: at, reason: 'longer than 32 bits' },
    };
    const r = rv32AddressTaking.formed(fn, { symbolAddress: () => undefined, tableTargets: () => undefined });
    assert.ok(
      typeof r === 'string' && new RegExp(`start: its code from 0x${at.toString(16)} could not be decoded`).test(r),
      String(r),
    );
  });
});
