/**
 * Injection benchmark: over every function of the fixture programs, the share that can be
 * instrumented (entry patch or call sites), the counted payload instructions per call, and the
 * per-function error against the oracle, raw and compensated: e = (C_measured - C_oracle) / C_oracle.
 * RV32 counts minstret (exact); Cortex-M4 counts SysTick (one tick = 40 instructions under -icount
 * shift=0), converted to instructions. Prints tables; record them in docs/benchmarks.md.
 *   npm run bench -- injection [--target rv32|cortex-m4] [--interrupts]
 *
 * Up to ten functions are measured per run; "raw" keeps each function's own payload instructions
 * (it only removes the payloads of the other measurements that ran inside its passes),
 * "compensated" also subtracts the stated own payload per pass.
 *
 * By default the timer interrupt is stopped once the program has started it (at the first
 * process_packet) and results are compared with the oracle's counts without interrupts: the
 * patched program runs more instructions, so its interrupts land elsewhere than in the oracle's
 * run. `--interrupts` leaves them on and compares with the oracle's inclusive counts instead.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { thumbInjectionSupport } from '../adapter/arch/cortex-m/trampolineThumb';
import { rv32InjectionSupport } from '../adapter/arch/riscv/trampolineRv32';
import { startGdb } from '../test/support/gdb';
import type { Debugger } from '../adapter/debugger/debugger';
import { parseLocationSpec } from '../adapter/debugger/locations';
import { ElfImage } from '../adapter/elf';
import { debuggerTargetRunner } from '../adapter/probe/debuggerRunner';
import {
  InjectionService,
  type InjectionFamilySupport,
  type MeasurementResults,
} from '../adapter/probe/injection/injectionService';
import { qemuMemoryMap } from '../adapter/target/targetFacts';
import { InjectionPlanner } from '../adapter/probe/injection/planner';
import { ProgramModel } from '../adapter/probe/injection/programModel';
import { resolveReservedMemory } from '../adapter/probe/injection/reservedMemory';
import { SYSTICK_CVR, type CaveReach, type ReservedMemory } from '../adapter/probe/injection/types';
import { DebuggerTargetAccess } from '../adapter/probe/targetAccess';
import { QemuServer } from '../adapter/servers/qemu';
import { runOracle, type OracleSummary } from '../test/oracle/oracle';
import { markerLine } from '../test/support/markers';
import { fixtureElf, fixturesDir, type FixtureTarget } from '../test/support/paths';

const fixtureSource = (name: string): string => join(fixturesDir, 'src', name);
import { median, printTable } from './support';

const argv = process.argv.slice(2);
const onlyTarget = argv.includes('--target') ? (argv[argv.indexOf('--target') + 1] as FixtureTarget) : undefined;
const withInterrupts = argv.includes('--interrupts');
const PROGRAMS = ['singlepass', 'cyclic', 'cyclic_limited', 'nodebug'];
const BATCH = 10;
const scratch = mkdtempSync(join(tmpdir(), 'cyclelens-bench-injection-'));

interface TargetSetup {
  target: FixtureTarget;
  family: 'riscv' | 'cortex-m';
  support: () => InjectionFamilySupport;
  machine: 'virt' | 'mps2-an386';
  /** Instructions per counter unit. */
  instructionsPerUnit: number;
  stopTimer(access: DebuggerTargetAccess, gdb: Debugger): Promise<void>;
}

