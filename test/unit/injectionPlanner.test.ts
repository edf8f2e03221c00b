import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';
import { thumbInjectionArch } from '../../adapter/arch/cortex-m/trampolineThumb';
import { rv32InjectionArch } from '../../adapter/arch/riscv/trampolineRv32';
import { ElfImage } from '../../adapter/elf';
import { buildCfg, liveIn } from '../../adapter/probe/injection/cfg';
import { InjectionPlanner } from '../../adapter/probe/injection/planner';
import { ProgramModel } from '../../adapter/probe/injection/programModel';
import type { CaveReach, InjectionArch, InjectionRefusal } from '../../adapter/probe/injection/types';
import { spawnSync } from 'node:child_process';
import {
  readElfText,
  referencedAddress,
  rv32Toolchain,
  thumbToolchain,
  type GnuToolchain,
  type ObjdumpLine,
} from '../support/gnuTools';
import { markerLine } from '../support/markers';
import { fixtureElf, fixturesDir } from '../support/paths';

/**
 * Planner decisions on the real fixture firmware (test/fixtures), both targets. Expected branch
 * sources, call sites and table sizes come from the real objdump's listing, not from our decoder.
 */

const toolAvailable = (tc: GnuToolchain, tool: string): boolean =>
  spawnSync(`${tc.prefix}${tool}`, ['--version']).status === 0;
const rvPath = fixtureElf('rv32', 'singlepass');
const rvCyclic = fixtureElf('rv32', 'cyclic');
const cmPath = fixtureElf('cortex-m4', 'singlepass');
const haveRv = existsSync(rvPath) && existsSync(rvCyclic) && toolAvailable(rv32Toolchain(), 'objdump');
const haveCm = existsSync(cmPath) && toolAvailable(thumbToolchain(), 'objdump');
const hex = (n: number): string => `0x${n.toString(16)}`;

function setup(
  path: string,
  arch: InjectionArch,
  cave: (scratch: number) => CaveReach,
): { elf: ElfImage; model: ProgramModel; planner: InjectionPlanner; scratch: number } {
  const elf = ElfImage.loadSync(path);
  const model = new ProgramModel(elf, arch);
  const scratch = elf.symbols.named('__cyclelens_scratch_start')[0]!.address;
  return { elf, model, planner: new InjectionPlanner(model, arch, cave(scratch)), scratch };
}

/** objdump's direct branch sources into (start, end): what the planner must find on its own. */
function objdumpBranchesInto(lines: ObjdumpLine[], start: number, end: number): number[] {
  return lines
    .filter((l) => !l.isData && /^(b|c\.b|j|c\.j|cb|tb)/.test(l.mnemonic) && !/^(bl|blx|bx)$/.test(l.mnemonic))
    .filter((l) => {
      const t = referencedAddress(l);
      return t !== undefined && t > start && t < end;
    })
    .map((l) => l.address);
}

function refused(r: unknown): InjectionRefusal {
  const plan = JSON.stringify(r, (_k, v) => (v instanceof Uint8Array ? undefined : v)).slice(0, 300);
  assert.equal((r as { ok: boolean }).ok, false, `expected a refusal, got a plan: ${plan}`);
  return r as InjectionRefusal;
}

