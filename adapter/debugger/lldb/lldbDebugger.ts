import type { TargetFamily } from '../../../common/launchArgs';
import { isUnsupported } from '../../arch/archPlugin';
import { archPlugin } from '../../arch/registry';
import { CycleLensError, ErrorCode } from '../../errors';
import { Emitter } from '../../util/emitter';
import { OwnedProcess, requireExecutable } from '../../util/processes';
import type { Debugger, ExecutionState } from '../debugger';
import { DebuggerBase, mayWriteMemory } from '../debuggerBase';
import type {
  BreakpointInfo,
  BreakpointRequest,
  DisassembledInstruction,
  FileScopeVariable,
  Frame,
  MemoryRegion,
  RegisterValue,
  StopEvent,
  Thread,
  VarObject,
  WatchpointRequest,
} from '../types';
import { lldbBridgePath } from './bridgeLocation';

export interface LldbStartOptions {
  python: string;
  cwd: string;
  family: TargetFamily;
}

/**
 * The LLVM triple LLDB needs to decode a family's code and registers, from the family's plugin (LLDB 14
 * has Cortex-M only).
 */
function tripleFor(family: TargetFamily): string {
  const lldb = archPlugin(family).lldb;
  if (isUnsupported(lldb)) throw new CycleLensError(ErrorCode.Unsupported, lldb.unsupported);
  return lldb.triple;
}

interface WireFrame {
  level: number;
  address: string;
  func: string | null;
  file: string | null;
  fullname: string | null;
  line: number | null;
}

type BridgeMessage =
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; error: string }
  | { event: 'ready'; version: string }
  | { event: 'fatal'; message: string }
  | { event: 'running' }
  | { event: 'output'; category: 'stdout' | 'stderr'; text: string }
  | { event: 'exited'; exitCode: number | null; normal: boolean }
  | {
      event: 'stopped';
      reason: StopEvent['reason'];
      threadId: number;
      breakpointIds: number[];
      description?: string;
      frame: WireFrame;
    };

const toFrame = (f: WireFrame): Frame => ({
  level: f.level,
  address: BigInt(f.address),
  func: f.func ?? undefined,
  file: f.file ?? undefined,
  fullname: f.fullname ?? undefined,
  line: f.line ?? undefined,
});

const hex = (n: bigint): string => `0x${n.toString(16)}`;

/**
 * LLDB as the debugger, through its SB API in a Python bridge process (bridge.py) that speaks
 * JSON lines. The bridge is an OwnedProcess: the child watchdog ends it with the adapter.
 */
export class LldbDebugger extends DebuggerBase implements Debugger {
  readonly kind = 'lldb' as const;
  private state: ExecutionState = 'stopped';
  private nextId = 1;
  private readonly pending = new Map<
    number,
    { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }
  >();
  private exited = false;
  private buffer = '';
  private readonly traceEmitter = new Emitter<string>();
  private registerNameCache: string[] | undefined;
  private ready: Promise<void>;

  readonly onTrace = this.traceEmitter.event;

