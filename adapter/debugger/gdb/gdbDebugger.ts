import { statSync } from 'node:fs';
import { CycleLensError, ErrorCode, errorMessage } from '../../errors';
import { OwnedProcess, requireExecutable } from '../../util/processes';
import type { Debugger, ExecutionState } from '../debugger';
import { codeCacheDir } from '../../codeCache';
import { rememberStart } from '../../startPlan';
import { GDB_ARGS, takePrestartedGdb } from './gdbPrestart';
import { parseGdbMemoryMap } from './memoryMap';
import { ReadonlyTrust } from './readonlyTrust';
import {
  gdbLocation,
  mapStopReason,
  parseBreakpoint,
  parseFrame,
  parseInstruction,
  parseUnsigned,
  parseVarObject,
} from './miRecords';
import { DebuggerBase, mayWriteMemory, writesOnlyRegisters } from '../debuggerBase';
import type {
  BreakpointInfo,
  MemoryRegion,
  WatchpointRequest,
  BreakpointRequest,
  DisassembledInstruction,
  FileScopeVariable,
  Frame,
  ImageBytes,
  RegisterValue,
  StopEvent,
  Thread,
  VarObject,
} from '../types';
import { MiCommandResult, MiConnection, describeExit } from './miConnection';
import type { MiAsyncRecord } from './mi/types';
import {
  isTuple,
  miInt,
  miList,
  miOptInt,
  miOptString,
  miOptTuple,
  miQuote,
  miString,
  miStringList,
  miTuple,
  miTupleList,
} from './mi/values';

export interface GdbStartOptions {
  gdbPath: string;
  cwd: string;
}

/**
 * GDB as the run-control backend: one typed method per MI command CycleLens uses, results read by
 * field name, and target state tracked from `*running` / `*stopped` records.
 */
export class GdbDebugger extends DebuggerBase implements Debugger {
  readonly kind = 'gdb' as const;
  private state: ExecutionState = 'stopped';
  private registerNameCache: string[] | undefined;
  /** `*stopped` records seen so far. */
  private stops = 0;
  /** Whether the target still holds the program's read-only sections as the file has them. */
  private readonlyTrust: ReadonlyTrust | undefined;
  /** What GDB was last told about `trust-readonly-sections` (its default is off). */
  private trustingReadonly = false;
  /** A command of the user's set `trust-readonly-sections`: the adapter leaves it alone. */
  private userOwnsTrust = false;

  readonly onTrace: Debugger['onTrace'];

  private constructor(readonly mi: MiConnection) {
    super();
    this.onTrace = mi.onTrace;
    mi.onAsync((r) => this.onAsyncRecord(r));
    mi.onStream((s) => {
      // "Temporary breakpoint 7, program_end () at …" for a stop the user never asked for.
      if (this.hiddenRuns > 0 && s.type !== 'target') return;
      if (s.type === 'target') this.outputEmitter.fire({ category: 'stdout', text: s.text });
      else if (s.type === 'log') this.outputEmitter.fire({ category: 'stderr', text: s.text });
      else this.outputEmitter.fire({ category: 'console', text: s.text });
    });
    mi.onUnparsed((line) => this.outputEmitter.fire({ category: 'stdout', text: `${line}\n` }));
    mi.onExit((exit) => {
      this.state = 'exited';
      this.resolveStopWaiters(undefined);
      this.diedEmitter.fire(describeExit(exit));
    });
  }

