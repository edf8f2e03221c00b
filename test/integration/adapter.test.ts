import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { DebugProtocol } from '@vscode/debugprotocol';
import type {
  CallGraphResponse,
  InjectResponse,
  InjectedResult,
  InjectedResultsResponse,
} from '../../common/dapCustom';
import { CustomRequests } from '../../common/dapCustom';
import type { DebuggerKind } from '../../common/launchArgs';
import { rootsForStart, runDescent } from '../../core/analysis/descent';
import { MetricsEngine } from '../../core/analysis/metrics';
import type { FunctionOutcome } from '../../core/analysis/resultSet';
import { DapProfiler } from '../../core/profiling/dapProfiler';
import { AdapterHarness, fixtureSource, qemuLaunchArgs } from '../support/dap';
import { markerLine } from '../support/markers';
import type { FixtureTarget } from '../support/paths';

/**
 * The whole debugging round trip through the built adapter, a real debugger and real QEMU, on both
 * no-hardware targets and with both debuggers (the `Debugger` port, docs/design.md): the same steps
 * a user takes in VS Code, then counters, an injected measurement and a descent. LLDB 14 runs the
 * Cortex-M4 leg (it has no RISC-V support; the last describe checks the launch says so).
 */
const LEGS: Array<{ target: FixtureTarget; debugger: DebuggerKind }> = [
  { target: 'rv32', debugger: 'gdb' },
  { target: 'cortex-m4', debugger: 'gdb' },
  { target: 'cortex-m4', debugger: 'lldb' },
];

/** The counter each target counts with: QEMU's Cortex-M4 has no DWT, so SysTick (written by core stores). */
const COUNTER: Record<FixtureTarget, { unit: string; event: string }> = {
  'cortex-m4': { unit: 'SysTick', event: 'cycles' },
  rv32: { unit: 'RISC-V counters', event: 'instructions' },
};

/**
 * What a leg measured without halting the target (the injected measurement, the descent's values).
 * Under `-icount` QEMU runs the program identically whichever debugger drives it, so a second
 * debugger on the same target must measure exactly what the first did.
 */
interface Measured {
  injected: Array<Omit<InjectedResult, 'id'>>;
  descent: { runs: number; outcomes: FunctionOutcome[] } | undefined;
}
const measuredBy = new Map<string, Measured>();
const legName = (target: FixtureTarget, debuggerKind: DebuggerKind): string => `${target} with ${debuggerKind}`;

