import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ArcCodec } from '../../adapter/arch/arc/arcIsaDecoder';
import { ArcRelocator } from '../../adapter/arch/arc/arcIsaRelocator';
import * as enc from '../../adapter/arch/arc/arcIsaEncoder';
import type { DecodedInstruction, RefusalCode } from '../../adapter/arch/codec';
import { arcToolchain, assemble, disassembleBytes, referencedAddress, type GnuToolchain } from '../support/gnuTools';

/**
 * ARC relocation round trips. The relocated bytes are disassembled by objdump at their new
 * address and run by a small interpreter of objdump's text (sharing no decoding with the codec);
 * the end state must be what the original instruction does at its original address.
 */

const codec = new ArcCodec();
const em = arcToolchain('em4_fpuda');
// npm test builds ARC binutils in its set-up (scripts/buildArcBinutils.sh); without them these tests fail, never skip.
const absent =
  'arc-elf32 binutils are not installed: run scripts/buildArcBinutils.sh (builds GNU binutils ' +
  '2.40 into the tool cache); ARC relocations are then checked against the real assembler';
if (!em) throw new Error(absent);
const BASE = 0x10000;
const hex = (n: number): string => `0x${(n >>> 0).toString(16)}`;

type Value = number | string;
const show = (v: Value): string => (typeof v === 'number' ? hex(v) : v);

interface Outcome {
  exit: { kind: 'fall' } | { kind: 'jump'; to: Value };
  changed: Record<string, string>;
  calls: Value[];
  opaque: string[];
}

const brInverse: Record<string, string> = {
  breq: 'brne',
  brne: 'breq',
  brlt: 'brge',
  brge: 'brlt',
  brlo: 'brhs',
  brhs: 'brlo',
  bbit0: 'bbit1',
  bbit1: 'bbit0',
};

