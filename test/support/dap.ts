import { DebugClient } from '@vscode/debugadapter-testsupport';
import type { DebugProtocol } from '@vscode/debugprotocol';
import type { CustomRequestName, CustomResponse } from '../../common/dapCustom';
import { customRequest, type CustomArgumentList } from '../../common/dapCustomClient';
import type { CycleLensLaunchArgs } from '../../common/launchArgs';
import { adapterBundle, fixtureElf, fixturesDir, FixtureTarget } from './paths';
import { OWNER_TAG_VAR, newOwnerTag, killTagged, waitForNoTaggedProcesses, LiveProcess } from './ownedProcesses';
import { join } from 'node:path';

/** QEMU launch arguments for a fixture program on one of the two no-hardware targets. */
export function qemuLaunchArgs(target: FixtureTarget, program = 'singlepass', extra: Partial<CycleLensLaunchArgs> = {}): CycleLensLaunchArgs {
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

  /** `adapter`: another build of the adapter (e.g. the one inside the packaged .vsix); `env`: its environment on top of this one's. */
  constructor(adapter = adapterBundle, env: Record<string, string | undefined> = {}) {
    this.dc = new DebugClient(process.execPath, adapter, 'cyclelens', {
      env: { ...process.env, ...env, [OWNER_TAG_VAR]: this.tag },
    });
    this.dc.defaultTimeout = 30_000;
    this.dc.on('output', (e: DebugProtocol.OutputEvent) => this.output.push(e.body.output));
  }

  async start(): Promise<void> {
    await this.dc.start();
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

  /** A custom request through the one typed client (common/dapCustomClient.ts): the response body, as the contract declares it. */
  custom<K extends CustomRequestName>(name: K, ...args: CustomArgumentList<K>): Promise<CustomResponse<K>> {
    return customRequest({ customRequest: async (command: string, a?: unknown) => (await this.dc.customRequest(command, a)).body }, name, ...args);
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
}
