/**
 * CycleLens against a board: the board double (test/doubles/boardDouble.ts, a probe's gdbserver in
 * front of QEMU, 1 ms per packet by default) serves the part's flash and comparators, and each
 * operation below is done by CycleLens over DAP (a `remote` launch) and by raw GDB's own commands
 * over MI on a fresh board of the same kind. Prints, per operation, the RSP packets GDB sent (the
 * double counts them) and the wall time (medians over the repetitions).
 *
 * Code runs from flash (the part's flash at the QEMU machine's code address) except for the
 * injection rows: injection refuses code in flash, so those run on a build whose code is in RAM
 * (the flash placed at the part's own address). Raw GDB cannot inject: its rows send exactly the
 * memory writes and reads the adapter sent (from its MI trace), one MI command each, and the same
 * breakpoint and continues: the least traffic that moves the same bytes through GDB.
 * Where the adapter fails against the board, the last lines say how.
 *   npm run bench -- board [--target cortex-m4|rv32] [--reps N] [--delay MS]
 */
import { DapProfiler } from '../core/profiling/dapProfiler';
import { DEFAULT_PROFILE, PART_PROFILES } from '../test/doubles/boardProfiles';
import { fixtureSource, type AdapterHarness } from '../test/support/dap';
import { markerLine } from '../test/support/markers';
import { fixtureElf, type FixtureTarget } from '../test/support/paths';
import { median, option, printTable } from './support';
import {
  continueTo,
  firstLine,
  inspect,
  measured,
  memoryTraffic,
  miCommandsDuring,
  next,
  nextWithStack,
  onBoard,
  rawInspect,
  rawNext,
  refusalsShown,
  remoteArgs,
  replay,
  withCycleLens,
  withRawGdb,
  type Measured,
} from './support/boardSessions';
import type { RawMiClient } from './support/rawMi';

const argv = process.argv.slice(2);
const reps = Number(option(argv, '--reps')) || 3;
const delay = option(argv, '--delay') !== undefined ? Number(option(argv, '--delay')) : 1;
const targets: FixtureTarget[] = option(argv, '--target')
  ? [option(argv, '--target') as FixtureTarget]
  : ['cortex-m4', 'rv32'];
const steps = 5;

const dsp = fixtureSource('dsp.c');
const regionLine = markerLine(dsp, '#REGION_START');
/** Source lines in distinct functions, none on the way from main's first line to its next. */
const USER_BREAKPOINTS: Array<[string, string]> = [
  ['pipeline.c', '#BP1'],
  ['crc16.c', '#HOT_LEAF'],
  ['script_vm.c', '#JUMP_TABLE'],
  ['dsp.c', '#FIR_MAC'],
  ['sort.c', '#RECURSE'],
  ['hash.c', '#TAIL_CALL'],
  ['dsp.c', '#BP_LOCALS'],
  ['ticker.c', '#ISR_WORK'],
  ['dsp.c', '#IT_BLOCK'],
];
const BATCH = ['process_packet', 'crc16_block', 'fir_filter', 'vm_run'];
const DWELL = 2;

type Op =
  'launch' | 'launchLoad' | 'next' | 'inspect' | 'nextLoaded' | 'inspectLoaded' | 'inject' | 'read' | 'descentRun';
const OPS: Array<[Op, string]> = [
  ['launch', 'launch → stopped at main (firmware already in flash)'],
  ['launchLoad', 'launch with load → stopped at main (programs the flash)'],
  ['next', 'next + top frame'],
  ['inspect', 'stack + scopes + locals'],
  ['nextLoaded', 'next + top frame, after a load (trust-readonly-sections on)'],
  ['inspectLoaded', 'stack + scopes + locals, after a load'],
  ['inject', 'inject one function (crc16_step), code in RAM'],
  ['read', 'read its results after a run, code in RAM'],
  ['descentRun', `one descent run: ${BATCH.length} functions, cyclic, ${DWELL} passes, code in RAM`],
];

type Samples = Partial<Record<Op, Measured[]>>;
const add = (s: Samples, op: Op, m: Measured): void => void (s[op] ??= []).push(m);

