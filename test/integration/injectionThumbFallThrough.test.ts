import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { thumbInjectionSupport } from '../../adapter/arch/cortex-m/trampolineThumb';
import { parseLocationSpec } from '../../adapter/debugger/locations';
import { ElfImage } from '../../adapter/elf';
import { debuggerTargetRunner } from '../../adapter/probe/debuggerRunner';
import { InjectionService, type MeasurementResults } from '../../adapter/probe/injection/injectionService';
import { resolveReservedMemory } from '../../adapter/probe/injection/reservedMemory';
import { SYSTICK_CVR, type ReservedMemory } from '../../adapter/probe/injection/types';
import { DebuggerTargetAccess } from '../../adapter/probe/targetAccess';
import { QemuServer } from '../../adapter/servers/qemu';
import { qemuMemoryMap } from '../../adapter/target/targetFacts';
import { runOracle, type OracleSummary } from '../oracle/oracle';
import { startGdb } from '../support/gdb';
import { OWNER_TAG_VAR, killTagged, newOwnerTag, waitForNoTaggedProcesses } from '../support/ownedProcesses';
import { fixturesDir } from '../support/paths';

/**
 * Code that runs on into a measured entry on Cortex-M4 (QEMU mps2-an386, SysTick: one tick per 40
 * instructions), on the `fft` program: libgcc's `__aeabi_fsub` is one `eor.w` that falls through
 * into `__aeabi_fadd`, and `__aeabi_cfrcmple` ends with a `b` to the next instruction,
 * `__aeabi_cfcmple`. The trace keeps those passes in the function they started in; the measurement
 * diverts them around the entry patch (thumbFallThrough.ts), so calls are exact, values are within
 * a tick per pass, the enclosing `fft` loses none of its time to the copies, and the program prints
 * what it prints unpatched.
 */

const ELF = join(fixturesDir, 'build', 'cortex-m4', 'programs', 'fft.elf');
const skip = existsSync(ELF) ? false : 'cortex-m4 programs not built (make -C test/fixtures)';
const INSTRUCTIONS_PER_TICK = 40;
const tag = newOwnerTag();
const scratch = mkdtempSync(join(tmpdir(), 'cyclelens-thumb-fallthrough-'));
let oracle: OracleSummary;

before(async () => {
  process.env[OWNER_TAG_VAR] = tag;
  if (!skip) oracle = await runOracle({ elf: ELF });
});
after(async () => {
  killTagged(tag);
  rmSync(scratch, { recursive: true, force: true });
  assert.deepEqual(await waitForNoTaggedProcesses(tag, 5000), []);
});

const traced = (name: string): OracleSummary['functions'][number] => {
  const f = oracle.functions.find((x) => x.name === name || x.aliases.includes(name));
  assert.ok(f, `the trace runs ${name}`);
  return f;
};

/**
 * Each function's calls equal the trace's and its ticks are within its quantisation bound; the program
 * ran through; the code is back.
 */
function agreesWithTrace(
  names: readonly string[],
  rs: readonly MeasurementResults[],
  output: string,
  restored: boolean,
): void {
  for (const n of names) {
    const r = rs.find((x) => x.name === n)!;
    const o = traced(n);
    assert.equal(r.calls, o.calls, `${n}: calls`);
    const expected = o.inclusiveExcludingInterrupts / INSTRUCTIONS_PER_TICK;
    assert.ok(
      Math.abs(r.compensatedTotal - expected) <= r.passes + 1,
      `${n}: ${r.compensatedTotal.toFixed(1)} ticks vs the trace's ${expected.toFixed(1)}`,
    );
  }
  assert.match(output, /fft peak \d+ error x1000 \d+/);
  assert.ok(restored, 'the code is as the ELF has it after the measurements are removed');
}

/**
 * RAM 512 MiB from the code (the program's stack ends 1 MiB above it, its heap is small): every
 * patch goes through a literal, and fsub's 4 bytes hold only a jump through the widened fadd patch.
 */
const FAR: ReservedMemory = { start: 0x2030_0000, size: 0x10000, source: 'launch' };

/**
 * Measures `names` from main to exit; the results, the output, and whether the code is as the ELF has it
 * after removal.
 */
