import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CycleLensError, ErrorCode } from '../../adapter/errors';
import { describeSamplers, unavailableSampler } from '../../adapter/sampling/catalog';
import { parseBurstReply, planBurst, tallyBurst } from '../../adapter/sampling/pcsrBurst';
import { OpenOcdServer } from '../../adapter/servers/openocd';
import { QemuServer } from '../../adapter/servers/qemu';
import { parseFrame, wrapCommand } from '../../adapter/servers/tclRpc';
import { openOcdInterpreter } from '../doubles/openOcdTclDouble';
import { DEMCR, NO_SAMPLE, PcsrCoreModel, periodicSleep, TRCENA } from '../doubles/pcsrCoreModel';

/** A fixed sequence of "random" numbers, repeated. */
function sequence(...values: number[]): () => number {
  let i = 0;
  return () => values[i++ % values.length]!;
}

describe('DWT_PCSR bursts: the Tcl script', () => {
  test('one list element per read, each a single-word read of 0xE000101C (read_memory increments addresses)', () => {
    const plan = planBurst(4, 0);
    assert.equal(plan.script, `list ${Array(4).fill('[read_memory 0xe000101c 32 1]').join(' ')}`);
    assert.deepEqual(plan.spacers, [0, 0, 0, 0]);
  });

  test('spacer reads of DWT_CTRL come before a PCSR read inside its bracket, as many as drawn', () => {
    const plan = planBurst(4, 2, sequence(0, 0.5, 0.99, 0.34));
    assert.deepEqual(plan.spacers, [0, 1, 2, 1]);
    assert.equal(
      plan.script,
      'list [read_memory 0xe000101c 32 1] [read_memory 0xe0001000 32 1; read_memory 0xe000101c 32 1] ' +
        ('[read_memory 0xe0001000 32 1; read_memory 0xe0001000 32 1; read_memory 0xe000101c 32 1] ' +
          '[read_memory 0xe0001000 32 1; read_memory 0xe000101c 32 1]'),
    );
  });

  test('refuses a burst that is not a positive whole number of reads', () => {
    for (const n of [0, -1, 1.5])
      assert.throws(
        () => planBurst(n, 1),
        (e: unknown) => e instanceof CycleLensError && e.code === ErrorCode.InvalidRequest,
      );
    assert.throws(() => planBurst(4, -1), /spacer/);
  });
});

describe('DWT_PCSR bursts: the reply', () => {
  test('a Tcl list of 0x words, as OpenOCD 0.12 prints them, in read order', () => {
    assert.deepEqual(parseBurstReply('0x8000134 0xffffffff 0x0', 3), [0x8000134, 0xffffffff, 0]);
    assert.deepEqual(parseBurstReply(' 0x10\n0x12 ', 2), [0x10, 0x12]);
    assert.deepEqual(parseBurstReply('16 18', 2), [16, 18]);
  });

  test(
    'a list of another length, a nested list or a word that is no 32-bit number is an error ' + 'quoting the reply',
    () => {
      const cases: Array<[string, number]> = [
        ['0x10 0x12', 3],
        ['', 1],
        ['{0x10 0x12}', 2],
        ['0x1ffffffff', 1],
        ['0x10 zz', 2],
        ['read_memory: failed to read memory', 5],
      ];
      for (const [reply, n] of cases) {
        assert.throws(
          () => parseBurstReply(reply, n),
          (e: unknown) =>
            e instanceof CycleLensError &&
            e.code === ErrorCode.TclError &&
            e.message.includes(`'${reply}'`) &&
            e.message.includes(`list of ${n} 32-bit numbers`),
          reply,
        );
      }
    },
  );

  test('0xFFFFFFFF (core asleep or halted) is counted apart and never as an address', () => {
    assert.deepEqual(tallyBurst([0x100, 0xffffffff, 0x102, 0xffffffff]), {
      addresses: [0x100, 0x102],
      asleepOrHalted: 2,
    });
    assert.deepEqual(tallyBurst([0xfffffffe]), { addresses: [0xfffffffe], asleepOrHalted: 0 });
  });
});

describe('DWT_PCSR bursts through the wrapped Tcl request (errors come back through catch)', () => {
  const trace = new Uint32Array([0x100, 0x102, 0x104]);

  function wrappedReply(core: PcsrCoreModel, script: string): ReturnType<typeof parseFrame> {
    const interp = openOcdInterpreter(core);
    interp.evalTop('proc cyclelens_reply {text} {return -code -600 $text}');
    return parseFrame(Buffer.from(interp.evalTop(wrapCommand(7, script)).result, 'utf8'));
  }

  test("a burst answers code 0 (the caught script's) and the list of values", () => {
    const core = new PcsrCoreModel(trace, [], sequence(0.5));
    core.demcr = TRCENA;
    const plan = planBurst(3, 1, sequence(0.9));
    const frame = wrappedReply(core, plan.script);
    assert.equal(frame.kind, 'reply');
    assert.ok(frame.kind === 'reply');
    assert.equal(frame.id, 7);
    assert.equal(frame.code, 0);
    assert.deepEqual(parseBurstReply(frame.result, 3), [0x102, 0x102, 0x102]);
    assert.equal(frame.log, '');
  });

  test("a failing read inside a burst is an error code with OpenOCD's message and log, not a list", () => {
    const core = new PcsrCoreModel(trace);
    const frame = wrappedReply(core, 'list [read_memory 0xe000101c 32 1] [read_memory 0x40000000 32 1]');
    assert.ok(frame.kind === 'reply');
    assert.equal(frame.code, 1);
    assert.equal(frame.result, 'read_memory: failed to read memory');
    assert.match(frame.log, /read at 0x40000000 with width=32 and count=1 failed/);
  });

  test('an unknown command fails as Jim does', () => {
    const frame = wrappedReply(new PcsrCoreModel(trace), 'pcsr_burst 128');
    assert.ok(frame.kind === 'reply');
    assert.equal(frame.code, 1);
    assert.equal(frame.result, 'invalid command name "pcsr_burst"');
  });
});

