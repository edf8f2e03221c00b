import { CycleLensError, ErrorCode } from '../../errors';
import { Emitter } from '../../util/emitter';
import { OwnedProcess } from '../../util/processes';
import { MiLineSplitter, parseMiLine } from './mi/parser';
import type { MiAsyncRecord, MiRecord, MiResultRecord, MiStreamRecord, MiTuple } from './mi/types';

interface PendingCommand {
  command: string;
  resolve: (r: MiResultRecord) => void;
  reject: (e: Error) => void;
  /** Console stream text collected while this command runs (for `-interpreter-exec console`). */
  console: string[];
  timer: NodeJS.Timeout | undefined;
}

export interface MiCommandResult {
  resultClass: MiResultRecord['resultClass'];
  results: MiTuple;
  /** Console output GDB printed while executing the command. */
  console: string;
}

export interface MiExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The last lines of stderr and unparsed stdout, for the user's error message. */
  lastOutput: string[];
}

/**
 * One GDB process speaking MI: sends token-numbered commands and correlates their result records;
 * everything else becomes a typed event. Commands are written as GDB is ready for them; GDB
 * answers in order, but tokens make the pairing explicit and robust to async records in between.
 */
export class MiConnection {
  private readonly splitter = new MiLineSplitter();
  private readonly pending = new Map<number, PendingCommand>();
  private nextToken = 1;
  private readonly recentOutput: string[] = [];
  private exitInfo: MiExit | undefined;
  /** The command whose console output is being captured (GDB runs one command at a time). */
  private capturing: PendingCommand | undefined;
  /** Lines of stdout that were not MI, kept (a few) to say what a program that is not GDB printed. */
  private readonly unparsedSeen: string[] = [];
  private promptSeen = false;
  private readonly promptWaiters: Array<() => void> = [];

  private readonly asyncEmitter = new Emitter<MiAsyncRecord>();
  private readonly streamEmitter = new Emitter<MiStreamRecord>();
  private readonly unparsedEmitter = new Emitter<string>();
  private readonly exitEmitter = new Emitter<MiExit>();
  private readonly traceEmitter = new Emitter<string>();

  /** `*` exec, `+` status and `=` notify records. */
  readonly onAsync = this.asyncEmitter.event;
  /** `~` console, `@` target and `&` log stream text. */
  readonly onStream = this.streamEmitter.event;
  /** Lines that are not MI (inferior output through GDB's terminal). */
  readonly onUnparsed = this.unparsedEmitter.event;
  readonly onExit = this.exitEmitter.event;
  /** Raw traffic, for `trace: true`. */
  readonly onTrace = this.traceEmitter.event;