  /** Starts GDB in MI mode and prepares it for an embedded target. */
  static async start(options: GdbStartOptions): Promise<GdbDebugger> {
    const gdb = requireExecutable(
      options.gdbPath,
      'The debugger',
      'Install it (Debian: `apt-get install gdb-multiarch`) or set `gdbPath` in the launch configuration.',
    );
    if (isDirectory(gdb))
      throw new CycleLensError(
        ErrorCode.DebuggerFailed,
        `The debugger '${gdb}' is a directory, not a program. Point \`gdbPath\` at gdb-multiarch or ` +
          `a GDB for your target.`,
      );
    const prestarted = takePrestartedGdb(gdb);
    const proc = prestarted ?? OwnedProcess.spawn('gdb', gdb, GDB_ARGS, { cwd: options.cwd });
    const mi = new MiConnection(proc);
    const backend = new GdbDebugger(mi);
    try {
      await answersAsGdb(gdb, proc, mi);
      // A GDB started before the launch runs in the adapter's directory: it moves to the session's.
      await backend.prepare(prestarted ? options.cwd : undefined);
    } catch (err) {
      await proc.kill();
      throw err instanceof CycleLensError && err.code === ErrorCode.DebuggerExited
        ? new CycleLensError(ErrorCode.DebuggerFailed, `The debugger '${gdb}' failed while it started: ${err.message}`)
        : err;
    }
    // The next adapter spawned for this launch configuration starts this GDB from its loader.
    rememberStart({ gdb }, process.env, codeCacheDir());
    return backend;
  }

  private async prepare(cwd: string | undefined): Promise<void> {
    // Sent together: GDB answers in order, and seven sequential round trips cost startup time.
    // Async mode lets -exec-interrupt reach a running target, and the session keep answering.
    const settings = [
      ['mi-async', 'on'],
      ['pagination', 'off'],
      ['confirm', 'off'],
      ['breakpoint pending', 'on'],
      ['print pretty', 'off'],
      ['charset', 'UTF-8'],
    ];
    const versionSent = this.mi.send('-gdb-version');
    const settingsSent = Promise.all([
      ...settings.map(([variable, value]) => this.gdbSet(variable!, value!)),
      ...(cwd !== undefined ? [this.mi.send(`-environment-cd ${miQuote(cwd)}`)] : []),
    ]);
    // Should GDB fail or die on the version, the settings fail with it: that is reported once, here.
    settingsSent.catch(() => undefined);
    const version = await versionSent;
    if (!/GNU gdb/.test(version.console)) {
      throw new CycleLensError(
        ErrorCode.DebuggerFailed,
        `The debugger does not look like GDB (it printed: ${version.console.slice(0, 120)}). Point ` +
          `\`gdbPath\` at gdb-multiarch or a GDB for your target.`,
      );
    }
    await settingsSent;
  }

  get executionState(): ExecutionState {
    return this.state;
  }

  get isRunning(): boolean {
    return this.state === 'running';
  }

  // ---- session and target ----------------------------------------------------------------------

  gdbSet(variable: string, value: string): Promise<MiCommandResult> {
    return this.mi.send(`-gdb-set ${variable} ${value}`);
  }

  async loadProgram(path: string): Promise<void> {
    await this.mi.send(`-file-exec-and-symbols ${miQuote(path)}`);
  }

  /**
   * Connects to a gdbserver (`target extended-remote` would let GDB restart it; embedded stubs expect
   * plain remote).
   */
  async connectRemote(address: string, timeoutMs = 20_000): Promise<Frame | undefined> {
    const r = await this.mi.send(`-target-select remote ${miQuote(address)}`, timeoutMs);
    this.state = 'stopped';
    const frame = miOptTuple(r.results, 'frame');
    return frame ? parseFrame(frame) : undefined;
  }

  async download(): Promise<void> {
    this.memoryWriteEmitter.fire();
    await this.mi.send('-target-download', 120_000);
    this.readonlyTrust?.noteReload();
    await this.syncReadonlyTrust();
  }

  async imageLoaded(readOnly: readonly ImageBytes[]): Promise<void> {
    if (this.userOwnsTrust) return;
    this.readonlyTrust = new ReadonlyTrust(readOnly);
    await this.syncReadonlyTrust();
  }

  /**
   * Tells GDB when the trust in read-only sections changed. The command is queued at once, so it is
   * ordered against the commands sent around it: turned off before a write that ends it, on after a
   * write that restores it.
   */
  private syncReadonlyTrust(): Promise<unknown> {
    const wanted = this.readonlyTrust?.holds ?? false;
    if (wanted === this.trustingReadonly) return Promise.resolve();
    this.trustingReadonly = wanted;
    return this.gdbSet('trust-readonly-sections', wanted ? 'on' : 'off');
  }