describe('the Tcl double answers as a real OpenOCD 0.12 did (answers recorded with the dummy adapter)', () => {
  const recorded: Array<[string, string]> = [
    ['list [expr {1+1}] {a b}', '2 {a b}'],
    ['proc pcsr_t {n} {return [list $n $n]}; pcsr_t 4', '4 4'],
    ['string bytelength abc', '3'],
    ['read_memory 0xe000101c 32 0', ''],
    ['capture {echo hello}', 'hello\n'],
    ['no_such 1', 'invalid command name "no_such"'],
    ['read_memory 0xe000101c', 'wrong # args: should be "read_memory address width count [\'phys\']"'],
    ['if {[info commands capture] ne ""} {list yes} else {list no}', 'yes'],
  ];
  for (const [script, answer] of recorded) {
    test(script, () =>
      assert.equal(openOcdInterpreter(new PcsrCoreModel(new Uint32Array([0]))).evalTop(script).result, answer),
    );
  }
});

describe('the PCSR core model of the Tcl double', () => {
  // Trace of 4 instructions; 2 ns asleep after the 2nd: time line i0 i1 z z i2 i3.
  const trace = new Uint32Array([0x10, 0x12, 0x14, 0x16]);

  test('each read lands on a uniformly drawn point of the time line: instructions, or 0xFFFFFFFF asleep', () => {
    const points = [0, 1, 2, 3, 4, 5].map((t) => (t + 0.5) / 6);
    const core = new PcsrCoreModel(trace, [{ afterInstruction: 2, lengthNs: 2 }], sequence(...points));
    core.demcr = TRCENA;
    assert.deepEqual(
      points.map(() => core.read(0xe000101c)),
      [0x10, 0x12, NO_SAMPLE, NO_SAMPLE, 0x14, 0x16],
    );
    assert.deepEqual(core.served, { code: 4, halted: 0, asleep: 2, traceDisabled: 0 });
    assert.equal(core.sleepShare, 2 / 6);
  });

  test('halted, or with TRCENA clear, PCSR reads 0xFFFFFFFF; read_memory of N words walks on past PCSR', () => {
    const core = new PcsrCoreModel(trace, periodicSleep(4, 2, 1));
    assert.equal(core.read(0xe000101c), NO_SAMPLE);
    assert.equal(core.served.traceDisabled, 1);
    const interp = openOcdInterpreter(core);
    interp.eval(`write_memory ${DEMCR} 32 {${TRCENA}}`);
    interp.eval('halt');
    assert.equal(interp.eval('read_memory 0xe000101c 32 2'), '0xffffffff 0x0');
    assert.equal(core.served.halted, 1);
    interp.eval('resume');
    assert.notEqual(core.read(0xe000101c), undefined);
  });
});

describe('the sampler catalog offers openocd-pcsr on a Cortex-M behind OpenOCD only', () => {
  const openocd = new OpenOcdServer({ type: 'openocd', configFiles: ['board.cfg'] });
  const qemu = new QemuServer({ type: 'qemu' });

  test('available with OpenOCD and a Cortex-M, non-halting, a recently executed instruction', () => {
    const pcsr = describeSamplers({ server: openocd, config: { family: 'cortex-m' } }).find(
      (s) => s.id === 'openocd-pcsr',
    );
    assert.ok(pcsr);
    assert.equal(pcsr.available, true);
    assert.equal(pcsr.halting, false);
    assert.equal(pcsr.attribution, 'recently-executed');
    assert.match(pcsr.accuracy, /double/);
    // Best available there: the QEMU samplers are not, and PCSR comes before halting.
    assert.equal(
      describeSamplers({ server: openocd, config: { family: 'cortex-m' } }).find((s) => s.available)?.id,
      'openocd-pcsr',
    );
  });

  test('elsewhere unavailable, and the error lists it with what it needs', () => {
    for (const facts of [
      { server: openocd, config: { family: 'riscv' as const } },
      { server: qemu, config: { family: 'cortex-m' as const } },
    ]) {
      const all = describeSamplers(facts);
      const pcsr = all.find((s) => s.id === 'openocd-pcsr')!;
      assert.equal(pcsr.available, false);
      const err = unavailableSampler(all, 'openocd-pcsr');
      assert.match(err.message, /`openocd-pcsr` is not available/);
      assert.match(
        err.message,
        /openocd-pcsr \(OpenOCD DWT_PCSR \(Cortex-M, non-halting\)\): needs a Cortex-M target .*served by OpenOCD/,
      );
      assert.match(err.message, /gdb-halting \(GDB halting \(interrupt, read PC, continue\)\): available/);
    }
  });
});
