import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { InjectionService } from '../../adapter/probe/injection/injectionService';
import { runOracle, type OracleSummary } from '../oracle/oracle';
import { OWNER_TAG_VAR, killTagged, newOwnerTag, waitForNoTaggedProcesses } from '../support/ownedProcesses';
import { fixturesDir } from '../support/paths';
import { startRv32InjectionSession, type Rv32InjectionSession } from '../support/rv32InjectionSession';

/**
 * picolibc's -msave-restore millicode on RV32, measured: `__riscv_save_N` (called with `jal t0`,
 * returning with `jr t0`) and `__riscv_restore_N` (a shared epilogue reached by a tail jump, which
 * loads the return address of the function that jumped to it). Their labels are aliases at entry
 * points into shared code: `__riscv_save_12` jumps into `__riscv_save_8`'s body (the trace counts
 * what follows in save_8's inclusive time, not as a call), and `__riscv_restore_12` falls through
 * into `__riscv_restore_10`'s entry (not a call of restore_10). Checked against the oracle (the
 * unpatched program's instruction trace): calls and instructions, and the program's output.
 */

const ELF = join(fixturesDir, 'build', 'rv32', 'programs', 'crc32.elf');
const skip = existsSync(ELF) ? false : 'rv32 programs not built (make -C test/fixtures)';
const tag = newOwnerTag();
const scratch = mkdtempSync(join(tmpdir(), 'cyclelens-millicode-it-'));
const RESULT = /crc32 [0-9a-f]{8} [0-9a-f]{8} [0-9a-f]{8}/;

let oracle: OracleSummary;

before(async () => {
  process.env[OWNER_TAG_VAR] = tag;
  if (skip) return;
  oracle = await runOracle({ elf: ELF });
});

after(async () => {
  killTagged(tag);
  assert.deepEqual(await waitForNoTaggedProcesses(tag), [], 'no QEMU or GDB left behind');
  rmSync(scratch, { recursive: true, force: true });
});

const session = (): Promise<Rv32InjectionSession> => startRv32InjectionSession(ELF, scratch);

const traced = (name: string) => {
  const o = oracle.functions.find((f) => f.name === name || f.aliases.includes(name));
  assert.ok(o, `${name} runs in the trace`);
  return o;
};

type Results = Awaited<ReturnType<InjectionService['read']>>[number];

/**
 * Measures `names` from main to exit (after `then`, given the measurements by name); the results
 * by name, and what the program printed.
 */
async function measured(
  names: readonly string[],
  then?: (s: Rv32InjectionSession, ids: Map<string, number>) => Promise<void>,
): Promise<{ results: Map<string, Results>; output: string }> {
  const s = await session();
  try {
    await s.runTo('main');
    const ids = new Map<string, number>();
    for (const n of names) ids.set(n, (await s.svc.measureFunction(n)).id);
    await then?.(s, ids);
    await s.runTo('exit');
    const rs = await s.svc.read();
    return { results: new Map(rs.map((r) => [r.name, r])), output: await s.output() };
  } finally {
    await s.close();
  }
}

describe('RV32 -msave-restore millicode', { skip, timeout: 900_000 }, () => {
  it(
    'save (t0 link) and restore (return address from the stack) are measured exactly, and the ' +
      'program prints what it prints unpatched',
    async () => {
      const plain = await session();
      let reference: string;
      try {
        await plain.runTo('exit');
        reference = (await plain.output()).match(RESULT)?.[0] ?? '';
      } finally {
        await plain.close();
      }
      assert.match(reference, RESULT, 'the unpatched program printed its result');

      // Run 1: two saves (save_12 jumps into save_8's body) and the restore that restore_12 falls into:
      // restore_12's entry is patched to send that code to a copy.
      const one = await measured(['__riscv_save_12', '__riscv_save_8', '__riscv_restore_10']);
      // Run 2: both restores; restore_12's own stub runs the copy, so restore_10 needs no patch there.
      const two = await measured(['__riscv_restore_12', '__riscv_restore_10']);
      // Run 3: the same, then restore_12 goes before the program runs: restore_10's diverting patch goes in.
      let refusedAgain = '';
      const three = await measured(['__riscv_restore_12', '__riscv_restore_10'], async (s, ids) => {
        await s.svc.remove(ids.get('__riscv_restore_12')!);
        refusedAgain = await s.svc.measureFunction('__riscv_restore_12').then(
          () => 'measured',
          (err: unknown) => String(err),
        );
      });
      assert.match(
        refusedAgain,
        /__riscv_restore_10\) that keeps the code here, which falls through into its entry, out of its count/,
        'restore_12 is refused while restore_10 diverts its code, saying so',
      );
      for (const [run, m, names] of [
        ['first', one, ['__riscv_save_12', '__riscv_save_8', '__riscv_restore_10']],
        ['second', two, ['__riscv_restore_12', '__riscv_restore_10']],
        ['third', three, ['__riscv_restore_10']],
      ] as const) {
        assert.equal(
          m.output.match(RESULT)?.[0],
          reference,
          `${run} run: the program printed what it prints unpatched`,
        );
        assert.deepEqual([...m.results.keys()].sort(), [...names].sort(), `${run} run: measured ${names.join(', ')}`);
        for (const n of names) {
          const r = m.results.get(n)!;
          const o = traced(n);
          assert.ok(o.calls > 0, `${n} is called in the trace`);
          assert.equal(r.calls, o.calls, `${run} run, ${n}: calls`);
          assert.equal(r.open, 0, `${run} run, ${n}: no pass left open`);
          assert.equal(r.untracked, 0, `${run} run, ${n}: every entry tracked`);
          assert.equal(
            r.compensatedTotal,
            o.inclusive,
            `${run} run, ${n}: ${r.total} - ${r.nested} - ${r.ownOverheadPerPass} x ${r.passes}`,
          );
        }
      }
    },
  );
});
