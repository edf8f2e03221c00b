import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ThumbPayloadGenerator, thumbInjectionArch } from '../../adapter/arch/cortex-m/trampolineThumb';
import { Rv32PayloadGenerator, rv32InjectionArch } from '../../adapter/arch/riscv/trampolineRv32';
import { ElfImage } from '../../adapter/elf';
import type { RuntimeLayout } from '../../adapter/probe/injection/payload';
import { InjectionPlanner } from '../../adapter/probe/injection/planner';
import { ProgramModel } from '../../adapter/probe/injection/programModel';
import { Rec } from '../../adapter/probe/injection/recordLayout';
import {
  MINSTRET,
  SYSTICK_CVR,
  type CaveReach,
  type FunctionPlan,
  type RegionPlan,
} from '../../adapter/probe/injection/types';
import {
  disassembleBytes,
  rv32Toolchain,
  thumbToolchain,
  type GnuToolchain,
  type ObjdumpLine,
} from '../support/gnuTools';
import { markerLine } from '../support/markers';
import { fixtureElf, fixturesDir } from '../support/paths';

/**
 * The bytes the generators write, read back by the real objdump: every instruction decodes, the
 * patch lands on the stub, the counter is read exactly where the design says (one read per side,
 * the store of the start value right after the entry read), interrupts are masked/restored with
 * the instructions the hardware documents, the displaced instructions reappear, and the stub leaves
 * for the right addresses.
 */

const available = (tc: GnuToolchain): boolean => spawnSync(`${tc.prefix}objdump`, ['--version']).status === 0;
const rvElf = fixtureElf('rv32', 'singlepass');
const cmElf = fixtureElf('cortex-m4', 'singlepass');
const rvTc = rv32Toolchain();
const cmTc = thumbToolchain();
const hex = (n: number): string => `0x${n.toString(16)}`;

const between = (lines: ObjdumpLine[], from: number, to: number): ObjdumpLine[] =>
  lines.filter((l) => l.address >= from && l.address < to);
const addressOf = (text: string): number => parseInt(/([0-9a-f]+)(?: <|$)/.exec(text.trim())![1]!, 16);

