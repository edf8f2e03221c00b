import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';
import { buildCallGraph, staticCallGraph, type StaticCallGraph } from '../../adapter/probe/callGraph';
import type { FunctionCode } from '../../adapter/probe/injection/types';
import { ElfImage } from '../../adapter/elf';
import { ToolTarget, disassemble, hasTool, tool } from '../oracle/binutils';
import { fixtureElf } from '../support/paths';

// The static call graph against the GNU disassembler (objdump is parsed here, independently of the
// product's decoders). Against the oracle's dynamic call edges: test/integration/callGraphOracle.test.ts.

const TARGETS: readonly ToolTarget[] = ['cortex-m4', 'rv32'];
const PROGRAMS = ['singlepass', 'cyclic', 'cyclic_limited', 'nodebug', 'firmware'] as const;

/** Tail calls test/fixtures/README.md lists ("tail calls"). */
const README_TAIL_CALLS: Array<[string, string, ToolTarget[]]> = [
  ['hash_mix', 'mix_rotate', ['cortex-m4', 'rv32']],
  ['seal_report', 'crc16_block', ['cortex-m4', 'rv32']],
  ['calibrate_sample', 'clamp_s16', ['cortex-m4', 'rv32']],
  ['vm_run', 'hash_finish', ['cortex-m4', 'rv32']],
  ['quicksort', 'insertion_sort', ['cortex-m4', 'rv32']],
  ['TIMER0_IRQHandler', 'app_timer_tick', ['cortex-m4']],
];

const built = TARGETS.flatMap((target) =>
  PROGRAMS.map((program) => ({ target, program, path: fixtureElf(target, program) })),
).filter((f) => existsSync(f.path));

