import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { repoRoot } from '../../../support/paths';

/**
 * Runs inside desktop VS Code's extension host (@vscode/test-electron's `extensionTestsPath`); a
 * thrown error fails the run. Checks what the code-server smoke test checks, through the API.
 */
export async function run(): Promise<void> {
  const manifest = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
    publisher: string;
    name: string;
  };
  const id = `${manifest.publisher}.${manifest.name}`;
  const extension = vscode.extensions.getExtension(id);
  assert.ok(extension, `${id} is not loaded`);
  await extension.activate();
  assert.ok(extension.isActive, `${id} did not activate`);

  const launch = vscode.workspace.getConfiguration('launch');
  const names = (launch.get<{ name: string }[]>('configurations') ?? []).map((c) => c.name);
  for (const name of ['QEMU RISC-V 32', 'QEMU Cortex-M4']) {
    assert.ok(names.includes(name), `launch.json offers ${JSON.stringify(names)}, not "${name}"`);
  }
}