const TARGETS: TargetSetup[] = [
  {
    target: 'rv32',
    family: 'riscv',
    support: () => rv32InjectionSupport(),
    machine: 'virt',
    instructionsPerUnit: 1,
    stopTimer: async (access) => access.writeRegister('mie', 0n),
  },
  {
    target: 'cortex-m4',
    family: 'cortex-m',
    support: () => thumbInjectionSupport(SYSTICK_CVR, { counterUnitsPerInstruction: 1 / 40 }),
    machine: 'mps2-an386',
    instructionsPerUnit: 40,
    // The gdbstub cannot write the APB timer: three instructions on the target stop it.
    stopTimer: async (access, gdb) => {
      const at = 0x00300000;
      const code = Buffer.from([0x01, 0x48, 0x00, 0x21, 0x01, 0x60, 0x00, 0xbe, 0, 0, 0, 0x40]);
      const saved = new Map<string, bigint>();
      for (const r of ['r0', 'r1', 'pc', 'xpsr']) saved.set(r, await access.readRegister(r));
      await access.writeMemory(BigInt(at), code);
      await access.writeRegister('pc', BigInt(at | 1));
      if (!(await debuggerTargetRunner(gdb).runTo(at + 6, 10_000))) throw new Error('could not stop the timer');
      for (const [r, v] of saved) await access.writeRegister(r, v);
    },
  },
];

interface Plan {
  name: string;
  how: 'entry' | 'callSites' | 'refused';
  why?: string;
}

function planAll(t: TargetSetup, program: string): Plan[] {
  const elf = ElfImage.loadSync(fixtureElf(t.target, program));
  const support = t.support();
  const model = new ProgramModel(elf, support.arch);
  const reserved = resolveReservedMemory(elf) as ReservedMemory;
  const tpFree = t.family === 'riscv' && !model.referencesRegister(4);
  const cave: CaveReach = tpFree
    ? { start: reserved.start, size: reserved.size, threadPointerBase: reserved.start + 2048 }
    : { start: reserved.start, size: reserved.size };
  const planner = new InjectionPlanner(model, support.arch, cave);
  return model.functions.map((f) => {
    const p = planner.planFunction(f.name);
    if (p.ok) return { name: f.name, how: 'entry' };
    if (p.code === 'tooShort' && p.callSites?.usable.length) return { name: f.name, how: 'callSites' };
    return { name: f.name, how: 'refused', why: p.code };
  });
}

async function run(
  t: TargetSetup,
  names: Array<{ name: string; how: 'entry' | 'callSites' }>,
): Promise<{ results: MeasurementResults[]; counted: Map<string, number> }> {
  const elfPath = fixtureElf(t.target, 'singlepass');
  const elf = ElfImage.loadSync(elfPath);
  const qemu = new QemuServer({ type: 'qemu' });
  await qemu.start({ executable: elfPath, family: t.family, cwd: scratch, log: () => undefined });
  const gdb = await startGdb(scratch, t.family);
  try {
    await gdb.loadProgram(elfPath);
    await gdb.connectRemote(qemu.gdbAddress);
    const access = new DebuggerTargetAccess(gdb);
    const runTo = async (location: string): Promise<void> => {
      const bp = await gdb.insertBreakpoint({ location: parseLocationSpec(location) });
      const stopped = gdb.waitForStop(120_000);
      await gdb.continue();
      const stop = await stopped;
      if (!stop?.breakpointIds.includes(bp.id)) throw new Error(`did not stop at ${location}`);
      await gdb.deleteBreakpoints([bp.id]);
    };
    const svc = new InjectionService({
      access,
      elf,
      support: t.support(),
      counterUnitsPerInstruction: 1 / t.instructionsPerUnit,
      isHalted: () => gdb.executionState === 'stopped',
      journalDir: join(scratch, 'journal'),
      reserved: resolveReservedMemory(elf) as ReservedMemory,
      memoryMap: qemuMemoryMap(t.machine),
      runner: debuggerTargetRunner(gdb),
    });
    await runTo('main');
    const counted = new Map<string, number>();
    for (const n of names) {
      const info = n.how === 'entry' ? await svc.measureFunction(n.name) : await svc.measureCallSites(n.name);
      counted.set(n.name, info.counted.outer);
    }
    if (!withInterrupts) {
      // The #ROUND line in main: after board_timer_start, and not inside any patched bytes (a GDB
      // breakpoint inside a patch would overwrite it while the target runs).
      await runTo(`singlepass.c:${markerLine(fixtureSource('singlepass.c'), '#ROUND')}`);
      await t.stopTimer(access, gdb);
    }
    await runTo('board_exit');
    return { results: await svc.read(), counted };
  } finally {
    await gdb.exit();
    await qemu.stop();
  }
}