  /** Before a command that may write memory at an address nobody can tell. */
  private unplacedWrite(): Promise<unknown> {
    this.memoryWriteEmitter.fire();
    this.readonlyTrust?.noteUnplacedWrite();
    return this.syncReadonlyTrust();
  }

  async detach(): Promise<void> {
    await this.mi.send('-target-detach', 5_000);
  }

  /** A GDB CLI command from the user, with its console output: it may write anything. */
  async command(command: string, timeoutMs?: number): Promise<string> {
    const trustOff = this.unplacedWrite();
    // A program that rewrites its own code needs the setting off: a user who names it owns it.
    if (/\btrust-readonly-sections\b/.test(command)) {
      this.userOwnsTrust = true;
      this.readonlyTrust = undefined;
    }
    const [, r] = await Promise.all([
      trustOff,
      this.mi.send(`-interpreter-exec console ${miQuote(command)}`, timeoutMs),
    ]);
    return r.console;
  }

  /** A CLI command of the adapter's own, which writes no memory. */
  private async cli(command: string, timeoutMs?: number): Promise<string> {
    return (await this.mi.send(`-interpreter-exec console ${miQuote(command)}`, timeoutMs)).console;
  }

  /**
   * `monitor CMD`: passed through to the gdbserver (QEMU's HMP, OpenOCD's command line …). The
   * adapter's own monitor commands reset the core or read and write its registers, never the
   * program's read-only sections; the user's reach here through `command`.
   */
  monitor(command: string, timeoutMs?: number): Promise<string> {
    this.memoryWriteEmitter.fire();
    return this.cli(`monitor ${command}`, timeoutMs);
  }

  async flushCaches(): Promise<void> {
    // GDB caches registers; after a reset behind its back they are stale.
    await this.cli('maintenance flush register-cache');
  }

  async memoryRegions(): Promise<MemoryRegion[]> {
    return parseGdbMemoryMap(await this.cli('info mem'));
  }

  async setBreakpointsAlwaysInserted(on: boolean): Promise<void> {
    await this.gdbSet('breakpoint always-inserted', on ? 'on' : 'off');
  }

  async exit(): Promise<void> {
    if (this.mi.exited) return;
    try {
      await this.mi.send('-gdb-exit', 3_000);
    } catch {
      // GDB may exit before answering; the process owner kills it if not.
    }
    await Promise.race([this.mi.process.exited, delay(2_000)]);
    await this.mi.process.kill();
  }

  // ---- execution -------------------------------------------------------------------------------

  async continue(): Promise<void> {
    this.expectStopped('continue');
    await this.resume('-exec-continue');
  }

  /**
   * Sends a command that resumes the target. GDB answers `^running` before its `*running` record,
   * which may come in a later read: a request made as soon as this returns (a pause, a breakpoint
   * set while running) must already see the target running, or it would skip the interrupt it
   * needs. A stop recorded meanwhile (a breakpoint hit at once) is left as it is.
   */
  private async resume(command: string): Promise<void> {
    const stopsBefore = this.stops;
    const r = await this.mi.send(command);
    if (r.resultClass === 'running' && this.stops === stopsBefore && this.state === 'stopped') this.markRunning();
  }

  private markRunning(): void {
    if (this.state === 'running') return;
    this.state = 'running';
    this.runningEmitter.fire();
  }

  /** Interrupts a running target and resolves with the stop it produced. */
  async interrupt(timeoutMs = 5_000): Promise<StopEvent | undefined> {
    if (this.state !== 'running') return undefined;
    const stopped = this.waitForStop(timeoutMs);
    const stopsBefore = this.stops;
    await this.mi.send('-exec-interrupt');
    // An interrupt that reaches GDB as it is still resuming the target can be lost: while no stop
    // has come, it is asked again, at growing intervals, until the time is up.
    const deadline = Date.now() + timeoutMs;
    for (let wait = 250; ; wait *= 2) {
      const settled = await Promise.race([
        stopped.then(() => true),
        new Promise<false>((resolve) => setTimeout(() => resolve(false), wait)),
      ]);
      if (settled || this.stops !== stopsBefore || this.state !== 'running' || Date.now() + wait >= deadline)
        return stopped;
      await this.mi.send('-exec-interrupt').catch(() => undefined);
    }
  }