function interpret(
  tc: GnuToolchain,
  bytes: Uint8Array,
  start: number,
  condition: string,
  holds: boolean | undefined,
): Outcome {
  const end = start + bytes.length;
  const regs = new Map<string, Value>();
  const get = (r: string): Value => (/^-?(0x[0-9a-f]+|\d+)$/.test(r) ? Number(r) >>> 0 : (regs.get(r) ?? r));
  const add = (x: Value, y: Value, sign = 1): Value =>
    typeof x === 'number' && typeof y === 'number'
      ? (x + sign * y) >>> 0
      : `(${show(x)}${sign > 0 ? '+' : '-'}${show(y)})`;
  const calls: Value[] = [];
  const opaque: string[] = [];
  const lines = new Map(disassembleBytes(tc, bytes, start).map((l) => [l.address, l]));
  const taken = (name: string): boolean => {
    assert.notEqual(holds, undefined, `${name} without an assumption`);
    if (name === condition) return holds!;
    if (brInverse[condition] === name) return !holds;
    throw new Error(`unexpected condition ${name} (testing ${condition})`);
  };
  let pc = start;
  let pending: { to: Value; link: boolean } | undefined;
  const finish = (exit: Outcome['exit']): Outcome => {
    const changed: Record<string, string> = {};
    for (const [r, v] of regs) if (v !== r) changed[r] = show(v);
    return { exit, changed, calls, opaque };
  };
  for (let steps = 0; steps < 32; steps++) {
    if (pc === end && !pending) return finish({ kind: 'fall' });
    if ((pc < start || pc > end) && !pending) return finish({ kind: 'jump', to: pc });
    const line = lines.get(pc);
    assert.ok(line, `nothing disassembles at ${hex(pc)}`);
    const [base = '', ...flags] = line.mnemonic.split('.');
    const delay = flags.includes('d');
    const ops = line.operands.split(',');
    const next = pc + line.length;
    let transfer: { to: Value; link: boolean } | undefined;
    const target = (): number => referencedAddress(line) ?? Number(ops[ops.length - 1]);
    if (/^(b|b_s)$/.test(base)) transfer = { to: target(), link: false };
    else if (/^(bl|bl_s)$/.test(base)) transfer = { to: target(), link: true };
    else if (/^(j|jl)$/.test(base) && /^0x/.test(ops[0]!)) transfer = { to: Number(ops[0]), link: base === 'jl' };
    else if (/^(br(eq|ne|lt|ge|lo|hs)|bbit[01])(_s)?$/.test(base)) {
      if (taken(base.replace(/_s$/, ''))) transfer = { to: target(), link: false };
    } else if (/^(b|bl|j|jl)(eq|ne|gt|ge|lt|le|hi|ls|nc|c)(_s)?$/.test(base)) {
      const [, kind = '', cc = ''] = /^(bl|b|jl|j)(\w+?)(?:_s)?$/.exec(base)!;
      if (taken(cc))
        transfer = { to: /^j/.test(kind) ? Number(ops[0]) : target(), link: kind === 'bl' || kind === 'jl' };
    } else if (/^(mov|mov_s)$/.test(base)) regs.set(ops[0]!, get(ops[1]!));
    else if (base === 'add' || base === 'sub')
      regs.set(ops[0]!, add(get(ops[1]!), get(ops[2]!), base === 'add' ? 1 : -1));
    else if (/^ld[bhw]?$/.test(base) && /^\[0x[0-9a-f]+\]$/.test(ops[1]!)) {
      const size =
        base === 'ldb'
          ? flags.includes('x')
            ? 'mem8s'
            : 'mem8'
          : base === 'ldh' || base === 'ldw'
            ? flags.includes('x')
              ? 'mem16s'
              : 'mem16'
            : 'mem32';
      regs.set(ops[0]!, `${size}[${hex(Number(ops[1]!.slice(1, -1)))}]`);
    } else opaque.push(line.text.replace(/\s*;.*$/, ''));

    if (pending) {
      // This was the delay-slot instruction: now the earlier branch takes effect.
      assert.equal(transfer, undefined, 'a branch in a delay slot');
      const p = pending;
      pending = undefined;
      if (p.link) {
        calls.push(p.to);
        regs.set('blink', next);
        pc = next;
        continue;
      }
      if (typeof p.to !== 'number' || p.to < start || p.to >= end) return finish({ kind: 'jump', to: p.to });
      pc = p.to;
      continue;
    }
    if (transfer && delay) {
      pending = transfer;
      pc = next;
      continue;
    }
    if (transfer?.link) {
      calls.push(transfer.to);
      regs.set('blink', next);
      pc = next;
      continue;
    }
    if (transfer) {
      if (typeof transfer.to !== 'number' || transfer.to < start || transfer.to > end)
        return finish({ kind: 'jump', to: transfer.to });
      pc = transfer.to;
      continue;
    }
    pc = next;
  }
  throw new Error('did not leave');
}

interface RelocCase {
  asm: string;
  count?: number;
  condition?: string;
  expect: (
    sym: (n: string) => number,
    at: number,
  ) => { exit: Outcome['exit']; changed: Record<string, string>; calls?: Value[]; opaque?: string[] };
}

const fall = { kind: 'fall' } as const;
const jumpTo = (to: Value) => ({ kind: 'jump', to }) as const;
const pcl = (at: number): number => at & ~3;