/** `steps` operations of one session as one sample: their mean packets and time, their kinds summed. */
async function perStep(s: Samples, op: Op, each: () => Promise<Measured>): Promise<void> {
  const all: Measured[] = [];
  for (let i = 0; i < steps; i++) all.push(await each());
  const byKind: Record<string, number> = {};
  for (const m of all) for (const [k, n] of Object.entries(m.byKind)) byKind[k] = (byKind[k] ?? 0) + n;
  const mean = (f: (m: Measured) => number): number => all.reduce((sum, m) => sum + f(m), 0) / all.length;
  const refused: Record<string, number> = {};
  for (const m of all) for (const [k, n] of Object.entries(m.refused)) refused[k] = (refused[k] ?? 0) + n;
  add(s, op, { packets: mean((m) => m.packets), ms: mean((m) => m.ms), byKind, refused });
}

/** What the adapter could not do against the board, as it said it. */
const failures: string[] = [];
const fail = (target: FixtureTarget, what: string, how: string): void => {
  const line = `${target}: ${what}: ${how}`;
  if (!failures.includes(line)) failures.push(line);
};

async function cycleLensFlash(target: FixtureTarget, s: Samples): Promise<void> {
  const elf = fixtureElf(target, 'singlepass');
  await onBoard(target, { programmed: elf, packetDelayMs: delay }, (board) =>
    withCycleLens(async (h) => {
      const args = remoteArgs(elf, board);
      add(s, 'launch', await measured(board, () => h.launchToEntry(args)));
      await continueTo(h, dsp, regionLine);
      await perStep(s, 'next', () => measured(board, () => nextWithStack(h)));
      await perStep(s, 'inspect', async () => {
        await next(h);
        return await measured(board, () => inspect(h));
      });
      await injectInFlash(target, h);
      await h.custom('cyclelens/run', { restart: true }).then(
        () => fail(target, 'a single-pass profiling run (run {restart})', 'it ran (unexpected)'),
        (e: unknown) => fail(target, 'a single-pass profiling or descent run (run {restart})', firstLine(e)),
      );
    }),
  );
  await onBoard(target, { packetDelayMs: delay }, (board) =>
    withCycleLens(async (h) => {
      const args = remoteArgs(elf, board, { load: true });
      add(s, 'launchLoad', await measured(board, () => h.launchToEntry(args)));
      await continueTo(h, dsp, regionLine);
      await perStep(s, 'nextLoaded', () => measured(board, () => nextWithStack(h)));
      await perStep(s, 'inspectLoaded', async () => {
        await next(h);
        return await measured(board, () => inspect(h));
      });
    }),
  );
}

/** Injection into code in flash, refused today: once as it is, once with `allowFlashWrites`. */
async function injectInFlash(target: FixtureTarget, h: AdapterHarness): Promise<void> {
  const r = await h.custom('cyclelens/inject', { targets: [{ function: 'crc16_step' }] });
  const why = r.refused[0]?.reason;
  if (why) fail(target, 'injection into code in flash', why);
  else fail(target, 'injection into code in flash', 'it was injected (unexpected)');
  if (r.injected.length > 0) await h.custom('cyclelens/removeInjections', { ids: r.injected.map((i) => i.id) });
}

async function cycleLensFlashWritesAllowed(target: FixtureTarget): Promise<void> {
  const elf = fixtureElf(target, 'singlepass');
  await onBoard(target, { programmed: elf, packetDelayMs: 0 }, (board) =>
    withCycleLens(async (h) => {
      await h.launchToEntry(remoteArgs(elf, board, { allowFlashWrites: true }));
      const from = h.output.length;
      const r = await h
        .custom('cyclelens/inject', { targets: [{ function: 'crc16_step' }] })
        .catch((e: unknown) => ({ injected: [], refused: [{ reason: firstLine(e) }] }));
      const shown = refusalsShown(h, from);
      const how =
        r.refused[0]?.reason ??
        (r.injected.length > 0 ? `injected; the double refused ${JSON.stringify(board.board.stats().refused)}` : '?');
      fail(target, 'injection into flash with allowFlashWrites', `${how}${shown.length ? ` (${shown[0]})` : ''}`);
    }),
  );
}

