import {
  DebugSession,
  InitializedEvent,
  InvalidatedEvent,
  OutputEvent,
  Response,
  StoppedEvent,
  TerminatedEvent,
  Thread,
} from '@vscode/debugadapter';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CustomEvents, type InjectArguments } from '../../common/dapCustom';
import type { CycleLensLaunchArgs } from '../../common/launchArgs';
import { createCounterUnits } from '../arch/counterUnits';
import { familyTraits } from '../arch/traits';
import type { Frame, StopEvent } from '../debugger/types';
import { PF_W } from '../elf';
import { CycleLensError, ErrorCode, errorMessage } from '../errors';
import { CounterService } from '../probe/counterService';
import { DebuggerTargetAccess } from '../probe/targetAccess';
import { DebugTarget, LaunchMode, TargetOutput } from '../target/debugTarget';
import { BreakpointManager } from './breakpoints';
import { disassemble } from './disassembly';
import { DisassemblyCache } from './disassemblyCache';
import { InjectionRequests } from './injectionRequests';
import { ProbeRequests } from './probeRequests';
import { SamplingService } from '../sampling/samplingService';
import { customEvent, customRequestHandlers } from './customRequests';
import { validateLaunchArgs, type ValidatedLaunch } from './launchValidation';
import { releasePrestartedDebugger } from '../debugger/factory';
import { discardPrestartedQemu } from '../servers/qemuPrestart';
import { RunState } from './runState';
import { VariableStore } from './variables';

type Handler = (args: never) => Promise<unknown>;

/** Frames read at each stop before the client asks: a client's first page is 20 frames or fewer. */
const PREFETCH_FRAMES = 20;

/**
 * The DAP face of CycleLens. It translates requests into calls on the target's services and their
 * events into DAP events; the work happens in DebugTarget, the Debugger port (GdbDebugger or
 * LldbDebugger) and the probe services.
 * Every request goes through one dispatcher, which turns any thrown error into a DAP error response.
 */
export class CycleLensDebugSession extends DebugSession {
  private target: DebugTarget | undefined;
  private variables: VariableStore | undefined;
  private counters: CounterService | undefined;
  private readonly injection = new InjectionRequests(
    () => this.requireTarget(),
    (o) => this.output(o),
    () => this.counters?.capabilities() ?? [],
  );
  private readonly probe = new ProbeRequests(
    () => this.requireTarget(),
    () => this.requireCounters(),
    (passesDone, passesWanted) =>
      this.sendEvent(customEvent(CustomEvents.measurementProgress, { passesDone, passesWanted })),
    (address) => this.injection.stopPointFor(address),
  );
  /** Whose run the target's is: the one owner of "the user's program runs" (runState.ts). */
  private readonly runState = new RunState(() => this.target?.debugger.isRunning === true && !this.target.isEnded);
  private readonly sampling = new SamplingService(
    () => this.requireTarget(),
    this.runState,
    (body) => this.sendEvent(customEvent(CustomEvents.samples, body)),
    (text) => this.output({ category: 'important', text }),
  );
  private readonly breakpoints = new BreakpointManager(() => this.requireTarget().debugger);
  private readonly disassemblyCache = new DisassemblyCache();
  /**
   * The top of the stack, asked of GDB as soon as a stop is reported: every client asks for it
   * next, and GDB answers while the stop event travels to the client and its request comes back.
   */
  private stackPrefetch: { threadId: number; frames: Promise<Frame[] | undefined> } | undefined;
  private frames = new Map<number, { threadId: number; level: number; path?: string }>();
  private nextFrameId = 1;
  private configurationDone = false;

  constructor() {
    super();
    this.setDebuggerLinesStartAt1(true);
    this.setDebuggerColumnsStartAt1(true);
  }

