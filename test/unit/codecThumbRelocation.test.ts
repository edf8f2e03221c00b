import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ThumbCodec } from '../../adapter/arch/cortex-m/thumbDecoder';
import { ThumbRelocator, itPredicatedAddresses, type ThumbProfile } from '../../adapter/arch/cortex-m/thumbRelocator';
import { decodeAll, type DecodedInstruction, type RefusalCode } from '../../adapter/arch/codec';
import { assemble, disassembleBytes, referencedAddress, thumbToolchain, type ObjdumpLine } from '../support/gnuTools';

/**
 * Relocation round trips. The relocated bytes are disassembled by objdump at their new address and
 * run by a small interpreter of objdump's *text* (so it shares no decoding with the codec): the
 * end state (registers, stack, where control leaves, calls made) must be what the original
 * instruction does at its original address.
 */

const codec = new ThumbCodec();
const tc = thumbToolchain('cortex-m4', 'fpv4-sp-d16');
const FLASH = 0x08000000;

type Value = number | string;
const hex = (n: number): string => `0x${(n >>> 0).toString(16)}`;
const show = (v: Value): string => (typeof v === 'number' ? hex(v) : v);

interface Outcome {
  exit: { kind: 'fall' } | { kind: 'jump'; to: Value };
  /** Registers whose value differs from the initial symbolic one. */
  changed: Record<string, string>;
  calls: { target: Value; returnTo: number }[];
  /** Instructions the interpreter passed through unchanged (verbatim copies). */
  opaque: string[];
  /** Every instruction executed, as objdump names it, with its size. */
  executed: { mnemonic: string; length: number }[];
}

/** Assumptions for conditional code: the original condition holds / the register is zero. */
interface Assume {
  cond?: { code: string; holds: boolean };
  zero?: boolean;
}

const inverse: Record<string, string> = {
  eq: 'ne',
  cs: 'cc',
  hs: 'lo',
  mi: 'pl',
  vs: 'vc',
  hi: 'ls',
  ge: 'lt',
  gt: 'le',
};
for (const [a, b] of Object.entries(inverse)) inverse[b] = a;
const aliases: Record<string, string> = { sl: 'r10', fp: 'r11', ip: 'r12', r13: 'sp', r14: 'lr' };
const reg = (name: string): string => aliases[name.trim()] ?? name.trim();

function imm(text: string): number {
  const m = /#(-?(?:0x[0-9a-f]+|\d+))/.exec(text);
  if (!m) throw new Error(`no immediate in "${text}"`);
  return Number(m[1]);
}

function regList(text: string): string[] {
  const m = /\{([^}]*)\}/.exec(text);
  if (!m) throw new Error(`no register list in "${text}"`);
  return m[1]!.split(',').flatMap((r) => {
    const range = /^(r\d+)-(r\d+)$/.exec(r.trim());
    if (!range) return [reg(r)];
    const out: string[] = [];
    for (let i = Number(range[1]!.slice(1)); i <= Number(range[2]!.slice(1)); i++) out.push(reg(`r${i}`));
    return out;
  });
}

const regOrder = (r: string): number => (r === 'sp' ? 13 : r === 'lr' ? 14 : r === 'pc' ? 15 : Number(r.slice(1)));