const relocCases: RelocCase[] = [
  { asm: 'ld r2,[pcl,8]', expect: (_s, at) => ({ exit: fall, changed: { r2: `mem32[${hex(pcl(at) + 8)}]` } }) },
  { asm: 'ldb.x r3,[pcl,-4]', expect: (_s, at) => ({ exit: fall, changed: { r3: `mem8s[${hex(pcl(at) - 4)}]` } }) },
  { asm: 'ld_s r0,[pcl,8]', expect: (_s, at) => ({ exit: fall, changed: { r0: `mem32[${hex(pcl(at) + 8)}]` } }) },
  { asm: 'add r3,pcl,12', expect: (_s, at) => ({ exit: fall, changed: { r3: hex(pcl(at) + 12) } }) },
  { asm: 'sub r4,pcl,8', expect: (_s, at) => ({ exit: fall, changed: { r4: hex(pcl(at) - 8) } }) },
  { asm: 'add r2,pcl,0x1000', expect: (_s, at) => ({ exit: fall, changed: { r2: hex(pcl(at) + 0x1000) } }) },
  { asm: 'mov r1,pcl', expect: (_s, at) => ({ exit: fall, changed: { r1: hex(pcl(at)) } }) },
  { asm: 'add r5,pcl,r6', expect: (_s, at) => ({ exit: fall, changed: { r5: `(${hex(pcl(at))}+r6)` } }) },
  { asm: 'b back', expect: (s) => ({ exit: jumpTo(s('back')), changed: {} }) },
  { asm: 'b_s near', expect: (s) => ({ exit: jumpTo(s('near')), changed: {} }) },
  { asm: 'beq back', condition: 'eq', expect: (s) => ({ exit: jumpTo(s('back')), changed: {} }) },
  { asm: 'bne_s near', condition: 'ne', expect: (s) => ({ exit: jumpTo(s('near')), changed: {} }) },
  { asm: 'bgt_s near', condition: 'gt', expect: (s) => ({ exit: jumpTo(s('near')), changed: {} }) },
  { asm: 'bhs_s near', condition: 'nc', expect: (s) => ({ exit: jumpTo(s('near')), changed: {} }) },
  { asm: 'bl back', expect: (s) => ({ exit: fall, changed: { blink: 'link' }, calls: [s('back')] }) },
  { asm: 'bl_s back', expect: (s) => ({ exit: fall, changed: { blink: 'link' }, calls: [s('back')] }) },
  {
    asm: 'bleq back',
    condition: 'eq',
    expect: (s) => ({ exit: fall, changed: { blink: 'link' }, calls: [s('back')] }),
  },
  { asm: 'breq r0,r1,near', condition: 'breq', expect: (s) => ({ exit: jumpTo(s('near')), changed: {} }) },
  { asm: 'brne r2,0x1234,near', condition: 'brne', expect: (s) => ({ exit: jumpTo(s('near')), changed: {} }) },
  { asm: 'brlo r3,63,near', condition: 'brlo', expect: (s) => ({ exit: jumpTo(s('near')), changed: {} }) },
  { asm: 'bbit0 r3,3,near', condition: 'bbit0', expect: (s) => ({ exit: jumpTo(s('near')), changed: {} }) },
  { asm: 'breq_s r0,0,near', condition: 'breq', expect: (s) => ({ exit: jumpTo(s('near')), changed: {} }) },
  { asm: 'b.d back\n mov r7,7', count: 2, expect: (s) => ({ exit: jumpTo(s('back')), changed: { r7: hex(7) } }) },
  {
    asm: 'bl.d back\n mov r7,7',
    count: 2,
    expect: (s) => ({ exit: fall, changed: { r7: hex(7), blink: 'link' }, calls: [s('back')] }),
  },
  // Moves verbatim: the interpreter does not follow BLINK, so it sees the jump as opaque and the slot run.
  {
    asm: 'j.d [blink]\n mov r7,7',
    count: 2,
    expect: () => ({ exit: fall, changed: { r7: hex(7) }, opaque: ['j.d\t[blink]'] }),
  },
];

test('arc relocation: every PCL-relative form keeps its effect at the new address (objdump + interpreter)', (t) => {
  const body = relocCases.map((c, i) => `r${i}: ${c.asm}`).join('\n');
  const prog = assemble(em!, ` .balign 4\nback: nop\n${body}\nnear: nop\n`, BASE);
  const sym = (n: string): number => prog.symbols.get(n)!;
  // Near, beyond Bcc's 1 MiB, beyond B's 16 MiB, and a 2-mod-4 address (PCL differs from the address).
  const destinations = [BASE - 0x100, BASE + 0x180000, 0x80000000, 0x80000002, BASE - 0xfe];
  let runs = 0;
  relocCases.forEach((c, i) => {
    const at = sym(`r${i}`);
    const insns: DecodedInstruction[] = [];
    for (let o = at; insns.length < (c.count ?? 1);) {
      const insn = codec.decode(prog.text.subarray(o - prog.base), o);
      insns.push(insn);
      o += insn.length;
    }
    for (const dest of destinations) {
      const r = new ArcRelocator().relocate(insns, dest);
      const what = `"${c.asm}" -> ${hex(dest)}`;
      assert.ok(r.ok, `${what}: ${r.ok ? '' : r.reason}`);
      for (const holds of c.condition ? [true, false] : [undefined]) {
        const got = interpret(em!, r.bytes, dest, c.condition ?? '', holds);
        const want = c.expect(sym, at);
        const calls = holds === false ? [] : (want.calls ?? []);
        assert.deepEqual(got.exit, holds === false ? fall : want.exit, `${what} (${holds}): exit`);
        const changed = { ...got.changed };
        if (want.changed.blink === 'link' && calls.length > 0) {
          assert.ok(
            Number(changed.blink) > dest && Number(changed.blink) <= dest + r.bytes.length,
            `${what}: BLINK points into the trampoline`,
          );
          changed.blink = 'link';
        }
        const expected = { ...want.changed };
        if (calls.length === 0) delete expected.blink;
        assert.deepEqual(changed, expected, `${what} (${holds}): registers`);
        assert.deepEqual(got.calls, calls, `${what}: calls`);
        assert.deepEqual(got.opaque, want.opaque ?? [], `${what}: other instructions`);
        runs++;
      }
    }
  });
  t.diagnostic(`${runs} relocated sequences checked`);
});