describe(
  'RV32 trampolines, disassembled by riscv64-unknown-elf-objdump',
  { skip: existsSync(rvElf) && available(rvTc) ? false : 'rv32 fixture or objdump missing' },
  () => {
    const elf = ElfImage.loadSync(rvElf);
    const arch = rv32InjectionArch();
    const model = new ProgramModel(elf, arch);
    const cave = elf.symbols.named('__cyclelens_scratch_start')[0]!.address;
    const tp = cave + 2048;
    const reach: CaveReach = { start: cave, size: 4096, threadPointerBase: tp };
    const planner = new InjectionPlanner(model, arch, reach);
    const layout: RuntimeLayout = {
      ctrl: cave,
      shadowSlots: 64,
      runtime: tp,
      dispatchTable: cave + 300,
      dispatchCapacity: 24,
      threadPointer: tp,
    };
    const g = new Rv32PayloadGenerator(MINSTRET);
    const runtime = g.buildRuntime(layout);
    const rt = disassembleBytes(rvTc, runtime.bytes, runtime.address);
    const record = cave + 700;
    const stubAt = cave + 900;

    it(
      'the runtime decodes completely; the entry masks MIE, pushes ra on the shadow stack and ' +
        'redirects it to the exit stub',
      () => {
        const code = rt.filter((l) => l.address < runtime.address + runtime.bytes.length);
        assert.ok(
          code.every((l) => !l.isData),
          code
            .filter((l) => l.isData)
            .map((l) => l.text)
            .join('; '),
        );
        const ce = between(rt, runtime.labels.CE!, runtime.labels.CX!);
        assert.equal(ce[0]!.text, 'csrrci\tt0,mstatus,8');
        assert.ok(
          ce.some((l) => l.text === 'sw\tra,0(t2)'),
          'push of the real return address',
        );
        assert.ok(
          ce.some((l) => l.text === `lw\tra,${Rec.exit}(t1)`),
          'ra := exit stub',
        );
        const cx = between(rt, runtime.labels.CX!, runtime.labels.HX!);
        assert.ok(
          cx.some((l) => l.text === 'lw\tra,0(t6)'),
          'pop of the real return address',
        );
        assert.equal(
          cx.filter((l) => l.text === 'csrrw\tzero,mstatus,t0').length,
          1,
          'mstatus restored once, before the return',
        );
        const d = between(rt, runtime.labels.D!, runtime.labels.CE!);
        assert.equal(runtime.labels.D, tp, 'the dispatcher sits where tp points (c.jalr tp lands on it)');
        assert.equal(d.at(-1)!.mnemonic, 'ebreak');
      },
    );

    it('the accumulation is straight-line (no branch), so every pass costs the payload the same', () => {
      const acc = between(rt, runtime.labels.ACC!, runtime.address + runtime.bytes.length);
      const body = acc.slice(
        0,
        acc.findIndex((l) => l.text === 'jalr\tzero,0(t6)'),
      );
      assert.ok(body.length > 20);
      assert.ok(!body.some((l) => /^(b|c\.b|jal)/.test(l.mnemonic)), body.map((l) => l.text).join('\n'));
      assert.equal(runtime.paths.ACC, body.length + 1);
    });

    function functionStub(name: string): {
      plan: FunctionPlan;
      lines: ObjdumpLine[];
      patch: ObjdumpLine[];
      stub: ReturnType<typeof g.buildStubs>;
    } {
      const plan = planner.planFunction(name);
      assert.ok(plan.ok, plan.ok ? '' : plan.reason);
      const stub = g.buildStubs(
        { kind: 'function', payload: 'software', record, at: stubAt, entry: plan.entry },
        runtime,
        layout,
      );
      const patch = disassembleBytes(rvTc, g.encodePatch(plan.entry, stub.entry, layout), plan.entry.address);
      return { plan, stub, patch, lines: disassembleBytes(rvTc, stub.bytes, stub.address) };
    }

    it('ticks_now: the patch is jalr zero,off(tp) onto the stub; the AUIPC is re-derived for its new address', () => {
      const { plan, stub, patch, lines } = functionStub('ticks_now');
      assert.equal(patch[0]!.mnemonic, 'jalr');
      const m = /^zero,(-?\d+)\(tp\)$/.exec(patch[0]!.operands)!;
      assert.equal(tp + Number(m[1]), stub.entry);
      const entry = between(lines, stub.entry, stub.exit!);
      const reads = entry.filter((l) => l.text === 'csrrs\tt3,minstret,zero');
      assert.equal(reads.length, 1, 'one counter read at entry');
      const k = entry.indexOf(reads[0]!);
      assert.equal(entry[k + 1]!.text, `sw\tt3,${Rec.start}(t1)`, 'start value stored right after the read');
      assert.equal(entry[k + 2]!.text, 'csrrw\tzero,mstatus,t0', 'then interrupts are restored');
      // The displaced AUIPC computed pc-relative; at the stub it becomes LUI + ADDI of the same value.
      const auipc = plan.entry.displaced[0]!;
      assert.equal(auipc.mnemonic, 'auipc');
      // The LUI half is loaded before the counter read; the ADDI takes the AUIPC's place in the window.
      const lui = entry.find((l) => l.mnemonic === 'lui' && l.operands.startsWith('a0,'))!;
      const addi = entry.find((l) => l.mnemonic === 'addi' && l.operands.startsWith('a0,a0,'))!;
      assert.ok(entry.indexOf(lui) < entry.findIndex((l) => l.text === 'csrrs\tt3,minstret,zero'));
      assert.ok(entry.indexOf(addi) > entry.findIndex((l) => l.text === 'csrrw\tzero,mstatus,t0'));
      assert.equal(stub.counted.outer, 4, 'the moved AUIPC costs nothing in the window');
      const value =
        (parseInt(/,(0x[0-9a-f]+)$/.exec(lui.operands)![1]!, 16) << 12) + Number(/,(-?\d+)$/.exec(addi.operands)![1]);
      assert.equal(value >>> 0, auipc.target);
      void plan;
    });

    it('the exit stub reads the counter first, then enters the shared exit', () => {
      const { stub, lines } = functionStub('crc16_step');
      const exit = between(lines, stub.exit!, stub.address + stub.bytes.length);
      assert.equal(exit[0]!.text, 'csrrs\tt3,minstret,zero');
      assert.equal(exit.at(-1)!.mnemonic, 'jal');
      assert.equal(addressOf(exit.at(-1)!.operands.split(',')[1]!), runtime.labels.CX);
      assert.equal(stub.counted.outer, 4);
    });

    it(
      'crc16_block: the displaced c.beqz becomes a beq to an exit jump, the fall-through path ' + 'jumps back after it',
      () => {
        const { plan, stub, lines } = functionStub('crc16_block');
        const beqz = plan.entry.displaced[0]!;
        assert.equal(beqz.mnemonic, 'c.beqz');
        const entry = between(lines, stub.entry, stub.exit!);
        const beq = entry.find((l) => l.mnemonic === 'beq' && l.operands.startsWith('a1,zero,'))!;
        assert.ok(beq, entry.map((l) => l.text).join('\n'));
        const exitJump = entry.find((l) => l.address === addressOf(beq.operands.split(',')[2]!))!;
        assert.equal(exitJump.mnemonic, 'jalr');
        const luiFor = (reg: string): number =>
          parseInt(
            /,(0x[0-9a-f]+)$/.exec(
              entry.find((l) => l.mnemonic === 'lui' && l.operands.startsWith(`${reg},`))!.operands,
            )![1]!,
            16,
          ) << 12;
        const reg = /\((t\d)\)$/.exec(exitJump.operands)![1]!;
        assert.equal(
          (luiFor(reg) + Number(/^zero,(-?\d+)/.exec(exitJump.operands)![1])) >>> 0,
          beqz.target,
          'the exit jump goes to the branch target',
        );
        const back = entry[entry.indexOf(exitJump) - 1]!;
        const backReg = /\((t\d)\)$/.exec(back.operands)![1]!;
        assert.equal(
          (luiFor(backReg) + Number(/^zero,(-?\d+)/.exec(back.operands)![1])) >>> 0,
          plan.entry.resume,
          'the jump back goes to the first undisplaced instruction',
        );
        assert.equal(stub.counted.outer, 4, 'either outcome runs one exit jump');
      },
    );

    it('a region stub: the end patch jump counts, registers the liveness found dead are used unsaved', () => {
      const dsp = `${fixturesDir}/src/dsp.c`;
      const start = elf.lineTable.addressesForLine(dsp, markerLine(dsp, '#REGION_START'))[0]!;
      const end = elf.lineTable.addressesForLine(dsp, markerLine(dsp, '#REGION_END'))[0]!;
      const plan = planner.planRegion(start, end) as RegionPlan;
      assert.ok(plan.ok);
      const stub = g.buildStubs(
        { kind: 'region', payload: 'software', record, at: stubAt, start: plan.start, end: plan.end },
        runtime,
        layout,
      );
      const lines = disassembleBytes(rvTc, stub.bytes, stub.address);
      const rs = between(lines, stub.entry, stub.regionEnd!);
      assert.ok(
        !rs.some((l) => /^(sw|lw)$/.test(l.mnemonic) && /\(sp\)$/.test(l.operands)),
        'nothing saved at the loop head: temporaries are dead there',
      );
      const re = between(lines, stub.regionEnd!, stub.address + stub.bytes.length);
      assert.equal(re[0]!.text, 'csrrs\tt3,minstret,zero', 'the end reads first (t3 is dead there)');
      assert.equal(stub.counted.outer, 5, 'sw, csrw, jump back, the end patch jump, one csrr');
      const original = elf.file.readMemory(end, 2)!;
      assert.equal(plan.end.displaced[0]!.bytes[0], original[0]);
    });
  },
);

