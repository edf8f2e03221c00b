import { CycleLensError, ErrorCode } from '../../errors';
import { OwnedProcess, requireExecutable } from '../../util/processes';
import type { Debugger, ExecutionState, RunToOptions, RunToResult } from '../debugger';
import { codeCacheDir } from '../../codeCache';
import { rememberStart } from '../../startPlan';
import { GDB_ARGS, takePrestartedGdb } from './gdbPrestart';
import { parseGdbMemoryMap } from './memoryMap';
import { DebuggerBase, mayWriteMemory } from '../debuggerBase';
import { runToWithTemporaryBreakpoint } from '../runTo';
import type {
  BreakpointInfo,
  BreakpointLocation,
  MemoryRegion,
  WatchpointRequest,
  BreakpointRequest,
  DisassembledInstruction,
  FileScopeVariable,
  Frame,
  RegisterValue,
  StopEvent,
  StopReason,
  Thread,
  VarObject,
} from '../types';
import { MiCommandResult, MiConnection, describeExit } from './miConnection';
import type { MiAsyncRecord, MiTuple } from './mi/types';
import { isTuple, miInt, miList, miOptInt, miOptString, miOptTuple, miQuote, miString, miStringList, miTuple, miTupleList } from './mi/values';

export interface GdbStartOptions {
  gdbPath: string;
  cwd: string;
}

/**
 * GDB as the run-control backend: one typed method per MI command CycleLens uses, results read by
 * field name, and target state tracked from `*running` / `*stopped` records.
 */
