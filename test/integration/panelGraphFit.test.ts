import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LEGIBLE_TEXT_PX, ZOOM_STEP } from '../../webview/layout/graphView';
import { testOutputDir } from '../support/paths';
import { PanelPage } from '../support/panelPage';
import { syntheticProfile } from '../support/syntheticProfile';

/**
 * The call graph at Fit and under the wheel, in the built page in Chromium, at the size of a
 * maximised panel: a wide graph (120 functions, three callees each) with one function whose
 * "not measurable" reason is a long sentence, as an interrupt handler's is. Fit must leave the
 * hottest functions' names legible, a long line must not widen its box, and every wheel notch must
 * zoom by the same factor whatever the browser reports as the notch's size. And a click in the
 * table keeps the keyboard in the panel.
 */
const reason =
  'its first instruction is the target of an exception vector, and the entry patch would move ' +
  'the vector table entry it shares with trap_return';

interface Drawn {
  name: string;
  /** The name's on-screen font size (CSS px): its font size times the zoom. */
  fontPx: number;
  inView: boolean;
  boxWidth: number;
  title: string;
}

describe('the call graph at Fit, under the wheel, and the table keyboard', () => {
  let panel: PanelPage;
  const profile = syntheticProfile({ count: 120 });
  const long = profile.functions[4]!;
  long.status = 'unmeasurable';
  long.reason = reason;

  before(async () => {
    panel = await PanelPage.open({ viewport: { width: 1440, height: 900 } });
    await panel.send({ type: 'profile', profile, title: 'wide graph' });
    await panel.graphDrawn();
  });
  after(async () => panel?.close());

  /** Each drawn function box as the user sees it now. */
  async function drawn(): Promise<Drawn[]> {
    return panel.page.locator('g.node[data-fn]').evaluateAll((gs) => {
      const svg = document.querySelector('svg.graph')!.getBoundingClientRect();
      return gs.map((g) => {
        const name = g.querySelector('.name') as SVGTextContentElement | null;
        const box = (g.querySelector('rect') as SVGGraphicsElement).getBoundingClientRect();
        const scale = (g as SVGGraphicsElement).getScreenCTM()?.a ?? 0;
        return {
          name: name?.textContent ?? '',
          fontPx: name ? parseFloat(getComputedStyle(name).fontSize) * scale : 0,
          inView: box.left >= svg.left && box.right <= svg.right && box.top >= svg.top && box.bottom <= svg.bottom,
          boxWidth: Number(g.querySelector('rect')!.getAttribute('width')),
          title: g.querySelector('title')?.textContent ?? '',
        };
      });
    });
  }

  /** The zoom now: the scale of the graph's layer. */
  async function zoom(): Promise<number> {
    const t = (await panel.page.locator('svg.graph > g').getAttribute('transform')) ?? '';
    return Number(/scale\(([\d.e-]+)/.exec(t)?.[1] ?? (t === '' ? 1 : NaN));
  }

  it('Fit leaves the hottest functions legible and in view', async (t) => {
    const page = panel.page;
    await page.getByRole('button', { name: 'Whole graph' }).click();
    const whole = await drawn();
    t.diagnostic(`whole graph: names at ${whole[0]!.fontPx.toFixed(1)} px`);
    assert.ok(whole[0]!.fontPx < LEGIBLE_TEXT_PX, 'the whole graph does not fit legibly (the case Fit is for)');
    await page.getByRole('button', { name: 'Fit', exact: true }).click();
    const boxes = await drawn();
    const byShare = [...profile.functions]
      .sort((a, b) => b.inclusive!.value - a.inclusive!.value)
      .map((f) => boxes.find((b) => b.title.split('\n')[0] === f.name)!);
    const framed = byShare.filter((b) => b.inView);
    t.diagnostic(
      `at Fit: ${framed.length} functions in view at ${framed[0]?.fontPx.toFixed(1)} px: ${framed
        .slice(0, 8)
        .map((b) => b.name)
        .join(', ')}`,
    );
    // A tree this wide cannot show the hottest function's three callees side by side at a legible
    // size (they head thirds of the graph): Fit frames the hottest and those of the next that fit.
    const [hottest] = byShare;
    assert.ok(hottest!.inView, `the hottest function, ${hottest!.name}, is in view at Fit`);
    for (const b of framed)
      assert.ok(b.fontPx >= LEGIBLE_TEXT_PX, `${b.name}'s name is drawn at ${b.fontPx.toFixed(1)} px`);
    const top = byShare.slice(0, 10).filter((b) => b.inView).length;
    assert.ok(top >= 3, `Fit frames the hottest functions together (${top} of the 10 hottest in view)`);
    mkdirSync(join(testOutputDir, 'panel'), { recursive: true });
    await page.screenshot({ path: join(testOutputDir, 'panel', 'graph-fit-wide.png') });
  });

  it('a long reason is elided in its box and whole in its tooltip', async () => {
    const boxes = await drawn();
    const box = boxes.find((b) => b.title.startsWith(`${long.name}\n`))!;
    const widest = Math.max(...boxes.filter((b) => b !== box).map((b) => b.boxWidth));
    assert.ok(box.title.includes(reason), 'the tooltip has the whole reason');
    assert.ok(
      box.boxWidth <= Math.max(widest, 40 * 7 + 16),
      `the box is ${box.boxWidth} px wide ` + `(others ≤ ${widest})`,
    );
    const shown = await panel.page.locator(`g.node[data-fn="${long.id}"] tspan.status`).textContent();
    assert.match(shown ?? '', /^not measurable: .+…$/, `the box ends the reason in an ellipsis ("${shown}")`);
  });

  it('every wheel notch zooms by the same factor, whatever size the browser gives it', async (t) => {
    const page = panel.page;
    const box = (await page.locator('svg.graph').boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    const ratios: number[] = [];
    // Notches of 100 px (Chromium's), 120 and 300 (other mice and platforms), in and then out.
    for (const deltaY of [-100, -100, -120, -300, -100, 100, 300, 120]) {
      const before = await zoom();
      await page.mouse.wheel(0, deltaY);
      await page.waitForFunction((k) => {
        const t = document.querySelector('svg.graph > g')?.getAttribute('transform') ?? '';
        return Number(/scale\(([\d.e-]+)/.exec(t)?.[1]) !== k;
      }, before);
      ratios.push((await zoom()) / before);
    }
    t.diagnostic(`zoom ratios per notch: ${ratios.map((r) => r.toFixed(4)).join(', ')}`);
    for (const [i, r] of ratios.entries()) {
      const want = i < 5 ? ZOOM_STEP : 1 / ZOOM_STEP;
      assert.ok(Math.abs(r - want) < 1e-3, `notch ${i + 1} zoomed by ${r.toFixed(4)}, not ${want.toFixed(4)}`);
    }
  });

  it('a click on a table row opens its source and keeps the keyboard on the table', async () => {
    const page = panel.page;
    await page.getByRole('tab', { name: 'Table' }).click();
    const rows = page.locator('table.grid tbody tr');
    await rows.nth(3).click();
    const opened = (await panel.posted()).filter((m) => m.type === 'openLocation').at(-1);
    assert.equal(opened?.type === 'openLocation' && opened.keepFocus, true, 'the host is asked to keep the focus here');
    await page.keyboard.press('ArrowDown');
    assert.equal(
      await page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset['index']),
      '4',
      'ArrowDown after the click moves to the row below the clicked one',
    );
    assert.deepEqual(panel.errors, []);
  });
});
