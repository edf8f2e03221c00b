import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { EXPORT_FORMATS, type ExportFormat, type ExportFormatId } from '../../core/export/formats';
import { loadAnyProfile } from '../../core/profile/json';
import type { Profile } from '../../core/profile/model';
import { CodeServerHarness, poll } from '../support/codeServerHarness';
import { chooseMenuItem, notifications, stopAndExpectNothingLeft } from '../support/codeServerUi';
import { checkCallgrindAndPprof, checkGprof, checkReadBack, stackFigures } from '../support/exportChecks';
import { OWNER_TAG_VAR, newOwnerTag, waitForNoTaggedProcesses } from '../support/ownedProcesses';
import { writeLaunchJson } from '../support/cliWorkspace';
import { fixtureElf, repoRoot, type FixtureTarget } from '../support/paths';

// "CycleLens: Export Profile…" in the packaged extension, in code-server: a result set from a real
// call-graph descent on each QEMU target (the `cyclelens` command line)
// is exported to every format from the Command Palette and from the result set's context menu in
// the Explorer. Each quick pick item says which tool opens it, the save dialog (code-server's simple
// file dialog) offers the result set's name with the format's ending, the notification offers Open
// and Reveal, and every written file is read by its real consumer and compared with the profile model.

const TARGETS: { id: FixtureTarget; name: string; machine: string; toolPrefix: string }[] = [
  { id: 'rv32', name: 'QEMU RISC-V 32', machine: 'virt', toolPrefix: 'riscv64-unknown-elf-' },
  { id: 'cortex-m4', name: 'QEMU Cortex-M4', machine: 'mps2-an386', toolPrefix: 'arm-none-eabi-' },
];
const COMMAND = 'CycleLens: Export Profile…';
const tag = newOwnerTag();
const descentDir = mkdtempSync(join(tmpdir(), 'cyclelens-e2e-export-'));
let harness: CodeServerHarness | undefined;
const models = new Map<FixtureTarget, Profile>();

/** One real descent through the command line, its result set written to `out`. */
function descend(target: (typeof TARGETS)[number], out: string): Promise<void> {
  const dir = join(descentDir, target.id);
  writeLaunchJson(dir, [
    {
      name: target.name,
      executable: fixtureElf(target.id, 'singlepass'),
      server: { type: 'qemu', machine: target.machine },
      stopAtEntry: 'main',
      programEnd: 'program_end',
    },
  ]);
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        join(repoRoot, 'dist', 'cli.js'),
        'descent',
        '--config',
        '.vscode/launch.json',
        '--name',
        target.name,
        '--threshold',
        '5%',
        '--out',
        out,
      ],
      {
        cwd: dir,
        env: { ...process.env, [OWNER_TAG_VAR]: tag },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGTERM'), 300_000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`the ${target.id} descent exited with ${code}: ${stderr}`));
    });
  });
}

before(
  async () => {
    // One after the other: code-server's start and two emulators at once overload a small machine.
    harness = await CodeServerHarness.start({ name: 'exportProfile', requireFirmware: false });
    for (const t of TARGETS) await descend(t, join(descentDir, `descent-${t.id}.json`));
    const results = join(harness.workspace, '.cyclelens', 'results');
    mkdirSync(results, { recursive: true });
    for (const t of TARGETS) {
      copyFileSync(join(descentDir, `descent-${t.id}.json`), join(results, `descent-${t.id}.json`));
      const model = await loadAnyProfile(join(results, `descent-${t.id}.json`));
      assert.ok(model.functions.filter((f) => f.inclusive).length >= 5, `the ${t.id} descent measured functions`);
      models.set(t.id, model);
    }
  },
  { timeout: 15 * 60_000 },
);

after(async () => {
  assert.deepEqual(await waitForNoTaggedProcesses(tag), [], 'the descents leave no QEMU or GDB behind');
  rmSync(descentDir, { recursive: true, force: true });
  await stopAndExpectNothingLeft(harness);
});

function quickInput(h: CodeServerHarness) {
  return h.page.locator('.quick-input-widget');
}

/**
 * The rows the quick input shows. After a save dialog (code-server's simple file dialog) the widget
 * keeps that dialog's list, hidden, ahead of the next pick's rows ("..", the folder's files): only
 * visible rows are the current pick's.
 */
function visibleRows(h: CodeServerHarness) {
  return quickInput(h).locator('.monaco-list-row:visible');
}

/** The row of the open quick pick whose label is exactly `label`, after filtering by it. */
async function pickItem(h: CodeServerHarness, label: string): Promise<void> {
  const widget = quickInput(h);
  await visibleRows(h).first().waitFor({ state: 'visible', timeout: 15_000 });
  const row = visibleRows(h)
    .filter({
      has: h.page.locator('.label-name', {
        hasText: new RegExp(`^\\s*${label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*$`),
      }),
    })
    .first();
  await row.waitFor({ state: 'visible', timeout: 15_000 }).catch(async () => {
    assert.fail(
      'the quick pick offers ' +
        `${JSON.stringify(await widget.locator('.monaco-list-row .label-name').allInnerTexts())}, ` +
        `not "${label}"`,
    );
  });
  await row.click();
}