/** Runs relocated code from `start` until control leaves it. */
function interpret(bytes: Uint8Array, start: number, assume: Assume): Outcome {
  const end = start + bytes.length;
  const regs = new Map<string, Value>();
  const get = (r: string): Value => regs.get(r) ?? r;
  const SP0 = 0x30000000;
  let sp = SP0;
  const stack = new Map<number, Value>();
  const calls: Outcome['calls'] = [];
  const opaque: string[] = [];
  const executed: Outcome['executed'] = [];
  const listing = new Map<number, ObjdumpLine>();
  const lineAt = (pc: number): ObjdumpLine => {
    if (!listing.has(pc))
      for (const l of disassembleBytes(tc, bytes.subarray(pc - start), pc))
        if (!listing.has(l.address)) listing.set(l.address, l);
    const l = listing.get(pc);
    if (!l) throw new Error(`nothing disassembles at ${hex(pc)}`);
    return l;
  };
  const word = (addr: number): number => {
    const o = addr - start;
    return (bytes[o]! | (bytes[o + 1]! << 8) | (bytes[o + 2]! << 16) | (bytes[o + 3]! << 24)) >>> 0;
  };
  const load = (addr: Value, kind: string): Value => {
    if (typeof addr === 'number') {
      if (kind === 'mem32' && addr >= start && addr + 4 <= end) return word(addr);
      if (kind === 'mem32' && stack.has(addr)) return stack.get(addr)!;
    }
    return `${kind}[${show(addr)}]`;
  };
  const add = (a: Value, b: Value): Value =>
    typeof a === 'number' && typeof b === 'number' ? (a + b) >>> 0 : `(${show(a)}+${show(b)})`;
  const push = (list: string[]): void => {
    const sorted = [...list].sort((a, b) => regOrder(a) - regOrder(b));
    sp -= 4 * sorted.length;
    sorted.forEach((r, i) => stack.set(sp + 4 * i, get(r)));
  };
  const pop = (list: string[]): Value | undefined => {
    const sorted = [...list].sort((a, b) => regOrder(a) - regOrder(b));
    let pc: Value | undefined;
    sorted.forEach((r, i) => {
      const v = stack.get(sp + 4 * i);
      assert.notEqual(v, undefined, `pop of ${r} from an empty stack slot`);
      stack.delete(sp + 4 * i);
      if (r === 'pc') pc = v!;
      else regs.set(r, v!);
    });
    sp += 4 * sorted.length;
    return pc;
  };
  const condHolds = (cc: string): boolean => {
    const a = assume.cond;
    assert.ok(a, `conditional ${cc} without an assumption`);
    if (cc === a.code) return a.holds;
    if (cc === inverse[a.code]) return !a.holds;
    throw new Error(`condition ${cc} unrelated to ${a.code}`);
  };

  let pc = start;
  for (let steps = 0; steps < 64; steps++) {
    if (pc === end) return finish({ kind: 'fall' });
    if (pc < start || pc > end) return finish({ kind: 'jump', to: pc });
    const line = lineAt(pc);
    const m = line.mnemonic.replace(/\.[nw]$/, '');
    executed.push({ mnemonic: line.mnemonic, length: line.length });
    const ops = line.operands.split(/,\s*(?![^[{]*[\]}])/).map((s) => s.trim());
    const next = pc + line.length;
    const target = (): number => {
      const t = referencedAddress(line);
      assert.notEqual(t, undefined, `no address in ${line.text}`);
      return t!;
    };
    let jumpTo: Value | undefined;
    const memOperand = ops.find((o) => o.startsWith('['));
    const address = (): Value => {
      if (/^\[pc/.test(memOperand!)) return target();
      const mm = /^\[(\w+)(?:,\s*#(-?\d+))?\]$/.exec(memOperand!);
      assert.ok(mm, `addressing mode of ${line.text}`);
      return add(reg(mm[1]!) === 'sp' ? sp : get(reg(mm[1]!)), Number(mm[2] ?? 0));
    };
    switch (true) {
      case m === 'movw':
        regs.set(reg(ops[0]!), imm(ops[1]!));
        break;
      case m === 'movt': {
        const low = get(reg(ops[0]!));
        assert.equal(typeof low, 'number', `movt onto unknown ${ops[0]}`);
        regs.set(reg(ops[0]!), (((low as number) & 0xffff) | (imm(ops[1]!) << 16)) >>> 0);
        break;
      }
      case m === 'mov' && !ops[1]!.startsWith('#'):
        if (reg(ops[0]!) === 'pc') jumpTo = get(reg(ops[1]!));
        else regs.set(reg(ops[0]!), get(reg(ops[1]!)));
        break;
      case m === 'add' && ops.length === 2 && !ops[1]!.startsWith('#'):
        regs.set(reg(ops[0]!), add(get(reg(ops[0]!)), get(reg(ops[1]!))));
        break;
      case /^ldr(b|h|sb|sh)?$/.test(m) && memOperand !== undefined: {
        const kind = { ldr: 'mem32', ldrb: 'mem8', ldrh: 'mem16', ldrsb: 'mem8s', ldrsh: 'mem16s' }[m]!;
        if (/\],\s*#4$/.test(line.operands) && /^\[sp\]/.test(memOperand!)) {
          // ldr rt, [sp], #4: a one-register pop
          const popped = pop([reg(ops[0]!)]);
          if (popped !== undefined) jumpTo = popped;
          break;
        }
        const v = load(address(), kind);
        if (reg(ops[0]!) === 'pc') jumpTo = v;
        else regs.set(reg(ops[0]!), v);
        break;
      }
      case m === 'ldrd': {
        const a = address();
        regs.set(reg(ops[0]!), load(a, 'mem32'));
        regs.set(reg(ops[1]!), load(add(a, 4), 'mem32'));
        break;
      }
      case m === 'vldr':
        regs.set(ops[0]!, load(address(), ops[0]!.startsWith('d') ? 'mem64' : 'mem32'));
        break;
      case m === 'str' && /^\[sp/.test(memOperand ?? ''):
        if (/\]!$/.test(line.operands)) push([reg(ops[0]!)]);
        else stack.set(address() as number, get(reg(ops[0]!)));
        break;
      case m === 'push' || (m === 'stmdb' && ops[0] === 'sp!'):
        push(regList(line.operands));
        break;
      case m === 'pop' || (m === 'ldmia' && ops[0] === 'sp!'): {
        const popped = pop(regList(line.operands));
        if (popped !== undefined) jumpTo = popped;
        break;
      }
      case m === 'b':
        jumpTo = target();
        break;
      case /^b(eq|ne|cs|cc|hs|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le)$/.test(m):
        if (condHolds(m.slice(1))) jumpTo = target();
        break;
      case m === 'cbz' || m === 'cbnz':
        assert.notEqual(assume.zero, undefined, 'cbz without an assumption');
        if ((m === 'cbz') === assume.zero) jumpTo = target();
        break;
      case m === 'bl':
        calls.push({ target: target(), returnTo: next });
        regs.set('lr', (next | 1) >>> 0);
        break;
      case m === 'blx': {
        const t = get(reg(ops[0]!));
        calls.push({ target: typeof t === 'number' ? t & ~1 : t, returnTo: next });
        assert.ok(typeof t !== 'number' || (t & 1) === 1, 'BLX to an even address would leave Thumb state');
        regs.set('lr', (next | 1) >>> 0);
        break;
      }
      default:
        opaque.push(line.text.replace(/\s+@.*$/, ''));
    }
    if (jumpTo !== undefined) {
      if (typeof jumpTo === 'number') {
        // Direct branches name the target; a PC load interworks and must carry the Thumb bit.
        const direct = /^(b|cbn?z)/.test(line.mnemonic);
        assert.ok(direct || (jumpTo & 1) === 1, `${line.text}: loads an even address into PC`);
        pc = direct ? jumpTo : jumpTo & ~1;
        if (pc >= start && pc <= end) continue;
        return finish({ kind: 'jump', to: pc });
      }
      return finish({ kind: 'jump', to: jumpTo });
    }
    pc = next;
  }
  throw new Error('relocated code did not leave within 64 steps');

  function finish(exit: Outcome['exit']): Outcome {
    assert.equal(sp, SP0, 'stack pointer restored');
    assert.equal(stack.size, 0, 'nothing left on the stack');
    const changed: Record<string, string> = {};
    for (const [r, v] of regs) if (v !== r) changed[r] = show(v);
    return { exit, changed, calls, opaque, executed };
  }
}

interface RelocCase {
  asm: string;
  /** Expected effect, given the assembled program's symbols and the instruction's own address. */
  expect: (
    sym: (name: string) => number,
    at: number,
  ) => Omit<Outcome, 'opaque' | 'calls' | 'executed'> & { calls?: number[] };
  /** Run with each assumption (conditional code). */
  assume?: Assume[];
  profiles?: ThumbProfile[];
}

const fall = { kind: 'fall' } as const;
const jump = (to: Value) => ({ kind: 'jump', to }) as const;
const allProfiles: ThumbProfile[] = ['armv7-m', 'armv8-m.base', 'armv6-m'];
const v7: ThumbProfile[] = ['armv7-m'];

const relocCases: RelocCase[] = [
  {
    asm: 'ldr r2, lit',
    profiles: allProfiles,
    expect: (s) => ({ exit: fall, changed: { r2: `mem32[${hex(s('lit'))}]` } }),
  },
  { asm: 'ldr.w r3, lit', profiles: v7, expect: (s) => ({ exit: fall, changed: { r3: `mem32[${hex(s('lit'))}]` } }) },
  {
    asm: 'ldr.w r10, back',
    profiles: v7,
    expect: (s) => ({ exit: fall, changed: { r10: `mem32[${hex(s('back'))}]` } }),
  },
  { asm: 'ldrb.w r4, lit', profiles: v7, expect: (s) => ({ exit: fall, changed: { r4: `mem8[${hex(s('lit'))}]` } }) },
  {
    asm: 'ldrh.w r12, lit',
    profiles: v7,
    expect: (s) => ({ exit: fall, changed: { r12: `mem16[${hex(s('lit'))}]` } }),
  },
  {
    asm: 'ldrsb.w r5, back',
    profiles: v7,
    expect: (s) => ({ exit: fall, changed: { r5: `mem8s[${hex(s('back'))}]` } }),
  },
  {
    asm: 'ldrsh.w r5, lit',
    profiles: v7,
    expect: (s) => ({ exit: fall, changed: { r5: `mem16s[${hex(s('lit'))}]` } }),
  },
  {
    asm: 'ldrd r0, r1, lit',
    profiles: v7,
    expect: (s) => ({ exit: fall, changed: { r0: `mem32[${hex(s('lit'))}]`, r1: `mem32[${hex(s('lit') + 4)}]` } }),
  },
  {
    asm: 'ldrd r6, r9, back',
    profiles: v7,
    expect: (s) => ({ exit: fall, changed: { r6: `mem32[${hex(s('back'))}]`, r9: `mem32[${hex(s('back') + 4)}]` } }),
  },
  { asm: 'vldr s3, lit', profiles: v7, expect: (s) => ({ exit: fall, changed: { s3: `mem32[${hex(s('lit'))}]` } }) },
  { asm: 'vldr d1, back', profiles: v7, expect: (s) => ({ exit: fall, changed: { d1: `mem64[${hex(s('back'))}]` } }) },
  { asm: 'pld lit', profiles: v7, expect: () => ({ exit: fall, changed: {} }) },
  { asm: 'ldr.w pc, lit', profiles: v7, expect: (s) => ({ exit: jump(`mem32[${hex(s('lit'))}]`), changed: {} }) },
  { asm: 'adr r0, lit', profiles: allProfiles, expect: (s) => ({ exit: fall, changed: { r0: hex(s('lit')) } }) },
  { asm: 'adr.w r11, back', profiles: v7, expect: (s) => ({ exit: fall, changed: { r11: hex(s('back')) } }) },
  {
    asm: 'add r3, pc',
    profiles: allProfiles,
    expect: (_s, at) => ({ exit: fall, changed: { r3: `(r3+${hex(at + 4)})` } }),
  },
  {
    asm: 'add r0, pc',
    profiles: allProfiles,
    expect: (_s, at) => ({ exit: fall, changed: { r0: `(r0+${hex(at + 4)})` } }),
  },
  { asm: 'mov r7, pc', profiles: allProfiles, expect: (_s, at) => ({ exit: fall, changed: { r7: hex(at + 4) } }) },
  { asm: 'mov r9, pc', profiles: allProfiles, expect: (_s, at) => ({ exit: fall, changed: { r9: hex(at + 4) } }) },
  { asm: 'b back', profiles: allProfiles, expect: (s) => ({ exit: jump(s('back')), changed: {} }) },
  { asm: 'b.w far', profiles: allProfiles, expect: (s) => ({ exit: jump(s('far')), changed: {} }) },
  {
    asm: 'bl far',
    profiles: allProfiles,
    expect: (s) => ({ exit: fall, changed: { lr: 'inside' }, calls: [s('far')] }),
  },
  {
    asm: 'beq back',
    profiles: allProfiles,
    assume: [{ cond: { code: 'eq', holds: true } }, { cond: { code: 'eq', holds: false } }],
    expect: (s) => ({ exit: jump(s('back')), changed: {} }),
  },
  {
    asm: 'bge.w far',
    profiles: v7,
    assume: [{ cond: { code: 'ge', holds: true } }, { cond: { code: 'ge', holds: false } }],
    expect: (s) => ({ exit: jump(s('far')), changed: {} }),
  },
  {
    asm: 'cbz r1, near',
    profiles: ['armv7-m', 'armv8-m.base'],
    assume: [{ zero: true }, { zero: false }],
    expect: (s) => ({ exit: jump(s('near')), changed: {} }),
  },
  {
    asm: 'cbnz r6, near',
    profiles: ['armv7-m', 'armv8-m.base'],
    assume: [{ zero: false }, { zero: true }],
    expect: (s) => ({ exit: jump(s('near')), changed: {} }),
  },
];

function assembleRelocCases(): { sym: (n: string) => number; at: number[]; bytes: (a: number) => Uint8Array } {
  const body = relocCases.map((c, i) => `r${i}: ${c.asm}`).join('\n');
  // (gas turns a CBZ to the very next instruction into a NOP, so \`near\` sits one further.)
  const src =
    `back: nop\n nop\n .word 0\n${body}\n nop\nnear: nop\n .align 2\nlit: .word 0x12345678\n ` +
    `.word 0x9abcdef0\n .space 0x1000\nfar: bx lr\n`;
  const prog = assemble(tc, src, FLASH);
  const sym = (n: string): number => {
    const v = prog.symbols.get(n);
    if (v === undefined) throw new Error(`no symbol ${n}`);
    return v;
  };
  return { sym, at: relocCases.map((_, i) => sym(`r${i}`)), bytes: (a) => prog.text.subarray(a - prog.base) };
}

/**
 * Destinations: just below the program (short forms reach), within B.W reach, and SRAM (out of
 * reach), in both halfword phases; none overlaps the original program or its literals.
 */
const destinations = (): number[] => [FLASH - 0x100, FLASH - 0xfe, FLASH + 0x200000, 0x20000000, 0x20000002];

test('thumb relocation: every relocatable hazard keeps its effect at the new address (objdump + interpreter)', (t) => {
  const { sym, at, bytes } = assembleRelocCases();
  let runs = 0;
  relocCases.forEach((c, i) => {
    const insn = codec.decode(bytes(at[i]!), at[i]!);
    for (const profile of c.profiles ?? v7) {
      const relocator = new ThumbRelocator(profile);
      for (const dest of destinations()) {
        const r = relocator.relocate([insn], dest);
        const what = `"${c.asm}" (${profile}) -> ${hex(dest)}`;
        assert.ok(r.ok, `${what}: refused: ${r.ok ? '' : r.reason}`);
        for (const assume of c.assume ?? [{}]) {
          const got = interpret(r.bytes, dest, assume);
          const want = c.expect(sym, at[i]!);
          const taken = assume.cond
            ? assume.cond.holds
            : assume.zero === undefined
              ? true
              : c.asm.startsWith('cbz') === assume.zero;
          assert.deepEqual(got.exit, taken ? want.exit : fall, `${what} ${JSON.stringify(assume)}: exit`);
          const changed = { ...got.changed };
          if (want.changed.lr === 'inside') {
            const lr = Number(changed.lr);
            assert.ok(
              got.calls.length === 1 && lr === (got.calls[0]!.returnTo | 1),
              `${what}: LR is the return point inside the trampoline`,
            );
            changed.lr = 'inside';
          }
          assert.deepEqual(changed, want.changed, `${what}: registers`);
          assert.deepEqual(
            got.calls.map((x) => x.target),
            want.calls ?? [],
            `${what}: calls`,
          );
          assert.deepEqual(got.opaque, [], `${what}: executed something unexpected`);
          // ARMv6-M has no 32-bit instructions but BL; ARMv8-M Baseline adds B.W and MOVW/MOVT.
          const wide = got.executed.filter((x) => x.length === 4).map((x) => x.mnemonic);
          if (profile === 'armv6-m')
            assert.deepEqual(
              wide.filter((x) => x !== 'bl'),
              [],
              `${what}: 32-bit instructions on ARMv6-M`,
            );
          if (profile === 'armv8-m.base')
            assert.deepEqual(
              wide.filter((x) => !['bl', 'b.w', 'movw', 'movt'].includes(x)),
              [],
              `${what}: not ARMv8-M Baseline`,
            );
          assert.equal(
            r.fallsThrough,
            c.asm.startsWith('b ') || c.asm.startsWith('b.w') || c.asm.includes('pc, lit') ? false : true,
            `${what}: fallsThrough`,
          );
          runs++;
        }
      }
    }
  });
  t.diagnostic(`${runs} relocated sequences checked`);
});

test(
  'thumb relocation with even exits: a conditional branch leaves by a jump of its own, one ' +
    'per path, wherever it would reach',
  () => {
    const { sym, at, bytes } = assembleRelocCases();
    let checked = 0;
    relocCases.forEach((c, i) => {
      if (!c.assume) return; // the conditional branches
      const insn = codec.decode(bytes(at[i]!), at[i]!);
      for (const profile of (c.profiles ?? v7).filter((p) => p !== 'armv6-m')) {
        for (const dest of destinations()) {
          const r = new ThumbRelocator(profile).relocate([insn], dest, { evenExits: true });
          const what = `"${c.asm}" (${profile}) -> ${hex(dest)}`;
          assert.ok(r.ok, `${what}: refused`);
          // One instruction where B.W or LDR.W PC reach (ARMv7-M), like the stub's jump back.
          if (profile === 'armv7-m')
            assert.equal(r.exitJumps, 1, `${what}: one jump out, even where a direct branch reaches`);
          else assert.ok(r.exitJumps! >= 1, `${what}: a jump out, even where a direct branch reaches`);
          for (const assume of c.assume as Assume[]) {
            const got = interpret(r.bytes, dest, assume);
            const taken: boolean = assume.cond ? assume.cond.holds : c.asm.startsWith('cbz') === assume.zero;
            assert.deepEqual(
              got.exit,
              taken ? c.expect(sym, at[i]!).exit : fall,
              `${what} ${JSON.stringify(assume)}: exit`,
            );
            // The branch itself, and the jump on the way out: the path falling through runs the stub's
            // jump back instead, so both cost the branch and one jump.
            assert.equal(
              got.executed.length,
              taken ? 1 + r.exitJumps! : 1,
              `${what} ${JSON.stringify(assume)}: instructions run`,
            );
            checked++;
          }
        }
      }
      const direct = new ThumbRelocator('armv7-m').relocate([insn], destinations()[0]!);
      assert.ok(direct.ok && direct.exitJumps === undefined, 'without the option nothing changes');
    });
    assert.ok(checked >= 30, `${checked} paths checked`);
  },
);

test('thumb relocation: position-independent instructions and whole IT blocks move verbatim', () => {
  const src =
    `ldr r0, [r1, #4]\n adds r0, r1\n push {r4, lr}\n pop {r4, pc}\n bx lr\n blx r3\n ldr.w pc, ` +
    `[r0, #4]\n itte eq\n moveq r0, r1\n addeq r0, r1\n movne r0, r1\n svc #0\n vadd.f32 s0, ` +
    `s1, s2\n`;
  const prog = assemble(tc, src, FLASH);
  const insns = decodeAll(codec, prog.text, prog.base);
  const r = new ThumbRelocator('armv7-m').relocate(insns, 0x20000000);
  assert.ok(r.ok);
  assert.deepEqual([...r.bytes], [...prog.text]);
  assert.equal(r.fallsThrough, true);
  assert.deepEqual(
    [...itPredicatedAddresses(insns)],
    insns.slice(8, 11).map((x) => x.address),
  );
});

test('thumb relocation: a block of several hazards relocates as one sequence', () => {
  const src =
    `ldr r2, lit\n adr r1, lit\n bl far\n cmp r0, #0\n bne lit2\n nop\nlit2: nop\n .align ` +
    `2\nlit: .word 1\n .space 0x2000\nfar: bx lr\n`;
  const prog = assemble(tc, src, FLASH);
  const insns = decodeAll(codec, prog.text.subarray(0, 12), prog.base);
  assert.equal(insns.length, 5);
  const r = new ThumbRelocator('armv7-m').relocate(insns, 0x20000000);
  assert.ok(r.ok, r.ok ? '' : r.reason);
  assert.equal(r.notes.length, 1, 'the BL note');
  for (const holds of [true, false]) {
    const got = interpret(r.bytes, 0x20000000, { cond: { code: 'ne', holds } });
    const lit = prog.symbols.get('lit')!;
    assert.deepEqual(got.exit, holds ? jump(prog.symbols.get('lit2')!) : fall);
    assert.equal(got.changed.r2, `mem32[${hex(lit)}]`);
    assert.equal(got.changed.r1, hex(lit));
    assert.deepEqual(
      got.calls.map((c) => c.target),
      [prog.symbols.get('far')],
    );
    assert.deepEqual(got.opaque, ['cmp\tr0, #0']);
  }
});

interface RefusalCase {
  asm: string;
  code: RefusalCode;
  /** How many instructions from the start to relocate (default 1). */
  count?: number;
  patched?: [number, number];
  profile?: ThumbProfile;
}

const refusals: RefusalCase[] = [
  { asm: 'tbb [pc, r0]', code: 'tableBranch' },
  { asm: 'tbh [pc, r1, lsl #1]', code: 'tableBranch' },
  { asm: 'itte eq\n moveq r0, r1\n addeq r0, r1\n movne r0, r1', code: 'unsplittable', count: 2 },
  { asm: 'ite eq\n moveq r0, pc\n movne r0, r1', code: 'unsplittable', count: 3 },
  { asm: 'add pc, r0', code: 'pcOperand' },
  { asm: '.inst.n 0x4578', code: 'pcOperand' }, // cmp r0, pc
  { asm: 'b here', code: 'branchIntoPatch', patched: [-2, 4] },
  { asm: 'nop\n bne here', code: 'branchIntoPatch', count: 2, patched: [-2, 6] },
  { asm: 'nop\n bl here', code: 'branchIntoPatch', count: 2, patched: [-2, 6] },
];

test('thumb relocation refuses what cannot move, and says why', () => {
  for (const c of refusals) {
    const prog = assemble(tc, `nop\nhere: ${c.asm}\n nop\n nop\n`, FLASH);
    const here = prog.symbols.get('here')!;
    const insns = decodeAll(codec, prog.text.subarray(here - prog.base), here).slice(0, c.count ?? 1);
    const options = c.patched ? { patched: { start: here + c.patched[0], end: here + c.patched[1] } } : undefined;
    const r = new ThumbRelocator(c.profile ?? 'armv7-m').relocate(insns, 0x20000000, options);
    assert.equal(r.ok, false, `${c.asm} must be refused`);
    if (!r.ok) {
      assert.equal(r.code, c.code, `${c.asm}: ${r.reason}`);
      assert.match(r.reason, /0x[0-9a-f]+/, 'the reason names the address');
    }
  }
});

test('thumb relocation refuses Armv8.1-M low-overhead loops', () => {
  const v81 = thumbToolchain('arch:armv8.1-m.main', '');
  const prog = assemble(
    v81,
    `dls lr, r0\nloop: add r1, r1, #1\n le lr, loop\n wls lr, r2, out\n nop\nout: nop\n bf 2, out\n nop\n le loop\n`,
    FLASH,
  );
  const insns: DecodedInstruction[] = decodeAll(codec, prog.text, prog.base);
  const loops = insns.filter((x) => x.kind === 'loop');
  assert.equal(loops.length, 5, insns.map((x) => x.mnemonic).join(' '));
  for (const l of loops) {
    const r = new ThumbRelocator('armv8.1-m.main').relocate([l], 0x20000000);
    assert.equal(r.ok, false);
    if (!r.ok) assert.equal(r.code, 'loop');
  }
});