  private readonly handlers: Record<string, Handler> = {
    launch: (a: CycleLensLaunchArgs) => this.launch(a, 'launch'),
    attach: (a: CycleLensLaunchArgs) => this.launch(a, 'attach'),
    configurationDone: () => this.onConfigurationDone(),
    setBreakpoints: (a: DebugProtocol.SetBreakpointsArguments) => this.setBreakpoints(a),
    setFunctionBreakpoints: (a: DebugProtocol.SetFunctionBreakpointsArguments) =>
      this.halted(async () => ({ breakpoints: await this.breakpoints.setFunctionBreakpoints(a.breakpoints) })),
    setInstructionBreakpoints: (a: DebugProtocol.SetInstructionBreakpointsArguments) =>
      this.halted(async () => ({ breakpoints: await this.breakpoints.setInstructionBreakpoints(a.breakpoints) })),
    setExceptionBreakpoints: async () => ({ breakpoints: [] }),
    threads: () => this.threads(),
    stackTrace: (a: DebugProtocol.StackTraceArguments) => this.stackTrace(a),
    scopes: (a: DebugProtocol.ScopesArguments) => this.scopes(a),
    variables: (a: DebugProtocol.VariablesArguments) => this.listVariables(a),
    setVariable: (a: DebugProtocol.SetVariableArguments) => this.setVariable(a),
    evaluate: (a: DebugProtocol.EvaluateArguments) => this.evaluate(a),
    continue: () => this.resume(() => this.activeDebugger().continue(), true),
    next: (a: DebugProtocol.NextArguments) =>
      this.resume(() => this.activeDebugger().stepOver(a.granularity === 'instruction')),
    stepIn: (a: DebugProtocol.StepInArguments) =>
      this.resume(() => this.activeDebugger().stepIn(a.granularity === 'instruction')),
    stepOut: () => this.resume(() => this.activeDebugger().stepOut()),
    pause: () => this.pause(),
    readMemory: (a: DebugProtocol.ReadMemoryArguments) => this.readMemory(a),
    writeMemory: (a: DebugProtocol.WriteMemoryArguments) => this.writeMemory(a),
    disassemble: (a: DebugProtocol.DisassembleArguments) => this.disassemble(a),
    restart: () => this.restart(),
    disconnect: (a: DebugProtocol.DisconnectArguments) =>
      this.disconnect(a.terminateDebuggee ?? this.target?.mode !== 'attach'),
    terminate: async () => {
      await this.disconnect(true);
      // DAP: after `terminate` the adapter reports the end; VS Code then disconnects.
      this.sendEvent(new TerminatedEvent());
    },
    ...this.ownWork(customRequestHandlers(this.probe, this.injection, this.sampling)),
  };

  /**
   * The custom requests that run the adapter's own work (measurements, descents' runs): while they
   * run, the core does not run the user's program. The sampling requests only read.
   */
  private ownWork<T extends Record<string, (args: never) => Promise<unknown>>>(handlers: T): T {
    const out: Record<string, (args: never) => Promise<unknown>> = {};
    for (const [name, handler] of Object.entries(handlers))
      out[name] = /sampl/i.test(name) ? handler : (args: never) => this.runState.internally(() => handler(args));
    return out as T;
  }

  protected override initializeRequest(response: DebugProtocol.InitializeResponse): void {
    response.body = {
      supportsConfigurationDoneRequest: true,
      supportsFunctionBreakpoints: true,
      supportsConditionalBreakpoints: true,
      supportsHitConditionalBreakpoints: true,
      supportsInstructionBreakpoints: true,
      supportsEvaluateForHovers: true,
      supportsSetVariable: true,
      supportsReadMemoryRequest: true,
      supportsWriteMemoryRequest: true,
      supportsDisassembleRequest: true,
      supportsSteppingGranularity: true,
      supportsRestartRequest: true,
      supportsTerminateRequest: true,
      supportTerminateDebuggee: true,
      supportsValueFormattingOptions: false,
    };
    this.sendResponse(response);
  }