describe(
  'Cortex-M trampolines, disassembled by arm-none-eabi-objdump',
  { skip: existsSync(cmElf) && available(cmTc) ? false : 'cortex-m4 fixture or objdump missing' },
  () => {
    const elf = ElfImage.loadSync(cmElf);
    const arch = thumbInjectionArch();
    const model = new ProgramModel(elf, arch);
    const cave = elf.symbols.named('__cyclelens_scratch_start')[0]!.address;
    const planner = new InjectionPlanner(model, arch, { start: cave, size: 4096 });
    const layout: RuntimeLayout = {
      ctrl: cave,
      shadowSlots: 64,
      runtime: cave + 600,
      dispatchTable: cave + 300,
      dispatchCapacity: 24,
    };
    const g = new ThumbPayloadGenerator(SYSTICK_CVR, 1 / 40);
    const runtime = g.buildRuntime(layout);
    const rt = disassembleBytes(cmTc, runtime.bytes, runtime.address);

    it(
      'the shared entry masks with PRIMASK, leaves only a FNC_RETURN LR untracked, and pushes the ' +
        'LR with post-increment',
      () => {
        const ce = between(rt, runtime.labels.CE!, runtime.labels.CX!);
        assert.deepEqual(
          ce.slice(0, 6).map((l) => l.mnemonic),
          ['push', 'mrs', 'cpsid', 'add.w', 'cmp.w', 'bcc.w'],
        );
        assert.match(ce[1]!.operands, /ip, PRIMASK/);
        // r3 = LR + 0x02000000 is below 0x01000000 only for 0xFExxxxxx (FNC_RETURN); EXC_RETURN is tracked.
        assert.match(ce[3]!.operands, /r3, r1, #33554432/);
        assert.match(ce[4]!.operands, /r3, #16777216/);
        assert.ok(
          ce.some((l) => l.mnemonic === 'str.w' && /r1, \[r3\], #4/.test(l.operands)),
          ce.map((l) => l.text).join('\n'),
        );
        const cx = between(rt, runtime.labels.CX!, runtime.labels.ACC!);
        assert.ok(
          cx.some((l) => /^ldr/.test(l.mnemonic) && /lr, \[ip, #-4\]!/.test(l.operands)),
          'pop of the real LR',
        );
        assert.ok(cx.some((l) => l.mnemonic === 'msr' && /PRIMASK, r3/.test(l.operands)));
      },
    );

    it('ACC subtracts down-counting SysTick values and masks to 24 bits; min/max use IT-predicated stores', () => {
      const acc = between(rt, runtime.labels.ACC!, runtime.address + runtime.bytes.length);
      assert.ok(
        acc.some((l) => l.mnemonic === 'sub.w' && l.operands === 'ip, lr, ip'),
        acc.map((l) => l.text).join('\n'),
      );
      assert.ok(acc.some((l) => l.mnemonic === 'ubfx' && /ip, ip, #0, #24/.test(l.operands)));
      assert.equal(acc.filter((l) => /^it$/.test(l.mnemonic)).length, 2);
    });

    it(
      'ticks_now: LDR.W pc, [pc] with the stub address | 1 as literal; the stub saves r0-r3 and ' + 'reads SysTick CVR',
      () => {
        const plan = planner.planFunction('ticks_now');
        assert.ok(plan.ok);
        const stub = g.buildStubs(
          { kind: 'function', payload: 'software', record: cave + 2000, at: cave + 2200, entry: plan.entry },
          runtime,
          layout,
        );
        const patchBytes = g.encodePatch(plan.entry, stub.entry);
        const patch = disassembleBytes(cmTc, patchBytes, plan.entry.address);
        assert.equal(patch[0]!.mnemonic, 'ldr.w');
        assert.match(patch[0]!.operands, /^pc, \[pc/);
        const literalAt = (plan.entry.address + 4 + 3) & ~3;
        assert.equal(Buffer.from(patchBytes).readUInt32LE(literalAt - plan.entry.address), (stub.entry | 1) >>> 0);
        const lines = disassembleBytes(cmTc, stub.bytes, stub.address);
        const entry = between(lines, stub.entry, stub.exit!);
        // r0-r3, r12 and the flags are saved: a -fipa-ra caller may keep values there across the call.
        assert.match(entry[0]!.text, /^(push(\.w)?|stmdb)\t(sp!, )?\{r0, r1, r2, r3, ip\}$/);
        assert.match(entry[1]!.text, /^mrs\tr0, (APSR|CPSR)/);
        assert.ok(entry.some((l) => l.text === 'mov\tr1, lr'));
        // Raw bytes carry no M-profile attribute: objdump names APSR_nzcvqg with its A-profile alias CPSR_fs.
        assert.ok(
          entry.some((l) => /^msr\t(APSR_nzcvqg|CPSR_fs), r1$/.test(l.text)),
          entry.map((l) => l.text).join('\n'),
        );
        const bl = entry.find((l) => l.mnemonic === 'bl')!;
        assert.equal(addressOf(bl.operands), runtime.labels.CE);
        const literals = Buffer.from(stub.bytes);
        const words = new Set<number>();
        for (let k = 0; k + 4 <= literals.length; k += 2) words.add(literals.readUInt32LE(k));
        assert.ok(words.has(0xe000e018), 'SysTick CVR literal');
        // The displaced bx lr leaves by itself: no jump back is needed after it.
        assert.ok(!words.has((plan.entry.resume | 1) >>> 0), 'no jump back after a displaced return');
        assert.ok(entry.some((l) => l.text === 'bx\tlr'));
        const exit = between(lines, stub.exit!, stub.address + stub.bytes.length);
        assert.match(
          exit[0]!.text,
          /^(push(\.w)?|stmdb)\t(sp!, )?\{r2, r3, ip\}$/,
          'the exit gives r2, r3, r12 back too',
        );
        assert.deepEqual(
          exit.slice(1, 3).map((l) => l.mnemonic),
          ['ldr.w', 'ldr.w'],
        );
        assert.match(exit[2]!.operands, /ip, \[ip\]/);
        assert.equal(hex(addressOf(exit.find((l) => l.mnemonic === 'b.w')!.operands)), hex(runtime.labels.CX!));
      },
    );

    it(
      'hash_finish: two literal loads move as address loads + LDR, and the stub jumps back ' +
        'through a literal with bit 0 set',
      () => {
        const plan = planner.planFunction('hash_finish');
        assert.ok(plan.ok, plan.ok ? '' : plan.reason);
        const stub = g.buildStubs(
          { kind: 'function', payload: 'software', record: cave + 2000, at: cave + 2200, entry: plan.entry },
          runtime,
          layout,
        );
        const lines = disassembleBytes(cmTc, stub.bytes, stub.address);
        const entry = between(lines, stub.entry, stub.exit!);
        const jump = entry.filter((l) => l.mnemonic === 'ldr.w' && /^pc, \[pc/.test(l.operands));
        assert.equal(jump.length, 1, entry.map((l) => l.text).join('\n'));
        const lit = addressOf(/@ \(?(0x[0-9a-f]+|[0-9a-f]+)/.exec(jump[0]!.comment)?.[1] ?? jump[0]!.comment);
        const b = Buffer.from(stub.bytes);
        assert.equal(b.readUInt32LE(lit - stub.address), (plan.entry.resume | 1) >>> 0);
        for (const d of plan.entry.displaced.filter((x) => x.readsPc)) {
          assert.ok(
            entry.some((l) => l.mnemonic === 'movw'),
            `literal load at ${hex(d.address)} rewritten with MOVW/MOVT`,
          );
        }
      },
    );
  },
);