describe(
  'injection planner on the RV32 fixture',
  { skip: haveRv ? false : 'rv32 fixtures or riscv64-unknown-elf-objdump missing' },
  () => {
    const tpCave = (s: number): CaveReach => ({ start: s, size: 4096, threadPointerBase: s + 2048 });
    const farCave = (s: number): CaveReach => ({ start: s, size: 4096 });

    it('sees that no instruction names tp, so tp can hold the cave base', () => {
      const { model } = setup(rvPath, rv32InjectionArch(), tpCave);
      assert.equal(model.referencesRegister(4), false);
      const listing = readElfText(rv32Toolchain(), rvPath).lines;
      assert.ok(!listing.some((l) => /\btp\b/.test(l.operands)), 'objdump agrees: no tp operand');
    });

    it('resolves the vm_run jump table (lw + add + jr) to targets inside vm_run', () => {
      const { model } = setup(rvPath, rv32InjectionArch(), tpCave);
      const vm = model.functionNamed('vm_run')!;
      const tables = model.jumpTables.filter((t) => t.function === 'vm_run');
      assert.equal(tables.length, 1);
      const t = tables[0]!;
      assert.ok(t.resolved, t.reason);
      assert.ok(t.targets.length >= 8, `${t.targets.length} targets`);
      const starts = new Set(vm.instructions.map((i) => i.address));
      for (const target of t.targets) assert.ok(starts.has(target), `${hex(target)} is an instruction of vm_run`);
      // The table lies in .rodata: objdump shows the label the base is computed from.
      assert.ok(t.table! > vm.end, 'table after the code');
    });

    it('can instrument every function with a 4-byte tp patch except the trap handler (MRET)', () => {
      const { model, planner } = setup(rvPath, rv32InjectionArch(), tpCave);
      const refusedFns: string[] = [];
      for (const fn of model.functions) {
        const plan = planner.planFunction(fn.name);
        if (plan.ok) {
          assert.equal(plan.entry.shape.kind, 'rvTp');
          assert.equal(plan.entry.address, fn.start);
        } else refusedFns.push(`${fn.name}:${plan.code}`);
      }
      assert.deepEqual(refusedFns, ['trap_entry:exceptionReturn']);
      const share = (model.functions.length - refusedFns.length) / model.functions.length;
      assert.ok(share >= 0.97, `${(share * 100).toFixed(1)} % instrumentable`);
    });

    it('refuses the trap handler with a sentence naming its MRET', () => {
      const { planner, model } = setup(rvPath, rv32InjectionArch(), tpCave);
      const r = refused(planner.planFunction('trap_entry'));
      const mret = model.functionNamed('trap_entry')!.instructions.find((i) => i.mnemonic === 'mret')!;
      assert.equal(r.code, 'exceptionReturn');
      assert.match(r.reason, new RegExp(`mret at ${hex(mret.address)}`));
    });

    it(
      'refuses a patch whose bytes a loop branches into (8-byte auipc patch, cave beyond JAL ' +
        'range), naming the branch',
      () => {
        const { planner, model } = setup(rvPath, rv32InjectionArch(), farCave);
        const lines = readElfText(rv32Toolchain(), rvPath).lines;
        let checked = 0;
        for (const name of ['memcpy', 'histogram_fill', 'board_putc']) {
          const fn = model.functionNamed(name)!;
          const sources = objdumpBranchesInto(lines, fn.start, fn.start + 8);
          assert.ok(sources.length > 0, `objdump shows a branch into the first 8 bytes of ${name}`);
          const r = refused(planner.planFunction(name));
          assert.equal(r.code, 'branchIntoPatch');
          assert.ok(
            sources.some((s) => r.reason.includes(`at ${hex(s)}`)),
            r.reason,
          );
          assert.match(r.reason, /inside the 8 bytes the patch at/);
          checked++;
        }
        assert.equal(checked, 3);
      },
    );

    it('uses auipc t0 + jalr when the cave is beyond JAL and tp is not offered (t0 is dead at entry)', () => {
      const { planner } = setup(rvPath, rv32InjectionArch(), farCave);
      const plan = planner.planFunction('crc16_step');
      assert.ok(plan.ok);
      assert.deepEqual(plan.entry.shape, { kind: 'rvAuipc', length: 8, scratch: 5 });
    });

    it(
      'offers call-site instrumentation for a 2-byte function (idle_point) and plans it through ' + 'the tp dispatcher',
      () => {
        const { planner, model } = setup(rvCyclic, rv32InjectionArch(), tpCave);
        const r = refused(planner.planFunction('idle_point'));
        assert.equal(r.code, 'tooShort');
        assert.match(r.reason, /needs 4 bytes .* only 2 byte/);
        const listing = readElfText(rv32Toolchain(), rvCyclic).lines;
        const fn = model.functionNamed('idle_point')!;
        const calls = listing.filter(
          (l) =>
            /jal/.test(l.mnemonic) && !/^(c\.jr|jalr|c\.jalr)$/.test(l.mnemonic) && referencedAddress(l) === fn.start,
        );
        assert.ok(r.callSites, 'call sites offered');
        assert.deepEqual(
          r.callSites!.usable.map((s) => s.address),
          calls.map((l) => l.address),
        );
        const plan = planner.planCallSites('idle_point');
        assert.ok(plan.ok);
        assert.equal(plan.sites[0]!.length, 2, 'c.jal: rewritten to c.jalr tp');
      },
    );

    it('without tp a 2-byte c.jal site is missed and the reason says why', () => {
      const { planner } = setup(rvCyclic, rv32InjectionArch(), farCave);
      const r = refused(planner.planCallSites('idle_point'));
      assert.match(r.reason, /c\.jal .*\+\/-2 KiB/);
    });

    it(
      'checks a region against its CFG: the marked fir_filter loop body is fine; from the entry, ' +
        'the early return escapes',
      () => {
        const { planner, elf, model } = setup(rvPath, rv32InjectionArch(), tpCave);
        const dsp = `${fixturesDir}/src/dsp.c`;
        const start = elf.lineTable.addressesForLine(dsp, markerLine(dsp, '#REGION_START'))[0]!;
        const end = elf.lineTable.addressesForLine(dsp, markerLine(dsp, '#REGION_END'))[0]!;
        const plan = planner.planRegion(start, end);
        assert.ok(plan.ok, plan.ok ? '' : plan.reason);
        const fn = model.functionNamed('fir_filter')!;
        const r = refused(planner.planRegion(fn.start, end));
        assert.equal(r.code, 'regionPaths');
        assert.match(r.reason, /Not every path .* returns without passing it/);
        const r2 = refused(planner.planRegion(start, model.functionNamed('clamp_s16')!.start));
        assert.match(r2.reason, /same function/);
      },
    );

    it('liveness: at the fir_filter loop head the saved registers are live and the temporaries dead', () => {
      const { model, elf } = setup(rvPath, rv32InjectionArch(), tpCave);
      const arch = rv32InjectionArch();
      const fn = model.functionNamed('fir_filter')!;
      const cfg = buildCfg(
        fn,
        model.jumpTables.filter((t) => t.function === fn.name),
      );
      const live = liveIn(cfg, arch.liveness!);
      const dsp = `${fixturesDir}/src/dsp.c`;
      const start = elf.lineTable.addressesForLine(dsp, markerLine(dsp, '#REGION_START'))[0]!;
      const l = live[cfg.index.get(start)!]!;
      for (const t of [5, 6, 7, 28, 29, 30, 31]) assert.equal(l & (1 << t), 0, `x${t} dead`);
      assert.notEqual(l & (1 << 2), 0, 'sp live');
    });
  },
);