  private constructor(
    private readonly proc: OwnedProcess,
    private readonly triple: string,
  ) {
    super();
    let readyResolve!: () => void;
    let readyReject!: (e: Error) => void;
    this.ready = new Promise((resolve, reject) => {
      readyResolve = resolve;
      readyReject = reject;
    });
    proc.child.stdout?.setEncoding('utf8');
    proc.child.stdout?.on('data', (text: string) => {
      this.buffer += text;
      let nl: number;
      while ((nl = this.buffer.indexOf('\n')) >= 0) {
        const line = this.buffer.slice(0, nl);
        this.buffer = this.buffer.slice(nl + 1);
        if (line.trim() === '') continue;
        this.traceEmitter.fire(`<- ${line}`);
        let msg: BridgeMessage;
        try {
          msg = JSON.parse(line) as BridgeMessage;
        } catch {
          this.outputEmitter.fire({ category: 'stderr', text: `${line}\n` });
          continue;
        }
        if ('event' in msg && msg.event === 'ready') readyResolve();
        else if ('event' in msg && msg.event === 'fatal')
          readyReject(new CycleLensError(ErrorCode.DebuggerFailed, msg.message));
        else this.onMessage(msg);
      }
    });
    proc.child.stderr?.setEncoding('utf8');
    proc.child.stderr?.on('data', (text: string) => {
      if (this.hiddenRuns === 0) this.outputEmitter.fire({ category: 'stderr', text });
    });
    void proc.exited.then((exit) => {
      this.exited = true;
      this.state = 'exited';
      readyReject(
        new CycleLensError(
          ErrorCode.DebuggerFailed,
          `The LLDB bridge ended before it was ready (code ${exit.code ?? exit.signal}).`,
        ),
      );
      for (const [, p] of this.pending) {
        clearTimeout(p.timer);
        p.reject(new CycleLensError(ErrorCode.DebuggerFailed, 'LLDB exited.'));
      }
      this.pending.clear();
      this.resolveStopWaiters(undefined);
      this.diedEmitter.fire(`LLDB exited (${exit.code !== null ? `code ${exit.code}` : `signal ${exit.signal}`}).`);
    });
  }

  static async start(options: LldbStartOptions): Promise<LldbDebugger> {
    const triple = tripleFor(options.family);
    const python = requireExecutable(
      options.python,
      'Python 3 for LLDB',
      "Install LLDB's Python module (Debian: `apt-get install lldb-14 python3-lldb-14`) or set `lldbPython`.",
    );
    const proc = OwnedProcess.spawn('lldb', python, ['-u', lldbBridgePath()], { cwd: options.cwd });
    const d = new LldbDebugger(proc, triple);
    try {
      await Promise.race([
        d.ready,
        delay(20_000).then(() =>
          Promise.reject(new CycleLensError(ErrorCode.DebuggerFailed, 'LLDB did not start within 20 s.')),
        ),
      ]);
    } catch (err) {
      await proc.kill();
      throw err;
    }
    return d;
  }

  get executionState(): ExecutionState {
    return this.state;
  }

  get isRunning(): boolean {
    return this.state === 'running';
  }