/** Every item of the format quick pick says which tool opens it. */
async function assertFormatItems(h: CodeServerHarness): Promise<void> {
  await visibleRows(h)
    .first()
    .waitFor({ state: 'visible', timeout: 15_000 })
    .catch(async (err: unknown) => {
      throw new Error(
        `the format pick did not show (screenshot ${await h.screenshot('export-no-format-pick')}): ${String(err)}`,
      );
    });
  const rows = await poll(
    () => visibleRows(h).evaluateAll((els) => els.map((e) => (e as HTMLElement).innerText.replace(/\s+/g, ' ').trim())),
    (r) => r.length >= EXPORT_FORMATS.length,
    5000,
  );
  for (const f of EXPORT_FORMATS) {
    assert.ok(
      rows.some((r) => r.includes(f.label) && r.includes(f.extension) && r.includes(`Opens in ${f.opensIn}`)),
      `the ${f.label} item says it opens in ${f.opensIn}: ${JSON.stringify(rows)}`,
    );
  }
}

/**
 * Answers the save dialog (code-server's simple file dialog: a quick input holding a path) with
 * `path`; returns the path it offered.
 */
async function answerSaveDialog(h: CodeServerHarness, path: string): Promise<string> {
  const input = quickInput(h).locator('input');
  await input.waitFor({ state: 'visible', timeout: 15_000 });
  const offered = await poll(
    () => input.inputValue(),
    (v) => /\.[\w]+$/.test(v),
    5000,
  );
  await input.fill(path);
  // The dialog checks the typed path with the (remote) file service before it accepts it.
  await poll(
    () => input.inputValue(),
    (v) => v === path,
    5000,
  );
  // Typing a path in another folder makes the dialog list that folder; an Enter that lands while it
  // does so is taken as "show this folder", not "save", so Enter is pressed again while the typed
  // path stands.
  for (let attempt = 1; attempt <= 4; attempt++) {
    await h.page.keyboard.press('Enter');
    const hidden = await quickInput(h)
      .waitFor({ state: 'hidden', timeout: 15_000 })
      .then(
        () => true,
        () => false,
      );
    if (hidden) return offered;
    if ((await input.inputValue().catch(() => '')) !== path) break;
  }
  const shown = (
    await quickInput(h)
      .innerText()
      .catch(() => '')
  ).replace(/\s+/g, ' ');
  assert.fail(
    `the save dialog did not take ${path} (it offered ${offered}; it shows "${shown.slice(0, 300)}"; ` +
      `input "${await input.inputValue()}"); screenshot ${await h.screenshot('export-save-dialog')}`,
  );
}

/**
 * Picks `format`, answers the save dialog with a file in `folder`, and checks the default offered and the
 * notification.
 */
