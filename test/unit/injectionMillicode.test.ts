import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { thumbInjectionArch } from '../../adapter/arch/cortex-m/trampolineThumb';
import { Rv32PayloadGenerator, rv32InjectionArch } from '../../adapter/arch/riscv/trampolineRv32';
import { ElfImage } from '../../adapter/elf';
import type { RuntimeLayout } from '../../adapter/probe/injection/payload';
import { InjectionPlanner } from '../../adapter/probe/injection/planner';
import { ProgramModel } from '../../adapter/probe/injection/programModel';
import { MINSTRET, type FunctionPlan } from '../../adapter/probe/injection/types';
import { fixturesDir } from '../support/paths';

/**
 * picolibc's -msave-restore millicode on RV32, planned and built: `__riscv_save_N` hooks its t0
 * link and leaves the prologue's arguments alone, `__riscv_restore_N` hooks the stack word it loads
 * ra from (checked against binutils' disassembly), and a restore entry that the previous label's
 * code falls through into gets that code diverted to a copy that runs as many instructions. The
 * QEMU side (exact counts against the trace, the program's output) is
 * test/integration/injectionMillicode.test.ts.
 */

const ELF = join(fixturesDir, 'build', 'rv32', 'programs', 'crc32.elf');
const skip = existsSync(ELF) ? false : 'rv32 programs not built (make -C test/fixtures)';
// A cave within JAL's reach of the code, as the injector takes it from the gap after the image.
const CAVE = { start: 0x8008_0000, size: 0x10000 };
const LAYOUT: RuntimeLayout = {
  ctrl: 0x8008_0000,
  shadowSlots: 64,
  runtime: 0x8008_0400,
  dispatchTable: 0x8008_0800,
  dispatchCapacity: 8,
};
const T0 = 5;
const ARGUMENTS = 0x3fc00; // a0-a7

function setup(): { planner: InjectionPlanner; model: ProgramModel } {
  const arch = rv32InjectionArch();
  const model = new ProgramModel(ElfImage.loadSync(ELF), arch);
  return { planner: new InjectionPlanner(model, arch, CAVE), model };
}

