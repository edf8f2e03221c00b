import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { relocateParts } from '../../adapter/arch/cortex-m/thumbFallThrough';
import { ThumbCodec } from '../../adapter/arch/cortex-m/thumbDecoder';
import { ThumbRelocator } from '../../adapter/arch/cortex-m/thumbRelocator';
import { ThumbPayloadGenerator, thumbInjectionArch } from '../../adapter/arch/cortex-m/trampolineThumb';
import { ElfImage } from '../../adapter/elf';
import { InjectionRefusedError } from '../../adapter/probe/injection/errors';
import type { RuntimeLayout } from '../../adapter/probe/injection/payload';
import { InjectionPlanner } from '../../adapter/probe/injection/planner';
import { ProgramModel } from '../../adapter/probe/injection/programModel';
import { SYSTICK_CVR, type FunctionPlan } from '../../adapter/probe/injection/types';
import { disassembleBytes, thumbToolchain, type ObjdumpLine } from '../support/gnuTools';
import { fixturesDir } from '../support/paths';

/**
 * Code that falls through into a measured entry on Thumb, planned and built (thumbFallThrough.ts):
 * libgcc's `__aeabi_fsub` (one eor.w before `__aeabi_fadd`, too short for a patch of its own) and
 * `__aeabi_cfrcmple` (ending in a `b` to the next instruction, `__aeabi_cfcmple`), checked against
 * binutils' disassembly. QEMU and the trace: test/integration/injectionThumbFallThrough.test.ts.
 */

const ELF = join(fixturesDir, 'build', 'cortex-m4', 'programs', 'fft.elf');
const skip = existsSync(ELF) ? false : 'cortex-m4 programs not built (make -C test/fixtures)';
// The injector's RAM on mps2-an386: 512 MiB from the code, so every patch goes through a literal.
const CAVE = { start: 0x2001_0000, size: 0x10000 };
const LAYOUT: RuntimeLayout = {
  ctrl: 0x2001_0000,
  shadowSlots: 64,
  runtime: 0x2001_0400,
  dispatchTable: 0x2001_0800,
  dispatchCapacity: 8,
};
const tc = thumbToolchain();

function setup(): { planner: InjectionPlanner; model: ProgramModel } {
  const arch = thumbInjectionArch();
  const model = new ProgramModel(ElfImage.loadSync(ELF), arch);
  return { planner: new InjectionPlanner(model, arch, CAVE), model };
}

function planOf(planner: InjectionPlanner, name: string): FunctionPlan {
  const p = planner.planFunction(name);
  assert.ok(p.ok && p.kind === 'function', `${name} is entry-patched: ${p.ok ? p.kind : p.reason}`);
  return p;
}