async function exportAs(
  h: CodeServerHarness,
  target: FixtureTarget,
  format: ExportFormat,
  folder: string,
  afterwards?: 'Open' | 'Reveal',
): Promise<string> {
  await assertFormatItems(h);
  await pickItem(h, format.label);
  const name = `descent-${target}${format.extension}`;
  const path = join(folder, name);
  const offered = await answerSaveDialog(h, path);
  // The default: the result set's name with the format's ending, in the workspace folder.
  assert.equal(
    offered.replace(/^~(?=\/)/, process.env.HOME ?? '~'),
    join(h.workspace, name),
    `the save dialog offers ${join(h.workspace, name)}`,
  );
  const toast = h.page.locator('.notifications-toasts .notification-toast', {
    hasText: `Exported ${format.label} to ${name}`,
  });
  await toast
    .waitFor({ timeout: 60_000 })
    .catch(async () => assert.fail(`no notification for ${name}: ${(await notifications(h)).join(' || ')}`));
  assert.match(
    await toast.innerText(),
    new RegExp(`opens in ${format.opensIn.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
  );
  for (const action of ['Open', 'Reveal'])
    assert.ok(await toast.getByRole('button', { name: action }).isVisible(), `the notification offers ${action}`);
  if (afterwards) {
    await toast.getByRole('button', { name: afterwards }).click();
  } else {
    await toast.hover();
    await toast.locator('.codicon-notifications-clear').click();
  }
  await toast.waitFor({ state: 'hidden', timeout: 10_000 });
  assert.ok(existsSync(path), `${path} was written`);
  return path;
}

/** Every export of the target's result set, read by its consumer and compared with the profile model. */
async function checkExports(target: (typeof TARGETS)[number], folder: string): Promise<void> {
  const model = models.get(target.id)!;
  const files = {
    model,
    file: (id: ExportFormatId) =>
      join(folder, `descent-${target.id}${EXPORT_FORMATS.find((f) => f.id === id)!.extension}`),
  };
  const fig = stackFigures(model);
  checkCallgrindAndPprof(files, fig);
  checkGprof(files, fig, fixtureElf(target.id, 'singlepass'), target.toolPrefix);
  await checkReadBack(files, fig, 'process_packet');
}

for (const target of TARGETS) {
  test(
    `${target.id}: Export Profile… from the Command Palette writes every format, each read by its consumer`,
    { timeout: 300_000 },
    async () => {
      const h = harness!;
      const folder = join(h.workspace, 'exports', `palette-${target.id}`);
      mkdirSync(folder, { recursive: true });
      for (const format of EXPORT_FORMATS) {
        await h.runCommand(COMMAND);
        await pickItem(h, `descent-${target.id}.json`);
        const afterwards =
          target.id === 'rv32'
            ? ({ csv: 'Open', folded: 'Reveal' } as const)[format.id as 'csv' | 'folded']
            : undefined;
        const path = await exportAs(h, target.id, format, folder, afterwards);
        if (afterwards === 'Open') {
          // Open shows the file in an editor.
          await h.page
            .locator('.editor-group-container.active .tab.active', {
              hasText: `descent-${target.id}${format.extension}`,
            })
            .waitFor({ timeout: 15_000 });
        } else if (afterwards === 'Reveal') {
          // In a browser the file manager is the Explorer: the file is selected there.
          await h.page
            .locator('.explorer-folders-view .monaco-list-row.selected', {
              hasText: `descent-${target.id}${format.extension}`,
            })
            .waitFor({ timeout: 15_000 });
        }
        assert.ok(readFileSync(path).length > 0);
      }
      await checkExports(target, folder);
    },
  );

  test(
    `${target.id}: Export Profile… from the saved result set's context menu in the Explorer writes the same files`,
    { timeout: 300_000 },
    async () => {
      const h = harness!;
      const folder = join(h.workspace, 'exports', `context-${target.id}`);
      mkdirSync(folder, { recursive: true });
      for (const format of EXPORT_FORMATS) {
        await rightClickResultSet(h, `descent-${target.id}.json`);
        await chooseMenuItem(h, 'Export Profile…', `the Explorer's context menu of descent-${target.id}.json`);
        await exportAs(h, target.id, format, folder);
      }
      await checkExports(target, folder);
      for (const format of EXPORT_FORMATS) {
        const name = `descent-${target.id}${format.extension}`;
        assert.ok(
          readFileSync(join(folder, name)).equals(
            readFileSync(join(h.workspace, 'exports', `palette-${target.id}`, name)),
          ),
          `${name} is the same from both places`,
        );
      }
    },
  );
}

test('an unwritable destination is refused with the file named and the fix', { timeout: 120_000 }, async () => {
  const h = harness!;
  await h.runCommand(COMMAND);
  await pickItem(h, 'descent-rv32.json');
  await pickItem(h, EXPORT_FORMATS[0]!.label);
  // /sys is mounted read-only: nothing can be created there, not even by root.
  const path = `/sys/descent-rv32${EXPORT_FORMATS[0]!.extension}`;
  await answerSaveDialog(h, path);
  const toast = h.page.locator('.notifications-toasts .notification-toast', {
    hasText: 'CycleLens could not export descent-rv32.json',
  });
  await toast
    .waitFor({ timeout: 30_000 })
    .catch(async () => assert.fail(`no error notification: ${(await notifications(h)).join(' || ')}`));
  const text = (await toast.innerText()).replace(/\s+/g, ' ');
  assert.match(text, new RegExp(`${path.replace(/\./g, '\\.')} cannot be written: .*choose a folder you can write to`));
  assert.ok(!existsSync(path));
  await h.screenshot('export-profile-unwritable');
});

/** Opens the Explorer on `.cyclelens/results/` and right-clicks the result set `name`. */
async function rightClickResultSet(h: CodeServerHarness, name: string): Promise<void> {
  const rows = h.page.locator('.explorer-folders-view .monaco-list-row');
  const row = (label: string) =>
    rows
      .filter({ has: h.page.locator('.label-name', { hasText: new RegExp(`^${label.replace(/\./g, '\\.')}$`) }) })
      .first();
  if (
    !(await row(name)
      .isVisible()
      .catch(() => false))
  ) {
    await h.runCommand('View: Show Explorer');
    for (const folder of ['.cyclelens', 'results']) {
      const r = row(folder);
      await r.waitFor({ state: 'visible', timeout: 15_000 });
      if ((await r.getAttribute('aria-expanded')) !== 'true') await r.click();
    }
  }
  await row(name).waitFor({ state: 'visible', timeout: 15_000 });
  await row(name).click({ button: 'right' });
  await h.page.locator('.context-view .monaco-menu').waitFor({ state: 'visible', timeout: 10_000 });
}
