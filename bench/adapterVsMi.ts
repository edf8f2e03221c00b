/**
 * The adapter against the floor: the same six things done through the built adapter over DAP and
 * by a raw GDB/MI client (bench/support/rawMi.ts), on the same QEMU Cortex-M4 fixture, in one run,
 * sessions interleaved (adapter first on even repetitions, floor first on odd ones) so that load
 * on the machine falls on both alike. Prints each row's medians and the ratio adapter / floor.
 * The adapter is started exactly as the extension's DebugAdapterDescriptorFactory starts it for a
 * session after the first: a spare (core/dap/adapterSpare.ts), loaded and waiting before the session
 * asks for it, handed the start hint of its launch configuration, so that it starts the GDB and QEMU
 * the last launch of that configuration ran. The launch row is timed from the handover. A second
 * launch row times the first session of a window, which has no spare: the adapter spawned for it,
 * with the hint in its environment, timed from the spawn.
 *   npm run bench -- adapterVsMi [--reps N]
 */
import { adapterStartEnv } from '../common/startHint';
import type { CycleLensLaunchArgs } from '../common/launchArgs';
import { AdapterHarness, fixtureSource, qemuLaunchArgs } from '../test/support/dap';
import { markerLine } from '../test/support/markers';
import { fixtureElf } from '../test/support/paths';
import { median, option, printTable } from './support';
import { miField, RawMiClient } from './support/rawMi';

const reps = Number(option(process.argv, '--reps')) || 5;
const steps = 30;
const inspections = 20;
const memoryReads = 10;
const memoryBytes = 64 * 1024;
const memoryBase = 0x20000000;
const disassemblies = 20;
const instructions = 200;

type Row = 'launch' | 'firstLaunch' | 'next' | 'inspect' | 'memory' | 'disassembly' | 'disconnect';
type Samples = Record<Row, number[]>;
const rows: Row[] = ['launch', 'firstLaunch', 'next', 'inspect', 'memory', 'disassembly', 'disconnect'];
const newSamples = (): Samples => ({
  launch: [],
  firstLaunch: [],
  next: [],
  inspect: [],
  memory: [],
  disassembly: [],
  disconnect: [],
});

const elf = fixtureElf('cortex-m4', 'singlepass');
const dsp = fixtureSource('dsp.c');
const regionLine = markerLine(dsp, '#REGION_START');

async function timed(into: number[], fn: () => Promise<unknown>): Promise<void> {
  const t0 = performance.now();
  await fn();
  into.push(performance.now() - t0);
}

/**
 * GDB/MI commands per operation, which load on the machine does not change: one extra session of
 * each, untimed, the adapter's counted from its MI trace (`trace: true`), the floor's by its client.
 */
type Counts = Record<Row, number>;
const commandCounts = { adapter: {} as Counts, floor: {} as Counts };

/** Runs `fn` under a row's name, adding the commands sent meanwhile to `counts` when counting. */
function counting(counts: Counts | undefined, row: Row, sent: () => number, ops: number) {
  return async (into: number[], fn: () => Promise<unknown>): Promise<void> => {
    const before = sent();
    await timed(into, fn);
    if (counts) counts[row] = (counts[row] ?? 0) + (sent() - before) / ops;
  };
}