  /** The one dispatcher: typed async handlers, errors turned into DAP error responses here. */
  protected override dispatchRequest(request: DebugProtocol.Request): void {
    const handler = this.handlers[request.command];
    if (!handler) {
      super.dispatchRequest(request);
      return;
    }
    const response = new Response(request);
    // Arguments are optional in DAP for several requests; a handler that throws synchronously must
    // still produce an error response, never a request left unanswered.
    Promise.resolve(request.arguments ?? {})
      .then((args) => handler(args as never))
      .then(
        (body) => {
          if (body !== undefined) (response as DebugProtocol.Response).body = body;
          this.sendResponse(response);
        },
        (err: unknown) => {
          const code = err instanceof CycleLensError ? err.code : ErrorCode.CommandFailed;
          // What the client asks on its own (stacks, variables, hovers, memory and disassembly views)
          // answers in its view; only what the user asked for shows a message of its own.
          const userFacing =
            err instanceof CycleLensError && err.userFacing && !askedByTheClient(request.command, request.arguments);
          // The DAP library substitutes `{_name}` only (other braces pass as written, so JSON examples such as
          // `{ "start": … }` stay readable); with no variables given, `{_…}` would throw inside it.
          this.sendErrorResponse(response, {
            id: code,
            format: errorMessage(err).replace(/\{(_[^}]*)\}/g, '($1)'),
            showUser: userFacing,
          });
        },
      );
  }

  // ---- lifecycle -------------------------------------------------------------------------------

  private async launch(args: CycleLensLaunchArgs, mode: LaunchMode): Promise<void> {
    let config: ValidatedLaunch;
    let target: DebugTarget;
    try {
      config = validateLaunchArgs(args as CycleLensLaunchArgs & Record<string, unknown>);
      target = await DebugTarget.start(config, mode, (o) => this.output(o));
    } finally {
      // A debugger or QEMU started ahead of the launch and not taken by it goes before the answer does.
      await Promise.all([releasePrestartedDebugger(), discardPrestartedQemu()]);
    }
    this.target = target;
    target.userBreakpoints = () => this.breakpoints.ids();
    this.variables = new VariableStore(() => target.debugger, config.family);
    target.onOutput((o) => this.output(o));
    target.onStop((e) => this.reportStop(e));
    target.onMovedWhileHalted(
      () => void this.invalidateStopState().then(() => this.sendEvent(new InvalidatedEvent(['stacks', 'variables']))),
    );
    // A run of the adapter's own while the user sees the target halted (a measurement's calibration)
    // leaves the core where it was: the frames the client holds stay valid. A hidden run that does
    // move it says so (onMovedWhileHalted); any other run makes them stale.
    target.debugger.onRunning(() => {
      if (!target.runsInternally) void this.invalidateStopState();
    });
    // Disassembly stays valid while the target runs only where the program cannot write its code.
    const readOnlyCode = config.image.loadSegments
      .filter((p) => (p.flags & PF_W) === 0 && p.memSize > 0)
      .map((p) => ({ start: BigInt(p.vaddr), end: BigInt(p.vaddr) + BigInt(p.memSize) }));
    this.disassemblyCache.clear();
    target.debugger.onMemoryWrite(() => {
      this.disassemblyCache.clear();
      // A register or memory write may move the stack (sp, a return address).
      this.stackPrefetch = undefined;
    });
    target.debugger.onRunning(() => this.disassemblyCache.keepWithin(readOnlyCode));
    target.onEnded(({ message }) => {
      this.runState.ended();
      if (message) this.output({ category: 'important', text: `${message}\n` });
      // QEMU ended with the program and took the patched code along: the journal has nothing to restore.
      this.injection.targetEnded(config.server.type === 'qemu');
      // The last samples (the exact sampler's final counts at program exit) go out before the end.
      void this.sampling
        .stop()
        .catch(() => undefined)
        .finally(() => this.sendEvent(new TerminatedEvent()));
    });
    // Counters are probed while the target is still halted at reset, before the user runs it.
    this.counters = new CounterService(
      createCounterUnits(config.family, new DebuggerTargetAccess(target.debugger), {
        ...(config.facts.emulator ? { emulator: config.facts.emulator } : {}),
        readsAsZero: config.facts.zeroCounters,
        stepInstruction: () => target.stepInstructionInternally(),
      }),
    );
    const units = await this.counters.discover();
    this.sendEvent(customEvent(CustomEvents.capabilities, { family: config.family, units }));
    await this.injection.restoreJournal();
    target.onBeforeReset(async () => {
      this.runState.stopped();
      await this.injection.beforeReset();
      this.sendEvent(customEvent(CustomEvents.injectionsRemoved, {}));
    });
    target.onAfterReset(async () => {
      await this.counters?.afterReset();
    });
    this.sendEvent(new InitializedEvent());
  }

  private async onConfigurationDone(): Promise<void> {
    this.configurationDone = true;
    this.runState.resumed(true);
    await this.requireTarget().runToEntry();
  }

  private async restart(): Promise<void> {
    await this.invalidateStopState();
    const target = this.requireTarget();
    // The reset takes the measurements out; what was asked is applied again at the entry, halted
    // there and before the client is shown the stop: applied to a target still running there, its
    // interrupt could land on the entry itself and the resume after it pass the entry by.
    const requests = this.injection.liveRequests();
    await this.sampling.hold();
    try {
      // The reset is the adapter's; the run to the entry after it is the user's program again, and
      // the measuring at the entry is the adapter's. The entry stop ends the run (reportStop).
      await this.runState.internally(() => target.resetHalted());
      this.runState.resumed(true);
      await target.runToEntry(() => this.runState.internally(() => this.reapply(requests)));
    } finally {
      this.sampling.resume();
    }
  }

  /** After a restart, halted at the entry: the measurements asked for before it, applied again. */
  private async reapply(requests: readonly InjectArguments[]): Promise<void> {
    const applied = await this.injection.reapply(requests).catch((err: unknown) => {
      this.output({
        category: 'important',
        text: `The measurements could not be applied again after the restart: ${errorMessage(err)}\n`,
      });
      return undefined;
    });
    if (!applied) return;
    this.sendEvent(customEvent(CustomEvents.injectionsApplied, applied));
    if (applied.refused.length > 0)
      this.output({
        category: 'important',
        text:
          'After the restart, CycleLens could not measure again: ' +
          `${applied.refused.map((r) => r.reason).join(' ')}\n`,
      });
  }

  private async disconnect(terminate: boolean): Promise<void> {
    const target = this.target;
    const counters = this.counters;
    await this.sampling
      .stop()
      .catch((err: unknown) =>
        this.output({ category: 'important', text: `Could not stop sampling cleanly: ${errorMessage(err)}\n` }),
      );
    // Patched code is restored before anything else (the journal is cleared with it), and a target
    // that lives on (attach, real boards) gets its counter registers back as they were.
    if (target && !target.isEnded) {
      await this.injection.removeAll().catch((err: unknown) =>
        this.output({
          category: 'important',
          text:
            `Could not remove injected measurements (${errorMessage(err)}); the patch journal restores ` +
            `them at the next launch.\n`,
        }),
      );
      if (!terminate && counters) await target.withHalted(() => counters.release()).catch(() => undefined);
    }
    this.target = undefined;
    this.counters = undefined;
    if (target && !target.isEnded) await target.shutdown(terminate);
    else if (target) await target.shutdown(true);
  }

  /** Kills everything if the client vanishes without a disconnect. */
  override shutdown(): void {
    void this.sampling.stop().catch(() => undefined);
    const target = this.target;
    this.target = undefined;
    if (target) {
      void target.shutdown(true).finally(() => super.shutdown());
    } else {
      super.shutdown();
    }
  }

  // ---- breakpoints -----------------------------------------------------------------------------

  private setBreakpoints(
    a: DebugProtocol.SetBreakpointsArguments,
  ): Promise<DebugProtocol.SetBreakpointsResponse['body']> {
    const path = a.source.path;
    if (!path) throw new CycleLensError(ErrorCode.InvalidRequest, 'Breakpoints need a source file on disk.');
    return this.halted(async () => ({
      breakpoints: await this.breakpoints.setSourceBreakpoints(path, a.breakpoints ?? []),
    }));
  }

  /** Breakpoints and memory need a halted target in all-stop mode: halt briefly if it runs. */
  private halted<T>(fn: () => Promise<T>): Promise<T> {
    return this.requireTarget().withHalted(fn);
  }

  // ---- execution -------------------------------------------------------------------------------

  private async resume(action: () => Promise<void>, freely = false): Promise<DebugProtocol.ContinueResponse['body']> {
    await this.invalidateStopState();
    // No halting sample may be in flight while the run starts: its resume would run a target the
    // user just stepped, and its halt would end the step. A step takes none at all.
    await this.sampling.hold();
    try {
      this.runState.resumed(freely);
      await action();
    } catch (err) {
      if (!this.target?.debugger.isRunning) this.runState.stopped();
      throw err;
    } finally {
      this.sampling.resume();
    }
    return { allThreadsContinued: true };
  }

  private async pause(): Promise<void> {
    const gdb = this.activeDebugger();
    // A halting sample in flight has the target stopped for a moment and will resume it: wait for
    // it, so the user's pause is not undone.
    await this.sampling.hold();
    this.runState.stopped();
    try {
      if (!gdb.isRunning) return;
      const stop = await gdb.interrupt();
      if (!stop)
        throw new CycleLensError(
          ErrorCode.NotStopped,
          'The target did not halt within 5 s. Check the connection to the target.',
        );
    } finally {
      this.sampling.resume();
    }
  }

  private reportStop(e: StopEvent): void {
    this.runState.stopped();
    const kind = e.breakpointIds.length > 0 ? this.breakpoints.kindOf(e.breakpointIds[0]!) : undefined;
    const reason =
      e.reason === 'breakpoint' && kind === 'function'
        ? 'function breakpoint'
        : e.reason === 'breakpoint' && kind === 'instruction'
          ? 'instruction breakpoint'
          : e.reason === 'function-finished'
            ? 'step'
            : e.reason === 'signal' || e.reason === 'unknown'
              ? 'pause'
              : e.reason;
    const stopped = new StoppedEvent(reason, e.threadId ?? 1, e.description) as DebugProtocol.StoppedEvent;
    stopped.body.allThreadsStopped = e.allStopped;
    if (e.breakpointIds.length > 0) stopped.body.hitBreakpointIds = e.breakpointIds;
    // The session's own stops (a profiling run's end, a finished measurement) say what they are.
    if (e.reason === 'step' && e.description) stopped.body.description = e.description;
    if (e.preserveFocus) stopped.body.preserveFocusHint = true;
    const threadId = e.threadId ?? 1;
    const gdb = this.target?.debugger;
    if (gdb)
      this.stackPrefetch = {
        threadId,
        frames: gdb.stackFrames(threadId, 0, PREFETCH_FRAMES - 1).catch(() => undefined),
      };
    this.sendEvent(stopped);
  }

  private async invalidateStopState(): Promise<void> {
    this.frames = new Map();
    this.nextFrameId = 1;
    this.stackPrefetch = undefined;
    await this.variables?.invalidate();
  }

  // ---- state inspection ------------------------------------------------------------------------

  private async threads(): Promise<DebugProtocol.ThreadsResponse['body']> {
    const target = this.target;
    if (!target || target.isEnded || target.debugger.isRunning) return { threads: [new Thread(1, 'Core 0')] };
    const threads = await target.debugger.threads();
    return { threads: threads.length > 0 ? threads.map((t) => new Thread(t.id, t.name)) : [new Thread(1, 'Core 0')] };
  }

  private async stackTrace(a: DebugProtocol.StackTraceArguments): Promise<DebugProtocol.StackTraceResponse['body']> {
    const gdb = this.activeDebugger();
    const low = a.startFrame ?? 0;
    const high = low + (a.levels && a.levels > 0 ? a.levels : 1000) - 1;
    const prefetch = this.stackPrefetch;
    const prefetched =
      prefetch && prefetch.threadId === a.threadId && high < PREFETCH_FRAMES ? await prefetch.frames : undefined;
    const frames = prefetched
      ? prefetched.filter((f) => f.level >= low && f.level <= high)
      : await gdb.stackFrames(a.threadId, low, high);
    // A page that is not full ends the stack, so its size is known without asking GDB to walk it all.
    const depth =
      prefetched && prefetched.length < PREFETCH_FRAMES
        ? prefetched.length
        : frames.length < high - low + 1
          ? low + frames.length
          : low === 0
            ? await gdb.stackDepth(a.threadId).catch(() => undefined)
            : undefined;
    return {
      stackFrames: frames.map((f) => {
        const id = this.nextFrameId++;
        this.frames.set(id, { threadId: a.threadId, level: f.level, ...(f.fullname ? { path: f.fullname } : {}) });
        const frame: DebugProtocol.StackFrame = {
          id,
          name: f.func ?? `0x${f.address.toString(16)}`,
          line: f.line ?? 0,
          column: 0,
          instructionPointerReference: `0x${f.address.toString(16)}`,
        };
        if (f.fullname) frame.source = { name: f.file?.split('/').pop() ?? f.fullname, path: f.fullname };
        else frame.presentationHint = 'subtle';
        return frame;
      }),
      ...(depth !== undefined ? { totalFrames: depth } : {}),
    };
  }

  private async scopes(a: DebugProtocol.ScopesArguments): Promise<DebugProtocol.ScopesResponse['body']> {
    const frame = this.frame(a.frameId);
    return { scopes: this.requireVariables().scopes(frame.threadId, frame.level, frame.path) };
  }

  private async listVariables(a: DebugProtocol.VariablesArguments): Promise<DebugProtocol.VariablesResponse['body']> {
    const all = await this.requireVariables().variables(a.variablesReference);
    const start = a.start ?? 0;
    return { variables: a.count ? all.slice(start, start + a.count) : all.slice(start) };
  }

  private async setVariable(a: DebugProtocol.SetVariableArguments): Promise<DebugProtocol.SetVariableResponse['body']> {
    this.expectHalted('change a variable');
    return { value: await this.requireVariables().setVariable(a.variablesReference, a.name, a.value) };
  }

  private async evaluate(a: DebugProtocol.EvaluateArguments): Promise<DebugProtocol.EvaluateResponse['body']> {
    const gdb = this.activeDebugger();
    const expr = a.expression.trim();
    if (a.context === 'repl') {
      // `monitor …` goes to the gdbserver; `> cmd` runs a GDB command.
      if (/^monitor\s/.test(expr))
        return { result: (await this.monitorFromConsole(expr.slice(8).trim())).trimEnd(), variablesReference: 0 };
      if (expr.startsWith('>'))
        return { result: (await gdb.command(expr.slice(1).trim())).trimEnd(), variablesReference: 0 };
    }
    this.expectHalted('evaluate expressions');
    const frame = a.frameId !== undefined ? this.frame(a.frameId) : undefined;
    const v = await this.requireVariables().evaluate(expr, frame?.threadId, frame?.level);
    return {
      result: v.value,
      ...(v.type ? { type: v.type } : {}),
      variablesReference: v.variablesReference,
      ...(v.memoryReference ? { memoryReference: v.memoryReference } : {}),
    };
  }

  /**
   * `monitor …` from the Debug Console. A reset goes the way of the adapter's own (measurements out of
   * the code first, the debugger's caches flushed, the client's stack refreshed); a reset that lets
   * the core run is refused while CycleLens could not follow it.
   */
  private async monitorFromConsole(command: string): Promise<string> {
    const target = this.requireTarget();
    const reset = target.resetKind(command);
    if (reset === 'runs') {
      throw new CycleLensError(
        ErrorCode.Unsupported,
        `\`monitor ${command}\` lets the core run from reset behind the debugger's back. Use ` +
          `Restart (Ctrl+Shift+F5), or \`monitor ${target.server.resetCommand ?? 'reset halt'}\` to ` +
          `reset and stay halted.`,
        true,
      );
    }
    if (reset !== 'halts') return this.halted(() => target.debugger.monitor(command));
    await this.invalidateStopState();
    const output = await target.resetWith(command);
    this.disassemblyCache.clear();
    this.sendEvent(new InvalidatedEvent(['stacks', 'variables']));
    return output;
  }

  // ---- memory and code -------------------------------------------------------------------------

  /** Memory references are addresses (`0x…`) or expressions such as `&(buffer)`. */
  private async resolveAddress(reference: string | undefined): Promise<bigint> {
    const ref = (reference ?? '').trim();
    if (/^(0x[0-9a-f]+|\d+)$/i.test(ref)) return BigInt(ref);
    // The expression is the adapter's own around the client's reference: it is checked first, and
    // GDB's complaint about it is never shown as a message of its own.
    if (ref === '' || !balancedParentheses(ref))
      throw new CycleLensError(
        ErrorCode.InvalidRequest,
        `No memory at ${JSON.stringify(ref)}: it is not an address.`,
        false,
      );
    let value: string;
    try {
      value = await this.activeDebugger().evaluate(`(unsigned long)(${ref})`);
    } catch (err) {
      throw new CycleLensError(ErrorCode.CommandFailed, `No memory at ${ref}: ${errorMessage(err)}`, false);
    }
    const first = value.trim().split(/\s+/)[0] ?? '';
    if (!/^(0x[0-9a-f]+|\d+)$/i.test(first))
      throw new CycleLensError(ErrorCode.CommandFailed, `No memory at ${ref}: it is not an address (${value}).`, false);
    return BigInt(first);
  }

  private async readMemory(a: DebugProtocol.ReadMemoryArguments): Promise<DebugProtocol.ReadMemoryResponse['body']> {
    return this.halted(async () => {
      const address = (await this.resolveAddress(a.memoryReference)) + BigInt(a.offset ?? 0);
      try {
        const data = await this.activeDebugger().readMemory(address, a.count);
        return { address: `0x${address.toString(16)}`, data: data.toString('base64') };
      } catch {
        return { address: `0x${address.toString(16)}`, unreadableBytes: a.count };
      }
    });
  }

  private async writeMemory(a: DebugProtocol.WriteMemoryArguments): Promise<DebugProtocol.WriteMemoryResponse['body']> {
    return this.halted(async () => {
      const address = (await this.resolveAddress(a.memoryReference)) + BigInt(a.offset ?? 0);
      const data = Buffer.from(a.data, 'base64');
      await this.activeDebugger().writeMemory(address, data);
      return { bytesWritten: data.length };
    });
  }

  private async disassemble(a: DebugProtocol.DisassembleArguments): Promise<DebugProtocol.DisassembleResponse['body']> {
    const target = this.requireTarget();
    return this.halted(async () => {
      const base = (await this.resolveAddress(a.memoryReference)) + BigInt(a.offset ?? 0);
      const read = (start: bigint, end: bigint) =>
        this.disassemblyCache.read(start, end, () => target.debugger.disassemble(start, end));
      const instructions = await disassemble(
        read,
        familyTraits(target.config.family),
        base,
        a.instructionOffset ?? 0,
        a.instructionCount,
      );
      return { instructions };
    });
  }

  // ---- helpers ---------------------------------------------------------------------------------

  private output(o: TargetOutput): void {
    // The program's own output during the adapter's runs (a descent runs it dozens of times) goes to
    // a file, with one line in the Debug Console saying where.
    if (o.category === 'stdout' && this.target?.runsInternally) {
      this.keepAnalysisOutput(o.text, this.target.config.cwd);
      return;
    }
    this.sendEvent(new OutputEvent(o.text, o.category));
  }

  /** Where the program's output of analysis runs goes: `<cwd>/.cyclelens/analysis-output.log`. */
  private analysisOutput: { file: string; failed: boolean } | undefined;

  private keepAnalysisOutput(text: string, cwd: string): void {
    if (!this.analysisOutput) {
      const file = join(cwd, '.cyclelens', 'analysis-output.log');
      this.analysisOutput = { file, failed: false };
      try {
        mkdirSync(dirname(file), { recursive: true });
        // Appended (sessions of parallel runs share the file), each session under a line of its own.
        appendFileSync(
          file,
          `--- ${new Date().toISOString()}: ${this.target?.config.image.path ?? 'the program'} ` +
            `(adapter ${process.pid}) ---\n`,
        );
        this.sendEvent(
          new OutputEvent(
            `The program's output during CycleLens's own runs (descent, full profile, measurements) is ` +
              `kept in ${file}, not shown here.\n`,
            'console',
          ),
        );
      } catch (err) {
        this.analysisOutput.failed = true;
        this.sendEvent(
          new OutputEvent(
            `The program's output during CycleLens's own runs cannot be kept in ${file} (${errorMessage(err)}); ` +
              `it is shown here.\n`,
            'console',
          ),
        );
      }
    }
    if (this.analysisOutput.failed) {
      this.sendEvent(new OutputEvent(text, 'stdout'));
      return;
    }
    try {
      appendFileSync(this.analysisOutput.file, text);
    } catch {
      this.analysisOutput.failed = true;
      this.sendEvent(new OutputEvent(text, 'stdout'));
    }
  }

  private requireTarget(): DebugTarget {
    if (!this.target || this.target.isEnded) {
      throw new CycleLensError(
        ErrorCode.NotRunning,
        this.configurationDone ? 'The debug session has ended.' : 'No target is connected yet.',
      );
    }
    return this.target;
  }

  private activeDebugger() {
    return this.requireTarget().debugger;
  }

  private requireCounters(): CounterService {
    this.requireTarget();
    return this.counters!;
  }

  private requireVariables(): VariableStore {
    this.requireTarget();
    return this.variables!;
  }

  private frame(frameId: number): { threadId: number; level: number; path?: string } {
    const f = this.frames.get(frameId);
    if (!f)
      throw new CycleLensError(
        ErrorCode.InvalidRequest,
        'That stack frame is no longer valid: the target has run since.',
        false,
      );
    return f;
  }

  private expectHalted(what: string): void {
    if (this.activeDebugger().isRunning)
      throw new CycleLensError(ErrorCode.NotStopped, `Cannot ${what} while the target is running: pause it first.`);
  }
}

/** Requests the client sends by itself, not because the user asked: their errors belong in its views. */
const CLIENT_REQUESTS = new Set(['threads', 'stackTrace', 'scopes', 'variables', 'readMemory', 'disassemble']);

function askedByTheClient(command: string, args: unknown): boolean {
  if (CLIENT_REQUESTS.has(command)) return true;
  if (command !== 'evaluate') return false;
  const context = (args as { context?: unknown } | undefined)?.context;
  return context !== 'repl';
}

/** Whether every parenthesis in `text` closes one opened before it, so `(…)` around it keeps its meaning. */
function balancedParentheses(text: string): boolean {
  let depth = 0;
  for (const c of text) {
    if (c === '(') depth++;
    else if (c === ')' && --depth < 0) return false;
  }
  return depth === 0;
}
