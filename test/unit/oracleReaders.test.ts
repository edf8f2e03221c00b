import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseArgs } from '../oracle/cli';
import { CodeModel, OUTSIDE } from '../oracle/codeModel';
import { Flow, classify } from '../oracle/controlFlow';
import { parseObjdump } from '../oracle/disassembly';
import { profileError } from '../oracle/profileError';

// The oracle's readers and yardsticks: objdump's disassembly classified as control flow, the code
// model's ownership of PCs, the TIP profile error, and the command line (oracle.test.ts has the
// stack tracking and the trace log).

describe('oracle disassembly classification', () => {
  const arm = parseObjdump(
    [
      '00000044 <fib>:',
      '  44:\t2801      \tcmp\tr0, #1',
      '  46:\tdd12      \tble.n\t6e <fib+0x2a>',
      '  5a:\tf7ff fff3 \tbl\t44 <fib>',
      '  6c:\tbdf8      \tpop\t{r3, r4, r5, r6, r7, pc}',
      '  6e:\t4770      \tbx\tlr',
      '  70:\t4718      \tbx\tr3',
      '  72:\t4798      \tblx\tr3',
      '  74:\tbf08      \tit\teq',
      '  76:\t4770      \tbxeq\tlr',
      '  78:\te8d3 f003 \ttbb\t[r3, r3]',
      '  7c:\tf85d fb04 \tldr.w\tpc, [sp], #4',
      '  80:\tf7ff bff8 \tb.w\t70 <leaf>',
      '  84:\tb118      \tcbz\tr0, 8e <x+0xa>',
      '  86:\te8bd 8010 \tldmia.w\tsp!, {r4, pc}',
      '  8a:\tdf00      \tsvc\t0',
      '  8c:\tbeab      \tbkpt\t0x00ab',
      '  8e:\t4a02      \tldr\tr2, [pc, #8]\t@ (9c <sub_isr+0xc>)',
      '  90:\t46f7      \tmov\tpc, lr',
      '  92:\tbf00      \tnop',
      '  94:\t20000000 \t.word\t0x20000000',
      '  98:\tbd10      \tpopne\t{r4, pc}',
      '  9a:\tbc10      \tpop\t{r4}',
    ].join('\n'),
  );
  const rv = parseObjdump(
    [
      '8000005e <fib>:',
      '80000060:\t04a7d463          \tbge\ta5,a0,800000a8 <fib+0x4a>',
      '80000088:\t3fd9                \tc.jal\t8000005e <fib>',
      '800000a6:\t8082                \tc.jr\tra',
      '800000a8:\t8782                \tc.jr\ta5',
      '800000aa:\t9782                \tc.jalr\ta5',
      '800000ac:\ta001                \tc.j\t800000ac <fib+0x4e>',
      '800000ae:\t0000006f          \tjal\tzero,800000ae <x>',
      '800000b2:\t010000ef          \tjal\tra,800000c2 <y>',
      '800000b6:\t010002ef          \tjal\tt0,800000c6 <__riscv_save_0>',
      '800000ba:\t00008067          \tjalr\tzero,0(ra)',
      '800000be:\t00028067          \tjalr\tzero,0(t0)',
      '800000c2:\t000780e7          \tjalr\tra,0(a5)',
      '800000c6:\t00030067          \tjalr\tzero,0(t1) # 80000000 <_start>',
      '800000ca:\t30200073          \tmret',
      '800000ce:\t00000073          \tecall',
      '800000d2:\t10500073          \twfi',
      '800000d6:\tc111                \tc.beqz\ta0,800000da <z>',
      '800000d8:\t00100117          \tauipc\tsp,0x100',
      '800000dc:\t00010113          \taddi\tsp,sp,0 # 80100000 <_stack_top>',
    ].join('\n'),
  );

  it('parses addresses, sizes, operands and direct targets from objdump -d -w', () => {
    assert.deepEqual(arm[2], {
      address: 0x5a,
      size: 4,
      encoding: 'f7ff fff3',
      mnemonic: 'bl',
      operands: '44 <fib>',
      target: 0x44,
      label: 'fib',
      isData: false,
    });
    assert.equal(arm.find((i) => i.address === 0x8e)!.target, undefined, 'a literal load names data, not a target');
    assert.deepEqual(rv[1], {
      address: 0x80000088,
      size: 2,
      encoding: '3fd9',
      mnemonic: 'c.jal',
      operands: '8000005e <fib>',
      target: 0x8000005e,
      label: 'fib',
      isData: false,
    });
    assert.equal(rv.find((i) => i.address === 0x800000dc)!.operands, 'sp,sp,0');
  });

  it('classifies Thumb-2 control flow', () => {
    const kinds = Object.fromEntries(arm.map((i) => [i.address.toString(16), classify('arm', i)]));
    assert.deepEqual(kinds, {
      '44': Flow.Plain,
      '46': Flow.Branch,
      '5a': Flow.Call,
      '6c': Flow.Return,
      '6e': Flow.Return,
      '70': Flow.Jump,
      '72': Flow.IndirectCall,
      '74': Flow.Plain,
      '76': Flow.Return,
      '78': Flow.Jump,
      '7c': Flow.Return,
      '80': Flow.Branch,
      '84': Flow.Branch,
      '86': Flow.Return,
      '8a': Flow.Trap,
      '8c': Flow.Trap,
      '8e': Flow.Plain,
      '90': Flow.Return,
      '92': Flow.Plain,
      '94': Flow.Unknown,
      '98': Flow.Return,
      '9a': Flow.Plain,
    });
  });

  it('classifies RV32 control flow (link registers ra and t0)', () => {
    const kinds = Object.fromEntries(rv.map((i) => [i.address.toString(16), classify('riscv', i)]));
    assert.deepEqual(kinds, {
      '80000060': Flow.Branch,
      '80000088': Flow.Call,
      '800000a6': Flow.Return,
      '800000a8': Flow.Jump,
      '800000aa': Flow.IndirectCall,
      '800000ac': Flow.Branch,
      '800000ae': Flow.Branch,
      '800000b2': Flow.Call,
      '800000b6': Flow.Call,
      '800000ba': Flow.Return,
      '800000be': Flow.Return,
      '800000c2': Flow.IndirectCall,
      '800000c6': Flow.Jump,
      '800000ca': Flow.ExceptionReturn,
      '800000ce': Flow.Trap,
      '800000d2': Flow.Plain,
      '800000d6': Flow.Branch,
      '800000d8': Flow.Plain,
      '800000dc': Flow.Plain,
    });
  });
});

