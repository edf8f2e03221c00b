import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CodeFunction, CodeInstruction, CodeModel, OUTSIDE } from '../oracle/codeModel';
import { Flow, FlowKind } from '../oracle/controlFlow';
import { AnalysisResult, FunctionProfile, RegionSpec, TraceAnalyzer } from '../oracle/traceAnalyzer';
import { TraceLogParser, TraceStats } from '../oracle/traceLog';

// The oracle's stack tracking on hand-written programs and traces: every expected number below
// was worked out by hand from the trace next to it. Each instruction is 4 bytes; `f+2` is the
// third instruction of f.

interface FnSpec {
  at: number;
  code: string[];
  handler?: boolean;
}

interface Program {
  model: CodeModel;
  pc: (ref: string | number) => number;
}

function program(fns: Record<string, FnSpec>): Program {
  const pc = (ref: string | number): number => {
    if (typeof ref === 'number') return ref;
    const m = /^(\w+)(?:\+(\d+))?$/.exec(ref)!;
    const f = fns[m[1]!];
    assert.ok(f, `no function ${m[1]}`);
    return f.at + 4 * Number(m[2] ?? 0);
  };
  const instructions: CodeInstruction[] = [];
  const functions: CodeFunction[] = [];
  const handlers: number[] = [];
  for (const [name, f] of Object.entries(fns)) {
    functions.push({ name, start: f.at, end: f.at + 4 * f.code.length });
    if (f.handler) handlers.push(f.at);
    f.code.forEach((op, i) => {
      const [verb, arg] = op.split(' ');
      const kinds: Record<string, FlowKind> = {
        nop: Flow.Plain,
        call: Flow.Call,
        tail: Flow.Branch,
        b: Flow.Branch,
        ret: Flow.Return,
        mret: Flow.ExceptionReturn,
        jump: Flow.Jump,
        icall: Flow.IndirectCall,
        trap: Flow.Trap,
      };
      const kind = kinds[verb!];
      assert.ok(kind !== undefined, `unknown op ${op}`);
      instructions.push({ address: f.at + 4 * i, size: 4, kind, target: arg ? pc(arg) : undefined });
    });
  }
  return { model: new CodeModel(instructions, functions, handlers), pc };
}

function traceLine(pc: number): string {
  const tbLow = (pc & 0xfff).toString(16).padStart(3, '0');
  return `Trace 0: 0x7f3a5c0${tbLow}0 [00000000/${pc.toString(16).padStart(8, '0')}/00109003/ff020201] sym`;
}

/** Runs a trace through the real log parser (in uneven chunks) and the analyser. */
function analyze(
  p: Program,
  trace: Array<string | number>,
  regions: Array<{ name: string; start: string; end: string }> = [],
): AnalysisResult {
  const specs: RegionSpec[] = regions.map((r) => ({ name: r.name, start: p.pc(r.start), end: p.pc(r.end) }));
  const analyzer = new TraceAnalyzer(p.model, specs);
  const text = trace.map((r) => traceLine(p.pc(r))).join('\n') + '\n';
  feed(text, analyzer.consume);
  return analyzer.result();
}

function feed(
  text: string,
  sink: (pcs: Uint32Array, n: number) => void,
  maxInstructions?: number,
  chunk = 7,
): TraceStats {
  const parser = new TraceLogParser(sink, maxInstructions, 4);
  const bytes = Buffer.from(text);
  for (let i = 0; i < bytes.length; i += chunk) parser.push(bytes.subarray(i, i + chunk));
  return parser.end();
}

function fn(r: AnalysisResult, name: string): FunctionProfile {
  const f = r.functions.find((x) => x.name === name);
  assert.ok(f, `${name} not in the result`);
  return f;
}

function pick(r: AnalysisResult, name: string): Record<string, number> {
  const f = fn(r, name);
  return {
    exclusive: f.exclusive,
    inclusive: f.inclusive,
    noIrq: f.inclusiveExcludingInterrupts,
    calls: f.calls,
    interrupts: f.interrupts,
    traps: f.traps,
  };
}

function edges(r: AnalysisResult): string[] {
  return r.edges.map((e) => `${e.caller}->${e.callee}:${e.calls}`).sort();
}

function assertConsistent(r: AnalysisResult): void {
  assert.equal(
    r.functions.reduce((s, f) => s + f.exclusive, 0),
    r.total,
    'exclusive sums to the total',
  );
  assert.equal(fn(r, r.root).inclusive, r.total, 'the root is on the stack throughout');
}