/** User breakpoints filling every comparator, then the adapter's own stops on top of them. */
async function comparatorsExhausted(target: FixtureTarget): Promise<void> {
  const elf = fixtureElf(target, 'singlepass');
  const profile = PART_PROFILES[DEFAULT_PROFILE[target]];
  const n = profile.comparators.kind === 'separate' ? profile.comparators.breakpoints : profile.comparators.triggers;
  const lines = USER_BREAKPOINTS.slice(0, n).map(([file, marker]) => {
    const path = fixtureSource(file);
    return { path, line: markerLine(path, marker) };
  });
  const setAll = async (h: AdapterHarness): Promise<void> => {
    const byFile = new Map<string, number[]>();
    for (const l of lines) byFile.set(l.path, [...(byFile.get(l.path) ?? []), l.line]);
    for (const [path, ls] of byFile)
      await h.dc.setBreakpointsRequest({ source: { path }, breakpoints: ls.map((line) => ({ line })) });
  };
  // Set in the editor before the launch: the launch's stop at main needs one more.
  await onBoard(target, { programmed: elf, packetDelayMs: 0 }, (board) =>
    withCycleLens(async (h) => {
      const from = h.output.length;
      const outcome = await Promise.all([
        (async () => {
          await h.dc.waitForEvent('initialized');
          await setAll(h);
          await h.dc.configurationDoneRequest();
        })(),
        h.dc.launch(remoteArgs(elf, board)),
        h.dc.waitForEvent('stopped', 20_000),
      ]).then(
        ([, , stopped]) => `stopped (${(stopped as { body: { reason: string } }).body.reason})`,
        (e: unknown) => `failed: ${firstLine(e)}`,
      );
      const shown = refusalsShown(h, from);
      fail(
        target,
        `launch with ${n} breakpoints set (all ${n} comparators)`,
        `${outcome}; double refused ${JSON.stringify(board.board.stats().refused)}` +
          `${shown.length ? `; Debug Console: ${shown.join(' | ')}` : ''}`,
      );
    }),
  );
  // Set while stopped at main: the step over main's first call needs one more.
  await onBoard(target, { programmed: elf, packetDelayMs: 0 }, (board) =>
    withCycleLens(async (h) => {
      await h.launchToEntry(remoteArgs(elf, board));
      await setAll(h);
      const from = h.output.length;
      const outcome = await Promise.all([h.dc.nextRequest({ threadId: 1 }), h.dc.waitForEvent('stopped', 20_000)]).then(
        ([, stopped]) => `stopped (${(stopped as { body: { reason: string } }).body.reason})`,
        (e: unknown) => `failed: ${firstLine(e)}`,
      );
      const shown = refusalsShown(h, from);
      fail(
        target,
        `next over a call with ${n} breakpoints set`,
        `${outcome}; double refused ${JSON.stringify(board.board.stats().refused)}` +
          `${shown.length ? `; Debug Console: ${shown.join(' | ')}` : ''}`,
      );
    }),
  );
}

async function rawFlash(target: FixtureTarget, s: Samples): Promise<void> {
  const elf = fixtureElf(target, 'singlepass');
  const toMain = async (mi: RawMiClient, address: string, load: boolean): Promise<void> => {
    await mi.send(`-target-select remote ${address}`);
    if (load) await mi.send('-target-download');
    await mi.send('-break-insert -t main');
    await mi.run('-exec-continue');
  };
  const toRegion = async (mi: RawMiClient): Promise<void> => {
    const bp = /number="(\d+)"/.exec(await mi.send(`-break-insert ${dsp}:${regionLine}`))![1];
    await mi.run('-exec-continue');
    await mi.send(`-break-delete ${bp}`);
  };
  // The raw launch rows include GDB's own start and symbol load; the adapter's GDB starts with it.
  await onBoard(target, { programmed: elf, packetDelayMs: delay }, (board) =>
    withRawGdb(elf, async (start) => {
      let mi!: RawMiClient;
      add(
        s,
        'launch',
        await measured(board, async () => {
          mi = await start();
          await toMain(mi, board.address, false);
        }),
      );
      await toRegion(mi);
      await perStep(s, 'next', () => measured(board, () => rawNext(mi)));
      await perStep(s, 'inspect', async () => {
        await mi.run('-exec-next');
        return await measured(board, () => rawInspect(mi));
      });
    }),
  );
  await onBoard(target, { packetDelayMs: delay }, (board) =>
    withRawGdb(elf, async (start) => {
      let mi!: RawMiClient;
      add(
        s,
        'launchLoad',
        await measured(board, async () => {
          mi = await start();
          await toMain(mi, board.address, true);
        }),
      );
      await toRegion(mi);
      await perStep(s, 'nextLoaded', () => measured(board, () => rawNext(mi)));
      await perStep(s, 'inspectLoaded', async () => {
        await mi.run('-exec-next');
        return await measured(board, () => rawInspect(mi));
      });
    }),
  );
}

