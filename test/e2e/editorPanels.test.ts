import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { FrameLocator } from 'playwright-core';
import { contrastRatio, parseColour } from '../../webview/layout/contrast';
import { LEGIBLE_TEXT_PX, ZOOM_STEP } from '../../webview/layout/graphView';
import { CodeServerHarness, poll, sessionProcesses } from '../support/codeServerHarness';
import {
  activeEditor,
  answerDescentPrompts,
  notifications,
  revealLine,
  rv32,
  statusBarText,
  stopAndExpectNothingLeft,
} from '../support/codeServerUi';
import { markerLine } from '../support/markers';

// The editor and the profile panel as a person uses them, in the packaged CycleLens in code-server
// on the demo's single-pass firmware (QEMU RISC-V 32, the counting plugin loaded for exact live
// heat): a breakpoint click on a hot line, live and after the session ended; a descent's report
// and panel in one editor group; the call graph at Fit on a maximised group and under the wheel;
// flame graph labels against their fills in the light theme; the table keeping the keyboard; and
// commands that name a view opening that view, the live profile and a saved result set apart.

const dark = 'Default Dark Modern';
const light = 'Default Light Modern';
let harness: CodeServerHarness | undefined;
let mainLine = 0;

before(
  async () => {
    harness = await CodeServerHarness.start({
      name: 'editorPanels',
      requireFirmware: true,
      theme: light,
      viewport: { width: 1440, height: 900 },
      server: { instructionCounts: true },
    });
    mainLine = markerLine(join(harness.workspace, 'src', 'singlepass.c'), '#MAIN_FIRST');
  },
  { timeout: 15 * 60_000 },
);

after(() => stopAndExpectNothingLeft(harness, sessionProcesses));

/** The visible webview's page: VS Code nests it in two frames. */
function webview(h: CodeServerHarness): FrameLocator {
  return h.page.frameLocator('iframe.webview.ready').last().frameLocator('iframe#active-frame');
}

/** The lines of the active editor that have live heat drawn (a line background with its stripe). */
async function heatLines(h: CodeServerHarness): Promise<number[]> {
  return activeEditor(h).evaluate((editor) => {
    const numbers = Array.from(editor.querySelectorAll('.margin-view-overlays .line-numbers')).map((e) => ({
      line: Number((e.textContent ?? '').trim()),
      top: e.getBoundingClientRect().top,
    }));
    const lines = new Set<number>();
    for (const e of Array.from(editor.querySelectorAll('.view-overlays .cdr'))) {
      if (!/\bced-/.test(e.className)) continue;
      const style = getComputedStyle(e);
      if (style.backgroundColor === 'rgba(0, 0, 0, 0)' || parseFloat(style.borderLeftWidth) <= 0) continue;
      const line = numbers.find((n) => Math.abs(n.top - e.getBoundingClientRect().top) < 3)?.line;
      if (line !== undefined) lines.add(line);
    }
    return [...lines].sort((a, b) => a - b);
  });
}

async function groups(h: CodeServerHarness): Promise<number> {
  return h.page.locator('.editor-group-container').count();
}