describe('oracle code model', () => {
  it('finds instructions across distant stretches of code and owns stray PCs by function range', () => {
    const model = new CodeModel(
      [
        { address: 0x100, size: 2, kind: Flow.Plain },
        { address: 0x102, size: 4, kind: Flow.Plain },
        { address: 0x2000_0000, size: 4, kind: Flow.Plain },
      ],
      [
        { name: 'flash', start: 0x100, end: 0x106 },
        { name: 'ram', start: 0x2000_0000, end: 0x2000_0010 },
      ],
    );
    assert.equal(model.clusters.length, 2);
    assert.deepEqual(
      [model.indexOf(0x100), model.indexOf(0x102), model.indexOf(0x104), model.indexOf(0x2000_0000)],
      [0, 1, -1, 2],
    );
    const stray = model.indexOrAdd(0x2000_0008);
    assert.equal(model.functions[model.fn[stray]!]!.name, 'ram');
    assert.equal(model.functions[model.fn[model.indexOrAdd(0x5000)]!]!.name, OUTSIDE);
    assert.equal(model.indexOf(0x2000_0008), stray);
  });
});

describe('TIP profile error', () => {
  it('is 0 for a perfect profile, the misattributed share otherwise, and scale-free', () => {
    const oracle = new Map([
      ['a', 60],
      ['b', 30],
      ['c', 10],
    ]);
    assert.equal(
      profileError(
        new Map([
          ['a', 6],
          ['b', 3],
          ['c', 1],
        ]),
        oracle,
      ),
      0,
    );
    assert.ok(
      Math.abs(
        profileError(
          new Map([
            ['a', 70],
            ['b', 20],
            ['c', 10],
          ]),
          oracle,
        ) - 0.1,
      ) < 1e-12,
    );
    assert.equal(profileError(new Map([['z', 5]]), oracle), 1);
    assert.equal(profileError(new Map(), oracle), 1);
  });
});

describe('oracle command line', () => {
  it('reads regions, handlers and bounds', () => {
    const o = parseArgs([
      '--elf',
      'x.elf',
      '--target',
      'rv32',
      '--max-instructions',
      '1000',
      '--timeout',
      '5',
      '--region',
      'fir=dsp.c:46,0x80000010',
      '--handler',
      'trap_entry',
      '--out',
      's.json',
    ]);
    assert.deepEqual(o, {
      elf: 'x.elf',
      target: 'rv32',
      maxInstructions: 1000,
      timeoutMs: 5000,
      regions: [{ name: 'fir', start: 'dsp.c:46', end: '0x80000010' }],
      handlers: ['trap_entry'],
      out: 's.json',
      top: 15,
    });
  });
});