/** Memory rows hold seconds per read; they are turned into throughput when printed. */
async function adapterSession(s: Samples, counts?: Counts): Promise<void> {
  const args = qemuLaunchArgs('cortex-m4', 'singlepass', counts ? { trace: true } : {});
  // Started as the extension's DebugAdapterDescriptorFactory starts a session's adapter when it has
  // a spare: loaded ahead, untimed, then handed the session's start hint.
  const h = new AdapterHarness(undefined, {}, true);
  await h.start();
  let sentSoFar = 0;
  if (counts)
    h.dc.on(
      'output',
      (e: { body: { output: string } }) =>
        (sentSoFar += e.body.output.split('\n').filter((l) => l.startsWith('-> ')).length),
    );
  const op = (row: Row, ops: number): ReturnType<typeof counting> => counting(counts, row, () => sentSoFar, ops);
  let left: Awaited<ReturnType<typeof h.stop>> = [];
  try {
    const dc = h.dc;
    await op('launch', 1)(s.launch, () => {
      h.handOver(args);
      return h.launchToEntry(args);
    });
    await dc.setBreakpointsRequest({ source: { path: dsp }, breakpoints: [{ line: regionLine }] });
    await Promise.all([dc.continueRequest({ threadId: 1 }), dc.waitForEvent('stopped')]);
    await dc.setBreakpointsRequest({ source: { path: dsp }, breakpoints: [] });
    const step = (): Promise<unknown> => Promise.all([dc.nextRequest({ threadId: 1 }), dc.waitForEvent('stopped')]);
    // A step as an IDE does it: the request, the stop, then the top of the stack.
    for (let i = 0; i < steps; i++) {
      await op('next', steps)(s.next, async () => {
        await step();
        await dc.stackTraceRequest({ threadId: 1, startFrame: 0, levels: 20 });
      });
    }
    // What the Variables view costs after a stop: the stack, the frame's scopes, its locals.
    for (let i = 0; i < inspections; i++) {
      await step();
      await op('inspect', inspections)(s.inspect, async () => {
        const top = (await dc.stackTraceRequest({ threadId: 1, startFrame: 0, levels: 20 })).body.stackFrames[0]!;
        const scopes = (await dc.scopesRequest({ frameId: top.id })).body.scopes;
        const locals = (await dc.variablesRequest({ variablesReference: scopes[0]!.variablesReference })).body
          .variables;
        if (locals.length === 0) throw new Error('no locals at the step');
      });
    }
    for (let i = 0; i < memoryReads; i++) {
      await op('memory', memoryReads)(s.memory, async () => {
        const r = await dc.customRequest('readMemory', {
          memoryReference: `0x${memoryBase.toString(16)}`,
          count: memoryBytes,
        });
        if (Buffer.from(r.body.data, 'base64').length !== memoryBytes) throw new Error('short read');
      });
    }
    const pc = (await dc.stackTraceRequest({ threadId: 1, startFrame: 0, levels: 1 })).body.stackFrames[0]!
      .instructionPointerReference!;
    for (let i = 0; i < disassemblies; i++) {
      await op('disassembly', disassemblies)(s.disassembly, async () => {
        const r = await dc.customRequest('disassemble', {
          memoryReference: pc,
          instructionOffset: 0,
          instructionCount: instructions,
        });
        if (r.body.instructions.length !== instructions) throw new Error('short disassembly');
      });
    }
    await op('disconnect', 1)(s.disconnect, async () => {
      await dc.disconnectRequest({ terminateDebuggee: true });
      // The trace's last lines arrive as output events just before the response.
      await new Promise((r) => setTimeout(r, counts ? 200 : 0));
    });
  } finally {
    // A throw here would hide the error that ended the session: the leak is reported after it.
    left = await h.stop();
  }
  if (left.length > 0) throw new Error(`the adapter left ${left.length} process(es) behind`);
}

/** The first session of a window: no spare yet, the adapter spawned for it with the hint in its environment. */
async function firstLaunch(s: Samples): Promise<void> {
  const args: CycleLensLaunchArgs = qemuLaunchArgs('cortex-m4', 'singlepass');
  const h = new AdapterHarness(undefined, adapterStartEnv({ ...args }));
  let left: Awaited<ReturnType<typeof h.stop>> = [];
  try {
    await timed(s.firstLaunch, async () => {
      await h.start();
      await h.launchToEntry(args);
    });
    await h.dc.disconnectRequest({ terminateDebuggee: true });
  } finally {
    left = await h.stop();
  }
  if (left.length > 0) throw new Error(`the adapter left ${left.length} process(es) behind`);
}

/**
 * `trustReadonly`: the raw client with `trust-readonly-sections on`, as the adapter sets it when it
 * put the image in the target itself: shows how much of the adapter's lead comes from that setting.
 */
async function floorSession(s: Samples, counts?: Counts, trustReadonly = false): Promise<void> {
  let mi: RawMiClient | undefined;
  const op = (row: Row, ops: number): ReturnType<typeof counting> => counting(counts, row, () => mi?.sent ?? 0, ops);
  try {
    await op('launch', 1)(s.launch, async () => {
      mi = await RawMiClient.start(elf);
      if (trustReadonly) await mi.send('-gdb-set trust-readonly-sections on');
      await mi.send('-break-insert -t main');
      await mi.run('-exec-continue');
    });
    const c = mi!;
    const bp = miField(await c.send(`-break-insert ${dsp}:${regionLine}`), 'number');
    await c.run('-exec-continue');
    await c.send(`-break-delete ${bp}`);
    for (let i = 0; i < steps; i++) {
      await op('next', steps)(s.next, async () => {
        await c.run('-exec-next');
        await c.send('-stack-list-frames --thread 1 0 19');
      });
    }
    for (let i = 0; i < inspections; i++) {
      await c.run('-exec-next');
      await op('inspect', inspections)(s.inspect, async () => {
        await c.send('-stack-list-frames --thread 1 0 19');
        const locals = await c.send('-stack-list-variables --thread 1 --frame 0 --simple-values');
        if (!locals.includes('name=')) throw new Error('no locals at the step');
      });
    }
    for (let i = 0; i < memoryReads; i++) {
      await op('memory', memoryReads)(s.memory, async () => {
        const r = await c.send(`-data-read-memory-bytes 0x${memoryBase.toString(16)} ${memoryBytes}`);
        if (miField(r, 'contents').length !== memoryBytes * 2) throw new Error('short read');
      });
    }
    const pc = BigInt(miField(await c.send('-stack-list-frames --thread 1 0 0'), 'addr'));
    for (let i = 0; i < disassemblies; i++) {
      await op('disassembly', disassemblies)(s.disassembly, async () => {
        // Thumb-2 instructions are at most 4 bytes: this range holds at least 200 of them.
        const r = await c.send(
          `-data-disassemble -s 0x${pc.toString(16)} -e 0x${(pc + BigInt(instructions * 4)).toString(16)} -- 5`,
        );
        if (r.split('address=').length - 1 < instructions) throw new Error('short disassembly');
      });
    }
    await op('disconnect', 1)(s.disconnect, () => c.disconnect());
  } finally {
    mi?.kill();
  }
}