test(
  'a breakpoint click on a hot line sets a breakpoint, while sampling and on the stale heat of an ended session',
  { timeout: 300_000 },
  async (t) => {
    const h = harness!;
    await h.startDebugging(rv32);
    await h.waitForTopFrame('main', mainLine, 90_000);
    await h.runCommand('CycleLens: Toggle Live Hotspots');
    await poll(
      () => statusBarText(h),
      (s) => /qemu-plugin · /.test(s),
      60_000,
    );
    // Stop at the program's end, so that the whole run's heat is there while the session lasts.
    await h.openFile('src/runtime.c');
    const endLine = markerLine(join(h.workspace, 'src', 'runtime.c'), '#PROGRAM_END');
    await h.clickGutter(endLine);
    await poll(
      () => h.breakpointLines(),
      (l) => l.includes(endLine),
      10_000,
    );
    await h.page.keyboard.press('F5');
    await h.waitForTopFrame('program_end', endLine, 90_000);

    await h.openFile('src/crc16.c');
    const hotLine = markerLine(join(h.workspace, 'src', 'crc16.c'), '#HOT_LEAF');
    await revealLine(h, hotLine);
    const heat = await poll(
      () => heatLines(h),
      (l) => l.includes(hotLine),
      30_000,
    );
    t.diagnostic(`heat in crc16.c: ${heat.join(' ')}`);
    assert.ok(heat.includes(hotLine), `crc16_step's body (line ${hotLine}) is hot`);
    await h.clickGutter(hotLine);
    const live = await poll(
      () => h.breakpointLines(),
      (l) => l.includes(hotLine),
      10_000,
    );
    await h.screenshot('editor-breakpoint-on-hot-line');
    assert.ok(live.includes(hotLine), `a click in the margin of hot line ${hotLine} sets a breakpoint (${live})`);

    // The session ends; its last heat stays (the status bar says "stopped") and takes no click either.
    assert.ok((await h.stopDebugging({ maxPresses: 3 })).ended, 'the session ends');
    await poll(
      () => statusBarText(h),
      (s) => /\(stopped\)/.test(s),
      15_000,
    );
    await h.runCommand('Remove All Breakpoints');
    await poll(
      () => h.breakpointLines(),
      (l) => l.length === 0,
      10_000,
    );
    await revealLine(h, hotLine);
    assert.ok((await heatLines(h)).includes(hotLine), 'the ended session still shows its heat on the line');
    await h.clickGutter(hotLine);
    const stale = await poll(
      () => h.breakpointLines(),
      (l) => l.includes(hotLine),
      10_000,
    );
    await h.screenshotInThemes('editor-stale-heat-breakpoint', [light, dark]);
    assert.ok(stale.includes(hotLine), `a click on the stale heat of line ${hotLine} sets a breakpoint (${stale})`);
    await h.runCommand('Remove All Breakpoints');
    await h.runCommand('CycleLens: Toggle Live Hotspots');
    await poll(
      () => heatLines(h),
      (l) => l.length === 0,
      10_000,
    );
  },
);

test(
  "a descent's report and call graph share one editor group, and a node's source opens beside them",
  { timeout: 400_000 },
  async (t) => {
    const h = harness!;
    await h.runCommand('View: Close All Editor Groups');
    await h.openFile('src/singlepass.c');
    await h.startDebugging(rv32);
    await h.waitForTopFrame('main', mainLine, 90_000);
    assert.equal(await groups(h), 1, 'one editor group before the descent');
    await h.runCommand('CycleLens: Where Do My Cycles Go? (Call-Graph Descent)…');
    await answerDescentPrompts(h, '5%');
    const toast = h.page.locator('.notifications-toasts .notification-toast', {
      hasText: /CycleLens descent finished/,
    });
    await toast
      .waitFor({ timeout: 240_000 })
      .catch(async () => assert.fail(`the descent did not finish: ${(await notifications(h)).join(' || ')}`));
    await toast.getByRole('button', { name: 'Open Call Graph' }).click();
    const page = webview(h);
    await page.locator('g.node').first().waitFor({ timeout: 60_000 });
    assert.equal(
      ((await page.locator('[role="tab"][aria-selected="true"]').textContent()) ?? '').trim(),
      'Call Graph',
      'Open Call Graph opens on the call graph',
    );
    const afterDescent = await groups(h);
    // The hottest function (main): Fit frames it, whatever else fits beside it.
    await page.locator('g.node.hot').first().click();
    await h.page.waitForFunction(
      () => Array.from(document.querySelectorAll('.tab.active .label-name')).some((e) => e.textContent?.endsWith('.c')),
      undefined,
      { timeout: 15_000 },
    );
    const afterClick = await groups(h);
    t.diagnostic(`editor groups: 1 before, ${afterDescent} after the descent, ${afterClick} after a node's click`);
    await h.screenshot('editor-groups-after-descent');
    assert.equal(afterDescent, 2, 'the report and the panel open in one group beside the source');
    assert.equal(afterClick, 2, "the node's source opens in the source's group");
  },
);

