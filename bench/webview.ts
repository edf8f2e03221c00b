/**
 * Profile panel benchmark: the built webview page (dist/webview.js, its Graphviz worker, the
 * production CSP) in Debian's Chromium, headless, fed synthetic profiles. Prints:
 *  1. Call graph of N nodes (default 2,000): Graphviz wasm layout in the worker + first SVG draw,
 *     from the profile's arrival to the frame after the draw (cold: first layout, the wasm compiles;
 *     warm: a second layout of the same graph).
 *  2. Annotated source of a 2,000-line file with 3 instructions per line: from the file's arrival to
 *     the frame showing the hottest line (first paint), and to the frame after all lines are in.
 *  3. Flame graph of 20,000 frames: profile arrival to the frame after the first canvas paint, then
 *     one zoom (a click's redraw) per frame, median and worst over 50 zooms.
 *  4. Table of 20,000 rows: one sort (a header click: sort + redraw of the shown rows), median of 10.
 * Figures are medians over --runs (default 5) fresh pages. Record them in docs/benchmarks.md.
 *   npm run bench -- webview [--runs N] [--nodes N] [--only graph|source|flame|table]
 */
import { PanelPage } from '../test/support/panelPage';
import { syntheticProfile, syntheticSource } from '../test/support/syntheticProfile';
import { median, option, printTable } from './support';

const runs = Number(option(process.argv, '--runs') ?? 0) || 5;
const graphNodes = Number(option(process.argv, '--nodes') ?? 0) || 2000;
const only = option(process.argv, '--only');
const part = (name: 'graph' | 'source' | 'flame' | 'table'): boolean => only === undefined || only === name;

interface PanelHandle {
  cyclelensPanel: {
    graph: { drawn: Promise<void> };
    flame: { zoom(i: number): void; rects: unknown[] };
    showTab(tab: string): void;
  };
}

async function graphRun(): Promise<{ cold: number; warm: number }> {
  const panel = await PanelPage.open();
  try {
    const profile = syntheticProfile({ count: graphNodes });
    const once = (): Promise<number> =>
      panel.page.evaluate(async (p) => {
        const w = window as unknown as PanelHandle;
        const t0 = performance.now();
        window.postMessage({ type: 'profile', profile: p, title: 'bench', live: false }, '*');
        // The message is dispatched in a task of its own: wait for the panel to start the layout.
        await new Promise((r) => setTimeout(r, 0));
        await w.cyclelensPanel.graph.drawn;
        // The frame after the draw: its paint is done when the next callback runs.
        await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
        return performance.now() - t0;
      }, profile);
    const cold = await once();
    const warm = await once();
    const drawnNodes = await panel.page.locator('g.node').count();
    if (drawnNodes !== graphNodes) throw new Error(`the call graph drew ${drawnNodes} of ${graphNodes} nodes`);
    return { cold, warm };
  } finally {
    await panel.close();
  }
}

async function sourceRun(): Promise<{ first: number; all: number }> {
  const panel = await PanelPage.open();
  try {
    const lines = 2000;
    const profile = syntheticProfile({ count: 3, sourceLines: lines, instructionsPerLine: 3 });
    await panel.send({ type: 'showTab', tab: 'source' });
    await panel.send({ type: 'profile', profile, title: 'bench', live: false });
    // The 2,000-line function (the panel first selects the hottest function, another one).
    await panel.send({ type: 'cursorFunction', name: profile.functions[0]!.name });
    await panel.page.locator('.source-view .note').filter({ hasText: 'Reading' }).waitFor();
    return await panel.page.evaluate(async ([path, text, count]) => {
      const t0 = performance.now();
      window.postMessage({ type: 'source', path, text }, '*');
      let first: number | undefined;
      for (;;) {
        await new Promise((r) => requestAnimationFrame(r));
        if (first === undefined && document.querySelector('ol.source li.line.heat-10')) first = performance.now() - t0;
        if (document.querySelectorAll('ol.source li.line').length >= count) break;
        if (performance.now() - t0 > 30_000) throw new Error(`the source view did not show ${count} lines`);
      }
      return { first: first ?? NaN, all: performance.now() - t0 };
    }, [profile.functions[0]!.location!.path, syntheticSource(lines), lines] as const);
  } finally {
    await panel.close();
  }
}