describe('oracle call-stack tracking on hand-written traces', () => {
  it('plain and nested calls', () => {
    const p = program({
      main: { at: 0x1000, code: ['nop', 'call f', 'nop', 'call f', 'nop'] },
      f: { at: 0x2000, code: ['nop', 'call g', 'ret'] },
      g: { at: 0x3000, code: ['nop', 'ret'] },
    });
    const r = analyze(p, [
      'main',
      'main+1',
      'f',
      'f+1',
      'g',
      'g+1',
      'f+2',
      'main+2',
      'main+3',
      'f',
      'f+1',
      'g',
      'g+1',
      'f+2',
      'main+4',
    ]);
    assert.equal(r.total, 15);
    assert.deepEqual(pick(r, 'main'), { exclusive: 5, inclusive: 15, noIrq: 15, calls: 0, interrupts: 0, traps: 0 });
    assert.deepEqual(pick(r, 'f'), { exclusive: 6, inclusive: 10, noIrq: 10, calls: 2, interrupts: 0, traps: 0 });
    assert.deepEqual(pick(r, 'g'), { exclusive: 4, inclusive: 4, noIrq: 4, calls: 2, interrupts: 0, traps: 0 });
    assert.deepEqual(edges(r), ['f->g:2', 'main->f:2']);
    assert.deepEqual(r.finalStack, ['main']);
    assert.equal(r.maxStackDepth, 3);
    assert.deepEqual(r.anomalies, []);
    assertConsistent(r);
    assert.deepEqual(
      r.addresses.filter((a) => a.function === 'g').map((a) => [a.address, a.count]),
      [
        [0x3000, 2],
        [0x3004, 2],
      ],
    );
  });

  it('recursion counts each instruction once in the inclusive count', () => {
    const p = program({
      main: { at: 0x1000, code: ['call r', 'nop'] },
      r: { at: 0x5000, code: ['nop', 'b r+3', 'call r', 'ret'] },
    });
    const r = analyze(p, ['main', 'r', 'r+1', 'r+2', 'r', 'r+1', 'r+2', 'r', 'r+1', 'r+3', 'r+3', 'r+3', 'main+1']);
    assert.deepEqual(pick(r, 'r'), { exclusive: 11, inclusive: 11, noIrq: 11, calls: 3, interrupts: 0, traps: 0 });
    assert.deepEqual(edges(r), ['main->r:1', 'r->r:2']);
    assert.equal(r.maxStackDepth, 4);
    assert.deepEqual(r.finalStack, ['main']);
    assertConsistent(r);
  });

  it('a tail call is a call of the callee, and the tail caller includes it', () => {
    const p = program({
      main: { at: 0x1000, code: ['call t', 'nop', 'call t', 'nop'] },
      t: { at: 0x4000, code: ['nop', 'tail g'] },
      g: { at: 0x3000, code: ['nop', 'ret'] },
    });
    const r = analyze(p, ['main', 't', 't+1', 'g', 'g+1', 'main+1', 'main+2', 't', 't+1', 'g', 'g+1', 'main+3']);
    assert.deepEqual(pick(r, 't'), { exclusive: 4, inclusive: 8, noIrq: 8, calls: 2, interrupts: 0, traps: 0 });
    assert.deepEqual(pick(r, 'g'), { exclusive: 4, inclusive: 4, noIrq: 4, calls: 2, interrupts: 0, traps: 0 });
    assert.deepEqual(edges(r), ['main->t:2', 't->g:2']);
    assert.deepEqual(r.finalStack, ['main']);
    assert.deepEqual(r.anomalies, []);
  });

  it('an interrupt mid-function that returns with a plain return (Cortex-M EXC_RETURN)', () => {
    const p = program({
      main: { at: 0x1000, code: ['nop', 'nop', 'nop', 'nop'] },
      isr: { at: 0x6000, code: ['nop', 'call g', 'ret'], handler: true },
      g: { at: 0x3000, code: ['nop', 'ret'] },
    });
    const r = analyze(p, ['main', 'main+1', 'isr', 'isr+1', 'g', 'g+1', 'isr+2', 'main+2', 'main+3']);
    assert.deepEqual(pick(r, 'main'), { exclusive: 4, inclusive: 9, noIrq: 4, calls: 0, interrupts: 0, traps: 0 });
    assert.deepEqual(pick(r, 'isr'), { exclusive: 3, inclusive: 5, noIrq: 5, calls: 0, interrupts: 1, traps: 0 });
    assert.deepEqual(pick(r, 'g'), { exclusive: 2, inclusive: 2, noIrq: 2, calls: 1, interrupts: 0, traps: 0 });
    assert.deepEqual(edges(r), ['isr->g:1']);
    assert.deepEqual(r.finalStack, ['main']);
    assert.deepEqual(r.anomalies, []);
    assertConsistent(r);
  });

  it('nested interrupts and tail-chaining with MRET', () => {
    const p = program({
      main: { at: 0x1000, code: ['nop', 'nop', 'nop'] },
      i1: { at: 0x6000, code: ['nop', 'nop', 'mret'], handler: true },
      i2: { at: 0x7000, code: ['nop', 'mret'], handler: true },
    });
    const r = analyze(p, ['main', 'i1', 'i2', 'i2+1', 'i1+1', 'i1+2', 'i2', 'i2+1', 'main+1', 'main+2']);
    assert.deepEqual(pick(r, 'main'), { exclusive: 3, inclusive: 10, noIrq: 3, calls: 0, interrupts: 0, traps: 0 });
    assert.deepEqual(pick(r, 'i1'), { exclusive: 3, inclusive: 5, noIrq: 3, calls: 0, interrupts: 1, traps: 0 });
    assert.deepEqual(pick(r, 'i2'), { exclusive: 4, inclusive: 4, noIrq: 4, calls: 0, interrupts: 2, traps: 0 });
    assert.equal(r.maxStackDepth, 3);
    assert.deepEqual(r.finalStack, ['main']);
    assert.deepEqual(r.anomalies, []);
  });

  it('interrupts right after a call, a return, an indirect call and a tail-call branch', () => {
    const p = program({
      main: { at: 0x1000, code: ['call f', 'nop', 'icall', 'nop', 'call t', 'nop'] },
      f: { at: 0x2000, code: ['nop', 'ret'] },
      t: { at: 0x4000, code: ['nop', 'tail f'] },
      isr: { at: 0x6000, code: ['nop', 'mret'], handler: true },
    });
    const r = analyze(p, [
      'main', // call f, taken, but the interrupt comes before f runs
      'isr',
      'isr+1',
      'f',
      'f+1', // ret to main+1, taken, then the interrupt
      'isr',
      'isr+1',
      'main+1',
      'main+2', // indirect call: its target is only known after the handler
      'isr',
      'isr+1',
      'f',
      'f+1',
      'main+3',
      'main+4',
      't',
      't+1', // tail call to f, taken, then the interrupt
      'isr',
      'isr+1',
      'f',
      'f+1',
      'main+5',
    ]);
    assert.equal(r.total, 22);
    assert.deepEqual(pick(r, 'f'), { exclusive: 6, inclusive: 8, noIrq: 6, calls: 3, interrupts: 0, traps: 0 });
    assert.deepEqual(pick(r, 't'), { exclusive: 2, inclusive: 6, noIrq: 4, calls: 1, interrupts: 0, traps: 0 });
    assert.deepEqual(pick(r, 'isr'), { exclusive: 8, inclusive: 8, noIrq: 8, calls: 0, interrupts: 4, traps: 0 });
    assert.deepEqual(pick(r, 'main'), { exclusive: 6, inclusive: 22, noIrq: 14, calls: 0, interrupts: 0, traps: 0 });
    assert.deepEqual(edges(r), ['main->f:2', 'main->t:1', 't->f:1']);
    assert.deepEqual(r.finalStack, ['main']);
    assert.deepEqual(r.anomalies, []);
    assertConsistent(r);
  });

  it('a trap (ecall/svc) is an exception entry but not an interrupt', () => {
    const p = program({
      main: { at: 0x1000, code: ['nop', 'trap', 'nop'] },
      th: { at: 0x9000, code: ['nop', 'mret'], handler: true },
    });
    const r = analyze(p, ['main', 'main+1', 'th', 'th+1', 'main+2']);
    assert.deepEqual(pick(r, 'th'), { exclusive: 2, inclusive: 2, noIrq: 2, calls: 0, interrupts: 0, traps: 1 });
    assert.deepEqual(pick(r, 'main'), { exclusive: 3, inclusive: 5, noIrq: 5, calls: 0, interrupts: 0, traps: 0 });
  });

  it('jumps inside a function (switch tables) leave the stack alone; a jump to another entry is a tail call', () => {
    const p = program({
      main: { at: 0x1000, code: ['call sw', 'nop'] },
      sw: { at: 0x8000, code: ['jump', 'nop', 'nop', 'jump', 'ret'] },
      g: { at: 0x3000, code: ['nop', 'ret'] },
    });
    const r = analyze(p, ['main', 'sw', 'sw+2', 'sw+3', 'sw+4', 'main+1']);
    assert.deepEqual(pick(r, 'sw'), { exclusive: 4, inclusive: 4, noIrq: 4, calls: 1, interrupts: 0, traps: 0 });
    const r2 = analyze(p, ['main', 'sw', 'sw+2', 'sw+3', 'g', 'g+1', 'main+1']);
    assert.equal(fn(r2, 'g').calls, 1);
    assert.equal(fn(r2, 'sw').inclusive, 5);
    assert.deepEqual(r2.finalStack, ['main']);
    assert.deepEqual(r2.anomalies, []);
  });

  it('an indirect jump to the return address is a return', () => {
    const p = program({
      main: { at: 0x1000, code: ['call f', 'nop'] },
      f: { at: 0x2000, code: ['nop', 'jump'] },
    });
    const r = analyze(p, ['main', 'f', 'f+1', 'main+1']);
    assert.deepEqual(r.finalStack, ['main']);
    assert.equal(fn(r, 'f').inclusive, 2);
  });

  it('PCs outside the program belong to one pseudo-function, and entering the program from there is a call', () => {
    const p = program({
      main: { at: 0x1000, code: ['nop', 'call f', 'nop'] },
      f: { at: 0x2000, code: ['nop', 'ret'] },
    });
    const r = analyze(p, [0x100, 0x104, 0x108, 'main', 'main+1', 'f', 'f+1', 'main+2']);
    assert.equal(r.root, OUTSIDE);
    assert.deepEqual(pick(r, OUTSIDE), { exclusive: 3, inclusive: 8, noIrq: 8, calls: 0, interrupts: 0, traps: 0 });
    assert.deepEqual(pick(r, 'main'), { exclusive: 3, inclusive: 5, noIrq: 5, calls: 1, interrupts: 0, traps: 0 });
    assert.deepEqual(r.finalStack, [OUTSIDE, 'main']);
    assertConsistent(r);
  });

  it('reports what it cannot explain instead of guessing silently', () => {
    const p = program({
      main: { at: 0x1000, code: ['nop', 'ret', 'nop', 'nop'] },
      other: { at: 0x2000, code: ['nop', 'nop'] },
    });
    // A return with nothing to return to, and a plain instruction "jumping" to a non-handler.
    const r = analyze(p, ['main', 'main+1', 'main+3', 'other', 'other+1']);
    assert.deepEqual(r.anomalies.map((a) => [a.kind, a.count]).sort(), [
      ['exception-at-unknown-handler', 1],
      ['unmatched-return', 1],
    ]);
    assert.deepEqual(r.anomalies.find((a) => a.kind === 'unmatched-return')!.examples, [
      { at: 2, pc: 0x100c, previous: 0x1004 },
    ]);
    assertConsistent(r);
  });
});