  async stepOver(instruction = false): Promise<void> {
    this.expectStopped('step over');
    await this.resume(instruction ? '-exec-next-instruction' : '-exec-next');
  }

  async stepIn(instruction = false): Promise<void> {
    this.expectStopped('step in');
    await this.resume(instruction ? '-exec-step-instruction' : '-exec-step');
  }

  async stepOut(): Promise<void> {
    this.expectStopped('step out');
    await this.resume('-exec-finish');
  }

  // ---- breakpoints -----------------------------------------------------------------------------

  async insertBreakpoint(req: BreakpointRequest): Promise<BreakpointInfo> {
    const opts = ['-f'];
    if (req.temporary) opts.push('-t');
    if (req.hardware) opts.push('-h');
    if (req.condition) opts.push('-c', miQuote(req.condition));
    if (req.ignoreCount) opts.push('-i', String(req.ignoreCount));
    const r = await this.mi.send(`-break-insert ${opts.join(' ')} ${miQuote(gdbLocation(req.location))}`);
    return parseBreakpoint(miTuple(r.results, 'bkpt'));
  }

  async insertWatchpoint(req: WatchpointRequest): Promise<BreakpointInfo> {
    const flag = req.access === 'read' ? '-r ' : req.access === 'readWrite' ? '-a ' : '';
    const r = await this.mi.send(`-break-watch ${flag}${miQuote(req.expression)}`);
    const wpt = miOptTuple(r.results, 'wpt') ?? miOptTuple(r.results, 'hw-rwpt') ?? miOptTuple(r.results, 'hw-awpt');
    if (!wpt) throw new CycleLensError(ErrorCode.CommandFailed, `GDB did not set a watchpoint on '${req.expression}'.`);
    const id = miInt(wpt, 'number');
    if (req.condition) await this.mi.send(`-break-condition ${id} ${req.condition}`);
    return { id, verified: true, file: undefined, line: undefined, address: undefined, pending: false };
  }

  async deleteBreakpoints(ids: number[]): Promise<void> {
    if (ids.length > 0) await this.mi.send(`-break-delete ${ids.join(' ')}`);
  }

  async setBreakpointsEnabled(ids: number[], enabled: boolean): Promise<void> {
    if (ids.length > 0) await this.mi.send(`-break-${enabled ? 'enable' : 'disable'} ${ids.join(' ')}`);
  }

  // ---- stack, threads, variables ---------------------------------------------------------------

  async threads(): Promise<Thread[]> {
    const r = await this.mi.send('-thread-info');
    return miTupleList(r.results, 'threads').map((t) => ({
      id: miInt(t, 'id'),
      name: miOptString(t, 'details') ?? miOptString(t, 'target-id') ?? `Thread ${miString(t, 'id')}`,
      state: (miOptString(t, 'state') as Thread['state'] | undefined) ?? 'unknown',
    }));
  }

  async stackDepth(threadId: number, maxDepth = 1000): Promise<number> {
    const r = await this.mi.send(`-stack-info-depth --thread ${threadId} ${maxDepth}`);
    return miInt(r.results, 'depth');
  }

  async stackFrames(threadId: number, low: number, high: number): Promise<Frame[]> {
    const r = await this.mi.send(`-stack-list-frames --thread ${threadId} ${low} ${high}`);
    return miTupleList(r.results, 'stack').map(parseFrame);
  }

  /**
   * Locals and arguments of a frame with the values of the simple ones (`--simple-values`: scalars,
   * pointers, enums), in one round trip. Arrays, structs and unions come without a value.
   */
  async frameVariables(
    threadId: number,
    frameLevel: number,
  ): Promise<Array<{ name: string; type: string; value: string | undefined }>> {
    const r = await this.mi.send(`-stack-list-variables --thread ${threadId} --frame ${frameLevel} --simple-values`);
    return miTupleList(r.results, 'variables').map((v) => ({
      name: miString(v, 'name'),
      type: miOptString(v, 'type') ?? '',
      value: miOptString(v, 'value'),
    }));
  }