describe(
  'injection planner on the Cortex-M4 fixture',
  { skip: haveCm ? false : 'cortex-m4 fixtures or arm-none-eabi-objdump missing' },
  () => {
    // SRAM is 512 MiB from code: B.W cannot reach, so the far cave takes LDR.W pc + literal (8/10 bytes).
    const farCave = (s: number): CaveReach => ({ start: s, size: 4096 });
    // A cave in code memory (SSRAM1 is RAM on mps2): B.W reaches it, 4-byte patches.
    const nearCave = (): CaveReach => ({ start: 0x00100000, size: 4096 });

    it('resolves the TBB table of vm_run from its cmp bound, matching the table objdump shows', () => {
      const { model } = setup(cmPath, thumbInjectionArch(), farCave);
      const t = model.jumpTables.find((x) => x.function === 'vm_run' && x.resolved);
      assert.ok(t, JSON.stringify(model.jumpTables));
      const lines = readElfText(thumbToolchain(), cmPath).lines;
      const tbb = lines.find((l) => l.mnemonic === 'tbb');
      assert.equal(t.branch, tbb!.address);
      const vm = model.functionNamed('vm_run')!;
      const starts = new Set(vm.instructions.map((i) => i.address));
      for (const target of t.targets) assert.ok(starts.has(target), `${hex(target)} is an instruction`);
    });

    it(
      'moves an IT block the patch cuts whole (select_max: cmp; it lt ... with a 4-byte B.W): the ' +
        'stub resumes after its last member',
      () => {
        const { planner, model } = setup(cmPath, thumbInjectionArch(), nearCave);
        const plan = planner.planFunction('select_max');
        assert.ok(plan.ok && plan.kind === 'function', JSON.stringify(plan));
        const insns = model.functionNamed('select_max')!.instructions;
        const itIndex = insns.findIndex((i) => i.kind === 'it');
        const it = insns[itIndex]!;
        const lastMember = insns[itIndex + it.itCount!]!;
        assert.ok(it.address < plan.entry.address + 4, 'the IT lies inside the 4 patched bytes');
        assert.ok(plan.entry.displaced.includes(lastMember), 'every predicated member is displaced with it');
        assert.equal(plan.entry.resume, lastMember.address + lastMember.length);
      },
    );

    it('refuses a patch that starts inside an IT block (a region from a predicated instruction)', () => {
      const { planner, model } = setup(cmPath, thumbInjectionArch(), nearCave);
      const insns = model.functionNamed('select_max')!.instructions;
      const itIndex = insns.findIndex((i) => i.kind === 'it');
      const r = refused(planner.planRegion(insns[itIndex + 1]!.address, insns.at(-1)!.address));
      assert.equal(r.code, 'itBlock');
      assert.match(
        r.reason,
        new RegExp(`predicated by ${insns[itIndex]!.mnemonic} at ${hex(insns[itIndex]!.address)}`),
      );
    });

    it("refuses an inline table branch among the displaced instructions (a region starting at vm_run's tbb)", () => {
      const { planner, model } = setup(cmPath, thumbInjectionArch(), nearCave);
      const tbb = model.functionNamed('vm_run')!.instructions.find((i) => i.mnemonic === 'tbb')!;
      const r = refused(planner.planRegion(tbb.address, model.functionNamed('vm_run')!.instructions.at(-1)!.address));
      assert.equal(r.code, 'unrelocatable');
      assert.match(r.reason, /tbb at .* jump table follows/);
    });

    it('refuses a 4-byte function with the 8-byte patch (too short) and says whether call sites can help', () => {
      const { planner } = setup(cmPath, thumbInjectionArch(), farCave);
      const r = refused(planner.planFunction('board_irq_disable'));
      assert.equal(r.code, 'tooShort');
      assert.match(r.reason, /needs 8 bytes \(LDR\.W pc, \[pc\] \+ literal\), but board_irq_disable has only 4 byte/);
      const cs = refused(planner.planCallSites('board_irq_disable'));
      assert.match(cs.reason, /bl reaches \+\/-16 MiB/);
      const near = setup(cmPath, thumbInjectionArch(), nearCave).planner.planCallSites('board_irq_disable');
      assert.ok(near.ok, 'with a cave in reach the BL is rewritten');
    });

    it('refuses a patch a loop branches into (memcpy, board_putc) naming the branch objdump shows', () => {
      const { planner, model } = setup(cmPath, thumbInjectionArch(), farCave);
      const lines = readElfText(thumbToolchain(), cmPath).lines;
      for (const name of ['memcpy', 'board_putc']) {
        const fn = model.functionNamed(name)!;
        const sources = objdumpBranchesInto(lines, fn.start, fn.start + 8);
        const r = refused(planner.planFunction(name));
        assert.equal(r.code, 'branchIntoPatch', r.reason);
        assert.ok(
          sources.some((s) => r.reason.includes(`at ${hex(s)}`)),
          `${r.reason} / objdump: ${sources.map(hex)}`,
        );
      }
    });

    it(
      'plans the literal-load entry of ticks_now (LDR pc-relative) and keeps the dead NOP after ' +
        'bx out of the move',
      () => {
        const { planner } = setup(cmPath, thumbInjectionArch(), farCave);
        const plan = planner.planFunction('ticks_now');
        assert.ok(plan.ok, plan.ok ? '' : plan.reason);
        assert.equal(plan.entry.shape.kind, 'thumbLdrPc');
        const d = plan.entry.displaced;
        assert.equal(d.length, 4);
        assert.ok(d[0]!.readsPc && d[0]!.target !== undefined, 'a literal load first');
        assert.equal(d[2]!.kind, 'return');
        assert.equal(d[3]!.mnemonic, 'nop');
      },
    );

    it('instruments most functions even with the far cave', () => {
      const { model, planner } = setup(cmPath, thumbInjectionArch(), farCave);
      const ok = model.functions.filter((f) => planner.planFunction(f.name).ok).length;
      assert.ok(ok / model.functions.length > 0.75, `${ok}/${model.functions.length}`);
    });
  },
);