/** binutils' disassembly of [start, end): mnemonic and operands per instruction. */
function objdump(args: string[]): Array<{ address: number; text: string }> {
  const r = spawnSync('riscv64-unknown-elf-objdump', args, { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout
    .split('\n')
    .map((l) => /^\s*([0-9a-f]+):\s+[0-9a-f]+\s+(\S+)\s*(\S*)/.exec(l))
    .filter((m) => m !== null)
    .map((m) => ({ address: parseInt(m[1]!, 16), text: `${m[2]} ${m[3]}`.trim() }));
}

/** The program's instructions from `start` through the first ret. */
function throughRet(start: number): string[] {
  const out: string[] = [];
  for (const x of objdump([
    '-d',
    `--start-address=0x${start.toString(16)}`,
    `--stop-address=0x${(start + 0x100).toString(16)}`,
    ELF,
  ])) {
    out.push(x.text);
    if (x.text === 'ret') return out;
  }
  assert.fail(`no ret after 0x${start.toString(16)}`);
}

/** Instructions of `bytes` placed at `address`, from `at` through the first jump. */
function codeAt(bytes: Uint8Array, address: number, at: number): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'cyclelens-millicode-unit-'));
  try {
    const bin = join(dir, 'code.bin');
    writeFileSync(bin, bytes);
    const out: string[] = [];
    for (const x of objdump([
      '-D',
      '-b',
      'binary',
      '-m',
      'riscv:rv32',
      `--adjust-vma=0x${address.toString(16)}`,
      bin,
    ])) {
      if (x.address < at) continue;
      out.push(x.text);
      if (/^(j|jr|ret)\b/.test(x.text)) break;
    }
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function planOf(planner: InjectionPlanner, name: string): FunctionPlan {
  const p = planner.planFunction(name);
  assert.ok(p.ok && p.kind === 'function', `${name} is entry-patched: ${p.ok ? p.kind : p.reason}`);
  return p;
}

describe('RV32 -msave-restore millicode plans', { skip }, () => {
  it('__riscv_save_N hooks the t0 link, keeps ra in a frame and leaves the arguments alone', () => {
    const { planner, model } = setup();
    const saves = model.functions.filter((f) => /^__riscv_save_\d+$/.test(f.name));
    assert.ok(saves.length >= 4, 'picolibc brings __riscv_save_N');
    const generator = new Rv32PayloadGenerator(MINSTRET);
    const runtime = generator.buildRuntime(LAYOUT);
    for (const f of saves) {
      const site = planOf(planner, f.name).entry;
      assert.equal(site.link, T0, `${f.name} links through t0`);
      assert.equal(
        site.freeRegisters & ((1 << T0) | ARGUMENTS),
        0,
        `${f.name}: neither t0 nor the prologue's arguments are free`,
      );
      const stub = generator.buildStubs(
        { kind: 'function', payload: 'software', record: 0x8008_1000, at: 0x8008_2000, entry: site },
        runtime,
        LAYOUT,
      );
      const entry = codeAt(stub.bytes, stub.address, stub.entry).join('\n');
      assert.match(entry, /^add sp,sp,-16\nsw ra,0\(sp\)\nmv ra,t0\n/, `${f.name}: ra kept first, t0 carried in ra`);
      assert.match(
        entry,
        /csrw mstatus,t0\n(lw \S+\n)*(add sp,sp,\d+\n)?mv t0,ra\nlw ra,0\(sp\)\nadd sp,sp,16\n/,
        `${f.name}: t0 = the exit stub, ra back`,
      );
      assert.doesNotMatch(entry, /\ba[0-7],/, `${f.name}: the entry stub writes no argument register`);
      const exit = codeAt(stub.bytes, stub.address, stub.exit!);
      assert.equal(
        exit[0],
        'csrr t0,minstret',
        `${f.name}: the exit reads the counter into t0 (its value was the exit stub)`,
      );
      assert.deepEqual(
        exit.slice(1, 3),
        ['add sp,sp,-48', 'sw ra,44(sp)'],
        `${f.name}: ra stored before the exit routine runs`,
      );
    }
  });

  it(
    'a jump from one save label into the code another owns is hooked as a second entry of that ' +
      'one, keeping what is live where it lands',
    () => {
      const { planner, model } = setup();
      let hooked = 0;
      for (const f of model.functions.filter((x) => /^__riscv_save_\d+$/.test(x.name))) {
        const p = planOf(planner, f.name);
        // binutils' view: jumps from code before this label into [start, next label).
        const into = objdump([
          '-d',
          `--start-address=0x${(f.start - 0x40).toString(16)}`,
          `--stop-address=0x${f.start.toString(16)}`,
          ELF,
        ])
          .map((x) => ({ address: x.address, target: /^j ([0-9a-f]+)$/.exec(x.text)?.[1] }))
          .filter(
            (x) =>
              x.target !== undefined &&
              parseInt(x.target, 16) > f.start &&
              model.functionContaining(parseInt(x.target, 16)) === f,
          );
        assert.deepEqual(
          (p.bodyEntries ?? []).map((b) => b.displaced.at(-1)!.address),
          into.map((x) => x.address),
          `${f.name}: every jump into its own code from before it is hooked`,
        );
        for (const b of p.bodyEntries ?? []) {
          hooked++;
          assert.equal(b.link, T0, `${f.name}: the body entry returns through t0 too`);
          assert.ok(b.bodyEntry);
          assert.notEqual(
            (b.keptRegisters ?? 0) & (1 << 6),
            0,
            `${f.name}: t1 (the frame size save_N subtracts at its end) is kept across the body entry's stub`,
          );
        }
      }
      assert.ok(hooked > 0, 'some save label is jumped into');
    },
  );

  it(
    '__riscv_restore_N hooks the stack word it loads ra from, and code falling through into its ' +
      'entry runs a copy as long',
    () => {
      const { planner, model } = setup();
      const restores = model.functions.filter((f) => /^__riscv_restore_\d+$/.test(f.name));
      assert.ok(restores.length >= 4, 'picolibc brings __riscv_restore_N');
      let diverted = 0;
      for (const f of restores) {
        const p = planOf(planner, f.name);
        // binutils' view: the sp adjustments before `lw ra,N(sp)`, plus N.
        let sp = 0;
        let slot: number | undefined;
        for (const t of throughRet(f.start)) {
          const add = /^(?:c\.)?addi? sp,sp,(-?\d+)$/.exec(t);
          const load = /^lw ra,(\d+)\(sp\)$/.exec(t);
          if (add) sp += Number(add[1]);
          if (load) slot = sp + Number(load[1]);
        }
        assert.equal(p.entry.returnSlot, slot, `${f.name}: ra comes from sp+${slot} at the entry`);
        const previous = objdump([
          '-d',
          `--start-address=0x${(f.start - 2).toString(16)}`,
          `--stop-address=0x${f.start.toString(16)}`,
          ELF,
        ]).at(-1)?.text;
        const fallsIn = previous !== undefined && !/^(j|jr|ret)\b/.test(previous);
        assert.equal(
          p.bypass !== undefined,
          fallsIn,
          `${f.name}: diverted exactly when the code before it (${previous}) falls through`,
        );
        if (!p.bypass) continue;
        diverted++;
        const original = throughRet(p.bypass.address);
        const copy = codeAt(p.bypass.copy, 0x8008_3000, 0x8008_3000);
        assert.equal(
          copy.length + 1,
          original.length,
          `${f.name}: the jump into the copy and the copy run as many instructions as the code they replace`,
        );
        assert.equal(copy.at(-1), 'ret');
        const loaded = (xs: string[]): string[] =>
          xs.map((t) => /^lw (\w+),/.exec(t)?.[1]).filter((r): r is string => r !== undefined);
        assert.deepEqual(
          loaded(copy),
          loaded(original),
          `${f.name}: the copy loads the same registers in the same order`,
        );
      }
      assert.ok(diverted > 0, 'some restore entry is reached by falling through');
    },
  );

  it(
    'code that falls through into an entry with no copy to divert it to is measured with a ' +
      'warning, and padding after a return is no fall-through',
    () => {
      const elf = join(fixturesDir, 'build', 'cortex-m4', 'programs', 'crc32.elf');
      if (!existsSync(elf)) return;
      const arch = thumbInjectionArch();
      const model = new ProgramModel(ElfImage.loadSync(elf), arch);
      const planner = new InjectionPlanner(model, arch, { start: 0x2001_0000, size: 0x10000 });
      // libgcc's __aeabi_dsub flips the sign and runs on into __adddf3: diverted on Thumb
      // (injectionThumbFallThrough.test.ts), and without the family's copy it is a warning.
      assert.ok(planOf(planner, '__adddf3').bypass, 'diverted');
      const bare = { ...arch, relocatesFallThrough: false, farBypass: undefined };
      const add = planOf(
        new InjectionPlanner(new ProgramModel(ElfImage.loadSync(elf), bare), bare, {
          start: 0x2001_0000,
          size: 0x10000,
        }),
        '__adddf3',
      );
      assert.ok(
        add.warnings.some(
          (w) =>
            w.code === 'fallThroughCounted' &&
            /__aeabi_dsub's code falls through into __adddf3's entry/.test(w.message),
        ),
        JSON.stringify(add.warnings),
      );
      // __gtdf2 ends with a return and an alignment NOP before __ltdf2: nothing runs into __ltdf2.
      const lt = planOf(planner, '__ltdf2');
      assert.ok(!lt.warnings.some((w) => w.code === 'fallThroughCounted'), JSON.stringify(lt.warnings));
    },
  );
});
