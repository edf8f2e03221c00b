import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createReadStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { DwtCounters } from '../../adapter/arch/cortex-m/dwt';
import { PmuCounters } from '../../adapter/arch/cortex-m/pmu';
import { SysTickCounters } from '../../adapter/arch/cortex-m/sysTick';
import { CoreExecutedStore, type StepInstruction } from '../../adapter/arch/cortex-m/sysTickCoreStore';
import { qemuHpmEvents, RiscvCounters } from '../../adapter/arch/riscv/counters';
import { startGdb } from '../support/gdb';
import type { Debugger } from '../../adapter/debugger/debugger';
import { parseLocationSpec } from '../../adapter/debugger/locations';
import type { BreakpointInfo } from '../../adapter/debugger/types';
import type { CounterReading } from '../../adapter/probe/counters';
import { DebuggerTargetAccess } from '../../adapter/probe/targetAccess';
import { QemuServer } from '../../adapter/servers/qemu';
import { freePort } from '../../adapter/util/ports';
import { OwnedProcess } from '../../adapter/util/processes';
import type { TargetFamily } from '../../common/launchArgs';
import { markerLine } from '../support/markers';
import { killTagged, newOwnerTag, OWNER_TAG_VAR, waitForNoTaggedProcesses } from '../support/ownedProcesses';
import { fixtureElf, fixturesDir, type FixtureTarget, repoRoot } from '../support/paths';

/**
 * The counter units against real QEMU 7.2 through the adapter's own pieces (QemuServer, GDB through the
 * debugger factory, DebuggerTargetAccess). Counts are checked against an instruction trace of the same
 * program (`-singlestep -d exec,nochain`), which under `-icount shift=0,sleep=off` runs identically.
 */

const singlepass = join(fixturesDir, 'src', 'singlepass.c');
/** Instructions per SysTick tick on QEMU mps2-an386: 25 MHz board clock, 1 ns per instruction under -icount shift=0. */
const instructionsPerTick = 40;

/**
 * For each PC, the instruction indices at which it is about to execute, from an exec trace. A
 * `cpu_io_recompile: rewound` line means the instruction logged just before it was abandoned and is
 * logged again.
 */