async function flameRun(): Promise<{ paint: number; zoomMedian: number; zoomWorst: number; frames: number }> {
  const panel = await PanelPage.open();
  try {
    const count = 20_000;
    const profile = syntheticProfile({ count, fanout: 4 });
    await panel.send({ type: 'showTab', tab: 'flame' });
    return await panel.page.evaluate(async ([p, n]) => {
      const w = window as unknown as PanelHandle;
      const canvas = document.querySelector('.flame-view canvas') as HTMLCanvasElement;
      const t0 = performance.now();
      window.postMessage({ type: 'profile', profile: p, title: 'bench', live: false }, '*');
      for (;;) {
        await new Promise((r) => requestAnimationFrame(r));
        if (w.cyclelensPanel.flame.rects.length === n + 1 && canvas.height > 0) break;
        if (performance.now() - t0 > 30_000) throw new Error('the flame graph did not paint');
      }
      const paint = performance.now() - t0;
      const zooms: number[] = [];
      for (let k = 0; k < 50; k++) {
        const index = k % 2 === 0 ? 1 + ((k * 7919) % n) : 0;
        const z0 = performance.now();
        w.cyclelensPanel.flame.zoom(index);
        zooms.push(performance.now() - z0);
        await new Promise((r) => requestAnimationFrame(r));
      }
      zooms.sort((a, b) => a - b);
      return { paint, zoomMedian: zooms[zooms.length >> 1]!, zoomWorst: zooms[zooms.length - 1]!, frames: n + 1 };
    }, [profile, count] as const);
  } finally {
    await panel.close();
  }
}

async function tableRun(): Promise<number> {
  const panel = await PanelPage.open();
  try {
    const profile = syntheticProfile({ count: 20_000 });
    await panel.send({ type: 'showTab', tab: 'table' });
    await panel.send({ type: 'profile', profile, title: 'bench', live: false });
    await panel.page.locator('table.grid tbody tr').first().waitFor();
    const times: number[] = [];
    for (const column of ['Self', 'Calls', 'Function', 'Inclusive', 'Mean', 'Self', 'Max', 'Status', 'Min', 'Share']) {
      times.push(await panel.page.evaluate(async (title) => {
        const button = Array.from(document.querySelectorAll('table.grid button.sort')).find((b) => b.textContent?.startsWith(title)) as HTMLButtonElement;
        const t0 = performance.now();
        button.click();
        await new Promise((r) => requestAnimationFrame(r));
        return performance.now() - t0;
      }, column));
    }
    return median(times);
  } finally {
    await panel.close();
  }
}

async function main(): Promise<void> {
  const graph: Array<{ cold: number; warm: number }> = [];
  const source: Array<{ first: number; all: number }> = [];
  const flame: Array<{ paint: number; zoomMedian: number; zoomWorst: number }> = [];
  const table: number[] = [];
  for (let i = 0; i < runs; i++) {
    // Each run's figures as they come: a slow machine still leaves a record.
    if (part('graph')) graph.push(await graphRun()), console.error(`run ${i + 1} graph: ${JSON.stringify(graph.at(-1))}`);
    if (part('source')) source.push(await sourceRun()), console.error(`run ${i + 1} source: ${JSON.stringify(source.at(-1))}`);
    if (part('flame')) flame.push(await flameRun()), console.error(`run ${i + 1} flame: ${JSON.stringify(flame.at(-1))}`);
    if (part('table')) table.push(await tableRun()), console.error(`run ${i + 1} table: ${table.at(-1)}`);
  }
  const ms = (v: number): string => `${v.toFixed(1)} ms`;
  printTable(['figure', `median of ${runs}`, 'goal'], [
    [`call graph, ${graphNodes} nodes: layout + first draw (cold, wasm compiles)`, ms(median(graph.map((g) => g.cold))), '< 1 s'],
    [`call graph, ${graphNodes} nodes: layout + draw again (warm)`, ms(median(graph.map((g) => g.warm))), '< 1 s'],
    ['annotated source, 2,000 lines × 3 instructions: first paint (hottest line)', ms(median(source.map((s) => s.first))), '< 200 ms'],
    ['annotated source, 2,000 lines × 3 instructions: all lines in', ms(median(source.map((s) => s.all))), ''],
    ['flame graph, 20,000 frames: first paint', ms(median(flame.map((f) => f.paint))), '< 200 ms'],
    ['flame graph zoom frame (median of 50)', ms(median(flame.map((f) => f.zoomMedian))), '< 16 ms'],
    ['flame graph zoom frame (worst of 50)', ms(median(flame.map((f) => f.zoomWorst))), '< 16 ms'],
    ['table, 20,000 rows: sort + redraw (median of 10)', ms(median(table)), '< 100 ms'],
  ]);
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