/** The adapter's memory traffic of the injection rows, for the raw client to replay. */
interface InjectionTraffic {
  inject: string[];
  read: string[];
}

async function cycleLensInjection(target: FixtureTarget, s: Samples, traced: boolean): Promise<InjectionTraffic> {
  const elf = fixtureElf(target, 'singlepass');
  const traffic: InjectionTraffic = { inject: [], read: [] };
  await onBoard(target, { programmed: elf, placement: 'own', packetDelayMs: delay }, (board) =>
    withCycleLens(async (h) => {
      await h.launchToEntry(remoteArgs(elf, board, { trace: traced }));
      let injected = 0;
      const inject = async (): Promise<void> => {
        const r = await h.custom('cyclelens/inject', { targets: [{ function: 'crc16_step' }] });
        if (r.injected.length !== 1) throw new Error(`crc16_step not injected: ${JSON.stringify(r.refused)}`);
        injected = r.injected[0]!.id;
      };
      const read = async (): Promise<void> => {
        const r = await h.custom('cyclelens/injectedResults');
        if (!r.results.find((x) => x.id === injected && x.calls > 0)) throw new Error('no calls counted');
      };
      if (traced) traffic.inject = memoryTraffic(await miCommandsDuring(h, inject));
      else add(s, 'inject', await measured(board, inject));
      await continueTo(h, fixtureSource('runtime.c'), markerLine(fixtureSource('runtime.c'), '#PROGRAM_END'));
      if (traced) traffic.read = memoryTraffic(await miCommandsDuring(h, read));
      else add(s, 'read', await measured(board, read));
    }),
  );
  return traffic;
}

async function rawInjection(target: FixtureTarget, s: Samples, traffic: InjectionTraffic): Promise<void> {
  const elf = fixtureElf(target, 'singlepass');
  await onBoard(target, { programmed: elf, placement: 'own', packetDelayMs: delay }, (board) =>
    withRawGdb(elf, async (start) => {
      const mi = await start();
      await mi.send(`-target-select remote ${board.address}`);
      await mi.send('-break-insert -t main');
      await mi.run('-exec-continue');
      add(s, 'inject', await measured(board, () => replay(mi, traffic.inject)));
      await mi.send('-break-insert -t program_end');
      await mi.run('-exec-continue');
      add(s, 'read', await measured(board, () => replay(mi, traffic.read)));
    }),
  );
}

/**
 * The memory traffic of a descent's batches: the first one's whole (it also writes the payload
 * routines the later batches share), and the measured one's split where the program runs.
 */
interface DescentTraffic {
  first: string[];
  before: string[];
  after: string[];
}

async function cycleLensDescentRun(target: FixtureTarget, s: Samples, traced: boolean): Promise<DescentTraffic> {
  const elf = fixtureElf(target, 'cyclic');
  const traffic: DescentTraffic = { first: [], before: [], after: [] };
  await onBoard(target, { programmed: elf, placement: 'own', packetDelayMs: delay }, (board) =>
    withCycleLens(async (h) => {
      await h.launchToEntry(remoteArgs(elf, board, { trace: traced }));
      const profiler = new DapProfiler(
        { customRequest: async (command: string, a?: unknown) => (await h.dc.customRequest(command, a)).body },
        {
          slots: BATCH.length,
          mode: { kind: 'cyclic', safeStop: { function: 'idle_point' }, dwell: DWELL },
          executable: elf,
        },
      );
      // The first batch also sets the counters up and reaches the safe stop: the row is the second.
      const first = memoryTraffic(await miCommandsDuring(h, () => profiler.measure(['crc16_step'])));
      if (traced) traffic.first = first;
      const run = async (): Promise<void> => {
        const rs = await profiler.measure(BATCH);
        if (rs.measurements.length !== BATCH.length) throw new Error(`measured ${rs.measurements.length}`);
      };
      if (!traced) {
        add(s, 'descentRun', await measured(board, run));
        return;
      }
      const commands = await miCommandsDuring(h, run);
      const runs = commands.map((c, i) => (c.startsWith('-exec-continue') ? i : -1)).filter((i) => i >= 0);
      traffic.before = memoryTraffic(commands.slice(0, runs[0]));
      traffic.after = memoryTraffic(commands.slice(runs.at(-1)! + 1));
    }),
  );
  return traffic;
}