async function calibrate(t: TargetSetup): Promise<{ measured: number; stated: number }> {
  const elfPath = fixtureElf(t.target, 'singlepass');
  const elf = ElfImage.loadSync(elfPath);
  const qemu = new QemuServer({ type: 'qemu' });
  await qemu.start({ executable: elfPath, family: t.family, cwd: scratch, log: () => undefined });
  const gdb = await startGdb(scratch, t.family);
  try {
    await gdb.loadProgram(elfPath);
    await gdb.connectRemote(qemu.gdbAddress);
    const access = new DebuggerTargetAccess(gdb);
    const svc = new InjectionService({
      access,
      elf,
      support: t.support(),
      counterUnitsPerInstruction: 1 / t.instructionsPerUnit,
      isHalted: () => gdb.executionState === 'stopped',
      journalDir: join(scratch, 'journal'),
      reserved: resolveReservedMemory(elf) as ReservedMemory,
      memoryMap: qemuMemoryMap(t.machine),
      runner: debuggerTargetRunner(gdb),
    });
    const c = await svc.calibrate(t.instructionsPerUnit > 1 ? 20_000 : 1000);
    return { measured: c.measuredOverhead * t.instructionsPerUnit, stated: c.statedOverhead * t.instructionsPerUnit };
  } finally {
    await gdb.exit();
    await qemu.stop();
  }
}

const pct = (x: number): string => `${(100 * x).toFixed(3)} %`;

