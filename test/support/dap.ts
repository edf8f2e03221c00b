import { DebugClient } from '@vscode/debugadapter-testsupport';
import type { DebugProtocol } from '@vscode/debugprotocol';
import type { CustomRequestName, CustomResponse } from '../../common/dapCustom';
import { customRequest, type CustomArgumentList } from '../../common/dapCustomClient';
import type { CycleLensLaunchArgs } from '../../common/launchArgs';
import { adapterBundle, fixtureElf, fixturesDir, FixtureTarget } from './paths';
import { OWNER_TAG_VAR, newOwnerTag, killTagged, waitForNoTaggedProcesses, LiveProcess } from './ownedProcesses';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { startHintKey } from '../../common/startHint';
import { SpareAdapter } from '../../core/dap/adapterSpare';

/** QEMU launch arguments for a fixture program on one of the two no-hardware targets. */
export function qemuLaunchArgs(
  target: FixtureTarget,
  program = 'singlepass',
  extra: Partial<CycleLensLaunchArgs> = {},
): CycleLensLaunchArgs {
  return {
    executable: fixtureElf(target, program),
    server: { type: 'qemu', machine: target === 'rv32' ? 'virt' : 'mps2-an386' },
    stopAtEntry: 'main',
    ...extra,
  };
}

export const fixtureSource = (name: string): string => join(fixturesDir, 'src', name);

/**
 * The built adapter driven over DAP, exactly as VS Code drives it, with every process it starts
 * tagged so the test can prove none survives.
 */
export class AdapterHarness {
  readonly tag = newOwnerTag();
  readonly dc: DebugClient;
  readonly output: string[] = [];

  private spare: SpareAdapter | undefined;

  /**
   * `adapter`: another build of the adapter (e.g. the one inside the packaged .vsix); `env`: its
   * environment on top of this one's; `startedAhead`: spawned as the extension's spares are
   * (core/dap/adapterSpare.ts), so that `start` leaves it loaded and waiting and `handOver` gives it
   * its session.
   */
  constructor(
    private readonly adapter = adapterBundle,
    private readonly env: Record<string, string | undefined> = {},
    private readonly startedAhead = false,
  ) {
    this.dc = new DebugClient(process.execPath, adapter, 'cyclelens', {
      env: { ...process.env, ...env, [OWNER_TAG_VAR]: this.tag },
    });
    this.dc.defaultTimeout = 30_000;
    this.dc.on('output', (e: DebugProtocol.OutputEvent) => this.output.push(e.body.output));
  }

  async start(): Promise<void> {
    if (!this.startedAhead) return this.dc.start();
    this.spare = SpareAdapter.spawn({
      adapterPath: this.adapter,
      env: { ...process.env, ...this.env, [OWNER_TAG_VAR]: this.tag },
    });
    if (!(await this.spare.ready))
      throw new Error(`the spare adapter ended before it was ready (exit code ${this.spare.child.exitCode})`);
  }

  /** The spare's process (a harness `startedAhead`, after `start`). */
  get spareProcess(): ChildProcess | undefined {
    return this.spare?.child;
  }

  /** Gives the spare its session, told the start hint of `args` as the extension tells it, and connects the client. */
  handOver(args: CycleLensLaunchArgs): void {
    if (!this.spare) throw new Error('handOver needs a harness started ahead');
    const child = this.spare.handOver(startHintKey({ ...args }));
    // DebugClient reads and writes the streams of the process it spawns; this one it did not spawn,
    // so it is given the streams, and the process to end in stop().
    const client = this.dc as unknown as {
      connect(readable: NodeJS.ReadableStream, writable: NodeJS.WritableStream): void;
      _adapterProcess: ChildProcess;
    };
    client.connect(child.stdout!, child.stdin!);
    client._adapterProcess = child;
  }

  /** launch → configurationDone → the first stop (at `main` by default). */
  async launchToEntry(args: CycleLensLaunchArgs): Promise<DebugProtocol.StoppedEvent> {
    const [, , stopped] = await Promise.all([
      this.dc.configurationSequence(),
      this.dc.launch(args),
      this.dc.waitForEvent('stopped') as Promise<DebugProtocol.StoppedEvent>,
    ]);
    return stopped;
  }

  /**
   * A custom request through the one typed client (common/dapCustomClient.ts): the response body, as the
   * contract declares it.
   */
  custom<K extends CustomRequestName>(name: K, ...args: CustomArgumentList<K>): Promise<CustomResponse<K>> {
    return customRequest(
      { customRequest: async (command: string, a?: unknown) => (await this.dc.customRequest(command, a)).body },
      name,
      ...args,
    );
  }

  async topFrame(threadId = 1): Promise<DebugProtocol.StackFrame> {
    const st = await this.dc.stackTraceRequest({ threadId, startFrame: 0, levels: 20 });
    const top = st.body.stackFrames[0];
    if (!top) throw new Error('no stack frames');
    return top;
  }

  async variablesOf(ref: number): Promise<DebugProtocol.Variable[]> {
    return (await this.dc.variablesRequest({ variablesReference: ref })).body.variables;
  }

  /** Stops the adapter and returns any process it left behind (then kills them). */
  async stop(): Promise<LiveProcess[]> {
    this.spare?.discard();
    try {
      await this.dc.stop();
    } catch {
      // the adapter may already be gone
    }
    const left = await waitForNoTaggedProcesses(this.tag);
    killTagged(this.tag);
    return left;
  }

  get allOutput(): string {
    return this.output.join('');
  }

  /**
   * Prints the adapter's last `lines` lines of output (with `trace: true`, its MI commands and
   * replies): what it and GDB said last, to tell a stuck step or a lost stop from a wrong count.
   */
  printTraceTail(lines = 150): void {
    const trace = this.allOutput.trimEnd().split('\n').slice(-lines);
    console.log(
      `# the adapter's last ${trace.length} lines before the failure:\n${trace.map((l) => `#   ${l}`).join('\n')}`,
    );
  }
}