async function traceHits(log: string, pcs: bigint[]): Promise<Map<bigint, number[]>> {
  const hits = new Map(pcs.map((pc) => [pc, [] as number[]]));
  let count = 0;
  let last: bigint | undefined;
  const lines = createInterface({ input: createReadStream(log), crlfDelay: Infinity });
  for await (const line of lines) {
    if (line.startsWith('Trace ')) {
      const m = /\[[0-9a-f]+\/([0-9a-f]+)\//.exec(line);
      last = m ? BigInt(`0x${m[1]}`) : undefined;
      if (last !== undefined) hits.get(last)?.push(count);
      count++;
    } else if (line.startsWith('cpu_io_recompile: rewound')) {
      count--;
      if (last !== undefined) hits.get(last)?.pop();
      last = undefined;
    }
  }
  return hits;
}

/** Runs the program to its end under QEMU with an instruction trace; returns the trace file. */
async function traceRun(binary: string, argv: string[], dir: string): Promise<string> {
  const log = join(dir, 'exec.log');
  const qemu = OwnedProcess.spawn(
    'qemu-trace',
    binary,
    [
      ...argv,
      '-display',
      'none',
      '-serial',
      'null',
      '-monitor',
      'none',
      '-singlestep',
      '-d',
      'exec,nochain',
      '-D',
      log,
    ],
    { cwd: repoRoot },
  );
  const timer = setTimeout(() => void qemu.kill(), 120_000);
  const { code } = await qemu.exited;
  clearTimeout(timer);
  assert.equal(code, 0, 'the traced run ends with status 0');
  return log;
}

interface Breakpoints {
  mainFirst: BreakpointInfo;
  timerStart: BreakpointInfo;
  round: BreakpointInfo;
}

/**
 * #MAIN_FIRST, the entry of board_timer_start and #ROUND. Until board_timer_start runs no device
 * timer is armed, which is what keeps QEMU's virtual clock equal to the instruction count across
 * debugger stops (see the "QEMU 7.2 fact" tests).
 */
async function insertBreakpoints(gdb: Debugger): Promise<Breakpoints> {
  const at = async (location: string): Promise<BreakpointInfo> => {
    const bp = await gdb.insertBreakpoint({ location: parseLocationSpec(location) });
    assert.ok(bp.address !== undefined, `no address for ${location}`);
    return bp;
  };
  return {
    mainFirst: await at(`${singlepass}:${markerLine(singlepass, '#MAIN_FIRST')}`),
    timerStart: await at('board_timer_start'),
    round: await at(`${singlepass}:${markerLine(singlepass, '#ROUND')}`),
  };
}

/** Instruction counts of the regions the tests run, from the trace. */
interface Regions {
  resetToMain: number;
  mainToTimerStart: number;
  /** Instructions of each round: between successive arrivals at #ROUND. */
  rounds: number[];
}

async function regionsFromTrace(log: string, bps: Breakpoints): Promise<Regions> {
  const hits = await traceHits(log, [bps.mainFirst.address!, bps.timerStart.address!, bps.round.address!]);
  const main = hits.get(bps.mainFirst.address!)!;
  const timerStart = hits.get(bps.timerStart.address!)!;
  const round = hits.get(bps.round.address!)!;
  assert.equal(main.length, 1);
  assert.equal(timerStart.length, 1);
  assert.equal(round.length, 20, '#ROUND runs once per round');
  return {
    resetToMain: main[0]!,
    mainToTimerStart: timerStart[0]! - main[0]!,
    rounds: round.slice(1).map((h, i) => h - round[i]!),
  };
}

async function continueTo(gdb: Debugger, bp: BreakpointInfo): Promise<void> {
  const stopped = gdb.waitForStop(60_000);
  await gdb.continue();
  const e = await stopped;
  assert.ok(e, 'the target stopped');
  assert.deepEqual(
    e.breakpointIds,
    [bp.id],
    `stopped (${e.reason}) at ${e.frame?.func}:${e.frame?.line} 0x${e.frame?.address.toString(16)}, ` +
      `breakpoints ${e.breakpointIds.join(',')}`,
  );
}

function valueOf(readings: CounterReading[], slot: number): bigint {
  const r = readings.find((x) => x.slot === slot);
  assert.ok(r, `no reading for slot ${slot}`);
  assert.equal(r.reliable, true, r.note);
  return r.value;
}

interface TracedQemuOptions {
  fixture: FixtureTarget;
  family: TargetFamily;
  /** The QEMU system emulator of the traced run, and its machine arguments. */
  system: string;
  machine: string[];
}

/** singlepass under QEMU, GDB attached and halted at reset, and what its trace says of the regions. */
interface TracedTarget {
  gdb: Debugger;
  access: DebuggerTargetAccess;
  bps: Breakpoints;
  regions: Regions;
}

/**
 * Hooks for the describe block it is called in. Before its tests: starts singlepass under QEMU with
 * GDB on it, inserts the breakpoints, takes the regions from a traced run of the same program under
 * -icount, and hands all of it to `started`. After them: stops GDB and QEMU and asserts that no
 * process they started is left.
 */
function tracedQemu(o: TracedQemuOptions, started: (target: TracedTarget) => void): void {
  const tag = newOwnerTag();
  const work = mkdtempSync(join(tmpdir(), `cyclelens-counters-${o.fixture}-`));
  const qemu = new QemuServer({ type: 'qemu' });
  let gdb: Debugger | undefined;

  before(async () => {
    process.env[OWNER_TAG_VAR] = tag;
    const elf = fixtureElf(o.fixture, 'singlepass');
    await qemu.start({ executable: elf, family: o.family, cwd: repoRoot, log: () => undefined });
    gdb = await startGdb(repoRoot, o.family);
    await gdb.loadProgram(elf);
    await gdb.connectRemote(qemu.gdbAddress);
    const access = new DebuggerTargetAccess(gdb);
    const bps = await insertBreakpoints(gdb);
    const log = await traceRun(o.system, [...o.machine, '-icount', 'shift=0,sleep=off', '-kernel', elf], work);
    const regions = await regionsFromTrace(log, bps);
    rmSync(log);
    started({ gdb, access, bps, regions });
  });

  after(async () => {
    await gdb?.exit();
    await qemu.stop();
    rmSync(work, { recursive: true, force: true });
    const left = await waitForNoTaggedProcesses(tag);
    killTagged(tag);
    assert.deepEqual(left, [], `processes left behind: ${JSON.stringify(left)}`);
  });
}

describe('counters on QEMU rv32 (virt)', () => {
  let gdb: Debugger;
  let access: DebuggerTargetAccess;
  let unit: RiscvCounters;
  let bps: Breakpoints;
  let regions: Regions;

  tracedQemu(
    { fixture: 'rv32', family: 'riscv', system: 'qemu-system-riscv32', machine: ['-M', 'virt', '-bios', 'none'] },
    (target) => {
      ({ gdb, access, bps, regions } = target);
    },
  );

  it(
    'gdbstub names the CSRs mcycle/mcycleh, minstret/minstreth, mhpmcounter3..18(h), ' +
      'mhpmevent3..31, mcountinhibit',
    async () => {
      const names = new Set(await gdb.registerNames());
      for (const n of [
        'mcycle',
        'mcycleh',
        'minstret',
        'minstreth',
        'mcountinhibit',
        'mhpmcounter3',
        'mhpmcounter3h',
        'mhpmcounter18',
        'mhpmevent3',
        'mhpmevent31',
      ]) {
        assert.ok(names.has(n), `no register ${n}`);
      }
      assert.ok(!names.has('mhpmcounter19'), 'QEMU 7.2 describes 16 programmable counters (pmu-num)');
    },
  );

  it('discovers mcycle, minstret, mcountinhibit, and the writable mhpmcounter3..18', async () => {
    unit = new RiscvCounters(access, { hpmEvents: qemuHpmEvents });
    const info = await unit.discover();
    assert.equal(info.present, true);
    assert.equal(info.note, undefined, 'mcountinhibit found');
    const byIndex = new Map(info.slots.map((s) => [s.index, s]));
    assert.equal(byIndex.get(0)?.name, 'mcycle');
    assert.equal(byIndex.get(2)?.name, 'minstret');
    // They read 0 (mhpmevent = 0, no event) but accept writes: implemented, by the spec's rule.
    assert.deepEqual(
      info.slots.filter((s) => s.index >= 3).map((s) => s.index),
      Array.from({ length: 16 }, (_, i) => i + 3),
    );
    assert.ok(info.slots.every((s) => s.width === 64));
    assert.equal(await access.readRegister('mcountinhibit'), 0n, 'probing left mcountinhibit as found');
    assert.equal(await access.readRegister('mhpmcounter3'), 0n, 'probing left mhpmcounter3 as found');
  });

  it('counts reset → #MAIN_FIRST: minstret, mcycle and mhpmcounter3 (event 2) equal the trace', async () => {
    await unit.configure(2, 'instructions');
    await unit.configure(0, 'cycles');
    await unit.configure(3, 'instructions'); // QEMU's event 2 on mhpmcounter3
    assert.equal(await access.readRegister('mhpmevent3'), 2n);
    await unit.start([0, 2, 3]);
    await continueTo(gdb, bps.mainFirst);
    const r = await unit.read();
    assert.equal(valueOf(r, 2), BigInt(regions.resetToMain), 'minstret = instructions in the trace');
    assert.equal(valueOf(r, 0), BigInt(regions.resetToMain), 'mcycle = minstret under -icount');
    assert.equal(valueOf(r, 3), BigInt(regions.resetToMain), 'mhpmcounter3 with event 2 counts instructions');
  });

  it(
    'stops minstret through mcountinhibit: it holds across #MAIN_FIRST → board_timer_start, ' +
      'while mcycle counts it exactly',
    async () => {
      const before = await unit.read();
      await unit.stop([2]);
      assert.equal((await access.readRegister('mcountinhibit')) & 4n, 4n, 'IR bit set');
      await continueTo(gdb, bps.timerStart);
      const after = await unit.read();
      assert.equal(valueOf(after, 2), valueOf(before, 2), 'minstret held');
      assert.equal(await access.readRegister('minstret'), valueOf(before, 2), 'the CSR itself reads the held value');
      assert.equal(valueOf(after, 0) - valueOf(before, 0), BigInt(regions.mainToTimerStart), 'mcycle kept counting');
      assert.equal(valueOf(after, 3) - valueOf(before, 3), BigInt(regions.mainToTimerStart));
    },
  );

  it('starts minstret again: from then on it advances with mcycle', async () => {
    const before = await unit.read();
    await unit.start([2]);
    assert.equal((await access.readRegister('mcountinhibit')) & 4n, 0n);
    await continueTo(gdb, bps.round);
    const after = await unit.read();
    const dInstret = valueOf(after, 2) - valueOf(before, 2);
    assert.equal(dInstret, valueOf(after, 0) - valueOf(before, 0));
    assert.ok(dInstret > 0n);
  });

  it(
    'QEMU 7.2 fact: once a device timer is armed, each debugger stop moves the virtual clock, ' +
      'and minstret, to its next deadline',
    async () => {
      // Every stop the program causes (breakpoint, single step) lets QEMU advance virtual time to the
      // next timer deadline before the VM stops. minstret and mcycle count virtual time, so a count
      // across a stop includes that jump: only counts between stops taken with no timer armed (above)
      // or taken on the target without stopping (injected code) are instruction-exact.
      const before = valueOf(await unit.read(), 2);
      await continueTo(gdb, bps.round);
      const perRound = valueOf(await unit.read(), 2) - before;
      assert.ok(
        perRound > BigInt(regions.rounds[0]!),
        `minstret ${perRound} vs ${regions.rounds[0]} instructions in the round`,
      );
      const beforeStep = valueOf(await unit.read(), 2);
      const stepped = gdb.waitForStop(10_000);
      await gdb.stepIn(true);
      assert.ok(await stepped);
      const step = valueOf(await unit.read(), 2) - beforeStep;
      assert.ok(step > 1000n, `one instruction stepped, minstret moved by ${step}`);
    },
  );

  it('QEMU 7.2 fact: setting an inhibit bit does not stop the count, it only masks reads', async () => {
    // Why RiscvCounters.stop() writes the value back. Measured on the CSRs directly, with mcycle
    // (never inhibited) as the clock.
    await unit.release();
    await access.writeRegister('mcountinhibit', 0n);
    await access.writeRegister('minstret', 1000n);
    const cycleAtWrite = await access.readRegister('mcycle');
    await access.writeRegister('mcountinhibit', 4n);
    await access.readRegister('minstret'); // QEMU's one live read after inhibiting
    await continueTo(gdb, bps.round);
    assert.equal(await access.readRegister('minstret'), 1000n, 'reads show the last written value');
    const elapsed = (await access.readRegister('mcycle')) - cycleAtWrite;
    await access.writeRegister('mcountinhibit', 0n);
    assert.equal(await access.readRegister('minstret'), 1000n + elapsed, 'but it counted all along');
  });

  it('release puts mcountinhibit and mhpmevent back', async () => {
    const u = new RiscvCounters(access, { hpmEvents: qemuHpmEvents });
    await u.discover();
    await u.configure(4, 'hpm.1');
    await u.configure(2, 'instructions');
    await u.start([2, 4]);
    await u.stop([2, 4]);
    await u.release();
    assert.equal(await access.readRegister('mcountinhibit'), 0n);
    assert.equal(await access.readRegister('mhpmevent4'), 0n);
  });
});

describe('counters on QEMU cortex-m4 (mps2-an386)', () => {
  let gdb: Debugger;
  let access: DebuggerTargetAccess;
  let bps: Breakpoints;
  let regions: Regions;
  let sysTick: SysTickCounters;

  tracedQemu(
    {
      fixture: 'cortex-m4',
      family: 'cortex-m',
      system: 'qemu-system-arm',
      machine: ['-M', 'mps2-an386', '-semihosting-config', 'enable=on,target=native'],
    },
    (target) => {
      ({ gdb, access, bps, regions } = target);
    },
  );

  it('DWT is absent, with the note', async () => {
    const info = await new DwtCounters(access).discover();
    assert.equal(info.present, false);
    assert.equal(info.note, 'DWT reads as zero (QEMU does not model it)');
  });

  it('the Armv8.1-M PMU is absent on a Cortex-M4', async () => {
    const info = await new PmuCounters(access).discover();
    assert.equal(info.present, false);
    assert.equal(info.note, 'PMU reads as zero (QEMU does not model it)');
  });

  it("SysTick without a core store: the debugger's writes are dropped, so it is unavailable and says why", async () => {
    const info = await new SysTickCounters(access).discover();
    assert.equal(info.present, false);
    assert.match(info.note ?? '', /ignored the debugger's write.*QEMU/);
  });

  it(
    'SysTick with a core store counts #MAIN_FIRST → board_timer_start: ticks = instructions × ' +
      '25/1000 within one tick',
    async () => {
      const step: StepInstruction = async () => {
        const stopped = gdb.waitForStop(10_000);
        await gdb.stepIn(true);
        assert.ok(await stopped, 'the single step stopped');
      };
      sysTick = new SysTickCounters(access, { coreStore: new CoreExecutedStore(access, step) });
      const info = await sysTick.discover();
      assert.equal(info.present, true, info.note);
      await continueTo(gdb, bps.mainFirst);
      await sysTick.configure(0, 'cycles');
      assert.equal((await access.readU32(0xe000e014n)) & 0xffffff, 0xffffff, 'RVR taken');
      await sysTick.start([0]);
      assert.equal((await access.readU32(0xe000e010n)) & 7, 0b101, 'ENABLE + CLKSOURCE, TICKINT clear');
      // Single steps to the end of the region: a continue would let QEMU move its virtual clock to
      // SysTick's own deadline before stopping (next test).
      let steps = 0;
      while ((await access.readRegister('pc')) !== bps.timerStart.address) {
        await step();
        assert.ok(++steps <= regions.mainToTimerStart, 'reached board_timer_start');
      }
      assert.equal(steps, regions.mainToTimerStart, 'the steps retrace the trace');
      const [r] = await sysTick.read();
      assert.ok(r?.reliable, r?.note);
      const expected = regions.mainToTimerStart / instructionsPerTick;
      assert.ok(
        Math.abs(Number(r.value) - expected) <= 1,
        `SysTick counted ${r.value} ticks for ${regions.mainToTimerStart} instructions (expected ${expected})`,
      );
    },
  );

  it(
    'QEMU 7.2 fact: a continue lets the virtual clock jump to the next timer deadline before ' + 'the breakpoint stop',
    async () => {
      // With the firmware's 100 µs timer running, a stop at a breakpoint lands on the timer's deadline:
      // between two #ROUND stops SysTick counts 100 µs = 2,500 ticks of the 25 MHz clock, for a round
      // of about 1,500 ticks of work. So on QEMU, SysTick times a region exactly only when its end is
      // reached without a continue (single steps above, or a read by injected code).
      await continueTo(gdb, bps.round);
      await continueTo(gdb, bps.round);
      const [first] = await sysTick.read();
      await continueTo(gdb, bps.round);
      const [after] = await sysTick.read();
      const ticks = Number(after!.value - first!.value);
      assert.ok(regions.rounds[1]! / instructionsPerTick < 2000, `round of ${regions.rounds[1]} instructions`);
      assert.ok(Math.abs(ticks - 2500) <= 3, `${ticks} ticks between two #ROUND stops`);
    },
  );

  it("release restores SysTick's CSR and RVR (through the core)", async () => {
    await sysTick.release();
    assert.equal((await access.readU32(0xe000e010n)) & 7, 0);
    assert.equal(await access.readU32(0xe000e014n), 0);
  });
});

describe('QEMU mps3-an547 (Cortex-M55): the Armv8.1-M PMU', () => {
  const tag = newOwnerTag();
  let qemu: OwnedProcess | undefined;
  let gdb: Debugger | undefined;

  after(async () => {
    await gdb?.exit();
    await qemu?.kill();
    const left = await waitForNoTaggedProcesses(tag);
    killTagged(tag);
    assert.deepEqual(left, [], `processes left behind: ${JSON.stringify(left)}`);
  });

  it('is not modelled by QEMU 7.2: the PMU block reads as zero on a Cortex-M55', async () => {
    process.env[OWNER_TAG_VAR] = tag;
    const port = await freePort();
    // No program: the core stays halted at reset (-S) while the registers are read.
    qemu = OwnedProcess.spawn(
      'qemu',
      'qemu-system-arm',
      [
        '-M',
        'mps3-an547',
        '-display',
        'none',
        '-serial',
        'null',
        '-monitor',
        'none',
        '-S',
        '-gdb',
        `tcp:127.0.0.1:${port}`,
      ],
      { cwd: repoRoot },
    );
    gdb = await startGdb(repoRoot, 'cortex-m');
    let connected = false;
    for (let i = 0; i < 50 && !connected; i++) {
      try {
        await gdb.connectRemote(`127.0.0.1:${port}`);
        connected = true;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    assert.ok(connected, 'GDB connected to QEMU mps3-an547');
    const access = new DebuggerTargetAccess(gdb);
    assert.equal(((await access.readU32(0xe000ed00n)) >>> 4) & 0xfff, 0xd22, 'CPUID part number: Cortex-M55');
    const info = await new PmuCounters(access).discover();
    assert.equal(info.present, false);
    assert.equal(info.note, 'PMU reads as zero (QEMU does not model it)');
  });
});
