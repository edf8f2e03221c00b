import * as vscode from 'vscode';
import { adapterStartEnv } from '../../common/startHint';
import { CycleLensConfigurationProvider } from './configurationProvider';

import { DEBUG_TYPE } from './sessionTracker';

/** The adapter is a separate Node program (dist/adapter.js) started by VS Code over stdio. */
class AdapterFactory implements vscode.DebugAdapterDescriptorFactory {
  constructor(private readonly extensionUri: vscode.Uri) {}

  createDebugAdapterDescriptor(session: vscode.DebugSession): vscode.DebugAdapterDescriptor {
    const adapter = vscode.Uri.joinPath(this.extensionUri, 'dist', 'adapter.js').fsPath;
    const port = vscode.workspace.getConfiguration('cyclelens').get<number>('debugAdapterPort');
    // A fixed port lets a developer run the adapter under a debugger (`--server=PORT`).
    if (port) return new vscode.DebugAdapterServer(port);
    // The start hint lets the adapter start this launch's QEMU while it is still loading (common/startHint.ts).
    return new vscode.DebugAdapterExecutable(process.execPath, [adapter], { env: adapterStartEnv(session.configuration) });
  }
}

export function registerDebugging(context: vscode.ExtensionContext): void {
  const provider = new CycleLensConfigurationProvider();
  context.subscriptions.push(
    vscode.debug.registerDebugConfigurationProvider(DEBUG_TYPE, provider),
    vscode.debug.registerDebugConfigurationProvider(DEBUG_TYPE, provider, vscode.DebugConfigurationProviderTriggerKind.Dynamic),
    vscode.debug.registerDebugAdapterDescriptorFactory(DEBUG_TYPE, new AdapterFactory(context.extensionUri)),
  );
}