  /**
   * Every file-scope variable with debug information (`-symbol-info-variables`, GDB 9 and later).
   * GDB's description is the declaration as written (`static const int16_t fir_taps[8];`): its
   * leading storage class is what tells a file-static from a global.
   */
  async fileScopeVariables(): Promise<FileScopeVariable[]> {
    const r = await this.mi.send('-symbol-info-variables');
    const symbols = miOptTuple(r.results, 'symbols');
    if (!symbols) return [];
    return miTupleList(symbols, 'debug').flatMap((file) => {
      const name = miOptString(file, 'filename') ?? '';
      const fullname = miOptString(file, 'fullname');
      return miTupleList(file, 'symbols').map((v): FileScopeVariable => {
        const line = miOptInt(v, 'line');
        return {
          name: miString(v, 'name'),
          file: name,
          ...(fullname ? { fullname } : {}),
          ...(line !== undefined ? { line } : {}),
          isStatic: /^static\b/.test(miOptString(v, 'description') ?? ''),
        };
      });
    });
  }

  async createVariable(expression: string, threadId?: number, frameLevel?: number): Promise<VarObject> {
    const ctx = threadId !== undefined ? `--thread ${threadId} --frame ${frameLevel ?? 0} ` : '';
    // GDB evaluates the expression to create the object: `x = 5` typed in the Debug Console writes.
    const [, r] = await Promise.all([
      this.beforeExpression(expression),
      this.mi.send(`-var-create ${ctx}- * ${miQuote(expression)}`),
    ]);
    return parseVarObject(r.results, expression);
  }

  /** Before GDB evaluates an expression that may write memory (an assignment, a call). */
  private beforeExpression(expression: string): Promise<unknown> {
    if (!mayWriteMemory(expression)) return Promise.resolve();
    if (writesOnlyRegisters(expression)) {
      this.memoryWriteEmitter.fire();
      return Promise.resolve();
    }
    return this.unplacedWrite();
  }

  async variableChildren(name: string): Promise<VarObject[]> {
    const r = await this.mi.send(`-var-list-children --all-values ${miQuote(name)}`);
    return miTupleList(r.results, 'children').map((c) => parseVarObject(c, miString(c, 'exp')));
  }

  async assignVariable(name: string, value: string): Promise<string> {
    this.memoryWriteEmitter.fire();
    if (this.readonlyTrust?.holds && (await this.mayAssignReadonly(name))) await this.unplacedWrite();
    const r = await this.mi.send(`-var-assign ${miQuote(name)} ${miQuote(value)}`);
    return miString(r.results, 'value');
  }

  /** True unless the variable object is known to live outside the read-only sections. */
  private async mayAssignReadonly(name: string): Promise<boolean> {
    try {
      const path = miString((await this.mi.send(`-var-info-path-expression ${miQuote(name)}`)).results, 'path_expr');
      const [address, size] = await Promise.all([
        this.mi.send(`-data-evaluate-expression ${miQuote(`(unsigned long long)&(${path})`)}`),
        this.mi.send(`-data-evaluate-expression ${miQuote(`sizeof(${path})`)}`),
      ]);
      return this.readonlyTrust!.overlaps(
        Number(BigInt(miString(address.results, 'value'))),
        Number(miString(size.results, 'value')),
      );
    } catch (err) {
      // A variable in a register has no address; anything else that fails leaves it unknown.
      return !/not located in memory/i.test(errorMessage(err));
    }
  }

  async deleteVariable(name: string): Promise<void> {
    await this.mi.send(`-var-delete ${miQuote(name)}`);
  }

  async evaluate(expression: string, threadId?: number, frameLevel?: number): Promise<string> {
    const ctx = threadId !== undefined ? `--thread ${threadId} --frame ${frameLevel ?? 0} ` : '';
    const [, r] = await Promise.all([
      this.beforeExpression(expression),
      this.mi.send(`-data-evaluate-expression ${ctx}${miQuote(expression)}`),
    ]);
    return miString(r.results, 'value');
  }

