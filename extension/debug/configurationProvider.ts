import * as vscode from 'vscode';
import type { CycleLensLaunchArgs } from '../../common/launchArgs';
import { restrictedModeRefusal } from './workspaceTrust';

type CycleLensConfiguration = vscode.DebugConfiguration & Partial<CycleLensLaunchArgs>;

/**
 * Fills in what a user may leave out, and offers ready configurations for the ELF files found in
 * the workspace. Validation proper happens in the adapter, so the CLI and VS Code agree.
 */
export class CycleLensConfigurationProvider implements vscode.DebugConfigurationProvider {
  /**
   * `sessionComing` is called when a configuration is accepted: a session follows, once VS Code has
   * substituted variables and run the preLaunchTask (a firmware build, often seconds).
   */
  constructor(private readonly sessionComing: () => void = () => undefined) {}

  async provideDebugConfigurations(folder: vscode.WorkspaceFolder | undefined): Promise<vscode.DebugConfiguration[]> {
    const elfs = folder
      ? await vscode.workspace.findFiles(new vscode.RelativePattern(folder, '**/*.elf'), '**/node_modules/**', 20)
      : [];
    const executable = elfs[0]
      ? `\${workspaceFolder}/${vscode.workspace.asRelativePath(elfs[0], false)}`
      : '${workspaceFolder}/build/firmware.elf';
    return [
      {
        type: 'cyclelens',
        request: 'launch',
        name: 'QEMU Cortex-M4',
        executable,
        server: { type: 'qemu', machine: 'mps2-an386' },
        stopAtEntry: 'main',
      },
      {
        type: 'cyclelens',
        request: 'launch',
        name: 'QEMU RISC-V 32',
        executable,
        server: { type: 'qemu', machine: 'virt' },
        stopAtEntry: 'main',
      },
    ];
  }

  resolveDebugConfiguration(
    folder: vscode.WorkspaceFolder | undefined,
    config: CycleLensConfiguration,
  ): vscode.ProviderResult<vscode.DebugConfiguration> {
    // F5 with no launch.json: offer to create one rather than guessing a target.
    if (!config.type && !config.request && !config.name) {
      void vscode.window
        .showErrorMessage(
          'CycleLens needs a launch configuration that names the firmware ELF and how to reach the target.',
          'Open launch.json',
        )
        .then((choice) => choice && vscode.commands.executeCommand('workbench.action.debug.configure'));
      return undefined;
    }
    const refusal = restrictedModeRefusal(vscode.workspace.isTrusted, config);
    if (refusal) {
      void vscode.window
        .showErrorMessage(refusal, 'Manage Workspace Trust')
        .then((choice) => choice && vscode.commands.executeCommand('workbench.trust.manage'));
      return undefined;
    }
    config.cwd ??= folder?.uri.fsPath;
    config.server ??= { type: 'qemu' };
    this.sessionComing();
    return config;
  }
}