  constructor(
    private readonly proc: OwnedProcess,
    private readonly defaultTimeoutMs = 30_000,
  ) {
    const child = proc.child;
    child.stdout?.setEncoding('utf8');
    child.stderr?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => {
      for (const line of this.splitter.push(chunk)) this.handleLine(line);
    });
    child.stderr?.on('data', (chunk: string) => {
      for (const line of chunk.split('\n')) if (line.trim() !== '') this.remember(line);
    });
    child.stdin?.on('error', () => {
      // EPIPE when GDB died: the exit handler reports it.
    });
    void proc.exited.then(({ code, signal }) => {
      for (const line of this.splitter.flush()) this.handleLine(line);
      this.exitInfo = { code, signal, lastOutput: [...this.recentOutput] };
      const err = new CycleLensError(ErrorCode.DebuggerExited, describeExit(this.exitInfo));
      for (const p of this.pending.values()) {
        if (p.timer) clearTimeout(p.timer);
        p.reject(err);
      }
      this.pending.clear();
      this.exitEmitter.fire(this.exitInfo);
    });
  }

  get exited(): boolean {
    return this.exitInfo !== undefined;
  }

  /** How the process ended, once it has. */
  get exit(): MiExit | undefined {
    return this.exitInfo;
  }

  /** The last lines of stderr and unparsed stdout so far. */
  get lastOutput(): string[] {
    return [...this.recentOutput];
  }

  /** The first lines of stdout that were not MI (what a program that is not GDB printed). */
  get strayOutput(): readonly string[] {
    return this.unparsedSeen;
  }

  /** Resolves at GDB's first MI prompt `(gdb)` (at once if it came already). */
  firstPrompt(): Promise<void> {
    if (this.promptSeen) return Promise.resolve();
    return new Promise((resolve) => this.promptWaiters.push(resolve));
  }

  get process(): OwnedProcess {
    return this.proc;
  }

  /**
   * Sends one MI command (without token) and resolves with its result record. `^error` rejects
   * with GDB's message as a CommandFailed error.
   */
  send(command: string, timeoutMs = this.defaultTimeoutMs): Promise<MiCommandResult> {
    if (this.exitInfo) return Promise.reject(new CycleLensError(ErrorCode.DebuggerExited, describeExit(this.exitInfo)));
    const token = this.nextToken++;
    return new Promise<MiCommandResult>((resolve, reject) => {
      const entry: PendingCommand = {
        command,
        console: [],
        timer: undefined,
        resolve: (r) => {
          const text = entry.console.join('');
          if (r.resultClass === 'error') {
            const msg = typeof r.results['msg'] === 'string' ? r.results['msg'] : 'unknown error';
            reject(new CycleLensError(ErrorCode.CommandFailed, msg));
          } else {
            resolve({ resultClass: r.resultClass, results: r.results, console: text });
          }
        },
        reject,
      };
      if (timeoutMs > 0) {
        entry.timer = setTimeout(() => {
          this.pending.delete(token);
          reject(
            new CycleLensError(
              ErrorCode.DebuggerFailed,
              `GDB did not answer '${command}' within ${timeoutMs / 1000} s. The target may be ` +
                `unresponsive: check the connection, or restart the session.`,
            ),
          );
        }, timeoutMs);
      }
      this.pending.set(token, entry);
      const line = `${token}${command}\n`;
      this.traceEmitter.fire(`-> ${line.trimEnd()}`);
      this.proc.child.stdin?.write(line);
    });
  }

  private handleLine(line: string): void {
    if (line === '') return;
    this.traceEmitter.fire(`<- ${line}`);
    const record: MiRecord = parseMiLine(line);
    switch (record.type) {
      case 'result':
        this.onResult(record);
        break;
      case 'exec':
      case 'status':
      case 'notify':
        this.asyncEmitter.fire(record);
        break;
      case 'console':
      case 'target': {
        // Console text produced by a command is its answer, returned to the caller; so is target
        // text, which carries a gdbserver's reply to `monitor`. The rest (GDB's own remarks between
        // commands, a stub's spontaneous output) is shown to the user.
        const owner = this.captureTarget();
        if (owner) owner.console.push(record.text);
        else this.streamEmitter.fire(record);
        break;
      }
      case 'log':
        this.remember(record.text.trimEnd());
        this.streamEmitter.fire(record);
        break;
      case 'prompt':
        if (!this.promptSeen) {
          this.promptSeen = true;
          for (const w of this.promptWaiters.splice(0)) w();
        }
        break;
      case 'unparsed':
        if (this.unparsedSeen.length < 5) this.unparsedSeen.push(line);
        this.remember(line);
        this.unparsedEmitter.fire(line);
        break;
      default: {
        const never: never = record;
        throw new Error(`unhandled MI record ${JSON.stringify(never)}`);
      }
    }
  }

  /** GDB executes commands one at a time, so console output belongs to the oldest pending one. */
  private captureTarget(): PendingCommand | undefined {
    if (this.capturing && [...this.pending.values()].includes(this.capturing)) return this.capturing;
    const first = this.pending.values().next();
    this.capturing = first.done ? undefined : first.value;
    return this.capturing;
  }

  private onResult(record: MiResultRecord): void {
    const entry = record.token === undefined ? undefined : this.pending.get(record.token);
    if (!entry) return; // a result for a command that timed out, or GDB's own
    this.pending.delete(record.token!);
    if (entry.timer) clearTimeout(entry.timer);
    if (this.capturing === entry) this.capturing = undefined;
    entry.resolve(record);
  }

  private remember(line: string): void {
    this.recentOutput.push(line);
    if (this.recentOutput.length > 12) this.recentOutput.shift();
  }
}

export function describeExit(exit: MiExit): string {
  const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
  const tail = exit.lastOutput.filter((l) => l.trim() !== '').slice(-5);
  return `GDB ${how}.${tail.length ? ` Its last output:\n${tail.join('\n')}` : ''}`;
}
