import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Rv32Codec } from '../../adapter/arch/riscv/rvDecoder';
import { Rv32Relocator } from '../../adapter/arch/riscv/rvRelocator';
import { decodeAll, type DecodedInstruction, type RefusalCode } from '../../adapter/arch/codec';
import { assemble, disassembleBytes, referencedAddress, rv32Toolchain } from '../support/gnuTools';

// The RV32 relocator against the GNU tools: displaced code is assembled by `as`, moved, and its
// effect at the new address checked by an interpreter of objdump's text (decoders and encoders:
// codecRv32.test.ts).

const codec = new Rv32Codec();
const tc = rv32Toolchain();
const RAM = 0x80000000;
const hex = (n: number): string => `0x${(n >>> 0).toString(16)}`;

// ---------------------------------------------------------------------------------------------
// Relocation round trips, checked by an interpreter of objdump's text.

type Value = number | string;
const show = (v: Value): string => (typeof v === 'number' ? hex(v) : v);

interface Outcome {
  exit: { kind: 'fall' } | { kind: 'jump'; to: Value };
  changed: Record<string, string>;
  calls: Value[];
  opaque: string[];
}

function interpret(bytes: Uint8Array, start: number, assume: boolean | undefined): Outcome {
  const end = start + bytes.length;
  const regs = new Map<string, Value>();
  const get = (r: string): Value => (r === 'zero' ? 0 : (regs.get(r) ?? r));
  const set = (r: string, v: Value): void => {
    if (r !== 'zero') regs.set(r, v);
  };
  const add = (a: Value, b: Value): Value =>
    typeof a === 'number' && typeof b === 'number' ? (a + b) >>> 0 : `(${show(a)}+${show(b)})`;
  const calls: Value[] = [];
  const opaque: string[] = [];
  const lines = new Map(disassembleBytes(tc, bytes, start).map((l) => [l.address, l]));
  let pc = start;
  const finish = (exit: Outcome['exit']): Outcome => {
    const changed: Record<string, string> = {};
    for (const [r, v] of regs) if (v !== r) changed[r] = show(v);
    return { exit, changed, calls, opaque };
  };
  for (let steps = 0; steps < 32; steps++) {
    if (pc === end) return finish({ kind: 'fall' });
    if (pc < start || pc > end) return finish({ kind: 'jump', to: pc });
    const line = lines.get(pc);
    assert.ok(line, `nothing disassembles at ${hex(pc)}`);
    const ops = line.operands.split(',');
    const next = pc + line.length;
    const target = (): number => referencedAddress(line)!;
    const mem = /^(-?\d+)\((\w+)\)$/.exec(ops[ops.length - 1] ?? '');
    const taken = (): boolean => {
      assert.notEqual(assume, undefined, `${line.text} without an assumption`);
      return assume!;
    };
    let jumpTo: Value | undefined;
    switch (line.mnemonic) {
      case 'lui':
        set(ops[0]!, (parseInt(ops[1]!, 16) << 12) >>> 0);
        break;
      case 'auipc':
        set(ops[0]!, (pc + (parseInt(ops[1]!, 16) << 12)) >>> 0);
        break;
      case 'addi':
        set(ops[0]!, add(get(ops[1]!), Number(ops[2])));
        break;
      case 'lw':
        set(ops[0]!, `mem32[${show(add(get(mem![2]!), Number(mem![1])))}]`);
        break;
      case 'jal':
      case 'c.jal':
      case 'c.j': {
        const rd = line.mnemonic === 'jal' ? ops[0]! : line.mnemonic === 'c.jal' ? 'ra' : 'zero';
        if (rd !== 'zero') {
          set(rd, next);
          calls.push(target());
        } else jumpTo = target();
        break;
      }
      case 'jalr': {
        const to = add(get(mem![2]!), Number(mem![1]));
        if (ops[0] !== 'zero') {
          set(ops[0]!, next);
          calls.push(to);
        } else jumpTo = to;
        break;
      }
      // The branch under test is the original's condition or its inverse; `assume` says whether
      // the original condition holds, and an inverted branch is taken exactly when it does not.
      case 'beq':
      case 'bne':
      case 'blt':
      case 'bge':
      case 'bltu':
      case 'bgeu':
      case 'c.beqz':
      case 'c.bnez':
        if (line.mnemonic === conditionUnderTest || line.mnemonic === `c.${conditionUnderTest}z`) {
          if (taken()) jumpTo = target();
        } else if (!taken()) jumpTo = target();
        break;
      default:
        opaque.push(line.text.replace(/\s+#.*$/, ''));
    }
    if (jumpTo !== undefined) {
      if (typeof jumpTo === 'string') return finish({ kind: 'jump', to: jumpTo });
      pc = jumpTo;
      continue;
    }
    pc = next;
  }
  throw new Error('did not leave');
}
/** Set per case: the name of the original branch's condition (beq, bne, ...). */
let conditionUnderTest = '';

interface RelocCase {
  asm: string;
  /** Instructions in the relocated block (AUIPC pairs are two). */
  count?: number;
  condition?: string;
  expect: (
    sym: (n: string) => number,
    at: number,
  ) => { exit: Outcome['exit']; changed: Record<string, string>; calls?: Value[]; opaque?: string[] };
  /** Needs a scratch register when the target is beyond JAL's reach. */
  scratch?: boolean;
}

const fall = { kind: 'fall' } as const;
const jumpTo = (to: Value) => ({ kind: 'jump', to }) as const;

const relocCases: RelocCase[] = [
  { asm: 'auipc a0, 0x12', expect: (_s, at) => ({ exit: fall, changed: { a0: hex(at + 0x12000) } }) },
  { asm: 'auipc s1, 0xfffff', expect: (_s, at) => ({ exit: fall, changed: { s1: hex(at - 0x1000) } }) },
  {
    asm: '1: auipc a0, %pcrel_hi(lit)\n addi a0, a0, %pcrel_lo(1b)',
    count: 2,
    expect: (s) => ({ exit: fall, changed: { a0: hex(s('lit')) } }),
  },
  {
    asm: '1: auipc a5, %pcrel_hi(lit)\n lw a5, %pcrel_lo(1b)(a5)',
    count: 2,
    expect: (s) => ({ exit: fall, changed: { a5: `mem32[${hex(s('lit'))}]` } }),
  },
  {
    asm: '1: auipc ra, %pcrel_hi(far)\n jalr ra, %pcrel_lo(1b)(ra)',
    count: 2,
    expect: (s) => ({ exit: fall, changed: { ra: 'link' }, calls: [s('far')] }),
  },
  {
    asm: '1: auipc t1, %pcrel_hi(far)\n jalr zero, %pcrel_lo(1b)(t1)',
    count: 2,
    expect: (s) => ({ exit: jumpTo(s('far')), changed: { t1: 'auipc' } }),
  },
  {
    asm: '1: auipc a1, %pcrel_hi(lit)\n sw a0, %pcrel_lo(1b)(a1)',
    count: 2,
    // The store moves verbatim: it still adds %pcrel_lo (the low 12 bits of lit - auipc, sign-extended) to a1.
    expect: (s, at) => ({
      exit: fall,
      changed: { a1: 'auipc' },
      opaque: [`sw\ta0,${((s('lit') - at) << 20) >> 20}(a1)`],
    }),
  },
  { asm: 'jal ra, far', expect: (s) => ({ exit: fall, changed: { ra: 'link' }, calls: [s('far')] }) },
  { asm: 'jal t0, back', expect: (s) => ({ exit: fall, changed: { t0: 'link' }, calls: [s('back')] }) },
  { asm: 'c.jal back', expect: (s) => ({ exit: fall, changed: { ra: 'link' }, calls: [s('back')] }) },
  { asm: 'jal zero, far', scratch: true, expect: (s) => ({ exit: jumpTo(s('far')), changed: {} }) },
  { asm: 'c.j back', scratch: true, expect: (s) => ({ exit: jumpTo(s('back')), changed: {} }) },
  {
    asm: 'beq a0, a1, back',
    condition: 'beq',
    scratch: true,
    expect: (s) => ({ exit: jumpTo(s('back')), changed: {} }),
  },
  {
    asm: 'bgeu t5, t6, far',
    condition: 'bgeu',
    scratch: true,
    expect: (s) => ({ exit: jumpTo(s('far')), changed: {} }),
  },
  {
    asm: 'blt a2, a3, back',
    condition: 'blt',
    scratch: true,
    expect: (s) => ({ exit: jumpTo(s('back')), changed: {} }),
  },
  {
    asm: 'c.beqz a0, back',
    condition: 'beq',
    scratch: true,
    expect: (s) => ({ exit: jumpTo(s('back')), changed: {} }),
  },
  {
    asm: 'c.bnez s1, back',
    condition: 'bne',
    scratch: true,
    expect: (s) => ({ exit: jumpTo(s('back')), changed: {} }),
  },
];

const SCRATCH = 31; // t6

function decodeN(bytes: Uint8Array, address: number, count: number): DecodedInstruction[] {
  const out: DecodedInstruction[] = [];
  for (let offset = 0; out.length < count;) {
    const insn = codec.decode(bytes.subarray(offset), address + offset);
    out.push(insn);
    offset += insn.length;
  }
  return out;
}

test('rv32 relocation: every PC-reading form keeps its effect at the new address (objdump + interpreter)', (t) => {
  const body = relocCases.map((c, i) => `r${i}:\n ${c.asm}`).join('\n');
  // `far` stays within a branch's 4 KiB of the cases: gas silently expands an out-of-range Bcc.
  const prog = assemble(
    tc,
    `back: c.nop\n${body}\n c.nop\n .balign 4\nlit: .word 7\n .space 0x800\nfar: c.jr ra\n`,
    RAM,
  );
  const sym = (n: string): number => prog.symbols.get(n)!;
  // Near (branches reach), within JAL reach only, and far beyond it (flash-to-RAM distance).
  const destinations = [RAM - 0x200, RAM - 0x80000, 0x20000000, 0x20000002];
  let runs = 0;
  relocCases.forEach((c, i) => {
    const at = sym(`r${i}`);
    const insns = decodeN(prog.text.subarray(at - prog.base), at, c.count ?? 1);
    for (const dest of destinations) {
      const options = c.scratch ? { scratch: SCRATCH } : {};
      const r = new Rv32Relocator().relocate(insns, dest, options);
      const what = `"${c.asm}" -> ${hex(dest)}`;
      assert.ok(r.ok, `${what}: ${r.ok ? '' : r.reason}`);
      conditionUnderTest = c.condition ?? '';
      for (const holds of c.condition ? [true, false] : [undefined]) {
        const got = interpret(r.bytes, dest, holds);
        const want = c.expect(sym, at);
        assert.deepEqual(got.exit, holds === false ? fall : want.exit, `${what} (${holds}): exit`);
        const changed = { ...got.changed };
        if (changed[SCRATCH === 31 ? 't6' : ''] !== undefined) delete changed.t6; // the offered scratch register
        for (const [r2, v] of Object.entries(want.changed)) {
          if (v === 'link') {
            assert.ok(
              Number(changed[r2]) > dest && Number(changed[r2]) <= dest + r.bytes.length,
              `${what}: ${r2} links into the trampoline`,
            );
            changed[r2] = 'link';
          }
          if (v === 'auipc') {
            const auipc = insns[0]!;
            assert.equal(changed[r2], hex(auipc.target!), `${what}: ${r2} keeps the AUIPC value`);
            changed[r2] = 'auipc';
          }
        }
        assert.deepEqual(changed, want.changed, `${what}: registers`);
        assert.deepEqual(got.calls, want.calls ?? [], `${what}: calls`);
        assert.deepEqual(got.opaque, want.opaque ?? [], `${what}: other instructions`);
        runs++;
      }
    }
  });
  t.diagnostic(`${runs} relocated sequences checked`);
});

test('rv32 relocation: AUIPC + overwriting use is re-derived as a pair (8 bytes, not 12)', () => {
  const prog = assemble(
    tc,
    `1: auipc a0, %pcrel_hi(lit)\n addi a0, a0, %pcrel_lo(1b)\n .balign 4\nlit: .word 1\n`,
    RAM,
  );
  const insns = decodeAll(codec, prog.text.subarray(0, 8), RAM);
  const r = new Rv32Relocator().relocate(insns, 0x20000000);
  assert.ok(r.ok);
  assert.equal(r.bytes.length, 8);
  assert.deepEqual(
    disassembleBytes(tc, r.bytes, 0x20000000).map((l) => l.mnemonic),
    ['auipc', 'addi'],
  );
});

test('rv32 relocation: position-independent instructions move verbatim', () => {
  const prog = assemble(
    tc,
    `lw a0, 4(sp)\n c.jr ra\n jalr ra, 0(a5)\n csrrsi zero, mcountinhibit, 4\n mret\n c.add a0, a1\n lui a0, 0x12345\n`,
    RAM,
  );
  const insns = decodeAll(codec, prog.text, RAM);
  const r = new Rv32Relocator().relocate(insns, 0x20000000);
  assert.ok(r.ok);
  assert.deepEqual([...r.bytes], [...prog.text]);
});

const refusals: { asm: string; code: RefusalCode; patched?: [number, number]; count?: number }[] = [
  { asm: 'jal zero, far', code: 'needsScratch' },
  { asm: 'beq a0, a1, far', code: 'needsScratch' },
  { asm: 'c.j far', code: 'needsScratch' },
  { asm: 'c.nop\n c.j here', code: 'branchIntoPatch', count: 2, patched: [-2, 4] },
  { asm: 'bne a0, a1, here', code: 'branchIntoPatch', patched: [-2, 4] },
  {
    asm: '1: auipc ra, %pcrel_hi(here)\n jalr ra, %pcrel_lo(1b)(ra)',
    code: 'branchIntoPatch',
    count: 2,
    patched: [-2, 10],
  },
];

test('rv32 relocation refuses what cannot move, and says why', () => {
  for (const c of refusals) {
    const prog = assemble(tc, `c.nop\nhere:\n ${c.asm}\n c.nop\n c.nop\n .space 0x2000\nfar: c.nop\n`, RAM);
    const here = prog.symbols.get('here')!;
    const insns = decodeN(prog.text.subarray(here - prog.base), here, c.count ?? 1);
    const options = c.patched ? { patched: { start: here + c.patched[0], end: here + c.patched[1] } } : {};
    const r = new Rv32Relocator().relocate(insns, 0x20000000, options);
    assert.equal(r.ok, false, c.asm);
    if (!r.ok) assert.equal(r.code, c.code, `${c.asm}: ${r.reason}`);
  }
});
