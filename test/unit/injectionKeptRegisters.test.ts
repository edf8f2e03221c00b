import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Rv32PayloadGenerator, rv32InjectionArch } from '../../adapter/arch/riscv/trampolineRv32';
import { ElfImage } from '../../adapter/elf';
import { buildGroupStubs } from '../../adapter/probe/injection/groupStubs';
import type { RuntimeLayout, StubImage } from '../../adapter/probe/injection/payload';
import { InjectionPlanner } from '../../adapter/probe/injection/planner';
import { ProgramModel } from '../../adapter/probe/injection/programModel';
import { MINSTRET, type PatchSite } from '../../adapter/probe/injection/types';
import { fixturesDir } from '../support/paths';

/**
 * RV32 functions whose callers keep values in caller-saved registers across the call (-fipa-ra):
 * planned with those registers named (not refused), stubs that give them back, and groups whose
 * shared exit stub gives back what any member's callers keep. The QEMU side (exact counts, the
 * registers after the call, the program's output) is test/integration/injectionKeptRegisters.test.ts.
 */

const ELF = join(fixturesDir, 'build', 'rv32', 'programs', 'softfloat.elf');
const skip = existsSync(ELF) ? false : 'rv32 programs not built (make -C test/fixtures)';
// A cave far from the code (as without reserved memory on virt): the 8-byte auipc patch, far exits.
const LAYOUT: RuntimeLayout = {
  ctrl: 0x87f0_0000,
  shadowSlots: 64,
  runtime: 0x87f0_0400,
  dispatchTable: 0x87f0_0800,
  dispatchCapacity: 8,
};
const T0 = 5;

function setup(): { planner: InjectionPlanner; model: ProgramModel; generator: Rv32PayloadGenerator } {
  const arch = rv32InjectionArch();
  const model = new ProgramModel(ElfImage.loadSync(ELF), arch);
  return {
    planner: new InjectionPlanner(model, arch, { start: 0x87f0_0000, size: 0x10000 }),
    model,
    generator: new Rv32PayloadGenerator(MINSTRET),
  };
}

function entryOf(planner: InjectionPlanner, name: string): PatchSite {
  const p = planner.planFunction(name);
  assert.ok(p.ok && p.kind === 'function', `${name} is entry-patched: ${p.ok ? p.kind : p.reason}`);
  return p.entry;
}

/** The stub's instructions from `at` up to the first jump, as riscv64-unknown-elf-objdump prints them. */
function code(stub: StubImage, at: number): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'cyclelens-kept-unit-'));
  try {
    const bin = join(dir, 'stub.bin');
    writeFileSync(bin, stub.bytes);
    const r = spawnSync(
      'riscv64-unknown-elf-objdump',
      ['-D', '-b', 'binary', '-m', 'riscv:rv32', `--adjust-vma=0x${stub.address.toString(16)}`, bin],
      {
        encoding: 'utf8',
      },
    );
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout
      .split('\n')
      .map((l) => /^\s*([0-9a-f]+):\s+[0-9a-f]+\s+(\S+)\s*(\S*)/.exec(l))
      .filter((m) => m !== null);
    const out: string[] = [];
    for (const m of lines.filter((x) => parseInt(x[1]!, 16) >= at)) {
      out.push(`${m[2]} ${m[3]}`.trim());
      if (m[2] === 'j' || m[2] === 'jr' || m[2] === 'ret') break;
    }
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('RV32 callers that keep registers across a call (-fipa-ra)', { skip }, () => {
  it(
    'the planner names the kept registers instead of refusing, and neither the patch nor the ' + 'jump back uses one',
    () => {
      const { planner } = setup();
      const site = entryOf(planner, '__adddf3');
      assert.ok(((site.keptRegisters ?? 0) & (1 << T0)) !== 0, 'main keeps t0 across __adddf3');
      assert.equal((site.freeRegisters & site.keptRegisters!) >>> 0, 0, 'no kept register is free');
      assert.equal(site.shape.kind, 'rvAuipc');
      if (site.shape.kind === 'rvAuipc')
        assert.equal(
          site.keptRegisters! & (1 << site.shape.scratch),
          0,
          'the patch goes through a register nobody keeps',
        );
    },
  );

  it('the entry stub stores the kept t-registers before it uses them and loads them before the program runs on', () => {
    const { planner, generator } = setup();
    const site = entryOf(planner, '__adddf3');
    const runtime = generator.buildRuntime(LAYOUT);
    const stub = generator.buildStubs(
      { kind: 'function', payload: 'software', record: 0x87f0_1000, at: 0x87f0_2000, entry: site },
      runtime,
      LAYOUT,
    );
    const entry = code(stub, stub.entry).join('\n');
    assert.match(entry, /^add sp,sp,-16\nsw t0,0\(sp\)/, 'the frame, then t0, first');
    assert.match(entry, /csrw mstatus,t0\nlw t0,0\(sp\)/, 't0 given back right after its last use');
    const exit = code(stub, stub.exit!);
    assert.match(
      exit[0]!,
      /^csrr ra,minstret/,
      'the exit reads the counter into ra (free there), before storing anything',
    );
    assert.ok(stub.counted.outer > 4 && /giving back x5/.test(stub.counted.explanation), stub.counted.explanation);
  });

  it(
    'a group whose members differ in kept registers: one set of costs, and every exit stub ' + 'gives back the union',
    () => {
      const { planner, model, generator } = setup();
      const withKept = entryOf(planner, '__adddf3');
      const plain = model.functions
        .map((f) => f.name)
        .find((n) => {
          const p = planner.planFunction(n);
          return p.ok && p.kind === 'function' && !p.entry.keptRegisters;
        });
      assert.ok(plain, 'a function nobody keeps registers across');
      const runtime = generator.buildRuntime(LAYOUT);
      const alone = generator.buildStubs(
        { kind: 'function', payload: 'software', record: 0x87f0_1000, at: 0x87f0_2000, entry: entryOf(planner, plain) },
        runtime,
        LAYOUT,
      );
      assert.match(code(alone, alone.exit!)[0]!, /^csrr t3/, `${plain} alone keeps the plain exit`);
      const stubs = buildGroupStubs(
        generator,
        [
          { name: plain, entry: entryOf(planner, plain), at: 0x87f0_2000 },
          { name: '__adddf3', entry: withKept, at: 0x87f0_2400 },
        ],
        0x87f0_1000,
        runtime,
        LAYOUT,
      );
      assert.deepEqual(stubs[0]!.costs, stubs[1]!.costs);
      assert.equal(stubs[0]!.counted.outer, stubs[1]!.counted.outer);
      for (const s of stubs) assert.match(code(s, s.exit!)[0]!, /^csrr ra/, 'the shared exit saves for the union');
      assert.deepEqual(code(stubs[0]!, stubs[0]!.exit!).slice(0, 3), code(stubs[1]!, stubs[1]!.exit!).slice(0, 3));
    },
  );
});