  // ---- registers -------------------------------------------------------------------------------

  /** Register names by number; GDB leaves gaps as empty strings. Cached: they never change. */
  async registerNames(): Promise<string[]> {
    if (!this.registerNameCache) {
      const r = await this.mi.send('-data-list-register-names');
      this.registerNameCache = miStringList(r.results, 'register-names');
    }
    return this.registerNameCache;
  }

  async registerValues(
    numbers: number[] | undefined,
    threadId?: number,
    frameLevel?: number,
    format: 'x' | 'N' = 'x',
  ): Promise<RegisterValue[]> {
    const ctx = threadId !== undefined ? `--thread ${threadId} --frame ${frameLevel ?? 0} ` : '';
    const which = numbers ? ` ${numbers.join(' ')}` : '';
    const r = await this.mi.send(`-data-list-register-values ${ctx}${format}${which}`);
    return miTupleList(r.results, 'register-values').map((v) => ({
      number: miInt(v, 'number'),
      value: miString(v, 'value'),
    }));
  }

  /** Reads one register by name as an unsigned integer (e.g. `pc`, `minstret`). */
  async readRegister(name: string): Promise<bigint> {
    const names = await this.registerNames();
    const index = names.indexOf(name);
    if (index < 0) throw new CycleLensError(ErrorCode.CommandFailed, `The target has no register '${name}'.`);
    const [value] = await this.registerValues([index]);
    return parseUnsigned(value?.value ?? '');
  }

  async writeRegister(name: string, value: bigint): Promise<void> {
    await this.evaluate(`$${name}=0x${value.toString(16)}`);
  }

  // ---- memory and code -------------------------------------------------------------------------

  async readMemory(address: bigint, count: number, offset = 0): Promise<Buffer> {
    const r = await this.mi.send(`-data-read-memory-bytes -o ${offset} 0x${address.toString(16)} ${count}`);
    const blocks = miTupleList(r.results, 'memory');
    const out = Buffer.alloc(count);
    let covered = 0;
    const start = address + BigInt(offset);
    for (const b of blocks) {
      const begin = BigInt(miString(b, 'begin'));
      const contents = Buffer.from(miString(b, 'contents'), 'hex');
      const at = Number(begin - start);
      contents.copy(out, at);
      covered += contents.length;
    }
    if (covered < count)
      throw new CycleLensError(
        ErrorCode.CommandFailed,
        `Only ${covered} of ${count} bytes at 0x${start.toString(16)} could be read.`,
      );
    return out;
  }

  async writeMemory(address: bigint, data: Uint8Array): Promise<void> {
    if (data.length === 0) return;
    this.memoryWriteEmitter.fire();
    this.readonlyTrust?.noteWrite(Number(address), data);
    // Trust that this write ends is turned off before it; trust it restores, on after it.
    const holds = this.readonlyTrust?.holds ?? false;
    const trustOff = holds ? undefined : this.syncReadonlyTrust();
    const written = this.mi.send(
      `-data-write-memory-bytes 0x${address.toString(16)} ${Buffer.from(data).toString('hex')}`,
    );
    const trustOn = holds ? this.syncReadonlyTrust() : undefined;
    await Promise.all([trustOff, written, trustOn]);
  }

  /** `-data-disassemble` mode 5: opcodes and source lines. */
  async disassemble(start: bigint, end: bigint): Promise<DisassembledInstruction[]> {
    const r = await this.mi.send(`-data-disassemble -s 0x${start.toString(16)} -e 0x${end.toString(16)} -- 5`);
    const out: DisassembledInstruction[] = [];
    for (const item of miList(r.results, 'asm_insns')) {
      if (!isTuple(item)) continue;
      if ('line_asm_insn' in item) {
        const file = miOptString(item, 'fullname') ?? miOptString(item, 'file');
        const line = miOptInt(item, 'line');
        for (const insn of miTupleList(item, 'line_asm_insn')) out.push(parseInstruction(insn, file, line));
      } else {
        out.push(parseInstruction(item, undefined, undefined));
      }
    }
    return out;
  }