const text = (l: ObjdumpLine): string => `${l.mnemonic} ${l.operands}`.trim();
const word = (b: Uint8Array, at: number): number =>
  (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0;

describe('Thumb fall-through diversion', { skip }, () => {
  it(
    'fsub runs on into fadd with 4 bytes: a 4-byte LDR.W pc there jumps through a second ' +
      'literal of the widened entry patch',
    () => {
      const { planner, model } = setup();
      const p = planOf(planner, '__aeabi_fadd');
      const fsub = model.functionNamed('__aeabi_fsub')!;
      assert.ok(!p.warnings.some((w) => w.code === 'fallThroughCounted'), JSON.stringify(p.warnings));
      const b = p.bypass!;
      assert.equal(b.address, fsub.start);
      assert.equal(b.shape.kind, 'thumbLdrPcFar');
      assert.deepEqual(
        b.code!.map((i) => i.mnemonic),
        [fsub.instructions[0]!.mnemonic],
        'the copy starts with fsub’s eor.w',
      );
      assert.equal(p.entry.shape.kind, 'thumbLdrPc');
      assert.equal(p.entry.shape.length, 12);
      const literal = p.entry.shape.kind === 'thumbLdrPc' ? p.entry.shape.bypassLiteral! : NaN;
      assert.equal(b.shape.kind === 'thumbLdrPcFar' && b.shape.literal, literal);
      // The bytes: both loads read the words binutils says they read.
      const g = new ThumbPayloadGenerator(SYSTICK_CVR);
      const entryBytes = g.encodePatch(p.entry, 0x2001_2000, LAYOUT, 0x2001_3000);
      const bypassBytes = g.encodePatch(
        {
          address: b.address,
          shape: b.shape,
          displaced: [],
          resume: b.address,
          freeRegisters: 0,
          original: b.original,
        },
        0,
        LAYOUT,
      );
      assert.equal(bypassBytes.length, 4);
      const both = new Uint8Array(4 + entryBytes.length);
      both.set(bypassBytes, 0);
      both.set(entryBytes, 4);
      const dis = disassembleBytes(tc, both, b.address);
      assert.match(text(dis[0]!), /^ldr(\.w)?\s+pc, \[pc, #8\]/, text(dis[0]!));
      assert.match(text(dis[1]!), /^ldr(\.w)?\s+pc, \[pc(, #0)?\]/, text(dis[1]!));
      assert.equal(word(both, literal - b.address), 0x2001_3001, 'the bypass literal: the copy, Thumb bit set');
      assert.equal(word(both, literal - 4 - b.address), 0x2001_2001, 'the entry literal: the stub');
    },
  );

  it(
    'the copy keeps the payload counter right: bookkeeping, fsub’s code, fadd’s displaced code, ' +
      'the jump past the patch',
    () => {
      const { planner } = setup();
      const p = planOf(planner, '__aeabi_fadd');
      const g = new ThumbPayloadGenerator(SYSTICK_CVR, 1 / 40);
      const runtime = g.buildRuntime(LAYOUT);
      const at = 0x2001_1000;
      const stub = g.buildStubs(
        {
          kind: 'function',
          payload: 'software',
          record: 0x2001_0f00,
          at,
          entry: p.entry,
          bypassCode: p.bypass!.code!,
          bypassLength: 4,
        },
        runtime,
        LAYOUT,
      );
      const dis = disassembleBytes(tc, stub.bytes.subarray(stub.bypass! - at), stub.bypass!);
      const lines = dis.map(text);
      const head = ['push', 'mrs', 'cpsid', 'movw', 'movt', 'ldr', 'addw', 'str', 'msr', 'pop'];
      assert.deepEqual(
        lines.slice(0, 10).map((l) => l.split(/\s/)[0]!.replace(/\.[nw]$/, '')),
        head,
        lines.join('\n'),
      );
      assert.match(lines[3]!, new RegExp(`#${LAYOUT.ctrl & 0xffff}\\b`));
      assert.match(lines[4]!, new RegExp(`#${LAYOUT.ctrl >>> 16}\\b`));
      assert.match(lines[5]!, /\[r0, #16\]/, 'the payload counter');
      // Then eor.w r1 (fsub), the six displaced instructions of fadd (the IT block whole), the jump back.
      assert.match(lines[10]!, /^eor(\.w)?\s+r1, r1, #2147483648/);
      const program = 1 + p.entry.displaced.length;
      const jump = lines.findIndex((l, k) => k > 10 && /^ldr(\.w)?\s+pc, \[pc/.test(l));
      assert.equal(jump, 10 + program, lines.join('\n'));
      assert.equal(
        word(stub.bytes, (dis[jump]!.address & ~3) + 4 + Number(/#(\d+)/.exec(lines[jump]!)?.[1] ?? 0) - at),
        (p.entry.resume | 1) >>> 0,
      );
      // What the pass runs beyond the original: the patch's jump, the 10, the jump back.
      const k = Number(/#(\d+)/.exec(lines[6]!)![1]);
      assert.equal(k, 1 + 10 + program + 1 - program);
    },
  );

  it(
    'cfrcmple ends with a b to cfcmple: cfcmple’s bypass sits on cfrcmple’s entry, and ' +
      'cfrcmple’s own stub runs cfcmple’s displaced code',
    () => {
      const { planner, model } = setup();
      const cmp = planOf(planner, '__aeabi_cfcmple');
      const r = model.functionNamed('__aeabi_cfrcmple')!;
      assert.equal(cmp.bypass!.address, r.start);
      assert.equal(cmp.bypass!.shape.kind, 'thumbLdrPc');
      assert.equal(
        cmp.bypass!.code!.at(-1)!.target,
        cmp.function.start,
        'the copied code ends with the jump to the entry',
      );
      const rev = planOf(planner, '__aeabi_cfrcmple');
      assert.deepEqual(rev.entry.divertCode, cmp.entry.displaced);
      assert.equal(rev.entry.divertResume, cmp.entry.resume);
      // Its stub leaves out the b and runs cfcmple's push, bl (relocated: LR = target, blx) and cmp.
      const g = new ThumbPayloadGenerator(SYSTICK_CVR, 1 / 40);
      const at = 0x2001_1000;
      const stub = g.buildStubs(
        { kind: 'function', payload: 'software', record: 0x2001_0f00, at, entry: rev.entry },
        g.buildRuntime(LAYOUT),
        LAYOUT,
      );
      const lines = disassembleBytes(tc, stub.bytes, at).map(text);
      const movs = lines.findIndex((l) => /^mov\s+ip, r0/.test(l));
      assert.ok(movs > 0, lines.join('\n'));
      assert.ok(!lines.slice(movs, movs + 4).some((l) => /^b(\.n|\.w)?\s/.test(l)), 'no jump to cfcmple’s entry');
      assert.ok(
        lines.slice(movs + 3).some((l) => /^push\s+\{r0, r1, r2, r3, lr\}/.test(l)),
        lines.join('\n'),
      );
      assert.ok(!stub.notes.length || stub.notes.some((n) => /LR now points into the trampoline/.test(n)));
    },
  );

  it(
    'a jump to the entry from padding after a return is no fall-through, and what cannot move ' +
      'is refused with its reason',
    () => {
      const codec = new ThumbCodec();
      const relocator = new ThumbRelocator('armv7e-m');
      // bx lr; then the next function's first instruction: the first part leaves before the second.
      const bx = codec.decode(new Uint8Array([0x70, 0x47]), 0x1000);
      const nop = codec.decode(new Uint8Array([0x00, 0xbf]), 0x1002);
      assert.throws(
        () =>
          relocateParts(
            relocator,
            codec,
            [
              { insns: [bx], patched: { start: 0x1000, end: 0x1002 } },
              { insns: [nop], patched: { start: 0x1002, end: 0x100a } },
            ],
            0x2000_0000,
          ),
        (e: unknown) => e instanceof InjectionRefusedError && /leaves before it reaches it/.test(e.refusal.reason),
      );
      // tbb [pc, r0]: the table follows inline and cannot move.
      const tbb = codec.decode(new Uint8Array([0xdf, 0xe8, 0x00, 0xf0]), 0x1000);
      assert.throws(
        () => relocateParts(relocator, codec, [{ insns: [tbb], patched: { start: 0x1000, end: 0x1008 } }], 0x2000_0000),
        (e: unknown) =>
          e instanceof InjectionRefusedError &&
          e.refusal.code === 'unrelocatable' &&
          /jump table/.test(e.refusal.reason),
      );
      // fsub itself, with the RAM out of B.W reach: refused for its true reason, and what makes it fit.
      const fsub = setup().planner.planFunction('__aeabi_fsub');
      assert.ok(!fsub.ok && fsub.code === 'branchIntoPatch', JSON.stringify(fsub));
      assert.match(fsub.reason, /jumps to 0x[0-9a-f]+, inside the 8 bytes/);
      assert.match(
        fsub.reason,
        new RegExp(
          /Only 4 byte\(s\) of __\w+ run before it falls through into __\w+:/.source +
            / with the reserved memory within B\.W's \+\/-16 MiB/.source,
        ),
      );
      // A B.W entry patch holds no literal for a short jump to go through.
      const arch = thumbInjectionArch();
      assert.match(arch.farBypass!({ kind: 'thumbBW', length: 4 }, 0x51c, 0x518) as string, /holds no literal/);
      // __gtdf2 returns and pads before __ltdf2: no bypass, no warning.
      const { planner } = setup();
      const lt = planner.planFunction('__ltdf2');
      if (lt.ok && lt.kind === 'function')
        assert.ok(!lt.bypass && !lt.warnings.some((w) => w.code === 'fallThroughCounted'));
    },
  );
});