test(
  'the call graph at Fit on a maximised group: the hottest names legible, and even zoom steps',
  { timeout: 120_000 },
  async (t) => {
    const h = harness!;
    const page = webview(h);
    // The panel's group, maximised (the other group hidden), as the issue's panel was.
    await h.page
      .locator('.tab', { hasText: /\.json$/ })
      .first()
      .click();
    await h.runCommand('View: Toggle Maximize Editor Group');
    await page.getByRole('button', { name: 'Fit', exact: true }).click();
    const drawn = await page.locator('g.node[data-fn]').evaluateAll((gs) => {
      const svg = document.querySelector('svg.graph')!.getBoundingClientRect();
      return gs.map((g) => {
        const name = g.querySelector('.name')!;
        const box = g.querySelector('rect')!.getBoundingClientRect();
        const k = (g as SVGGraphicsElement).getScreenCTM()?.a ?? 0;
        // The node's inclusive share is the first figure of its second line ("incl 12.3 % · …").
        const incl = /incl ([\d.]+) %/.exec(g.querySelector('title')?.textContent ?? '')?.[1];
        return {
          name: name.textContent ?? '',
          px: parseFloat(getComputedStyle(name).fontSize) * k,
          share: incl ? Number(incl) : 0,
          inView: box.left >= svg.left && box.right <= svg.right && box.top >= svg.top && box.bottom <= svg.bottom,
        };
      });
    });
    const byShare = [...drawn].sort((a, b) => b.share - a.share);
    const framed = byShare.filter((n) => n.inView);
    t.diagnostic(`at Fit: ${framed.map((n) => `${n.name} ${n.share} % at ${n.px.toFixed(1)} px`).join(', ')}`);
    await h.screenshotInThemes('panel-graph-fit-maximised', [light, dark], () =>
      page.locator('g.node').first().waitFor(),
    );
    assert.ok(byShare[0]!.inView, `the hottest function, ${byShare[0]!.name}, is in view at Fit`);
    for (const n of framed) assert.ok(n.px >= LEGIBLE_TEXT_PX, `${n.name} is drawn at ${n.px.toFixed(1)} px`);
    const top = byShare.slice(0, 10).filter((n) => n.inView).length;
    assert.ok(top >= 3, `Fit frames the hottest functions together (${top} of the 10 hottest in view)`);
    const zoom = async (): Promise<number> =>
      Number(/scale\(([\d.e-]+)\)/.exec((await page.locator('svg.graph > g').getAttribute('transform')) ?? '')?.[1]);
    const box = (await page.locator('svg.graph').boundingBox())!;
    await h.page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    const ratios: number[] = [];
    for (let notch = 0; notch < 5; notch++) {
      const before = await zoom();
      await h.page.mouse.wheel(0, -100);
      const now = await poll(zoom, (k) => k !== before, 5_000);
      ratios.push(now / before);
    }
    t.diagnostic(`zoom per notch: ${ratios.map((r) => r.toFixed(4)).join(', ')}`);
    for (const r of ratios) assert.ok(Math.abs(r - ZOOM_STEP) < 1e-3, `a notch zoomed by ${r.toFixed(4)}`);
    await page.getByRole('button', { name: 'Fit', exact: true }).click();
    await h.runCommand('View: Toggle Maximize Editor Group');
  },
);

test('flame graph labels contrast with their fills in the light theme', { timeout: 120_000 }, async (t) => {
  const h = harness!;
  const page = webview(h);
  await page.getByRole('tab', { name: 'Flame Graph' }).click();
  // What the canvas is asked to draw: each label's colour and the fill of the frame under it.
  const pairs = await page.locator('.flame-view canvas').evaluate(async (canvas: HTMLCanvasElement) => {
    const g = canvas.getContext('2d')!;
    const out: { fill: string; text: string; label: string }[] = [];
    let fill = '';
    const fillRect = g.fillRect.bind(g);
    const fillText = g.fillText.bind(g);
    g.fillRect = (...args: Parameters<CanvasRenderingContext2D['fillRect']>) => {
      fill = String(g.fillStyle);
      fillRect(...args);
    };
    g.fillText = (...args: Parameters<CanvasRenderingContext2D['fillText']>) => {
      out.push({ fill, text: String(g.fillStyle), label: args[0] });
      fillText(...args);
    };
    const panel = (window as unknown as { cyclelensPanel: { flame: { draw(): void } } }).cyclelensPanel;
    panel.flame.draw();
    return out;
  });
  const worst = pairs
    .map((p) => ({ ...p, ratio: contrastRatio(parseColour(p.text)!, parseColour(p.fill)!) }))
    .sort((a, b) => a.ratio - b.ratio);
  t.diagnostic(
    `${pairs.length} labels; lowest contrast ${worst[0]?.ratio.toFixed(2)}:1 (${worst[0]?.text} ` +
      `on ${worst[0]?.fill}, "${worst[0]?.label}")`,
  );
  await h.screenshot('panel-flame-light');
  assert.ok(pairs.length > 3, 'the flame graph draws labels');
  for (const p of worst) assert.ok(p.ratio >= 4.5, `"${p.label}": ${p.text} on ${p.fill} is ${p.ratio.toFixed(2)}:1`);
});

