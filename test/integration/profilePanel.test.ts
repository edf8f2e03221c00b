import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { repoRoot, testOutputDir } from '../support/paths';
import { PanelPage } from '../support/panelPage';
import { syntheticProfile, syntheticSource } from '../support/syntheticProfile';

/**
 * The profile panel's built page in Debian's Chromium under the production Content Security Policy:
 * imported data stays data, and each tab renders (the call graph through Graphviz wasm in a worker).
 */
const payloads = [
  '<img src=x onerror="window.__xss=(window.__xss||0)+1">',
  '<script>window.__xss=(window.__xss||0)+1</script>',
  '"><svg onload="window.__xss=(window.__xss||0)+1">',
];
const nameOf = (i: number): string => (i < payloads.length ? payloads[i]! : `fn_${i}`);

describe('profile panel in Chromium', () => {
  let panel: PanelPage;
  const profile = syntheticProfile({ count: 40, name: nameOf, sourceLines: 30, sourcePath: '/fw/src/<b>evil</b>.c' });

  before(async () => {
    panel = await PanelPage.open();
    await panel.send({ type: 'profile', profile, title: '<img src=x onerror="window.__xss=1"> profile' });
    await panel.graphDrawn();
  });

  after(async () => {
    await panel?.close();
  });

  it('renders function names holding markup as text, and no script of theirs runs', async () => {
    const page = panel.page;
    // Every tab draws the names once.
    for (const tab of ['Flame Graph', 'Source', 'Table', 'Call Graph'])
      await page.getByRole('tab', { name: tab }).click();
    await panel.send({
      type: 'source',
      path: profile.functions[0]!.location!.path,
      text: `${syntheticSource(30)}\n<img src=x onerror="window.__xss=1">`,
    });
    await page.getByRole('tab', { name: 'Source' }).click();
    await page.locator('ol.source li.line').first().waitFor();
    const xss = await page.evaluate(() => (window as unknown as { __xss?: number }).__xss);
    assert.equal(xss, undefined, 'a script from the profile ran');
    assert.equal(
      await page.locator('#app img, #app script, #app svg svg').count(),
      0,
      'markup from the profile became elements',
    );
    // A box shows a long name elided; its tooltip (the SVG title) holds the whole name as text.
    const nodeNames = await page
      .locator('g.node > title')
      .evaluateAll((ts) => ts.map((t) => (t.textContent ?? '').split('\n')[0]));
    for (const p of payloads) assert.ok(nodeNames.includes(p), `the call graph shows ${p} as text`);
    await page.getByRole('tab', { name: 'Table' }).click();
    const cells = await page.locator('table.grid td').allTextContents();
    for (const p of payloads) assert.ok(cells.includes(p), `the table shows ${p} as text`);
    assert.equal(await page.locator('h1.title').textContent(), '<img src=x onerror="window.__xss=1"> profile');
    assert.deepEqual(await panel.violations(), [], 'the page broke its Content Security Policy');
    assert.deepEqual(panel.errors, []);
  });

  it('lays out the call graph with Graphviz wasm in a worker and draws every node and edge', async () => {
    const page = panel.page;
    await page.getByRole('tab', { name: 'Call Graph' }).click();
    assert.equal(await page.locator('g.node:not(.collapsed)').count(), profile.functions.length);
    assert.equal(await page.locator('path.edge').count(), profile.edges.length);
    // Graphviz ranks a tree top-down: every callee sits below its caller.
    const ys = await page
      .locator('g.node')
      .evaluateAll((gs) =>
        gs.map((g) => Number(/translate\([^,]+,([^)]+)\)/.exec(g.getAttribute('transform') ?? '')?.[1])),
      );
    for (const e of profile.edges)
      assert.ok(ys[e.callee]! > ys[e.caller]!, `callee ${e.callee} below caller ${e.caller}`);
    assert.ok((await page.locator('g.node.status-pruned').count()) > 0, 'pruned functions are marked');
    const status = await page.locator('g.node.status-pruned tspan.status').first().textContent();
    assert.match(status ?? '', /^pruned: callers bound it ≤ \d+\.\d %$/);
    // Collapse below 5 %: leaves go, and one group node per caller stands for them.
    await page.getByLabel('Collapse below share (%)').fill('5');
    await page.getByLabel('Collapse below share (%)').dispatchEvent('change');
    await panel.graphDrawn();
    const shown = await page.locator('g.node:not(.collapsed)').count();
    assert.ok(shown < profile.functions.length && shown > 0, `${shown} functions shown after collapsing`);
    assert.ok((await page.locator('g.node.collapsed').count()) > 0);
    await page.getByLabel('Collapse below share (%)').fill('0');
    await page.getByLabel('Collapse below share (%)').dispatchEvent('change');
    await panel.graphDrawn();
  });

  it('opens the source of a clicked node and highlights the function the editor cursor is in', async () => {
    const page = panel.page;
    await page.getByRole('tab', { name: 'Call Graph' }).click();
    // Fit frames the hottest functions legibly; function 5 is in view with the whole graph.
    await page.getByRole('button', { name: 'Whole graph' }).click();
    await page.locator('g.node').nth(5).click();
    const posted = await panel.posted();
    assert.deepEqual(posted.filter((m) => m.type === 'openLocation').at(-1), {
      type: 'openLocation',
      path: profile.functions[5]!.location!.path,
      line: profile.functions[5]!.location!.line,
    });
    await panel.send({ type: 'cursorFunction', name: 'fn_7' });
    await page.locator('g.node.selected').waitFor();
    assert.deepEqual(await page.locator('g.node.selected .name').allTextContents(), ['fn_7']);
  });

  it('draws the flame graph on a canvas and zooms on a click', async () => {
    const page = panel.page;
    await page.getByRole('tab', { name: 'Flame Graph' }).click();
    const canvas = page.locator('.flame-view canvas');
    const box = await canvas.boundingBox();
    assert.ok(box && box.width > 100 && box.height >= 18 * 4, 'the canvas has the tree depth');
    // The root row is painted (not blank) ...
    const painted = await canvas.evaluate((c: HTMLCanvasElement) => {
      const d = c.getContext('2d')!.getImageData(0, 0, c.width, 10).data;
      let n = 0;
      for (let i = 3; i < d.length; i += 4) if (d[i]! > 0) n++;
      return n / (d.length / 4);
    });
    assert.ok(painted > 0.9, `root row painted (${painted})`);
    // ... and a click on the second row zooms: the details line names the frame.
    await canvas.click({ position: { x: 5, y: 18 + 9 } });
    assert.match((await page.locator('.flame-view .details').textContent()) ?? '', /depth 1$/);
  });

  it('shows the annotated source with per-line values and expands a line to its instructions', async () => {
    const page = panel.page;
    await panel.send({ type: 'cursorFunction', name: profile.functions[0]!.name });
    await page.getByRole('tab', { name: 'Source' }).click();
    const lines = page.locator('ol.source li.line');
    assert.equal(await lines.count(), 31);
    assert.match((await page.locator('.source-view .note').textContent()) ?? '', /per-line self cost in instructions/);
    const hottest = profile.lines.reduce((a, b) => (b.self.value > a.self.value ? b : a));
    const row = page.locator(`li.line[data-line="${hottest.line}"]`);
    assert.equal(await row.locator('.lineno').textContent(), String(hottest.line));
    assert.ok(await row.locator('.fill.w10').count(), 'the hottest line has a full heat bar');
    await row.locator('button.expand').click();
    assert.equal(await row.locator('li.instruction').count(), 3);
    assert.match((await row.locator('li.instruction code').first().textContent()) ?? '', /^addi a0, a0, \d+$/);
    await lines.nth(4).locator('.line-row').click();
    assert.deepEqual((await panel.posted()).filter((m) => m.type === 'openLocation').at(-1), {
      type: 'openLocation',
      path: hottest.path,
      line: 5,
    });
  });

  it('sorts and filters the table, and moves between rows with the keyboard', async () => {
    const page = panel.page;
    await page.getByRole('tab', { name: 'Table' }).click();
    await page.getByRole('button', { name: /^Self/ }).click();
    const selfs = (await page.locator('table.grid tbody tr td:nth-child(2)').allTextContents()).map((t) =>
      Number(t.replace(/,/g, '')),
    );
    assert.deepEqual(
      selfs,
      [...selfs].sort((a, b) => b - a),
    );
    await page.getByLabel('Filter rows').fill('status:pruned');
    const statuses = await page.locator('table.grid tbody tr td:nth-child(10)').allTextContents();
    assert.equal(statuses.length, profile.functions.filter((f) => f.status === 'pruned').length);
    await page.getByLabel('Filter rows').fill('');
    const first = page.locator('table.grid tbody tr').first();
    await first.focus();
    await page.keyboard.press('ArrowDown');
    assert.equal(
      await page.evaluate(() => document.activeElement?.parentElement?.children[1] === document.activeElement),
      true,
    );
    assert.deepEqual(panel.errors, []);
  });
});