  // ---- events ----------------------------------------------------------------------------------

  private onAsyncRecord(r: MiAsyncRecord): void {
    if (r.type !== 'exec') return;
    if (r.asyncClass === 'running') {
      this.markRunning();
      return;
    }
    if (r.asyncClass !== 'stopped') return;
    this.stops++;
    const reason = miOptString(r.results, 'reason') ?? '';
    if (reason.startsWith('exited')) {
      this.state = 'exited';
      const code = miOptString(r.results, 'exit-code');
      this.resolveStopWaiters(undefined);
      this.exitEmitter.fire({
        exitCode: code !== undefined ? parseInt(code, 8) : undefined,
        normal: reason !== 'exited-signalled',
      });
      return;
    }
    this.state = 'stopped';
    const frame = miOptTuple(r.results, 'frame');
    const bkptno = miOptString(r.results, 'bkptno');
    const signal = miOptString(r.results, 'signal-name');
    const event: StopEvent = {
      ...(this.hiddenRuns > 0 ? { internal: true } : {}),
      reason: mapStopReason(reason, signal),
      threadId: miOptInt(r.results, 'thread-id'),
      allStopped: miOptString(r.results, 'stopped-threads') === 'all' || r.results['stopped-threads'] === undefined,
      breakpointIds: bkptno ? [Number(bkptno)] : [],
      ...(signal ? { description: signal } : {}),
      ...(frame ? { frame: parseFrame(frame) } : {}),
    };
    this.resolveStopWaiters(event);
    this.stopEmitter.fire(event);
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** GDB prints its first MI prompt within this long of starting: 60-100 ms, a few seconds on a loaded machine. */
const PROMPT_MS = 10_000;

/**
 * Waits for the first MI prompt of the program at `path`. A program that cannot be run, ends, or
 * prints anything but MI for PROMPT_MS is named with what went wrong: its exit status and last output.
 */
async function answersAsGdb(path: string, proc: OwnedProcess, mi: MiConnection): Promise<void> {
  const fix = 'Point `gdbPath` at gdb-multiarch or a GDB for your target.';
  let timer: NodeJS.Timeout | undefined;
  const failed = new Promise<never>((_, reject) => {
    proc.child.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new CycleLensError(
          ErrorCode.DebuggerFailed,
          `The debugger '${path}' could not be started: ${whyNotStarted(path, err)}. ${fix}`,
        ),
      ),
    );
    void proc.exited.then(async ({ code, signal }) => {
      await proc.outputEnded();
      const how = signal
        ? `was killed by ${signal}`
        : `exited with code ${code}` +
          (code === 126
            ? ' (it cannot be executed)'
            : code === 127
              ? ' (it, or the interpreter its `#!` line names, was not found)'
              : '');
      const tail = mi.lastOutput.filter((l) => l.trim() !== '').slice(-5);
      reject(
        new CycleLensError(
          ErrorCode.DebuggerFailed,
          `The debugger '${path}' ${how} before it answered as GDB. ${
            tail.length ? `Its last output:\n${tail.join('\n')}\n` : 'It printed nothing. '
          }${fix}`,
        ),
      );
    });
    timer = setTimeout(() => {
      const stray = mi.strayOutput.map((l) => l.slice(0, 120));
      reject(
        new CycleLensError(
          ErrorCode.DebuggerFailed,
          `The debugger '${path}' did not answer as GDB: no MI prompt within ${PROMPT_MS / 1000} s (${
            stray.length ? `it printed:\n${stray.join('\n')}\n` : 'it printed nothing'
          }). ${fix}`,
        ),
      );
    }, PROMPT_MS);
  });
  failed.catch(() => undefined);
  try {
    await Promise.race([mi.firstPrompt(), failed]);
  } finally {
    clearTimeout(timer);
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function whyNotStarted(path: string, err: NodeJS.ErrnoException): string {
  if (isDirectory(path)) return 'it is a directory';
  if (err.code === 'ENOENT')
    return 'the system cannot run it (a script whose `#!` interpreter is missing, or a program for another machine)';
  if (err.code === 'EACCES') return 'permission denied';
  return err.message;
}
