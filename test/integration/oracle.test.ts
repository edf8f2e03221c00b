import assert from 'node:assert/strict';
import { createReadStream, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { ElfImage } from '../../adapter/elf';
import { ToolTarget, hasTool } from '../oracle/binutils';
import { OUTSIDE } from '../oracle/codeModel';
import { OracleSummary, runOracle } from '../oracle/oracle';
import { SAMPLE_FACTS, buildSamples, canBuildSamples } from '../oracle/samplePrograms';
import { fixtureElf, fixturesDir } from '../support/paths';
import { OWNER_TAG_VAR, killTagged, newOwnerTag, waitForNoTaggedProcesses } from '../support/ownedProcesses';

// The oracle on real QEMU runs: the fixture firmware (when built) and the tests' own sample
// program, both targets. The checks are invariants that a wrong stack model, a wrong log parse
// or a lost instruction would break, and facts of the programs' sources.

const TARGETS: readonly ToolTarget[] = ['cortex-m4', 'rv32'];
const QEMU: Record<ToolTarget, string> = { 'cortex-m4': 'qemu-system-arm', rv32: 'qemu-system-riscv32' };
const HANDLER: Record<ToolTarget, string> = { 'cortex-m4': 'TIMER0_IRQHandler', rv32: 'trap_entry' };
const SAMPLE_HANDLER: Record<ToolTarget, string> = { 'cortex-m4': 'SysTick_Handler', rv32: 'trap_entry' };

const tag = newOwnerTag();
const scratch = mkdtempSync(join(tmpdir(), 'cyclelens-oracle-it-'));
before(() => {
  process.env[OWNER_TAG_VAR] = tag; // every QEMU the oracle starts inherits it
});
after(async () => {
  killTagged(tag);
  rmSync(scratch, { recursive: true, force: true });
});

/** What the log says, read independently of the oracle's parser (line by line, with a regex). */
async function scanLog(
  path: string,
  firstOf: number,
): Promise<{ lines: number; traces: number; withdrawals: number; before: number }> {
  let lines = 0;
  let traces = 0;
  let withdrawals = 0;
  let before = -1;
  let pendingFirst = false;
  const rl = createInterface({ input: createReadStream(path), crlfDelay: Infinity });
  for await (const line of rl) {
    lines++;
    const m = /^Trace \d+: 0x[0-9a-f]+ \[[0-9a-f]+\/([0-9a-f]+)\//.exec(line);
    if (m) {
      if (pendingFirst) before = traces - withdrawals - 1;
      pendingFirst = false;
      traces++;
      if (before < 0 && parseInt(m[1]!, 16) === firstOf) pendingFirst = true;
    } else if (/^(Stopped execution of TB chain|cpu_io_recompile: rewound)/.test(line)) {
      withdrawals++;
      pendingFirst = false;
    }
  }
  if (pendingFirst) before = traces - withdrawals - 1;
  return { lines, traces, withdrawals, before };
}

function profile(s: OracleSummary, name: string): OracleSummary['functions'][number] {
  const f = s.functions.find((x) => x.name === name);
  assert.ok(f, `${name} is in the profile`);
  return f;
}

function uartValue(s: OracleSummary, key: string): number {
  const m = new RegExp(`${key}=0x([0-9a-f]+)`).exec(s.qemu?.uart ?? '');
  assert.ok(m, `the program printed ${key}=`);
  return parseInt(m[1]!, 16);
}

function checkCommon(
  s: OracleSummary,
  scan: { lines: number; traces: number; withdrawals: number },
  img: ElfImage,
  target: ToolTarget,
): void {
  assert.equal(s.qemu?.exitCode, 0, `QEMU ended cleanly: ${s.qemu?.stderr}`);
  assert.equal(s.trace.lines, scan.lines, 'every log line was read');
  assert.equal(s.totals.instructions, scan.traces - scan.withdrawals, 'instructions = Trace lines - withdrawn ones');
  assert.equal(s.trace.malformed, 0);
  assert.equal(s.trace.unmatchedWithdrawals, 0);
  assert.equal(s.totals.exclusiveSum, s.totals.instructions, 'exclusive counts sum to the total');
  assert.equal(s.totals.rootInclusive, s.totals.instructions, 'the root is on the stack throughout');
  assert.ok(s.totals.consistent);
  assert.deepEqual(s.anomalies, [], 'every control transfer was explained');
  for (const a of s.addresses) {
    if (a.function === OUTSIDE) {
      // Only QEMU's rv32 reset ROM (0x1000) runs outside the program.
      assert.ok(target === 'rv32' && a.address < 0x2000, `0x${a.address.toString(16)} executed outside every function`);
      continue;
    }
    const sym = img.functionContaining(a.address) ?? img.symbols.codeLabelAtOrBefore(a.address);
    assert.equal(sym?.name, a.function, `0x${a.address.toString(16)}`);
  }
  assert.equal(s.totals.outsideProgram, target === 'rv32' ? 6 : 0);
}

describe('oracle on the singlepass fixture under QEMU', () => {
  for (const target of TARGETS) {
    const elf = fixtureElf(target, 'singlepass');
    const skip = !existsSync(elf)
      ? 'fixture not built (make -C test/fixtures)'
      : !hasTool(QEMU[target])
        ? `${QEMU[target]} not installed`
        : false;

    it(`${target}: totals, call counts, interrupts and regions hold`, { skip, timeout: 240_000 }, async (t) => {
      const img = ElfImage.loadSync(elf);
      const log = join(scratch, `${target}-singlepass.log`);
      const dsp = join(fixturesDir, 'src', 'dsp.c');
      const marker = (m: string): number =>
        readFileSync(dsp, 'utf8')
          .split('\n')
          .findIndex((l) => l.includes(m)) + 1;
      const s = await runOracle({
        elf,
        target,
        keepLog: log,
        regions: [{ name: 'fir', start: `dsp.c:${marker('#REGION_START')}`, end: `dsp.c:${marker('#REGION_END')}` }],
      });
      const main = img.functionNamed('main')!;
      const scan = await scanLog(log, main.address);
      t.diagnostic(
        `${s.totals.instructions} instructions, ${s.trace.lines} log lines, ` +
          `parsed at ${(s.trace.linesPerSecond / 1e6).toFixed(2)} M lines/s; QEMU ${s.qemu?.seconds.toFixed(1)} s`,
      );
      checkCommon(s, scan, img, target);

      // main never returns (it ends the run through board_exit), so it is on the stack from its
      // first instruction to the last instruction of the run.
      assert.ok(scan.before > 0);
      assert.equal(
        profile(s, 'main').inclusive,
        s.totals.instructions - scan.before,
        'main inclusive = total - start-up',
      );
      assert.equal(profile(s, 'main').calls, 1);

      const rounds = Number(
        /#define SINGLEPASS_ROUNDS (\d+)u/.exec(readFileSync(join(fixturesDir, 'src', 'singlepass.c'), 'utf8'))![1],
      );
      assert.equal(profile(s, 'process_packet').calls, rounds, 'process_packet runs once per round');
      assert.equal(profile(s, 'fir_filter').calls, rounds);
      assert.equal(profile(s, 'program_end').calls, 1);
      assert.ok(
        s.edges.some((e) => e.caller === 'quicksort' && e.callee === 'quicksort'),
        'quicksort recursion is seen',
      );
      assert.ok(
        s.edges.some((e) => e.caller === 'hash_mix' && e.callee === 'mix_rotate'),
        'the tail call hash_mix -> mix_rotate is a call',
      );

      const ticks = uartValue(s, 'ticks');
      const isr = profile(s, HANDLER[target]);
      assert.ok(isr.interrupts > 1, 'the timer interrupt is entered more than once');
      assert.equal(isr.interrupts, ticks, 'one handler entry per tick the program counted');
      assert.equal(profile(s, 'app_timer_tick').calls, ticks);
      assert.ok(profile(s, 'main').inclusiveExcludingInterrupts < profile(s, 'main').inclusive);

      const fir = s.regions[0]!;
      assert.equal(fir.count, 128 * rounds, 'one region pass per sample of every fir_filter call');
      assert.equal(fir.unmatchedEnds, 0);
      assert.ok(fir.passesExcludingInterrupts.every((p, i) => p > 0 && p <= fir.passes[i]!));
      assert.ok(
        s.lines.length > 50 && s.totals.withoutLine === 0,
        'every instruction of the program maps to a source line',
      );
    });
  }
});

describe('oracle on the sample program under QEMU', () => {
  for (const target of TARGETS) {
    const skip = !canBuildSamples(target)
      ? 'no cross compiler'
      : !hasTool(QEMU[target])
        ? `${QEMU[target]} not installed`
        : false;

    it(
      `${target}: call counts of the source, interrupts, and exact repetition`,
      { skip, timeout: 120_000 },
      async () => {
        const [sample] = buildSamples([target], [{ name: 'o2', flags: ['-O2', '-g'], runnable: true }]);
        const img = ElfImage.loadSync(sample!.elf);
        const log = join(scratch, `${target}-sample.log`);
        const s = await runOracle({ elf: sample!.elf, target, keepLog: log });
        checkCommon(s, await scanLog(log, img.functionNamed('main')!.address), img, target);
        assert.equal(profile(s, 'leaf').calls, SAMPLE_FACTS.leafCalls);
        assert.equal(profile(s, 'tail_caller').calls, SAMPLE_FACTS.tailCallerCalls);
        assert.equal(profile(s, 'dispatch').calls, SAMPLE_FACTS.dispatchCalls);
        assert.ok(
          s.edges.some(
            (e) => e.caller === 'tail_caller' && e.callee === 'leaf' && e.calls === SAMPLE_FACTS.tailCallerCalls,
          ),
        );
        assert.ok(s.edges.some((e) => e.caller === 'fib' && e.callee === 'fib'));
        const handler = profile(s, SAMPLE_HANDLER[target]);
        assert.ok(handler.interrupts >= SAMPLE_FACTS.minTicks);
        assert.equal(profile(s, 'tick_work').calls, handler.interrupts);

        if (target === 'rv32') {
          // minstret counts retired instructions exactly under -icount (docs/design.md, "Truth: the
          // oracle"): read by the program just before exit, it must equal the instructions the trace
          // holds before the reading instruction, plus that instruction itself. Withdrawn trace lines
          // must not count.
          const read = img.symbols.named('sample_minstret_read')[0]!;
          const before = (await scanLog(log, read.address)).before;
          assert.equal(
            uartValue(s, 'minstret'),
            before + 1,
            'minstret = trace instructions up to and including its csrr',
          );
          assert.ok(s.trace.withdrawn > 0, 'the run had withdrawn trace lines, so the check means something');
        }

        // -icount shift=0,sleep=off: the same program gives the same reference, instruction for instruction.
        const again = await runOracle({ elf: sample!.elf, target });
        assert.deepEqual(again.addresses, s.addresses);
        assert.deepEqual(again.functions, s.functions);
      },
    );
  }
});

describe('oracle bounds on a program that never ends', () => {
  const target: ToolTarget = 'rv32';
  const elf = fixtureElf(target, 'cyclic');
  const skip = !existsSync(elf) ? 'fixture not built' : !hasTool(QEMU[target]) ? 'QEMU not installed' : false;

  it('stops QEMU at --max-instructions and counts exactly that many', { skip, timeout: 120_000 }, async () => {
    const s = await runOracle({ elf, target, maxInstructions: 250_000, timeoutMs: 60_000 });
    assert.equal(s.totals.instructions, 250_000);
    assert.equal(s.trace.truncated, true);
    assert.equal(s.qemu?.stoppedAtLimit, true);
    assert.equal(s.totals.exclusiveSum, 250_000);
    assert.deepEqual(s.anomalies, []);
    assert.ok(profile(s, 'idle_point').calls >= 1);
    assert.deepEqual(await waitForNoTaggedProcesses(tag), [], 'no QEMU left running');
  });

  it('kills QEMU at the timeout and says how to bound the run', { skip, timeout: 60_000 }, async () => {
    await assert.rejects(
      runOracle({ elf, target, timeoutMs: 1500 }),
      /did not finish within 1.5 s.*--max-instructions/,
    );
    assert.deepEqual(await waitForNoTaggedProcesses(tag), [], 'no QEMU left running');
  });
});