/**
 * The four tabs in the light and dark themes, on a descent-shaped profile. Written to
 * test-output/panel/, and to docs/screenshots/ (shown by docs/ui.md) with CYCLELENS_DOCS_SCREENSHOTS=1.
 */
describe('profile panel screenshots', () => {
  for (const theme of ['vscode-light', 'vscode-dark'] as const) {
    it(`renders every tab in ${theme}`, async () => {
      const dirs = [
        join(testOutputDir, 'panel'),
        ...(process.env.CYCLELENS_DOCS_SCREENSHOTS ? [join(repoRoot, 'docs', 'screenshots')] : []),
      ];
      for (const d of dirs) mkdirSync(d, { recursive: true });
      const panel = await PanelPage.open({ theme, viewport: { width: 1280, height: 760 } });
      try {
        const profile = syntheticProfile({
          count: 24,
          sourceLines: 40,
          name: (i) =>
            ['main', 'process_frame', 'fir_filter', 'crc16', 'uart_write', 'parse_header'][i % 6]! +
            (i < 6 ? '' : `_${i}`),
        });
        await panel.send({ type: 'profile', profile, title: 'descent-2026-11-25.json' });
        await panel.graphDrawn();
        await panel.send({ type: 'source', path: profile.functions[0]!.location!.path, text: syntheticSource(40) });
        const name = theme === 'vscode-dark' ? 'dark' : 'light';
        for (const [tab, file] of [
          ['Call Graph', 'graph'],
          ['Flame Graph', 'flame'],
          ['Table', 'table'],
        ] as const) {
          await panel.page.getByRole('tab', { name: tab }).click();
          for (const d of dirs) await panel.page.screenshot({ path: join(d, `panel-${file}-${name}.png`) });
        }
        await panel.send({ type: 'cursorFunction', name: 'main' });
        await panel.page.getByRole('tab', { name: 'Source' }).click();
        await panel.page.locator('li.line.heat-10 button.expand').first().click();
        for (const d of dirs) await panel.page.screenshot({ path: join(d, `panel-source-${name}.png`) });
        assert.deepEqual(panel.errors, []);
        assert.deepEqual(await panel.violations(), []);
      } finally {
        await panel.close();
      }
    });
  }
});