describe('the -fipa-ra view of calls (RV32)', { skip: haveRv ? false : 'rv32 fixture missing' }, () => {
  it('clobber sets follow the call graph: a caller writes what its callees write', () => {
    const { planner, model } = setup(rvPath, rv32InjectionArch(), (s) => ({
      start: s,
      size: 4096,
      threadPointerBase: s + 2048,
    }));
    const clob = (n: string): number => planner.clobberOf(model.functionNamed(n)!)!;
    const selectMax = clob('select_max');
    const defs =
      model
        .functionNamed('select_max')!
        .instructions.reduce((m, i) => m | rv32InjectionArch().liveness!.effects(i).defs, 0) >>> 0;
    assert.equal(selectMax, defs, 'a leaf writes exactly its own destinations');
    assert.equal(selectMax & (1 << 28), 0, 't3 untouched by select_max');
    assert.equal(
      (clob('crc16_block') & clob('crc16_step')) >>> 0,
      clob('crc16_step'),
      'crc16_block includes crc16_step',
    );
    // No caller in the fixture keeps a t-register or a2-a5 alive across a call whose callee leaves
    // it alone, so nothing is refused for that reason (the integration tests confirm the program
    // still computes its checksum with every function measured).
    for (const fn of model.functions) {
      const p = planner.planFunction(fn.name);
      if (!p.ok) assert.doesNotMatch(p.reason, /-fipa-ra/);
    }
  });
});
