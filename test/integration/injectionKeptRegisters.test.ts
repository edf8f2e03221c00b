import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { rv32InjectionArch } from '../../adapter/arch/riscv/trampolineRv32';
import { ElfImage } from '../../adapter/elf';
import { InjectionPlanner } from '../../adapter/probe/injection/planner';
import { ProgramModel } from '../../adapter/probe/injection/programModel';
import { runOracle, type OracleSummary } from '../oracle/oracle';
import { OWNER_TAG_VAR, killTagged, newOwnerTag, waitForNoTaggedProcesses } from '../support/ownedProcesses';
import { fixturesDir } from '../support/paths';
import { startRv32InjectionSession, type Rv32InjectionSession } from '../support/rv32InjectionSession';
import { gdbIntegerRegisters } from '../../adapter/arch/riscv/registers';

/**
 * Callers that keep values in caller-saved registers across a call (GCC's -fipa-ra, and every
 * caller of libgcc's soft-float helpers, which knows their clobbers): the RV32 stubs give those
 * registers back, so the functions are measured instead of refused. On the picolibc soft-float
 * program, main keeps a value in t0 (x5) across its calls of __adddf3, which never writes t0.
 * Checked against the oracle (exact counts from the unpatched program's instruction trace), the
 * program's own output, and t0 itself right after the call, compared with an unpatched run.
 */

const ELF = join(fixturesDir, 'build', 'rv32', 'programs', 'softfloat.elf');
const skip = existsSync(ELF) ? false : 'rv32 programs not built (make -C test/fixtures)';
const tag = newOwnerTag();
const scratch = mkdtempSync(join(tmpdir(), 'cyclelens-kept-it-'));
const T0 = 5;
const ABI = gdbIntegerRegisters;
/** Hot soft-float helpers whose callers keep registers across the call (refused before). */
const MEASURED = ['__adddf3', '__floatsidf', '__gtdf2', '__fixdfsi', '__clzsi2', '__muldf3', '__divdf3'];

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

/** main's direct call of __adddf3 across which it keeps t0, the instruction after it, and every register kept there. */
function keptCallInMain(): { call: number; after: number; kept: number[] } {
  const elf = ElfImage.loadSync(ELF);
  const model = new ProgramModel(elf, rv32InjectionArch());
  const planner = new InjectionPlanner(model, rv32InjectionArch(), { start: 0x8700_0000, size: 0x1000 });
  const k = planner.keptOf(model.functionNamed('__adddf3')!)!;
  const at = k.where.get(T0);
  assert.ok(
    at && at.caller === 'main',
    'main keeps t0 across a call of __adddf3 ' +
      `(found: ${JSON.stringify([...k.where.entries()].map(([r, w]) => [r, w.caller]))})`,
  );
  const kept = [...k.where.entries()].filter(([, w]) => w.site.address === at.site.address).map(([r]) => r);
  return { call: at.site.address, after: at.site.address + at.site.length, kept };
}

/**
 * Right before the call, the kept registers get values nothing else in the program produces (every
 * stub leaves the same t-register values behind, so a value left by an earlier measured call would
 * prove nothing); right after the return they are read back. Then the program's output at exit.
 * Both runs get the same values, so their outputs stay comparable.
 */
async function observe(
  s: Rv32InjectionSession,
  site: { call: number; after: number; kept: number[] },
): Promise<{ after: bigint[]; output: string }> {
  await s.runTo(`*0x${site.call.toString(16)}`);
  for (const r of site.kept) await s.access.writeRegister(ABI[r]!, marker(r));
  await s.runTo(`*0x${site.after.toString(16)}`);
  const after = await Promise.all(site.kept.map((r) => s.access.readRegister(ABI[r]!)));
  await s.runTo('exit');
  return { after, output: await s.output() };
}

const marker = (r: number): bigint => 0x5eed_0000n + BigInt(r);

const RESULT = /acc -?\d+ money -?\d+/;

describe('RV32 functions whose callers keep registers across the call (-fipa-ra)', { skip, timeout: 900_000 }, () => {
  it(
    'are measured exactly, the registers kept across the call survive it, and the program ' +
      'prints what it prints unpatched',
    async () => {
      const site = keptCallInMain();
      const plain = await session();
      let reference: Awaited<ReturnType<typeof observe>>;
      try {
        await plain.runTo('main');
        reference = await observe(plain, site);
      } finally {
        await plain.close();
      }
      assert.match(reference.output, RESULT, 'the unpatched program printed its result');
      assert.deepEqual(
        reference.after,
        site.kept.map(marker),
        `unpatched, __adddf3 leaves ${site.kept.map((r) => ABI[r]).join(', ')} alone`,
      );

      const s = await session();
      try {
        await s.runTo('main');
        for (const n of MEASURED) await s.svc.measureFunction(n);
        const patched = await observe(s, site);
        // The stubs overwrite t0 with mstatus at entry and exit: only the save gives it back.
        assert.deepEqual(
          patched.after,
          site.kept.map(marker),
          `measured, ${site.kept.map((r) => ABI[r]).join(', ')} survive main's call of __adddf3`,
        );
        assert.equal(
          patched.output.match(RESULT)?.[0],
          reference.output.match(RESULT)?.[0],
          'the program printed what it prints unpatched',
        );
        const rs = await s.svc.read();
        for (const n of MEASURED) {
          const r = rs.find((x) => x.name === n);
          const o = oracle.functions.find((f) => f.name === n);
          assert.ok(r && o, `${n} measured and traced`);
          assert.equal(r.calls, o.calls, `${n}: calls`);
          assert.equal(r.open, 0, `${n}: no pass left open`);
          assert.equal(
            r.compensatedTotal,
            o.inclusive,
            `${n}: ${r.total} - ${r.nested} - ${r.ownOverheadPerPass} x ${r.passes}`,
          );
        }
      } finally {
        await s.close();
      }
    },
  );
});