/** Direct linking calls in `objdump -d`: Thumb `bl`, RISC-V `jal rd,…` with rd != zero and `c.jal`. */
function objdumpCalls(target: ToolTarget, elf: string): Array<{ site: number; target: number }> {
  const out: Array<{ site: number; target: number }> = [];
  for (const line of disassemble(target, elf).split('\n')) {
    const m = /^\s*([0-9a-f]+):\s+(?:[0-9a-f]{2,8}\s)+\s*(\S+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const [, at, mnemonic, operands] = m;
    let dest: string | undefined;
    if (target === 'cortex-m4' && mnemonic === 'bl') dest = /^([0-9a-f]+)\s</.exec(operands!)?.[1];
    if (target === 'rv32' && mnemonic === 'jal') {
      const j = /^(\w+),([0-9a-f]+)\s</.exec(operands!);
      if (j && j[1] !== 'zero') dest = j[2];
    }
    if (target === 'rv32' && mnemonic === 'c.jal') dest = /^([0-9a-f]+)\s</.exec(operands!)?.[1];
    if (dest !== undefined) out.push({ site: parseInt(at!, 16), target: parseInt(dest, 16) });
  }
  return out;
}

function within(graph: StaticCallGraph, address: number): string | undefined {
  return graph.functions.find((f) => address >= f.address && address < f.address + f.size)?.name;
}

describe(
  'static call graph of the fixtures',
  { skip: built.length === 0 ? 'fixtures not built (make -C test/fixtures)' : false },
  () => {
    for (const f of built) {
      const haveObjdump = hasTool(tool(f.target, 'objdump'));
      it(
        `${f.target}/${f.program}: every direct call is an edge, and every edge a bl/jal in objdump`,
        { skip: haveObjdump ? false : `${tool(f.target, 'objdump')} not installed` },
        () => {
          const graph = staticCallGraph(ElfImage.loadSync(f.path));
          assert.deepEqual(graph.incomplete, [], 'every function decodes to its end');
          const address = new Map(graph.functions.map((fn) => [fn.name, fn.address]));
          const ours = graph.edges
            .filter((e) => e.kind === 'call')
            .flatMap((e) => e.sites.map((site) => `${site.toString(16)} -> ${address.get(e.callee)!.toString(16)}`))
            .sort();
          // objdump also decodes data placed in .text (tables, strings): only calls inside functions count.
          const theirs = objdumpCalls(f.target, f.path)
            .filter((c) => within(graph, c.site) !== undefined)
            .map((c) => `${c.site.toString(16)} -> ${c.target.toString(16)}`)
            .sort();
          assert.ok(theirs.length > 40, `objdump shows ${theirs.length} calls`);
          assert.deepEqual(ours, theirs);
          for (const e of graph.edges)
            for (const site of e.sites)
              assert.equal(within(graph, site), e.caller, `site 0x${site.toString(16)} of ${e.caller} -> ${e.callee}`);
        },
      );

      it(`${f.target}/${f.program}: the tail calls of the fixture README, and source locations`, () => {
        const graph = staticCallGraph(ElfImage.loadSync(f.path));
        const tails = new Set(graph.edges.filter((e) => e.kind === 'tail').map((e) => `${e.caller} -> ${e.callee}`));
        for (const [caller, callee, targets] of README_TAIL_CALLS) {
          if (!targets.includes(f.target)) continue;
          assert.ok(
            tails.has(`${caller} -> ${callee}`),
            `tail call ${caller} -> ${callee} missing; found ${[...tails].join(', ')}`,
          );
        }
        assert.deepEqual(graph.indirectCallers, [], 'the fixtures make no indirect calls');
        const main = graph.functions.find((fn) => fn.name === 'main')!;
        if (f.program === 'nodebug') {
          assert.equal(main.path, undefined, 'no DWARF, no source');
        } else {
          assert.match(main.path ?? '', /src\/(singlepass|cyclic|firmware\/fw_main)\.c$/);
          assert.ok((main.line ?? 0) > 0);
        }
      });
    }
  },
);

describe('static call graph rules', () => {
  /** A tiny program of hand-made instructions: `call`, `tail`, `jump` (within), `icall`. */
  function program(fns: Record<string, Array<[string, string?]>>): { functions: FunctionCode[] } {
    const starts = new Map(Object.keys(fns).map((n, i) => [n, 0x1000 * (i + 1)]));
    const target = (ref: string | undefined): number | undefined => {
      if (ref === undefined) return undefined;
      const [n, off] = ref.split('+');
      return starts.get(n!)! + Number(off ?? 0);
    };
    return {
      functions: Object.entries(fns).map(([name, code]) => ({
        name,
        start: starts.get(name)!,
        end: starts.get(name)! + 4 * code.length,
        instructions: code.map(([op, ref], i) => ({
          address: starts.get(name)! + 4 * i,
          length: 4,
          bytes: new Uint8Array(4),
          mnemonic: op,
          kind: (
            {
              call: 'call',
              tail: 'branch',
              cond: 'condBranch',
              jump: 'branch',
              icall: 'indirectCall',
              ijump: 'indirectBranch',
              ret: 'return',
              nop: 'plain',
            } as const
          )[op as 'call']!,
          readsPc: ref !== undefined,
          ...(ref !== undefined ? { target: target(ref) } : {}),
        })),
      })),
    };
  }

  const elf = { hasDebugInfo: false } as unknown as ElfImage;

  it('turns calls, tail jumps, conditional tail jumps and jumps into another body into edges', () => {
    const g = buildCallGraph(
      elf,
      program({
        main: [
          ['call', 'a'],
          ['call', 'a'],
          ['tail', 'b'],
        ],
        a: [['nop'], ['jump', 'a+0'], ['cond', 'c'], ['ret']],
        b: [['icall'], ['tail', 'c+4']],
        c: [['nop'], ['ret']],
      }),
    );
    const edges = g.edges.map((e) => `${e.caller} -${e.kind}-> ${e.callee} x${e.sites.length}`);
    assert.deepEqual(edges, ['main -call-> a x2', 'main -tail-> b x1', 'a -tail-> c x1', 'b -tail-> c x1']);
    assert.deepEqual(g.indirectCallers, ['b']);
    assert.deepEqual(
      g.crossJumps.map((j) => `${j.caller} -> ${j.callee}+${j.target - 0x4000}`),
      ['b -> c+4'],
    );
  });

  it(
    'a register jump that is not a switch inside the function makes an indirect caller (a tail ' +
      'call through a pointer)',
    () => {
      const p = program({
        dispatch: [['nop'], ['ijump']],
        vm: [['nop'], ['ijump'], ['nop'], ['ret']],
        parse: [['ijump'], ['nop'], ['ret']],
        handler: [['ret']],
      });
      const at = (fn: string, i: number): number => p.functions.find((f) => f.name === fn)!.start + 4 * i;
      const jumpTables = [
        // vm: a resolved switch whose targets stay inside vm
        { branch: at('vm', 1), function: 'vm', resolved: true, targets: [at('vm', 2), at('vm', 3)] },
        // parse: not resolved, but shaped like a compiler switch (offsets from the table base)
        {
          branch: at('parse', 0),
          function: 'parse',
          resolved: false,
          targets: [],
          reason: 'no bounds check',
          switchShaped: true,
        },
        // dispatch: a table whose entries are other functions' entries
        { branch: at('dispatch', 1), function: 'dispatch', resolved: true, targets: [at('handler', 0)] },
      ];
      assert.deepEqual(buildCallGraph(elf, { ...p, jumpTables }).indirectCallers, ['dispatch']);
      // Without any table information every register jump may leave the function.
      assert.deepEqual(buildCallGraph(elf, p).indirectCallers, ['dispatch', 'vm', 'parse']);
    },
  );

  it('keeps static functions of the same name apart', () => {
    const p = program({ helper: [['ret']], other: [['call', 'x']], x: [['ret']] });
    p.functions[2]!.name = 'helper';
    const g = buildCallGraph(elf, p);
    assert.deepEqual(
      g.functions.map((f) => f.name),
      ['helper', 'other', 'helper@0x3000'],
    );
    assert.deepEqual(
      g.edges.map((e) => e.callee),
      ['helper@0x3000'],
    );
  });

  it('reports a function whose decoding stopped', () => {
    const p = program({ main: [['nop']] });
    p.functions[0]!.undecodable = { address: 0x1004, reason: 'cannot decode' };
    assert.deepEqual(buildCallGraph(elf, p).incomplete, [{ name: 'main', address: 0x1004, reason: 'cannot decode' }]);
  });
});