async function measureFromMainToExit(
  names: string[],
  reserved?: ReservedMemory,
): Promise<{ rs: MeasurementResults[]; output: string; warnings: string[]; restored: boolean }> {
  const elf = ElfImage.loadSync(ELF);
  let out = '';
  const qemu = new QemuServer({ type: 'qemu' });
  await qemu.start({ executable: ELF, family: 'cortex-m', cwd: scratch, log: (l) => (out += l) });
  const gdb = await startGdb(scratch, 'cortex-m');
  try {
    await gdb.loadProgram(ELF);
    await gdb.connectRemote(qemu.gdbAddress);
    const access = new DebuggerTargetAccess(gdb);
    const runTo = async (location: string): Promise<void> => {
      const bp = await gdb.insertBreakpoint({ location: parseLocationSpec(location) });
      const stopped = gdb.waitForStop(120_000);
      await gdb.continue();
      const stop = await stopped;
      assert.ok(stop?.breakpointIds.includes(bp.id), `stopped at ${location} (${stop?.reason ?? 'no stop'})`);
      await gdb.deleteBreakpoints([bp.id]);
    };
    const svc = new InjectionService({
      access,
      elf,
      support: thumbInjectionSupport(SYSTICK_CVR, { counterUnitsPerInstruction: 1 / INSTRUCTIONS_PER_TICK }),
      counterUnitsPerInstruction: 1 / INSTRUCTIONS_PER_TICK,
      isHalted: () => gdb.executionState === 'stopped',
      journalDir: join(scratch, `journal-${Date.now()}`),
      reserved: reserved ?? (resolveReservedMemory(elf, { memoryMap: qemuMemoryMap('mps2-an386')! }) as ReservedMemory),
      memoryMap: qemuMemoryMap('mps2-an386'),
      runner: debuggerTargetRunner(gdb),
    });
    await runTo('main');
    const warnings: string[] = [];
    const ids = new Map<string, number>();
    for (const n of names) {
      const info = await svc.measureFunction(n);
      ids.set(n, info.id);
      warnings.push(...info.warnings.map((w) => `${n}: ${w.code}`));
    }
    await runTo('exit');
    // Each result under the name it was asked by (an alias reads under the model's name).
    const rs = (await svc.read()).map((r) => ({ ...r, name: [...ids].find(([, id]) => id === r.id)?.[0] ?? r.name }));
    // Everything the measurements wrote goes back: the code reads as the ELF has it.
    const lo = (elf.functionNamed('__aeabi_frsub')!.address & ~1) >>> 0;
    const hi = (elf.functionNamed('__aeabi_fcmpgt')!.address & ~1) >>> 0;
    await svc.removeAll();
    const now = await access.readMemory(BigInt(lo), hi - lo);
    const image = elf.file.readMemory(lo, hi - lo);
    await qemu.flushOutput();
    return { rs, output: out, warnings, restored: image !== undefined && Buffer.from(now).equals(Buffer.from(image)) };
  } finally {
    await gdb.exit();
    await qemu.stop();
  }
}

describe('code falling through into a measured entry on QEMU Cortex-M4 (fft)', { skip, timeout: 600_000 }, () => {
  // The README's configuration takes unused code memory after the image: B.W patches of 4 bytes,
  // so fsub's entry is patched too, and its stub runs fadd's displaced code (PatchSite.divertCode).
  it(
    'fadd, fsub, cfcmple and cfrcmple in one run: calls equal the trace, values within a tick ' +
      'per pass, fft keeps its time, nothing left patched',
    async () => {
      // The diverting entries first, as the adapter orders one request (a bypass patch waits for them).
      const names = ['__aeabi_fsub', '__aeabi_fadd', '__aeabi_cfrcmple', '__aeabi_cfcmple', 'fft.constprop.0'];
      const { rs, output, warnings, restored } = await measureFromMainToExit(names);
      assert.deepEqual(
        warnings.filter((w) => w.endsWith('fallThroughCounted')),
        [],
        'every fall-through is diverted',
      );
      for (const n of names) {
        const r = rs.find((x) => x.name === n)!;
        const o = traced(n);
        assert.equal(r.calls, o.calls, `${n}: calls`);
        assert.equal(r.untracked, 0, `${n}: no entry untracked`);
        const expected = o.inclusiveExcludingInterrupts / INSTRUCTIONS_PER_TICK;
        assert.ok(
          Math.abs(r.compensatedTotal - expected) <= r.passes + 1,
          `${n}: ${r.compensatedTotal.toFixed(1)} ticks vs the trace's ${expected.toFixed(1)} (passes ` +
            `${r.passes}, nested ${r.nested.toFixed(1)})`,
        );
      }
      assert.match(output, /fft peak \d+ error x1000 \d+/);
      assert.ok(restored, 'the code is as the ELF has it after the measurements are removed');
    },
  );

  it(
    'with the injector’s RAM out of B.W reach: fsub’s 4 bytes jump through a second literal of ' + 'fadd’s patch',
    async () => {
      const names = ['__aeabi_fadd', '__aeabi_cfcmple', 'fft.constprop.0'];
      const { rs, output, warnings, restored } = await measureFromMainToExit(names, FAR);
      assert.deepEqual(
        warnings.filter((w) => w.endsWith('fallThroughCounted')),
        [],
      );
      agreesWithTrace(names, rs, output, restored);
    },
  );

  it(
    'with cfrcmple not measured, its code is patched to run the copy, and fcmpgt, which calls ' + 'it, keeps its time',
    async () => {
      const names = ['__aeabi_cfcmple', '__aeabi_fcmpgt', '__aeabi_fadd'];
      const { rs, output, restored } = await measureFromMainToExit(names);
      agreesWithTrace(names, rs, output, restored);
    },
  );
});