test('a click in the table opens the source and the arrow keys go on moving the row', { timeout: 60_000 }, async () => {
  const h = harness!;
  const page = webview(h);
  await page.getByRole('tab', { name: 'Table' }).click();
  const rows = page.locator('table.grid tbody tr');
  await rows.nth(1).click();
  await h.page.waitForFunction(
    () => Array.from(document.querySelectorAll('.tab.active .label-name')).some((e) => e.textContent?.endsWith('.c')),
    undefined,
    { timeout: 15_000 },
  );
  await h.page.keyboard.press('ArrowDown');
  await h.page.keyboard.press('ArrowDown');
  const focused = await page.locator('table.grid tbody tr:focus').getAttribute('data-index', { timeout: 5_000 });
  assert.equal(focused, '3', 'two ArrowDowns after a click on row 1 are on row 3');
  assert.equal(
    await page.locator('table.grid tbody tr.selected').count(),
    1,
    "the clicked row's function is the selection",
  );
});

test(
  'a command that names a view opens that view: Show Live Profile, Show Call Graph, Show Flame Graph',
  { timeout: 240_000 },
  async (t) => {
    const h = harness!;
    // The session of the descent is still stopped at main: sample the rest of its run.
    await h.runCommand('CycleLens: Toggle Live Hotspots');
    await poll(
      () => statusBarText(h),
      (s) => /qemu-plugin · /.test(s),
      60_000,
    );
    await h.page.keyboard.press('F5');
    await h.debugToolbar().waitFor({ state: 'hidden', timeout: 60_000 });
    await h.runCommand('CycleLens: Show Live Profile');
    await poll(
      () => h.activeTab(),
      (s) => /^Live profile: /.test(s),
      30_000,
    );
    const page = webview(h);
    const tab = async (): Promise<string> =>
      (
        (await page
          .locator('[role="tab"][aria-selected="true"]')
          .textContent()
          .catch(() => '')) ?? ''
      ).trim();
    assert.equal(await poll(tab, (s) => s === 'Table', 30_000), 'Table', 'the live profile opens on its table');

    await h.runCommand('CycleLens: Show Call Graph');
    await poll(
      () => h.activeTab(),
      (s) => s.endsWith('.json'),
      30_000,
    );
    assert.equal(await poll(tab, (s) => s === 'Call Graph', 30_000), 'Call Graph', 'Show Call Graph');
    // No flip back: a few seconds later (the live panel's last pictures, a repaint) it is still there.
    await new Promise((r) => setTimeout(r, 3_000));
    assert.equal(await tab(), 'Call Graph', 'the call graph stays');
    await h.runCommand('CycleLens: Show Flame Graph');
    assert.equal(await poll(tab, (s) => s === 'Flame Graph', 30_000), 'Flame Graph', 'Show Flame Graph');
    // The live profile has its own panel: it was not taken over.
    await h.page
      .locator('.tab', { hasText: /^Live profile: / })
      .first()
      .click();
    assert.equal(await poll(tab, (s) => s === 'Table', 30_000), 'Table', 'the live profile is still on its table');
    t.diagnostic(`editor groups at the end: ${await groups(h)}`);
    assert.ok((await groups(h)) <= 2, 'no group piled up');
    await h.screenshot('panel-views-by-command');
    await h.runCommand('CycleLens: Toggle Live Hotspots');
  },
);
