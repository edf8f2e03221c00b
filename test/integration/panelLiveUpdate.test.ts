import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Profile } from '../../core/profile/model';
import { PanelPage } from '../support/panelPage';
import { syntheticProfile, syntheticSource } from '../support/syntheticProfile';

/**
 * A live profile's next pictures in the panel's built page (Chromium, the production CSP): each is
 * redrawn in place, so the page is never reloaded and keeps the tab, selection, search, sort, filter
 * and zooms the user set; the banner follows the count and says when sampling stopped.
 */

interface PanelInternals {
  cyclelensPanel: {
    state: { tab: string; selected?: string; search: string; tableSort: { key: string; descending: boolean } };
    flame: { focus: number; rects: Array<{ name: string }>; drawn: Promise<void> };
  };
}

/** The same program a little later: every count grown, the edges (so the layout's order) reversed. */
function later(p: Profile, factor: number): Profile {
  const next = structuredClone(p);
  for (const f of next.functions) {
    if (f.self) f.self.value *= factor;
    if (f.inclusive) f.inclusive.value *= factor;
  }
  for (const l of next.lines) l.self.value *= factor;
  for (const a of next.addresses) a.self.value *= factor;
  next.total = { value: p.total!.value * factor };
  next.edges.reverse();
  return next;
}

const pageLoad = (panel: PanelPage) => panel.page.locator('#app').getAttribute('data-page-load');