test('arc relocation: position-independent instructions move verbatim', () => {
  const prog = assemble(
    em!,
    `j [blink]\n jl [r2]\n j 0x1234\n lr r0,[0x250]\n sr 0x10000,[0x255]\n push_s r13\n rtie\n ` +
      `mov_s r0,0x12345678\n add r0,r1,r2\n`,
    BASE,
  );
  const insns: DecodedInstruction[] = [];
  for (let o = 0; o < prog.text.length;) {
    const insn = codec.decode(prog.text.subarray(o), BASE + o);
    insns.push(insn);
    o += insn.length;
  }
  const r = new ArcRelocator().relocate(insns, 0x80000002);
  assert.ok(r.ok);
  assert.deepEqual([...r.bytes], [...prog.text]);
});

const refusals: { asm: string; code: RefusalCode; count?: number; patched?: [number, number]; far?: boolean }[] = [
  { asm: 'lp near', code: 'loop' },
  { asm: 'bi [r2]', code: 'tableBranch' },
  { asm: 'bih [r3]', code: 'tableBranch' },
  { asm: 'b.d near\n mov r7,7', code: 'unsplittable', count: 1 },
  { asm: 'j_s.d [blink]\n nop_s', code: 'unsplittable', count: 1 },
  { asm: 'bne.d near\n mov r7,7', code: 'outOfRange', count: 2, far: true },
  { asm: 'ld.as r0,[pcl,4]', code: 'pcOperand' },
  { asm: 'ei_s 2', code: 'pcOperand' },
  { asm: 'nop\n b here', code: 'branchIntoPatch', count: 2, patched: [-2, 8] },
];

test('arc relocation refuses a branch in a delay slot (the assembler will not even write one)', () => {
  const at = 0x10000;
  const bytes = Uint8Array.from([...enc.encodeB(at, at + 8, true), ...enc.encodeB(at + 4, at + 8)]);
  const insns = [codec.decode(bytes, at), codec.decode(bytes.subarray(4), at + 4)];
  const r = new ArcRelocator().relocate(insns, 0x80000000);
  assert.equal(r.ok, false);
  if (!r.ok) assert.equal(r.code, 'unsplittable');
});

test('arc relocation refuses what cannot move, and says why', () => {
  for (const c of refusals) {
    const prog = assemble(em!, ` .balign 4\n nop_s\nhere: ${c.asm}\nnear: nop\n`, BASE);
    const here = prog.symbols.get('here')!;
    const insns: DecodedInstruction[] = [];
    for (let o = here; insns.length < (c.count ?? 1);) {
      const insn = codec.decode(prog.text.subarray(o - prog.base), o);
      insns.push(insn);
      o += insn.length;
    }
    const options = c.patched ? { patched: { start: here + c.patched[0], end: here + c.patched[1] } } : {};
    const r = new ArcRelocator().relocate(insns, c.far ? 0x80000000 : BASE + 0x400, options);
    assert.equal(r.ok, false, c.asm);
    if (!r.ok) assert.equal(r.code, c.code, `${c.asm}: ${r.reason}`);
  }
});