describe('oracle regions', () => {
  const p = program({
    main: { at: 0x1000, code: ['nop', 'nop', 'call f', 'nop', 'b main+1'] },
    f: { at: 0x2000, code: ['nop', 'ret'] },
    isr: { at: 0x6000, code: ['nop', 'mret'], handler: true },
  });
  const trace = [
    'main',
    'main+1',
    'main+2',
    'f',
    'f+1',
    'main+3',
    'main+4',
    'main+1',
    'main+2',
    'isr',
    'isr+1',
    'f',
    'f+1',
    'main+3',
    'main+4',
    'main+1',
    'main+2',
  ];

  it('counts each pass from start to end, callees and interrupts included, and without interrupts', () => {
    const r = analyze(p, trace, [
      { name: 'body', start: 'main+1', end: 'main+3' },
      { name: 'loop', start: 'main+1', end: 'main+1' },
      { name: 'backwards', start: 'main+3', end: 'main+1' },
      { name: 'restarting', start: 'main+1', end: 'isr' },
    ]);
    const [body, loop, backwards, restarting] = r.regions;
    assert.deepEqual(body, {
      name: 'body',
      start: 0x1004,
      end: 0x100c,
      passes: [4, 6],
      passesExcludingInterrupts: [4, 4],
      restarts: 0,
      unmatchedEnds: 0,
      openAtEnd: true,
    });
    assert.deepEqual(
      [loop!.passes, loop!.passesExcludingInterrupts, loop!.unmatchedEnds, loop!.openAtEnd],
      [[6, 8], [6, 6], 0, true],
    );
    assert.deepEqual([backwards!.passes, backwards!.unmatchedEnds, backwards!.openAtEnd], [[2, 2], 1, false]);
    assert.deepEqual([restarting!.passes, restarting!.restarts, restarting!.openAtEnd], [[2], 1, true]);
    assert.equal(fn(r, 'f').calls, 2);
  });

  it('rejects a region endpoint that is not an instruction', () => {
    assert.throws(
      () => new TraceAnalyzer(p.model, [{ name: 'bad', start: 0x1002, end: 0x100c }]),
      /region bad: 0x1002 is not the address of an instruction/,
    );
  });
});