async function rawDescentRun(target: FixtureTarget, s: Samples, traffic: DescentTraffic): Promise<void> {
  const elf = fixtureElf(target, 'cyclic');
  await onBoard(target, { programmed: elf, placement: 'own', packetDelayMs: delay }, (board) =>
    withRawGdb(elf, async (start) => {
      const mi = await start();
      await mi.send(`-target-select remote ${board.address}`);
      await mi.send('-break-insert -t idle_point');
      await mi.run('-exec-continue');
      await replay(mi, traffic.first);
      add(
        s,
        'descentRun',
        await measured(board, async () => {
          await replay(mi, traffic.before);
          const bp = /number="(\d+)"/.exec(await mi.send('-break-insert idle_point'))![1];
          for (let i = 0; i < DWELL; i++) await mi.run('-exec-continue');
          await mi.send(`-break-delete ${bp}`);
          await replay(mi, traffic.after);
        }),
      );
    }),
  );
}

/** Runs one session, naming it in the error when it fails. */
async function step<T>(target: FixtureTarget, name: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw new Error(`${target}, ${name}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  }
}

function cell(samples: Measured[] | undefined, what: 'packets' | 'ms'): string {
  if (!samples || samples.length === 0) return '-';
  if (what === 'ms') return `${median(samples.map((m) => m.ms)).toFixed(0)} ms`;
  const p = samples.map((m) => m.packets);
  const lo = Math.min(...p);
  const hi = Math.max(...p);
  const f = (n: number): string => (Number.isInteger(n) ? String(n) : n.toFixed(1));
  return lo === hi ? f(lo) : `${f(lo)}-${f(hi)}`;
}

async function main(): Promise<void> {
  for (const target of targets) {
    const profile = PART_PROFILES[DEFAULT_PROFILE[target]];
    const cyclelens: Samples = {};
    const raw: Samples = {};
    const injection = await step(target, 'CycleLens injection (traced)', () => cycleLensInjection(target, {}, true));
    const descent = await step(target, 'CycleLens descent run (traced)', () => cycleLensDescentRun(target, {}, true));
    for (let rep = 0; rep < reps; rep++) {
      await step(target, 'CycleLens, code in flash', () => cycleLensFlash(target, cyclelens));
      await step(target, 'raw GDB, code in flash', () => rawFlash(target, raw));
      await step(target, 'CycleLens injection', () => cycleLensInjection(target, cyclelens, false));
      await step(target, 'raw GDB injection', () => rawInjection(target, raw, injection));
      await step(target, 'CycleLens descent run', () => cycleLensDescentRun(target, cyclelens, false));
      await step(target, 'raw GDB descent run', () => rawDescentRun(target, raw, descent));
      process.stderr.write(`${target}: repetition ${rep + 1} of ${reps} done\n`);
    }
    await step(target, 'allowFlashWrites', () => cycleLensFlashWritesAllowed(target));
    await step(target, 'comparators', () => comparatorsExhausted(target));
    console.log(
      `\n${profile.title} on QEMU ${target}, board double at ${delay} ms per packet; ` +
        `medians of ${reps} sessions; step and inspection rows are the mean of ${steps} in a session.`,
    );
    printTable(
      ['operation', 'CycleLens packets', 'CycleLens wall', 'raw GDB packets', 'raw GDB wall'],
      OPS.map(([op, label]) => [
        label,
        cell(cyclelens[op], 'packets'),
        cell(cyclelens[op], 'ms'),
        cell(raw[op], 'packets'),
        cell(raw[op], 'ms'),
      ]),
    );
    const kinds = (op: Op, samples: Samples): string =>
      Object.entries(samples[op]?.[0]?.byKind ?? {})
        .sort((a, b) => b[1] - a[1])
        .map(([k, n]) => `${k} ${n}`)
        .join(', ');
    for (const [op, label] of OPS)
      for (const m of cyclelens[op] ?? [])
        if (Object.keys(m.refused).length > 0) fail(target, label, `the double refused ${JSON.stringify(m.refused)}`);
    console.log('\nPackets by kind (first session), CycleLens | raw GDB:');
    for (const [op, label] of OPS) console.log(`- ${label}: ${kinds(op, cyclelens)} | ${kinds(op, raw)}`);
  }
  console.log('\nWhere the adapter fails against the board today:');
  for (const f of failures) console.log(`- ${f}`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exit(1);
});
