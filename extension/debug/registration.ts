import * as vscode from 'vscode';
import { startHintKey } from '../../common/startHint';
import { SpareKeeper } from '../../core/dap/adapterSpare';
import { ChildDebugAdapter } from './childAdapter';
import { CycleLensConfigurationProvider } from './configurationProvider';

import { DEBUG_TYPE } from './sessionTracker';

/** The next spare is spawned this long after a session took one, so that it does not slow that launch. */
const SPARE_REFILL_MS = 3_000;
/** A spare nobody used for this long is ended: an idle window keeps no adapter. */
const SPARE_IDLE_MS = 10 * 60_000;

/**
 * The adapter is a separate Node program (dist/adapter.js). Each session gets its own process: one
 * started ahead (core/dap/adapterSpare.ts) when there is one, so that a restart does not wait for
 * Node and the adapter to load, else one spawned for it, told the session's start hint either way.
 * The first session of a window starts its spare as its configuration is resolved.
 */
class AdapterFactory implements vscode.DebugAdapterDescriptorFactory, vscode.Disposable {
  private readonly spares: SpareKeeper;

  constructor(
    extensionUri: vscode.Uri,
    private readonly log: vscode.LogOutputChannel,
  ) {
    const adapterPath = vscode.Uri.joinPath(extensionUri, 'dist', 'adapter.js').fsPath;
    this.spares = new SpareKeeper({
      adapterPath,
      refillAfterMs: SPARE_REFILL_MS,
      idleMs: SPARE_IDLE_MS,
      // The control pipe is a descriptor beyond stdio, as POSIX passes it; Windows is not tried.
      wanted: () =>
        process.platform !== 'win32' &&
        vscode.workspace.getConfiguration('cyclelens').get<boolean>('debugAdapterStartedAhead', true),
    });
  }

  /**
   * A session is on its way: its adapter starts loading now, while VS Code runs the preLaunchTask,
   * so that the first session of a window need not wait for it either.
   */
  sessionComing(): void {
    if (!this.fixedPort()) this.spares.prepare();
  }

  /** A fixed port lets a developer run the adapter under a debugger (`--server=PORT`). */
  private fixedPort(): number | undefined {
    return vscode.workspace.getConfiguration('cyclelens').get<number>('debugAdapterPort') || undefined;
  }

  createDebugAdapterDescriptor(session: vscode.DebugSession): vscode.DebugAdapterDescriptor {
    const port = this.fixedPort();
    if (port) return new vscode.DebugAdapterServer(port);
    const { child, fromSpare } = this.spares.take(startHintKey(session.configuration));
    this.log.debug(
      `debug session "${session.name}": adapter pid ${child.pid ?? '?'}${fromSpare ? ', started ahead' : ''}`,
    );
    return new vscode.DebugAdapterInlineImplementation(new ChildDebugAdapter(child, this.log));
  }

  dispose(): void {
    this.spares.dispose();
  }
}

export function registerDebugging(context: vscode.ExtensionContext, log: vscode.LogOutputChannel): void {
  const factory = new AdapterFactory(context.extensionUri, log);
  const provider = new CycleLensConfigurationProvider(() => factory.sessionComing());
  context.subscriptions.push(
    factory,
    vscode.debug.registerDebugConfigurationProvider(DEBUG_TYPE, provider),
    vscode.debug.registerDebugConfigurationProvider(
      DEBUG_TYPE,
      provider,
      vscode.DebugConfigurationProviderTriggerKind.Dynamic,
    ),
    vscode.debug.registerDebugAdapterDescriptorFactory(DEBUG_TYPE, factory),
  );
}
