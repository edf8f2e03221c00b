import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { FrameLocator } from 'playwright-core';
import { CodeServerHarness, poll } from '../support/codeServerHarness';
import {
  answerDescentPrompts,
  functionLines,
  notifications,
  rv32,
  statusBarText,
  stopAndExpectNothingLeft,
} from '../support/codeServerUi';
import { markerLine } from '../support/markers';

// The profile panel in the packaged CycleLens, in code-server: a descent on the demo ends with
// "Open Call Graph"; the panel draws the call graph (Graphviz wasm in its worker under the webview's
// CSP), the flame graph and the table; a click on the hot node opens its function in the editor; and
// a saved result set opens in the panel as its custom editor.

const dark = 'Default Dark Modern';
const light = 'Default Light Modern';
let harness: CodeServerHarness | undefined;

before(
  async () => {
    harness = await CodeServerHarness.start({
      name: 'profilePanel',
      requireFirmware: true,
      theme: dark,
      viewport: { width: 1440, height: 900 },
    });
  },
  { timeout: 15 * 60_000 },
);

after(() => stopAndExpectNothingLeft(harness));

/** A webview's page: VS Code nests it in two frames. */
function webview(h: CodeServerHarness): FrameLocator {
  return h.page.frameLocator('iframe.webview.ready').last().frameLocator('iframe#active-frame');
}

test(
  'a descent ends with Open Call Graph, and the panel draws the annotated call graph',
  { timeout: 300_000 },
  async (t) => {
    const h = harness!;
    await h.startDebugging(rv32);
    await h.waitForTopFrame('main', markerLine(join(h.workspace, 'src', 'singlepass.c'), '#MAIN_FIRST'), 60_000);
    await h.runCommand('CycleLens: Where Do My Cycles Go? (Call-Graph Descent)…');
    await answerDescentPrompts(h, '5%');
    const toast = h.page.locator('.notifications-toasts .notification-toast', {
      hasText: /CycleLens descent finished/,
    });
    await toast
      .waitFor({ timeout: 180_000 })
      .catch(async () => assert.fail(`the descent did not finish: ${(await notifications(h)).join(' || ')}`));
    // The saved report beside the source offers the same above its first line.
    await h.page
      .locator('.monaco-editor .codelens-decoration a', { hasText: 'Open Call Graph' })
      .first()
      .waitFor({ timeout: 30_000 });
    await toast.getByRole('button', { name: 'Open Call Graph' }).click();
    const page = webview(h);
    await page.locator('g.node').first().waitFor({ timeout: 60_000 });
    const names = await page.locator('g.node .name').allTextContents();
    t.diagnostic(`call graph: ${names.join(', ')}`);
    assert.ok(names.includes('process_packet'), 'the call graph shows process_packet');
    assert.ok((await page.locator('path.edge').count()) > 0, 'edges are drawn');
    assert.ok((await page.locator('g.node.hot').count()) > 0, 'hot functions are marked');
    await h.screenshotInThemes('panel-vscode-call-graph', [dark, light], () =>
      page.locator('g.node').first().waitFor(),
    );
  },
);

test('a click on the hot node opens its function in the editor', { timeout: 60_000 }, async () => {
  const h = harness!;
  const page = webview(h);
  // The hottest function: Fit frames the hottest functions at a legible size, not every one.
  const hot = page.locator('g.node.hot').first();
  const name = (await hot.locator('.name').textContent()) ?? '';
  await hot.click();
  // The focused group's tab: another group may show a source file already (the stop at main).
  await h.page.waitForFunction(
    () => document.querySelector('.editor-group-container.active .tab.active .label-name')?.textContent?.endsWith('.c'),
    undefined,
    {
      timeout: 15_000,
    },
  );
  const file = await h.activeTab();
  const { first, last } = functionLines(join(h.workspace, 'src', file), name);
  // The cursor lands on the function's DWARF line (its definition, or its opening brace where the
  // line table starts it there): inside the function, as the status bar says.
  const status = await poll(
    () => statusBarText(h),
    (s) => /Ln \d+,/.test(s),
    10_000,
  );
  const at = Number(/Ln (\d+),/.exec(status)?.[1]);
  assert.ok(
    at >= first && at <= last,
    `the editor shows ${name} (${file}:${first}-${last}) at line ${at} (status bar: ${status})`,
  );
});

test(
  'the flame graph and table tabs render, and a saved result set opens in the panel',
  { timeout: 120_000 },
  async () => {
    const h = harness!;
    const page = webview(h);
    await page.getByRole('tab', { name: 'Flame Graph' }).click();
    const height = await page.locator('.flame-view canvas').evaluate((c: HTMLCanvasElement) => c.height);
    assert.ok(height > 18, 'the flame graph canvas is drawn');
    await h.screenshotInThemes('panel-vscode-flame', [dark, light], () => page.locator('.flame-view canvas').waitFor());
    await page.getByRole('tab', { name: 'Table' }).click();
    assert.ok((await page.locator('table.grid tbody tr').count()) > 1, 'the table has rows');
    await h.screenshotInThemes('panel-vscode-table', [dark, light], () => page.locator('table.grid').waitFor());
    const saved = readdirSync(join(h.workspace, '.cyclelens', 'results')).find((f) => f.endsWith('.json'));
    assert.ok(saved, 'the descent saved its result set');
    // openFile waits for a text editor, which a result set no longer gets: the custom editor opens.
    await h.openFile(`.cyclelens/results/${saved}`, 20_000).catch(() => undefined);
    assert.equal(await h.activeTab(), saved);
    assert.equal(
      await h.page.locator('.editor-group-container.active .monaco-editor .view-lines').count(),
      0,
      'the result set did not open as text',
    );
    await webview(h).locator('g.node').first().waitFor({ timeout: 60_000 });
  },
);