describe('oracle trace log parsing', () => {
  const collect = (text: string, max?: number, chunk?: number): { pcs: number[]; stats: TraceStats } => {
    const pcs: number[] = [];
    const stats = feed(text, (b, n) => pcs.push(...b.subarray(0, n)), max, chunk);
    return { pcs, stats };
  };

  const log = [
    'Trace 0: 0x7f1778000100 [00800408/00000094/00000110/ff020201] Reset_Handler',
    'Trace 0: 0x7f1778000300 [00800408/00000096/00000110/ff020201] Reset_Handler',
    'cpu_io_recompile: rewound execution of TB to 00000096', // withdraws 0x96
    'Trace 0: 0x7f1778000440 [00800408/00000096/00000110/ff038201] Reset_Handler',
    'Trace 0: 0x7f1778003a40 [00800408/0000005e/00000110/ff020201] fib',
    'Stopped execution of TB chain before 0x7f1778003a40 [0000005e] fib', // withdraws 0x5e
    'Trace 0: 0x7f17780045c0 [00800409/00000090/00000110/ff020201] SysTick_Handler',
    'Stopped execution of TB chain before 0x7f17780045c0 [00000094] nothing', // does not match: counted, ignored
    'Trace 0: 0x7f1778000100 [80000000/80001234/00109003/ff020201] ',
    'some other QEMU message',
    'Trace 0: 0x7f1778000100 [00800408/0000zz94/00000110/ff020201] bad hex',
    'Trace 0: 0x7f1778000100 no brackets',
    '',
    'Trace 0: 0x7f1778000100 [00800408/000000a0/00000110/ff020201] last, no newline',
  ].join('\n');

  it('takes the PC from the second bracketed field and withdraws blocks QEMU did not run', () => {
    const { pcs, stats } = collect(log);
    assert.deepEqual(pcs, [0x94, 0x96, 0x90, 0x80001234, 0xa0]);
    assert.deepEqual(stats, {
      lines: 14,
      instructions: 5,
      withdrawn: 2,
      unmatchedWithdrawals: 1,
      malformed: 2,
      otherLines: 2,
      truncated: false,
    });
  });

  it('gives the same result whatever the chunk boundaries', () => {
    const whole = collect(log, undefined, 1 << 20);
    for (const chunk of [1, 2, 3, 5, 64]) assert.deepEqual(collect(log, undefined, chunk), whole);
  });

  it('stops exactly at maxInstructions, after withdrawals are settled', () => {
    const { pcs, stats } = collect(log, 2);
    assert.deepEqual(pcs, [0x94, 0x96]);
    assert.equal(stats.truncated, true);
    assert.equal(stats.instructions, 2);
  });

  it('counts every line of a long log pushed in blocks', (t) => {
    const line = Buffer.from('Trace 0: 0x7fab1c0059c0 [00000000/80000088/00109003/ff020201] crc16_step\n');
    const block = Buffer.alloc(line.length * 20000);
    for (let i = 0; i < 20000; i++) line.copy(block, i * line.length);
    let n = 0;
    const pcs = new Set<number>();
    const parser = new TraceLogParser((batch, c) => {
      n += c;
      for (let i = 0; i < c; i++) pcs.add(batch[i]!);
    });
    const started = process.hrtime.bigint();
    for (let k = 0; k < 50; k++) parser.push(block);
    parser.end();
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    assert.equal(n, 1_000_000);
    assert.deepEqual([...pcs], [0x80000088]);
    // Speed is a benchmark figure, not a pass condition (machines are shared): reported only.
    t.diagnostic(`${(1e6 / seconds / 1e6).toFixed(2)} M lines/s`);
  });
});