async function main(): Promise<void> {
  const adapter = newSamples();
  const floor = newSamples();
  const floorTrusting = newSamples();
  for (let rep = 0; rep < reps; rep++) {
    if (rep % 2 === 0) {
      await adapterSession(adapter);
      await firstLaunch(adapter);
      await floorSession(floor);
    } else {
      await floorSession(floor);
      await firstLaunch(adapter);
      await adapterSession(adapter);
    }
    await floorSession(floorTrusting, undefined, true);
    process.stderr.write(`repetition ${rep + 1} of ${reps} done\n`);
  }
  await adapterSession(newSamples(), commandCounts.adapter);
  await floorSession(newSamples(), commandCounts.floor);
  const labels: Record<Row, string> = {
    launch: 'launch → stopped at main (adapter started ahead)',
    firstLaunch: 'launch → stopped at main (adapter spawned for it)',
    next: `next → stopped + top frame (${steps} per session)`,
    inspect: `stack + scopes + locals (${inspections} per session)`,
    memory: `readMemory 64 KiB (${memoryReads} per session)`,
    disassembly: `disassemble 200 instructions (${disassemblies} per session)`,
    disconnect: 'disconnect (terminate)',
  };
  const table = rows.map((row) => {
    const a = median(adapter[row]);
    // Both launch rows end where the floor's launch does.
    const f = median(floor[row === 'firstLaunch' ? 'launch' : row]);
    if (row === 'memory') {
      const kib = (ms: number): string => `${(memoryBytes / 1024 / (ms / 1000)).toFixed(0)} KiB/s`;
      return [labels[row], kib(a), kib(f), `${(f / a).toFixed(2)} (throughput, adapter / floor)`];
    }
    return [labels[row], `${a.toFixed(2)} ms`, `${f.toFixed(2)} ms`, `${(a / f).toFixed(2)}`];
  });
  console.log(`QEMU mps2-an386 (Cortex-M4), singlepass fixture; medians over ${reps} sessions of each, interleaved.`);
  console.log(
    'Floor: a raw GDB/MI client doing the same work with no parsing or state. Ratio: adapter ' +
      'time / floor time (lower is better);',
  );
  console.log('for readMemory, adapter throughput / floor throughput (higher is better).\n');
  printTable(['row', 'adapter', 'floor (raw MI)', 'ratio'], table);
  console.log(
    '\nThe adapter sets `trust-readonly-sections on` when the launch put the image in the target (docs/design.md):',
  );
  console.log('GDB then reads code for its frame analysis from the ELF. The same raw client with that setting:\n');
  printTable(
    ['row', 'adapter', 'floor, trusting read-only sections', 'ratio'],
    (['next', 'inspect'] as const).map((row) => {
      const a = median(adapter[row]);
      const f = median(floorTrusting[row]);
      return [labels[row], `${a.toFixed(2)} ms`, `${f.toFixed(2)} ms`, `${(a / f).toFixed(2)}`];
    }),
  );
  console.log(
    '\nGDB/MI commands per operation (one untimed session of each; the adapter counted from its MI trace):\n',
  );
  const perOp = (n: number | undefined): string => (n === undefined ? '-' : n.toFixed(n % 1 === 0 ? 0 : 2));
  printTable(
    ['row', 'adapter', 'floor (raw MI)'],
    rows
      .filter((row) => row !== 'firstLaunch')
      .map((row) => [labels[row], perOp(commandCounts.adapter[row]), perOp(commandCounts.floor[row])]),
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