/** What the panel's page shows of its state now, and the marker it sets once per page load. */
async function panelState(
  page: FrameLocator,
): Promise<{ load: string; tab: string; sort: string; selected: string[]; title: string }> {
  return {
    load: (await page.locator('#app').getAttribute('data-page-load')) ?? '',
    tab: ((await page.locator('[role="tab"][aria-selected="true"]').textContent()) ?? '').trim(),
    sort: (
      (await page.locator('th[aria-sort="descending"], th[aria-sort="ascending"]').first().textContent()) ?? ''
    ).trim(),
    selected: (await page.locator('table.grid tbody tr.selected td:first-child').allTextContents()).map((s) =>
      s.trim(),
    ),
    title: ((await page.locator('h1.title').textContent()) ?? '').trim(),
  };
}

test(
  "the panel's tab, selection, sort and search survive hiding it behind another editor in its group",
  { timeout: 180_000 },
  async (t) => {
    const h = harness!;
    // One panel only: the descent's panel and the custom editor go, "Show Call Graph" opens the panel anew.
    await h.runCommand('View: Close All Editor Groups');
    await h.page.locator('iframe.webview').first().waitFor({ state: 'detached', timeout: 15_000 });
    await h.runCommand('CycleLens: Show Call Graph');
    const page = webview(h);
    await page.locator('g.node').first().waitFor({ timeout: 60_000 });
    const panelTab = await h.activeTab();
    // The call graph's search; a frame picked in the flame graph (selects without opening the source);
    // the table sorted by self count.
    await page.getByLabel('Find a function').fill('process');
    // The page selects the hottest function by itself; the user's pick is another one (two levels down).
    const selectedAtLoad = await page.locator('g.node.selected .name').allTextContents();
    await page.getByRole('tab', { name: 'Flame Graph' }).click();
    await page.locator('.flame-view canvas').click({ position: { x: 5, y: 2 * 18 + 9 } });
    const picked = /^(.+?): /.exec((await page.locator('.flame-view .details').textContent()) ?? '')?.[1] ?? '';
    assert.ok(picked, 'a click in the flame graph picked a frame');
    assert.notDeepEqual([picked], selectedAtLoad, `the pick (${picked}) is not what the page selected by itself`);
    await page.getByRole('tab', { name: 'Table' }).click();
    await page.getByRole('button', { name: /^Self/ }).click();
    const before = await panelState(page);
    t.diagnostic(`before hiding: ${JSON.stringify(before)}`);
    assert.deepEqual(before.selected, [picked], 'the table marks the function picked in the flame graph');
    assert.match(before.sort, /^Self .*▼$/);

    // Another editor in the panel's group hides the panel: VS Code drops its page (no retained context).
    await h.openFile('src/singlepass.c');
    await h.page.locator('iframe.webview.ready').waitFor({ state: 'detached', timeout: 15_000 });
    await h.page.locator('.editor-group-container.active .tab', { hasText: panelTab }).click();
    await page.locator('table.grid tbody tr').first().waitFor({ timeout: 30_000 });
    const after = await poll(
      () => panelState(page),
      (s) => s.selected.length > 0,
      15_000,
    );
    t.diagnostic(`after showing it again: ${JSON.stringify(after)}`);
    assert.notEqual(after.load, before.load, 'the page was loaded again: what it shows came from its saved state');
    assert.equal(after.tab, 'Table', 'the tab');
    assert.equal(after.sort, before.sort, 'the sort');
    assert.deepEqual(after.selected, [picked], 'the selection');
    await page.getByRole('tab', { name: 'Call Graph' }).click();
    assert.equal(await page.getByLabel('Find a function').inputValue(), 'process', 'the search');
    await page.locator('g.node.selected').waitFor({ timeout: 30_000 });
    assert.deepEqual(
      await page.locator('g.node.selected .name').allTextContents(),
      [picked],
      'the call graph selects it too',
    );
    assert.ok((await page.locator('g.node.match').count()) > 0, 'and highlights what the search finds');
    await page.getByRole('tab', { name: 'Table' }).click();
  },
);

test('after Developer: Reload Window the panel comes back with its file and tab', { timeout: 240_000 }, async (t) => {
  const h = harness!;
  // The session would not outlive the reload's extension host: end it first.
  if (await h.debugToolbar().isVisible())
    assert.ok((await h.stopDebugging({ maxPresses: 3 })).ended, 'the session ends');
  const page = webview(h);
  const before = await panelState(page);
  assert.equal(before.tab, 'Table');
  const panelTab = await h.page
    .locator('.tab.active', { hasText: before.title })
    .first()
    .locator('.label-name')
    .innerText();
  await h.runCommand('Developer: Reload Window');
  await h.page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 120_000 });
  // The restored page is a new one: its load marker differs once it has drawn its profile.
  const after = await poll(
    () => panelState(page).catch(() => undefined),
    (s) => s !== undefined && s.load !== '' && s.load !== before.load && s.title !== '' && s.tab !== '',
    120_000,
  );
  t.diagnostic(`after the reload: ${JSON.stringify(after)}`);
  assert.ok(after && after.load !== before.load, 'the panel is a new page');
  assert.equal(after.title, before.title, 'it shows the same file');
  assert.equal(after.tab, 'Table', 'on the same tab');
  assert.ok((await page.locator('table.grid tbody tr').count()) > 1, 'with its rows');
  assert.ok(before.title.endsWith('.json'), `the panel showed the saved result set (${before.title})`);
  assert.equal(
    await h.page.locator('.tab .label-name', { hasText: panelTab }).count(),
    1,
    `the panel's editor tab "${panelTab}" is back`,
  );
});
