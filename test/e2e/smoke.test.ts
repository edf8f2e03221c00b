import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CodeServerHarness } from '../support/codeServerHarness';
import {
  importScriptsLib,
  type CodeServerLib,
  type DemoWorkspaceLib,
  type VsixLib,
} from '../support/codeServerScripts';
import { repoRoot } from '../support/paths';

// The packaged CycleLens in a real VS Code (code-server 4.100 in Debian's Chromium), on the demo
// workspace: installed, offered in Run and Debug, activated from there. Proves the e2e harness end
// to end; every assertion reads what the workbench shows (DOM text), or code-server's own CLI.

interface Manifest {
  activationEvents?: string[];
  contributes?: { views?: Record<string, { name: string }[]>; debuggers?: { type: string; label?: string }[] };
}
const manifest = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as Manifest;

let harness: CodeServerHarness | undefined;
let codeServer: CodeServerLib;
let vsix: VsixLib;
let demoWorkspace: DemoWorkspaceLib;

before(
  async () => {
    ({ codeServer, vsix, demoWorkspace } = await importScriptsLib());
    harness = await CodeServerHarness.start({ name: 'smoke' });
  },
  { timeout: 15 * 60_000 },
);

after(async () => {
  if (!harness) return;
  const { survivors } = await harness.stop();
  assert.deepEqual(survivors, [], 'code-server left processes behind');
});

test('code-server lists the packaged extension as installed', (t) => {
  const { id, version } = vsix.extensionId();
  const installed = codeServer.listExtensions(harness!.extensionsDir);
  t.diagnostic(`installed: ${installed.join(', ')}`);
  t.diagnostic(`code-server start to workbench ready: ${harness!.timings.startupToWorkbenchMs} ms`);
  assert.ok(installed.includes(`${id}@${version}`), `${id}@${version} not in ${JSON.stringify(installed)}`);
});

test('Run and Debug offers the demo launch configurations', { timeout: 60_000 }, async () => {
  const h = harness!;
  const offered = await h.debugConfigurations();
  await h.screenshot('smoke-run-and-debug');
  for (const { name } of demoWorkspace.demoConfigurations) {
    assert.ok(offered.includes(name), `the debug dropdown offers ${JSON.stringify(offered)}, not "${name}"`);
  }
});

test('CycleLens activates from Run and Debug and shows as running', { timeout: 90_000 }, async (t) => {
  const h = harness!;
  const { id, displayName } = vsix.extensionId();
  // Activate it the ways its manifest allows without starting a session: opening its views, and
  // picking its "<debugger>..." entry in the Run and Debug dropdown (onDebugDynamicConfigurations).
  const views = Object.values(manifest.contributes?.views ?? {})
    .flat()
    .map((v) => v.name);
  for (const view of views) await h.openView(view);
  const debuggerLabel = manifest.contributes?.debuggers?.find((d) => d.type === 'cyclelens')?.label;
  const dynamic = (manifest.activationEvents ?? []).some(
    (e) => e === 'onDebugDynamicConfigurations' || e === 'onDebugDynamicConfigurations:cyclelens',
  );
  if (dynamic && debuggerLabel) await h.selectDebugConfiguration(`${debuggerLabel}...`);
  if (views.length === 0 && !(dynamic && debuggerLabel)) {
    assert.fail(
      'package.json gives no way to activate CycleLens from the UI without a debug session (no ' +
        'views, no onDebugDynamicConfigurations)',
    );
  }
  // The extension host log names the event that activated it.
  t.diagnostic(await h.waitForActivation(id));
  // The dropdown entry then offers the provided configurations in a quick pick: dismiss it.
  if (dynamic && debuggerLabel) await h.closeQuickInput(5000);
  await h.screenshot('smoke-activated');

  await h.runCommand('Developer: Show Running Extensions');
  const row = await h.waitForText('.runtime-extensions-editor .monaco-list-row', displayName);
  await h.screenshot('smoke-running-extensions');
  const text = (await row.innerText()).replace(/\s+/g, ' ');
  t.diagnostic(`Running Extensions: ${text}`);
  assert.match(text, /Activation: \d+\s*ms/, 'the Running Extensions row shows an activation time');
});

test('the Extensions view lists CycleLens as enabled', { timeout: 60_000 }, async () => {
  const h = harness!;
  const { displayName } = vsix.extensionId();
  await h.runCommand('Extensions: Show Enabled Extensions');
  const item = await h.waitForText('.part.sidebar .extension-list-item', displayName);
  await h.screenshot('smoke-extensions');
  assert.match(await item.innerText(), new RegExp(displayName));
});