async function benchTarget(t: TargetSetup): Promise<void> {
  const counter = t.instructionsPerUnit === 1 ? 'minstret' : 'SysTick, 40 instructions per tick';
  console.log(`\n## ${t.target} (${counter})${withInterrupts ? ', timer interrupt on' : ''}\n`);
  // ---- instrumentability over every program
  const rows: string[][] = [];
  let total = 0;
  let ok = 0;
  const refusedWhy = new Map<string, number>();
  for (const program of PROGRAMS) {
    if (!existsSync(fixtureElf(t.target, program))) continue;
    const plans = planAll(t, program);
    const entry = plans.filter((p) => p.how === 'entry').length;
    const sites = plans.filter((p) => p.how === 'callSites').length;
    const refused = plans.filter((p) => p.how === 'refused');
    for (const r of refused) refusedWhy.set(`${r.name} (${r.why})`, (refusedWhy.get(`${r.name} (${r.why})`) ?? 0) + 1);
    total += plans.length;
    ok += entry + sites;
    rows.push([
      program,
      String(plans.length),
      String(entry),
      String(sites),
      String(refused.length),
      pct((entry + sites) / plans.length),
    ]);
  }
  rows.push(['all', String(total), '', '', String(total - ok), pct(ok / total)]);
  printTable(['program', 'functions', 'entry patch', 'call sites', 'refused', 'instrumentable'], rows);
  console.log(`\nrefused: ${[...refusedWhy].map(([k, n]) => `${k} x${n}`).join(', ') || 'none'}`);

  // ---- accuracy on singlepass against the oracle
  const oracle: OracleSummary = await runOracle({ elf: fixtureElf(t.target, 'singlepass') });
  const plans = planAll(t, 'singlepass').filter((p): p is Plan & { how: 'entry' | 'callSites' } => p.how !== 'refused');
  // Functions that run before the injection point (main) or never return have no comparable count.
  // With the timer stopped, work done only for interrupt handlers does not happen at all.
  const handlers = new Set(['trap_entry', 'TIMER0_IRQHandler']);
  const interruptOnly = (name: string): boolean => {
    const callers = oracle.edges.filter((e) => e.callee === name);
    return callers.length > 0 && callers.every((e) => handlers.has(e.caller));
  };
  const comparable = plans.filter((p) => {
    const o = oracle.functions.find((f) => f.name === p.name);
    if (!withInterrupts && (interruptOnly(p.name) || (o && o.calls === 0))) return false;
    return (
      o &&
      o.calls > 0 &&
      ![
        'main',
        'rv_reset',
        '_start',
        'Reset_Handler',
        'board_exit',
        'board_init',
        'board_timer_start',
        'board_irq_enable',
      ].includes(p.name)
    );
  });
  const results: MeasurementResults[] = [];
  const counted = new Map<string, number>();
  for (let i = 0; i < comparable.length; i += BATCH) {
    const r = await run(t, comparable.slice(i, i + BATCH));
    results.push(...r.results);
    for (const [k, v] of r.counted) counted.set(k, v);
  }
  const cal = await calibrate(t);
  const table: string[][] = [];
  const big: Array<{ raw: number; comp: number }> = [];
  const all: Array<{ raw: number; comp: number }> = [];
  for (const r of results.sort(
    (a, b) =>
      (oracle.functions.find((f) => f.name === b.name)?.inclusive ?? 0) -
      (oracle.functions.find((f) => f.name === a.name)?.inclusive ?? 0),
  )) {
    const o = oracle.functions.find((f) => f.name === r.name)!;
    const truth = withInterrupts ? o.inclusive : o.inclusiveExcludingInterrupts;
    // Raw: the own payload still in; payloads of the other measurements of the same run removed.
    const raw = (r.total - r.nested) * t.instructionsPerUnit;
    const comp = r.compensatedTotal * t.instructionsPerUnit;
    const eRaw = (raw - truth) / truth;
    const eComp = (comp - truth) / truth;
    const perCall = truth / Math.max(1, o.calls);
    all.push({ raw: Math.abs(eRaw), comp: Math.abs(eComp) });
    if (perCall >= 200) big.push({ raw: Math.abs(eRaw), comp: Math.abs(eComp) });
    table.push([
      r.name,
      r.kind === 'callSites' ? 'call sites' : 'entry',
      `${r.calls}/${o.calls}`,
      perCall.toFixed(0),
      String(truth),
      raw.toFixed(0),
      pct(eRaw),
      comp.toFixed(0),
      pct(eComp),
      String(counted.get(r.name)),
    ]);
  }
  console.log('');
  printTable(
    [
      'function',
      'how',
      'calls (measured/oracle)',
      'instr/call',
      'oracle',
      'raw',
      'e raw',
      'compensated',
      'e compensated',
      'counted/call',
    ],
    table,
  );
  const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const countedValues = [...counted.values()];
  console.log('');
  printTable(
    ['figure', 'value'],
    [
      ['functions compared', String(results.length)],
      [
        'counted payload instructions per call (min / median / max)',
        `${Math.min(...countedValues)} / ${median(countedValues)} / ${Math.max(...countedValues)}`,
      ],
      [
        'calibration: measured / stated per call (instructions)',
        `${cal.measured.toFixed(2)} / ${cal.stated.toFixed(2)}`,
      ],
      [
        'all functions: mean |e| raw / compensated',
        `${pct(mean(all.map((x) => x.raw)))} / ${pct(mean(all.map((x) => x.comp)))}`,
      ],
      [
        '>= 200 instr/call: mean |e| raw / compensated',
        `${pct(mean(big.map((x) => x.raw)))} / ${pct(mean(big.map((x) => x.comp)))}`,
      ],
      [
        '>= 200 instr/call: worst |e| raw / compensated',
        `${pct(Math.max(...big.map((x) => x.raw)))} / ${pct(Math.max(...big.map((x) => x.comp)))}`,
      ],
    ],
  );
}

async function main(): Promise<void> {
  try {
    for (const t of TARGETS) {
      if (onlyTarget && t.target !== onlyTarget) continue;
      if (!existsSync(fixtureElf(t.target, 'singlepass'))) {
        console.log(`${t.target}: fixtures not built, skipped`);
        continue;
      }
      await benchTarget(t);
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