for (const { target, debugger: debuggerKind } of LEGS) {
  describe(`debug adapter on QEMU ${target} with ${debuggerKind}`, () => {
    const h = new AdapterHarness();
    const dsp = fixtureSource('dsp.c');
    const singlepass = fixtureSource('singlepass.c');
    const measured: Measured = { injected: [], descent: undefined };
    let locals: DebugProtocol.Variable[] = [];
    let frameId = 0;

    before(async () => {
      await h.start();
    });

    after(async () => {
      const left = await h.stop();
      assert.deepEqual(left, [], `processes left behind: ${JSON.stringify(left)}`);
    });

    it('launches and stops at main', async () => {
      const stopped = await h.launchToEntry(
        qemuLaunchArgs(target, 'singlepass', { debugger: debuggerKind, programEnd: 'program_end' }),
      );
      assert.equal(stopped.body.reason, 'entry');
      const top = await h.topFrame(stopped.body.threadId);
      assert.equal(top.name, 'main');
      assert.equal(top.source?.path, singlepass);
      // GDB places a breakpoint on main after the prologue: the first line of the body. LLDB 14's
      // prologue analysis of this Thumb code stops earlier, on main's opening line.
      if (debuggerKind === 'gdb') assert.equal(top.line, markerLine(singlepass, '#MAIN_FIRST'));
      else
        assert.ok(
          top.line > 0 && top.line < markerLine(singlepass, '#MAIN_FIRST'),
          `main's opening line, got ${top.line}`,
        );
    });

    it('stops at a source breakpoint found by marker', async () => {
      const line = markerLine(dsp, '#BP_LOCALS');
      const set = await h.dc.setBreakpointsRequest({ source: { path: dsp }, breakpoints: [{ line }] });
      assert.equal(set.body.breakpoints[0]?.verified, true);
      assert.equal(set.body.breakpoints[0]?.line, line);
      await Promise.all([
        h.dc.continueRequest({ threadId: 1 }),
        h.dc.assertStoppedLocation('breakpoint', { path: dsp, line }),
      ]);
    });

    it('shows the call stack down from main', async () => {
      const st = await h.dc.stackTraceRequest({ threadId: 1, startFrame: 0, levels: 20 });
      const names = st.body.stackFrames.map((f) => f.name);
      assert.equal(names[0], 'summarise_window');
      assert.ok(names.includes('main'), `main missing from ${names.join(' < ')}`);
      assert.ok(names.indexOf('main') >= 3, `expected ≥ 3 frames above main: ${names.join(' < ')}`);
      assert.ok((st.body.totalFrames ?? 0) >= names.indexOf('main') + 1);
      frameId = st.body.stackFrames[0]!.id;
    });

    it('expands struct and array locals', async () => {
      const scopes = await h.dc.scopesRequest({ frameId });
      const localsScope = scopes.body.scopes.find((s) => s.name === 'Locals');
      assert.ok(localsScope);
      locals = await h.variablesOf(localsScope.variablesReference);
      const st = locals.find((v) => v.name === 'st');
      const hist = locals.find((v) => v.name === 'hist');
      assert.ok(st && st.variablesReference > 0, `struct 'st' not expandable: ${JSON.stringify(locals)}`);
      assert.ok(hist && hist.variablesReference > 0, `array 'hist' not expandable`);
      const fields = (await h.variablesOf(st.variablesReference)).map((v) => v.name);
      for (const f of ['mean', 'variance', 'spread'])
        assert.ok(fields.includes(f), `field ${f} missing: ${fields.join(',')}`);
      const elements = await h.variablesOf(hist.variablesReference);
      assert.equal(elements[0]?.name, '[0]');
      assert.match(elements[0]!.value, /^\d+$/);
    });

    it('lists the program globals and the statics of the frame file on demand', async () => {
      const scopes = await h.dc.scopesRequest({ frameId });
      const globals = scopes.body.scopes.find((s) => s.name === 'Globals');
      const statics = scopes.body.scopes.find((s) => s.name === 'Statics');
      assert.ok(
        globals?.expensive && statics?.expensive,
        `Globals and Statics are listed only when expanded: ${JSON.stringify(scopes.body.scopes)}`,
      );
      // runtime.c defines the global; the stop is in dsp.c, whose one file-scope object is a static.
      const g = await h.variablesOf(globals.variablesReference);
      const checksum = g.find((v) => v.name === 'g_final_checksum');
      assert.ok(checksum, `g_final_checksum missing from Globals: ${g.map((v) => v.name).join(',')}`);
      assert.match(checksum.value, /^\d+$/);
      assert.ok(!g.some((v) => v.name === 'fir_taps'), 'a file-static is not a global');
      const st = await h.variablesOf(statics.variablesReference);
      assert.deepEqual(
        st.map((v) => v.name),
        ['fir_taps'],
      );
      const taps = await h.variablesOf(st[0]!.variablesReference);
      assert.deepEqual(
        taps.slice(0, 4).map((v) => v.value),
        ['1205', '2930', '5120', '6128'],
      );
    });

    it('changes a variable and reads it back', async () => {
      const st = locals.find((v) => v.name === 'st')!;
      const meanRef = st.variablesReference;
      const set = await h.dc.setVariableRequest({ variablesReference: meanRef, name: 'mean', value: '1234' });
      assert.equal(set.body.value, '1234');
      const ev = await h.dc.evaluateRequest({ expression: 'st.mean', frameId, context: 'watch' });
      assert.equal(ev.body.result, '1234');
    });

    it('shows registers, with the pc at the frame address', async () => {
      const top = await h.topFrame();
      const scopes = await h.dc.scopesRequest({ frameId: top.id });
      const regs = await h.variablesOf(scopes.body.scopes.find((s) => s.name === 'Registers')!.variablesReference);
      const pc = regs.find((r) => r.name === 'pc');
      assert.ok(pc, `no pc in ${regs.map((r) => r.name).join(',')}`);
      assert.equal(BigInt(pc.value), BigInt(top.instructionPointerReference!));
      assert.ok(regs.some((r) => r.name === 'sp'));
      assert.ok(regs.some((r) => r.name === 'System registers' && r.variablesReference > 0));
    });

    it('reads and writes memory', async () => {
      const ev = await h.dc.evaluateRequest({ expression: '&st', frameId: (await h.topFrame()).id, context: 'watch' });
      const address = BigInt(ev.body.result.split(' ')[0]!);
      const read = await h.dc.customRequest('readMemory', { memoryReference: `0x${address.toString(16)}`, count: 16 });
      const before = Buffer.from(read.body.data, 'base64');
      assert.equal(before.length, 16);
      const pattern = Buffer.from([0xde, 0xad, 0xbe, 0xef]);
      await h.dc.customRequest('writeMemory', {
        memoryReference: `0x${address.toString(16)}`,
        offset: 4,
        data: pattern.toString('base64'),
      });
      const again = Buffer.from(
        (await h.dc.customRequest('readMemory', { memoryReference: `0x${address.toString(16)}`, count: 16 })).body.data,
        'base64',
      );
      assert.deepEqual(again.subarray(4, 8), pattern);
      assert.deepEqual(again.subarray(0, 4), before.subarray(0, 4));
      assert.deepEqual(again.subarray(8), before.subarray(8));
    });

    it('disassembles around the pc', async () => {
      const top = await h.topFrame();
      const r = await h.dc.customRequest('disassemble', {
        memoryReference: top.instructionPointerReference,
        instructionOffset: -4,
        instructionCount: 12,
        resolveSymbols: true,
      });
      const insns: DebugProtocol.DisassembledInstruction[] = r.body.instructions;
      assert.equal(insns.length, 12);
      assert.equal(BigInt(insns[4]!.address), BigInt(top.instructionPointerReference!));
      assert.ok(
        insns.slice(0, 12).every((i) => i.presentationHint !== 'invalid'),
        'instructions around the pc must all decode',
      );
      assert.ok(
        insns.every((i, k) => k === 0 || BigInt(i.address) > BigInt(insns[k - 1]!.address)),
        'addresses must increase',
      );
      assert.match(insns[4]!.symbol ?? '', /^summarise_window\+\d+$/);
    });

    it('disassembles code again after it is written (the disassembly cache is cleared)', async () => {
      const pc = (await h.topFrame()).instructionPointerReference!;
      const disassembleAtPc = async (): Promise<string> =>
        (
          (await h.dc.customRequest('disassemble', { memoryReference: pc, instructionOffset: 0, instructionCount: 4 }))
            .body.instructions as DebugProtocol.DisassembledInstruction[]
        )[0]!.instruction;
      const original = await disassembleAtPc();
      assert.notEqual(original, 'nop');
      assert.equal(await disassembleAtPc(), original);
      const saved = (await h.dc.customRequest('readMemory', { memoryReference: pc, count: 4 })).body.data as string;
      // A NOP at the pc: RV32 `addi x0, x0, 0` (0x00000013); Thumb `nop` (0xbf00).
      const nop = target === 'rv32' ? Buffer.from([0x13, 0, 0, 0]) : Buffer.from([0x00, 0xbf]);
      await h.dc.customRequest('writeMemory', { memoryReference: pc, data: nop.toString('base64') });
      try {
        assert.equal(await disassembleAtPc(), 'nop');
      } finally {
        await h.dc.customRequest('writeMemory', { memoryReference: pc, data: saved });
      }
      assert.equal(await disassembleAtPc(), original);
    });

    it('steps over, in and out', async () => {
      const line = markerLine(dsp, '#BP_LOCALS');
      // #BP_LOCALS calls isqrt32: step in lands inside it, step out returns to summarise_window.
      await Promise.all([h.dc.stepInRequest({ threadId: 1 }), h.dc.waitForEvent('stopped')]);
      assert.equal((await h.topFrame()).name, 'isqrt32');
      await Promise.all([h.dc.stepOutRequest({ threadId: 1 }), h.dc.waitForEvent('stopped')]);
      let top = await h.topFrame();
      assert.equal(top.name, 'summarise_window');
      await Promise.all([h.dc.nextRequest({ threadId: 1 }), h.dc.waitForEvent('stopped')]);
      top = await h.topFrame();
      assert.equal(top.name, 'summarise_window');
      assert.ok(top.line > line, `step over should move past line ${line}, at ${top.line}`);
      const pcBefore = BigInt(top.instructionPointerReference!);
      await Promise.all([h.dc.nextRequest({ threadId: 1, granularity: 'instruction' }), h.dc.waitForEvent('stopped')]);
      const pcAfter = BigInt((await h.topFrame()).instructionPointerReference!);
      assert.ok(
        pcAfter - pcBefore === 2n || pcAfter - pcBefore === 4n || pcAfter !== pcBefore,
        'instruction step must move the pc',
      );
    });

    it('passes monitor commands to the gdbserver', async () => {
      const r = await h.dc.evaluateRequest({ expression: 'monitor info registers', context: 'repl' });
      assert.match(r.body.result, target === 'rv32' ? /\bpc\s+[0-9a-f]{8}/i : /R15=[0-9a-f]{8}/i);
    });

    it('discovers the counters, counts to a breakpoint with them and zeroes them', async () => {
      const { unit, event } = COUNTER[target];
      await h.dc.setBreakpointsRequest({ source: { path: dsp }, breakpoints: [] });
      const { units } = await h.custom(CustomRequests.counters);
      assert.ok(units.find((u) => u.unit === unit)?.present, JSON.stringify(units));
      const configured = await h.custom(CustomRequests.configure, { events: [event] });
      assert.equal(
        configured.units.find((u) => u.unit === unit)?.slots.find((s) => s.event === event)?.running,
        true,
        JSON.stringify(configured.units),
      );
      const r = await h.custom(CustomRequests.measureTo, { to: { function: 'program_end' } });
      assert.equal(r.passes.length, 1, r.incomplete);
      assert.equal(r.stoppedAt?.function, 'program_end');
      const counted = r.passes[0]!.values.find((v) => v.unit === unit && v.event === event)!;
      assert.ok(BigInt(counted.value) > 0n, JSON.stringify(counted));
      // The firmware's timer is armed by now: QEMU's virtual clock jumps at the stop, and the value says so.
      assert.equal(counted.reliable, false);
      assert.match(counted.note ?? '', /timer deadline|wrapped/);
      // Zeroing SysTick is a store to SYST_CVR, which QEMU takes only from the core.
      await h.custom(CustomRequests.reset, {});
      const zeroed = (await h.custom(CustomRequests.read)).values.find((v) => v.unit === unit && v.event === event);
      assert.equal(zeroed?.value, '0');
    });

    it('injects a measurement and counts its calls without halting', async () => {
      await h.dc.setBreakpointsRequest({ source: { path: dsp }, breakpoints: [] });
      await h.dc.customRequest(CustomRequests.run, { restart: true, until: { function: 'main' } });
      const injected = (await h.dc.customRequest(CustomRequests.inject, { targets: [{ function: 'fir_filter' }] }))
        .body as InjectResponse;
      assert.equal(injected.injected.length, 1, JSON.stringify(injected.refused));
      await h.dc.customRequest(CustomRequests.run, {});
      const results = (await h.dc.customRequest(CustomRequests.injectedResults)).body as InjectedResultsResponse;
      const fir = results.results.find((m) => m.name === 'fir_filter');
      assert.ok(fir && fir.calls > 0 && fir.total > 0, JSON.stringify(results));
      measured.injected = results.results.map(({ id: _id, ...rest }) => rest);
      await h.dc.customRequest(CustomRequests.removeInjections, {});
    });

    it('runs a descent below main', async () => {
      const profiler = new DapProfiler(
        { customRequest: async (command, args) => (await h.dc.customRequest(command, args)).body as unknown },
        {
          slots: 4,
          mode: { kind: 'single-pass', end: { function: 'program_end' } },
          executable: qemuLaunchArgs(target).executable,
        },
      );
      const graph: CallGraphResponse = await profiler.callGraph();
      const engine = new MetricsEngine();
      const result = await runDescent(graph, profiler, {
        engine,
        metric: engine.monotone('share'),
        threshold: 0.05,
        roots: rootsForStart(graph, 'main'),
        spanning: ['main'],
      });
      const below = result.outcomes
        .filter((o) => o.status === 'measured' && o.name !== 'main' && (o.value ?? 0) > 0)
        .map((o) => o.name);
      assert.ok(below.includes('process_packet'), `measured: ${below.join(', ')}`);
      measured.descent = { runs: result.runs, outcomes: result.outcomes };
      measuredBy.set(legName(target, debuggerKind), measured);
    });

    if (debuggerKind !== 'gdb')
      it('measures exactly what GDB measured on the same target', () => {
        const gdb = measuredBy.get(legName(target, 'gdb'));
        assert.ok(
          gdb,
          `the GDB leg on ${target} recorded no measurements (it failed or was left out): run this file with both legs`,
        );
        assert.deepEqual(measured, gdb);
      });

    it('runs to the end of the program and reports its exit', async () => {
      await h.dc.setBreakpointsRequest({ source: { path: dsp }, breakpoints: [] });
      await Promise.all([h.dc.continueRequest({ threadId: 1 }), h.dc.waitForEvent('terminated')]);
      assert.match(h.allOutput, /checksum/, 'the firmware prints its checksum on the UART');
      assert.match(h.allOutput, /The program exited/);
    });
  });
}

describe('LLDB where it cannot go', () => {
  it('refuses RV32 at launch, naming the fix', async () => {
    const h = new AdapterHarness();
    await h.start();
    try {
      await assert.rejects(
        Promise.all([
          h.dc.configurationSequence(),
          h.dc.launch(qemuLaunchArgs('rv32', 'singlepass', { debugger: 'lldb' })),
        ]),
        /LLDB 14 has no RISC-V support: use `"debugger": "gdb"`/,
      );
    } finally {
      assert.deepEqual(await h.stop(), []);
    }
  });
});