  private call<T>(op: string, args: Record<string, unknown> = {}, timeoutMs = 30_000): Promise<T> {
    if (this.exited) return Promise.reject(new CycleLensError(ErrorCode.DebuggerFailed, 'LLDB has exited.'));
    const id = this.nextId++;
    const line = JSON.stringify({ id, op, ...args });
    this.traceEmitter.fire(`-> ${line.length > 400 ? `${line.slice(0, 400)}…` : line}`);
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(
          new CycleLensError(ErrorCode.CommandFailed, `LLDB did not answer '${op}' within ${timeoutMs / 1000} s.`),
        );
      }, timeoutMs);
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject, timer });
      this.proc.child.stdin?.write(`${line}\n`);
    });
  }

  private onMessage(msg: BridgeMessage): void {
    if ('id' in msg) {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      clearTimeout(p.timer);
      if (msg.ok) p.resolve(msg.result);
      else p.reject(new CycleLensError(ErrorCode.CommandFailed, msg.error));
      return;
    }
    switch (msg.event) {
      case 'running':
        this.state = 'running';
        this.runningEmitter.fire();
        return;
      case 'output':
        this.outputEmitter.fire({ category: msg.category, text: msg.text });
        return;
      case 'exited':
        this.state = 'exited';
        this.resolveStopWaiters(undefined);
        this.exitEmitter.fire({ exitCode: msg.exitCode ?? undefined, normal: msg.normal });
        return;
      case 'stopped': {
        this.state = 'stopped';
        const event: StopEvent = {
          ...(this.hiddenRuns > 0 ? { internal: true } : {}),
          reason: msg.reason,
          threadId: msg.threadId,
          allStopped: true,
          breakpointIds: msg.breakpointIds,
          ...(msg.description ? { description: msg.description } : {}),
          frame: toFrame(msg.frame),
        };
        this.resolveStopWaiters(event);
        this.stopEmitter.fire(event);
        return;
      }
      default:
        return;
    }
  }

  // ---- session and target

  async loadProgram(path: string): Promise<void> {
    await this.call('loadProgram', { path, triple: this.triple });
  }

  async connectRemote(address: string, timeoutMs = 20_000): Promise<Frame | undefined> {
    const frame = await this.call<WireFrame>('connectRemote', { address }, timeoutMs);
    this.state = 'stopped';
    return toFrame(frame);
  }

  async download(): Promise<void> {
    throw new CycleLensError(
      ErrorCode.Unsupported,
      'Loading a program onto a board is not available with LLDB here: use `"debugger": "gdb"`, ' +
        'or load it with the server first.',
    );
  }

  /** LLDB keeps its own memory cache per stop; it is not told to trust the file. */
  async imageLoaded(): Promise<void> {}

  async detach(): Promise<void> {
    await this.call('detach', {}, 5_000);
  }

  command(text: string, timeoutMs?: number): Promise<string> {
    this.memoryWriteEmitter.fire();
    return this.call<string>('command', { text }, timeoutMs);
  }

  monitor(command: string, timeoutMs?: number): Promise<string> {
    this.memoryWriteEmitter.fire();
    return this.call<string>('monitor', { text: command }, timeoutMs);
  }

  async flushCaches(): Promise<void> {
    this.registerNameCache = undefined;
    await this.call('flushCaches');
  }

  async memoryRegions(): Promise<MemoryRegion[]> {
    // The gdbserver's memory map reaches LLDB as regions without a flash/RAM kind: callers fall back
    // to the known QEMU maps and the architecture's default map.
    return [];
  }

  async setBreakpointsAlwaysInserted(): Promise<void> {
    // LLDB keeps breakpoints inserted while stopped already.
  }

  async exit(): Promise<void> {
    if (this.exited) return;
    await this.call('exit', {}, 3_000).catch(() => undefined);
    await Promise.race([this.proc.exited, delay(2_000)]);
    await this.proc.kill();
  }

  // ---- run control

  async continue(): Promise<void> {
    this.expectStopped('continue');
    this.state = 'running';
    await this.call('continue');
  }

  async interrupt(timeoutMs = 5_000): Promise<StopEvent | undefined> {
    if (this.state !== 'running') return undefined;
    const stopped = this.waitForStop(timeoutMs);
    await this.call('interrupt');
    return stopped;
  }

  async stepOver(instruction = false): Promise<void> {
    this.expectStopped('step over');
    this.state = 'running';
    await this.call('stepOver', { instruction });
  }

  async stepIn(instruction = false): Promise<void> {
    this.expectStopped('step in');
    this.state = 'running';
    await this.call('stepIn', { instruction });
  }

  async stepOut(): Promise<void> {
    this.expectStopped('step out');
    this.state = 'running';
    await this.call('stepOut');
  }

  // ---- breakpoints

  async insertBreakpoint(request: BreakpointRequest): Promise<BreakpointInfo> {
    const location =
      request.location.kind === 'address'
        ? { kind: 'address', address: hex(request.location.address) }
        : request.location;
    const info = await this.call<{
      id: number;
      verified: boolean;
      pending: boolean;
      address?: string;
      file?: string;
      line?: number;
    }>('insertBreakpoint', {
      ...request,
      location,
    });
    return {
      id: info.id,
      verified: info.verified,
      pending: info.pending,
      address: info.address !== undefined ? BigInt(info.address) : undefined,
      file: info.file,
      line: info.line,
    };
  }

  async insertWatchpoint(request: WatchpointRequest): Promise<BreakpointInfo> {
    const info = await this.call<{ id: number }>('insertWatchpoint', { ...request });
    return { id: info.id, verified: true, pending: false, address: undefined, file: undefined, line: undefined };
  }

  async deleteBreakpoints(ids: number[]): Promise<void> {
    if (ids.length > 0) await this.call('deleteBreakpoints', { ids });
  }

  // ---- stack, threads, variables

  threads(): Promise<Thread[]> {
    return this.call<Thread[]>('threads');
  }

  stackDepth(threadId: number, maxDepth = 1000): Promise<number> {
    return this.call<number>('stackDepth', { threadId, maxDepth });
  }

  async stackFrames(threadId: number, low: number, high: number): Promise<Frame[]> {
    return (await this.call<WireFrame[]>('stackFrames', { threadId, low, high })).map(toFrame);
  }

  async frameVariables(
    threadId: number,
    frameLevel: number,
  ): Promise<Array<{ name: string; type: string; value: string | undefined }>> {
    const vars = await this.call<Array<{ name: string; type: string; value: string | null }>>('frameVariables', {
      threadId,
      level: frameLevel,
    });
    return vars.map((v) => ({ name: v.name, type: v.type, value: v.value ?? undefined }));
  }

  async fileScopeVariables(): Promise<FileScopeVariable[]> {
    const vars = await this.call<
      Array<{ name: string; file: string; fullname: string; line: number; isStatic: boolean }>
    >('fileScopeVariables', {}, 60_000);
    return vars.map((v) => ({
      name: v.name,
      file: v.file,
      fullname: v.fullname,
      ...(v.line > 0 ? { line: v.line } : {}),
      isStatic: v.isStatic,
    }));
  }

  createVariable(expression: string, threadId?: number, frameLevel?: number): Promise<VarObject> {
    return this.call<VarObject>('createVariable', { expression, threadId, level: frameLevel });
  }

  variableChildren(name: string): Promise<VarObject[]> {
    return this.call<VarObject[]>('variableChildren', { name });
  }

  assignVariable(name: string, value: string): Promise<string> {
    this.memoryWriteEmitter.fire();
    return this.call<string>('assignVariable', { name, value });
  }

  async deleteVariable(name: string): Promise<void> {
    await this.call('deleteVariable', { name });
  }

  evaluate(expression: string, threadId?: number, frameLevel?: number): Promise<string> {
    if (mayWriteMemory(expression)) this.memoryWriteEmitter.fire();
    return this.call<string>('evaluate', { expression, threadId, level: frameLevel });
  }

  // ---- registers

  async registerNames(): Promise<string[]> {
    this.registerNameCache ??= await this.call<string[]>('registerNames');
    return this.registerNameCache;
  }

  registerValues(numbers: number[] | undefined, threadId?: number, frameLevel?: number): Promise<RegisterValue[]> {
    return this.call<RegisterValue[]>('registerValues', { numbers: numbers ?? null, threadId, level: frameLevel });
  }

  async readRegister(name: string): Promise<bigint> {
    return BigInt(await this.call<string>('readRegister', { name }));
  }

  async writeRegister(name: string, value: bigint): Promise<void> {
    this.memoryWriteEmitter.fire();
    await this.call('writeRegister', { name, value: hex(value) });
  }

  // ---- memory and code

  async readMemory(address: bigint, count: number): Promise<Buffer> {
    const data = Buffer.from(await this.call<string>('readMemory', { address: hex(address), count }), 'hex');
    if (data.length < count)
      throw new CycleLensError(
        ErrorCode.CommandFailed,
        `Only ${data.length} of ${count} bytes at ${hex(address)} could be read.`,
      );
    return data;
  }

  async writeMemory(address: bigint, data: Uint8Array): Promise<void> {
    if (data.length === 0) return;
    this.memoryWriteEmitter.fire();
    await this.call('writeMemory', { address: hex(address), data: Buffer.from(data).toString('hex') });
  }

  async disassemble(start: bigint, end: bigint): Promise<DisassembledInstruction[]> {
    const insns = await this.call<
      Array<{
        address: string;
        opcodes: string;
        instruction: string;
        functionName: string | null;
        offset: number | null;
        file: string | null;
        line: number | null;
      }>
    >('disassemble', { start: hex(start), end: hex(end) });
    return insns.map((i) => ({
      address: BigInt(i.address),
      opcodes: i.opcodes,
      instruction: i.instruction,
      functionName: i.functionName ?? undefined,
      offset: i.offset ?? undefined,
      file: i.file ?? undefined,
      line: i.line ?? undefined,
    }));
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