export class GdbBackend extends DebuggerBase implements Debugger {
  readonly kind = 'gdb' as const;
  private state: ExecutionState = 'stopped';
  private registerNameCache: string[] | undefined;
  /** Hidden run-tos under way: their stops are marked internal and GDB's console chatter is dropped. */
  private hiddenRuns = 0;
  /** `*stopped` records seen so far. */
  private stops = 0;

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
  static async start(options: GdbStartOptions): Promise<GdbBackend> {
    const gdb = requireExecutable(
      options.gdbPath,
      'The debugger',
      'Install it (Debian: `apt-get install gdb-multiarch`) or set `gdbPath` in the launch configuration.',
    );
    // The next adapter spawned for this launch configuration starts this GDB from its loader.
    rememberStart({ gdb }, process.env, codeCacheDir());
    const prestarted = takePrestartedGdb(gdb);
    const proc = prestarted ?? OwnedProcess.spawn('gdb', gdb, GDB_ARGS, { cwd: options.cwd });
    const spawnError = new Promise<never>((_, reject) =>
      proc.child.once('error', (err) => reject(new CycleLensError(ErrorCode.DebuggerFailed, `Could not start GDB '${gdb}': ${err.message}`))),
    );
    const backend = new GdbBackend(new MiConnection(proc));
    // A GDB started before the launch runs in the adapter's directory: it moves to the session's.
    await Promise.race([backend.prepare(prestarted ? options.cwd : undefined), spawnError]);
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
    const version = await versionSent;
    if (!/GNU gdb/.test(version.console)) {
      settingsSent.catch(() => undefined);
      throw new CycleLensError(
        ErrorCode.DebuggerFailed,
        `The debugger does not look like GDB (it printed: ${version.console.slice(0, 120)}). Point \`gdbPath\` at gdb-multiarch or a GDB for your target.`,
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

  /** Connects to a gdbserver (`target extended-remote` would let GDB restart it; embedded stubs expect plain remote). */
  async connectRemote(address: string, timeoutMs = 20_000): Promise<Frame | undefined> {
    const r = await this.mi.send(`-target-select remote ${miQuote(address)}`, timeoutMs);
    this.state = 'stopped';
    const frame = miOptTuple(r.results, 'frame');
    return frame ? parseFrame(frame) : undefined;
  }

  async download(): Promise<void> {
    this.memoryWriteEmitter.fire();
    await this.mi.send('-target-download', 120_000);
  }

  async detach(): Promise<void> {
    await this.mi.send('-target-detach', 5_000);
  }

  /** A GDB CLI command, with its console output. */
  async command(command: string, timeoutMs?: number): Promise<string> {
    this.memoryWriteEmitter.fire();
    const r = await this.mi.send(`-interpreter-exec console ${miQuote(command)}`, timeoutMs);
    return r.console;
  }

  /** `monitor CMD`: passed through to the gdbserver (QEMU's HMP, OpenOCD's command line …). */
  monitor(command: string, timeoutMs?: number): Promise<string> {
    return this.command(`monitor ${command}`, timeoutMs);
  }

  async flushCaches(): Promise<void> {
    // GDB caches registers; after a reset behind its back they are stale.
    await this.command('maintenance flush register-cache');
  }

  async memoryRegions(): Promise<MemoryRegion[]> {
    return parseGdbMemoryMap(await this.command('info mem'));
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
      const settled = await Promise.race([stopped.then(() => true), new Promise<false>((resolve) => setTimeout(() => resolve(false), wait))]);
      if (settled || this.stops !== stopsBefore || this.state !== 'running' || Date.now() + wait >= deadline) return stopped;
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

  async runTo(address: bigint, options: RunToOptions): Promise<RunToResult> {
    this.expectStopped('run to an address');
    if (options.hidden) this.hiddenRuns++;
    try {
      return await runToWithTemporaryBreakpoint(this, address, options.timeoutMs ?? 120_000);
    } finally {
      if (options.hidden) this.hiddenRuns--;
    }
  }

  private expectStopped(what: string): void {
    if (this.state === 'running') throw new CycleLensError(ErrorCode.NotStopped, `Cannot ${what} while the target is running: pause it first.`);
    if (this.state === 'exited') throw new CycleLensError(ErrorCode.NotRunning, `Cannot ${what}: the program has ended. Restart the session.`);
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
  async frameVariables(threadId: number, frameLevel: number): Promise<Array<{ name: string; type: string; value: string | undefined }>> {
    const r = await this.mi.send(`-stack-list-variables --thread ${threadId} --frame ${frameLevel} --simple-values`);
    return miTupleList(r.results, 'variables').map((v) => ({ name: miString(v, 'name'), type: miOptString(v, 'type') ?? '', value: miOptString(v, 'value') }));
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
    const r = await this.mi.send(`-var-create ${ctx}- * ${miQuote(expression)}`);
    return parseVarObject(r.results, expression);
  }

  async variableChildren(name: string): Promise<VarObject[]> {
    const r = await this.mi.send(`-var-list-children --all-values ${miQuote(name)}`);
    return miTupleList(r.results, 'children').map((c) => parseVarObject(c, miString(c, 'exp')));
  }

  async assignVariable(name: string, value: string): Promise<string> {
    this.memoryWriteEmitter.fire();
    const r = await this.mi.send(`-var-assign ${miQuote(name)} ${miQuote(value)}`);
    return miString(r.results, 'value');
  }

  async deleteVariable(name: string): Promise<void> {
    await this.mi.send(`-var-delete ${miQuote(name)}`);
  }

  async evaluate(expression: string, threadId?: number, frameLevel?: number): Promise<string> {
    const ctx = threadId !== undefined ? `--thread ${threadId} --frame ${frameLevel ?? 0} ` : '';
    if (mayWriteMemory(expression)) this.memoryWriteEmitter.fire();
    const r = await this.mi.send(`-data-evaluate-expression ${ctx}${miQuote(expression)}`);
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

  async registerValues(numbers: number[] | undefined, threadId?: number, frameLevel?: number, format: 'x' | 'N' = 'x'): Promise<RegisterValue[]> {
    const ctx = threadId !== undefined ? `--thread ${threadId} --frame ${frameLevel ?? 0} ` : '';
    const which = numbers ? ` ${numbers.join(' ')}` : '';
    const r = await this.mi.send(`-data-list-register-values ${ctx}${format}${which}`);
    return miTupleList(r.results, 'register-values').map((v) => ({ number: miInt(v, 'number'), value: miString(v, 'value') }));
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
    if (covered < count) throw new CycleLensError(ErrorCode.CommandFailed, `Only ${covered} of ${count} bytes at 0x${start.toString(16)} could be read.`);
    return out;
  }

  async writeMemory(address: bigint, data: Uint8Array): Promise<void> {
    if (data.length === 0) return;
    this.memoryWriteEmitter.fire();
    await this.mi.send(`-data-write-memory-bytes 0x${address.toString(16)} ${Buffer.from(data).toString('hex')}`);
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
      this.exitEmitter.fire({ exitCode: code !== undefined ? parseInt(code, 8) : undefined, normal: reason !== 'exited-signalled' });
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

function mapStopReason(reason: string, signal: string | undefined): StopReason {
  switch (reason) {
    case 'breakpoint-hit':
      return 'breakpoint';
    case 'end-stepping-range':
    case 'location-reached':
      return 'step';
    case 'function-finished':
      return 'function-finished';
    case 'watchpoint-trigger':
    case 'read-watchpoint-trigger':
    case 'access-watchpoint-trigger':
      return 'watchpoint';
    case 'signal-received':
      // QEMU and OpenOCD report an interrupt as SIGINT (or SIGTRAP on some stubs): a pause.
      return signal === 'SIGINT' || signal === 'SIGTRAP' || signal === '0' ? 'pause' : 'exception';
    case '':
      return 'pause';
    default:
      return 'unknown';
  }
}

/** A location in GDB's linespec: `file:line`, `function`, `*function` (its first instruction), `*0xADDR`. */
export function gdbLocation(loc: BreakpointLocation): string {
  if (loc.kind === 'line') return `${loc.path}:${loc.line}`;
  if (loc.kind === 'address') return `*0x${loc.address.toString(16)}`;
  return loc.atEntry ? `*${loc.name}` : loc.name;
}

export function parseFrame(t: MiTuple): Frame {
  return {
    level: miOptInt(t, 'level') ?? 0,
    address: parseUnsigned(miString(t, 'addr')),
    func: miOptString(t, 'func'),
    file: miOptString(t, 'file'),
    fullname: miOptString(t, 'fullname'),
    line: miOptInt(t, 'line'),
  };
}

function parseBreakpoint(t: MiTuple): BreakpointInfo {
  const addr = miOptString(t, 'addr');
  const pending = miOptString(t, 'pending');
  // A breakpoint with several locations (an inlined function) lists them; the first one is shown.
  const first = miList(t, 'locations').find(isTuple);
  const file = miOptString(t, 'fullname') ?? (first ? miOptString(first, 'fullname') : undefined);
  const line = miOptInt(t, 'line') ?? (first ? miOptInt(first, 'line') : undefined);
  const firstAddr = first ? miOptString(first, 'addr') : undefined;
  const concreteAddr = addr && /^0x/i.test(addr) ? addr : firstAddr && /^0x/i.test(firstAddr) ? firstAddr : undefined;
  return {
    id: miInt(t, 'number'),
    verified: pending === undefined && concreteAddr !== undefined,
    file,
    line,
    address: concreteAddr ? BigInt(concreteAddr) : undefined,
    pending: pending !== undefined,
  };
}

function parseVarObject(t: MiTuple, expression: string): VarObject {
  return {
    name: miString(t, 'name'),
    expression,
    value: miOptString(t, 'value') ?? '',
    type: miOptString(t, 'type') ?? '',
    numChildren: miOptInt(t, 'numchild') ?? 0,
    dynamic: miOptString(t, 'dynamic') === '1',
  };
}

function parseInstruction(t: MiTuple, file: string | undefined, line: number | undefined): DisassembledInstruction {
  return {
    address: parseUnsigned(miString(t, 'address')),
    opcodes: miOptString(t, 'opcodes') ?? '',
    instruction: miOptString(t, 'inst') ?? '',
    functionName: miOptString(t, 'func-name'),
    offset: miOptInt(t, 'offset'),
    file,
    line,
  };
}

/** GDB prints registers and addresses as hex (`0x…`), sometimes decimal or negative. */
export function parseUnsigned(text: string): bigint {
  const m = /^\s*(-?)(0x[0-9a-f]+|\d+)/i.exec(text);
  if (!m) throw new CycleLensError(ErrorCode.CommandFailed, `Expected a number from GDB, got '${text}'.`);
  const v = BigInt(m[2]!);
  return m[1] === '-' ? (1n << 64n) - v : v;
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