describe('a live profile redrawn in place', () => {
  let panel: PanelPage;
  const first = syntheticProfile({ count: 40 });
  const live = { running: true, samplerLabel: 'QEMU monitor' };

  before(async () => {
    panel = await PanelPage.open();
    await panel.send({ type: 'profile', profile: first, title: 'Live profile: synthetic.elf', live });
    await panel.graphDrawn();
  });

  after(async () => {
    await panel?.close();
  });

  it(
    'keeps the page, tab, selection, search, sort, filter and zooms across updates, and follows ' + 'the count',
    async () => {
      const page = panel.page;
      const loaded = await pageLoad(panel);
      assert.ok(loaded, 'the page marks its load');
      assert.equal(await page.locator('.header .live').textContent(), 'live');
      assert.match(
        (await page.locator('.live-note').textContent()) ?? '',
        new RegExp(`^${first.total!.value.toLocaleString('en-US')} instructions so far`),
      );

      // The call graph: a search, a selection, and a zoom of the user's own.
      await page.getByLabel('Find a function').fill('fn_1');
      await page.locator('g.node[data-fn="7"]').click();
      await page.locator('svg.graph').hover();
      await page.mouse.wheel(0, -400);
      await page.waitForFunction(() =>
        /scale\((?!1\))/.test(document.querySelector('svg.graph > g')?.getAttribute('transform') ?? ''),
      );
      const zoomed = await page.locator('svg.graph > g').getAttribute('transform');
      await panel.send({ type: 'profile', profile: later(first, 2), title: 'Live profile: synthetic.elf', live });
      await panel.graphDrawn();
      assert.equal(
        await page.locator('svg.graph > g').getAttribute('transform'),
        zoomed,
        'the call graph keeps its zoom and pan',
      );
      assert.equal(await page.getByLabel('Find a function').inputValue(), 'fn_1');
      assert.deepEqual(
        await page.locator('g.node.selected .name').allTextContents(),
        ['fn_7'],
        'the selection stays on fn_7',
      );
      assert.ok((await page.locator('g.node.match').count()) > 1, 'the search still highlights');

      // The flame graph zoomed into a frame two levels down, by the keyboard.
      await page.getByRole('tab', { name: 'Flame Graph' }).click();
      const canvas = page.locator('.flame-view canvas');
      await canvas.focus();
      for (const key of ['ArrowDown', 'ArrowDown', 'ArrowRight', 'Enter']) await page.keyboard.press(key);
      const zoomedFrame = await page.evaluate(() => {
        const f = (window as unknown as PanelInternals).cyclelensPanel.flame;
        return f.rects[f.focus]!.name;
      });
      assert.notEqual(zoomedFrame, 'all', 'the flame graph is zoomed into a frame');
      await panel.send({ type: 'profile', profile: later(first, 3), title: 'Live profile: synthetic.elf', live });
      const flame = await page.evaluate(async () => {
        const f = (window as unknown as PanelInternals).cyclelensPanel.flame;
        await f.drawn;
        return { name: f.rects[f.focus]!.name, focus: f.focus };
      });
      assert.equal(flame.name, zoomedFrame, 'the flame graph stays zoomed into the same frame');

      // The table: sorted by self, filtered, scrolled.
      await page.getByRole('tab', { name: 'Table' }).click();
      await page.getByRole('button', { name: /^Self/ }).click();
      await page.getByLabel('Filter rows').fill('fn_');
      await panel.send({ type: 'profile', profile: later(first, 4), title: 'Live profile: synthetic.elf', live });
      await page.locator('.live-note', { hasText: (first.total!.value * 4).toLocaleString('en-US') }).waitFor();
      assert.equal(await page.locator('th[aria-sort="descending"]').textContent(), 'Self (insn) ▼', 'the sort stays');
      assert.equal(await page.getByLabel('Filter rows').inputValue(), 'fn_');
      const selfs = (await page.locator('table.grid tbody tr td:nth-child(2)').allTextContents()).map((t) =>
        Number(t.replace(/,/g, '')),
      );
      assert.deepEqual(
        selfs,
        [...selfs].sort((a, b) => b - a),
        'the new counts, sorted as the user asked',
      );
      assert.equal(
        selfs[0],
        Math.max(...first.functions.filter((f) => f.name.startsWith('fn_')).map((f) => f.self!.value)) * 4,
        'the rows carry the new counts',
      );
      assert.equal(
        await page.getByRole('tab', { name: 'Table' }).getAttribute('aria-selected'),
        'true',
        'the tab stays',
      );

      const state = await page.evaluate(() => (window as unknown as PanelInternals).cyclelensPanel.state);
      // Enter in the flame graph selected the frame it zoomed into.
      assert.equal(state.selected, zoomedFrame, 'the selection is kept by name');
      assert.equal(state.search, 'fn_1');
      assert.deepEqual(state.tableSort, { key: 'self', descending: true });
      assert.equal(await pageLoad(panel), loaded, 'the page was never reloaded');
      assert.deepEqual(panel.errors, []);
      assert.deepEqual(await panel.violations(), []);
    },
  );

  it('says when sampling stopped and keeps the last picture', async () => {
    const page = panel.page;
    const loaded = await pageLoad(panel);
    await panel.send({
      type: 'profile',
      profile: later(first, 4),
      title: 'Live profile: synthetic.elf',
      live: { ...live, running: false },
    });
    await page.locator('.header .live', { hasText: 'no longer live' }).waitFor();
    assert.match(
      (await page.locator('.live-note').textContent()) ?? '',
      /^Sampling stopped .*: the last [\d,]+ instructions · QEMU monitor: /,
    );
    assert.ok((await page.locator('table.grid tbody tr').count()) > 1, 'the rows stay');
    assert.equal(await pageLoad(panel), loaded);
    // A saved file afterwards is a profile of its own: no banner, drawn from the top.
    await panel.send({
      type: 'profile',
      profile: first,
      title: 'descent.json',
      file: '/ws/.cyclelens/results/descent.json',
    });
    await page.locator('.header .live').waitFor({ state: 'hidden' });
    assert.equal(await page.locator('.live-note').isHidden(), true);
  });

  it('the source tab takes new values in place: its scroll, focused line and expanded line stay', async () => {
    const page = panel.page;
    const loaded = await pageLoad(panel);
    const program = syntheticProfile({ count: 12, sourceLines: 400 });
    const path = program.functions[0]!.location!.path;
    await panel.send({ type: 'profile', profile: program, title: 'Live profile: synthetic.elf', live });
    await panel.send({ type: 'source', path, text: syntheticSource(400) });
    await panel.send({ type: 'cursorFunction', name: program.functions[0]!.name });
    await page.getByRole('tab', { name: 'Source' }).click();
    // Every line built (the list grows in chunks after the first paint).
    await page.waitForFunction(() => document.querySelectorAll('ol.source > li.line').length === 400);
    const line = (n: number) => page.locator(`ol.source > li.line[data-line="${n}"]`);
    await line(300).locator('button.expand').click();
    await line(250).focus();
    const scroller = page.locator('.source-view .scroller');
    await scroller.evaluate((e) => (e.scrollTop = 3000));
    const before = {
      scroll: await scroller.evaluate((e) => e.scrollTop),
      value: await line(250).locator('.value').textContent(),
      instruction: await line(300).locator('li.instruction .value').first().textContent(),
    };
    await panel.send({ type: 'profile', profile: later(program, 2), title: 'Live profile: synthetic.elf', live });
    await line(300)
      .locator('li.instruction .value', {
        hasText: `${2 * Number(before.instruction!.split(' ')[0]!.replace(/,/g, ''))}`,
      })
      .first()
      .waitFor();
    const value = (text: string | null): number => Number(text!.split(' ')[0]!.replace(/,/g, ''));
    assert.equal(
      value(await line(250).locator('.value').textContent()),
      2 * value(before.value),
      'the line shows its new count',
    );
    assert.equal(await scroller.evaluate((e) => e.scrollTop), before.scroll, 'the scroll stays');
    assert.equal(
      await page.evaluate(() => document.activeElement?.getAttribute('data-line')),
      '250',
      'the focused line stays focused',
    );
    assert.equal(
      await line(300).locator('button.expand').getAttribute('aria-expanded'),
      'true',
      'the expanded line stays expanded',
    );
    assert.equal(await page.locator('ol.source > li.line').count(), 400);
    assert.equal(await pageLoad(panel), loaded);
    assert.deepEqual(panel.errors, []);
  });
});
