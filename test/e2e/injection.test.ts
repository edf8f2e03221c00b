import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CodeServerHarness, poll, type TreeRow } from '../support/codeServerHarness';
import {
  afterLineText,
  clickCodeLens,
  codeLenses,
  type CodeLensRow,
  stopAndExpectNothingLeft,
  functionLines,
  gutterIconLines,
  hoverOnLine,
  lineNumberMenu,
  notifications,
  revealLine,
  rv32,
  showMeasurements,
  statusBarText,
  waitForCodeLens,
} from '../support/codeServerUi';
import { markerLine } from '../support/markers';

// Injected measurements in the packaged CycleLens, in code-server, as a person makes them: a region
// marked from the line-number context menu of src/dsp.c, a function measured from its "Measure"
// CodeLens; the program then runs at full speed to a breakpoint on program_end, where the results
// are read and drawn (after-line text, hover, CodeLens title, Measurements view). Every assertion
// reads the workbench's DOM.

const dark = 'Default Dark Modern';
const light = 'Default Light Modern';
/** The fixture's single-pass program calls fir_filter once a round, 20 rounds (singlepass.c). */
const firCalls = 20;

let harness: CodeServerHarness | undefined;
let dsp = '';
let regionStart = 0;
let regionEnd = 0;
let programEnd = 0;
let fir = { first: 0, last: 0 };
let mainLine = 0;
/** The line the "Measure" CodeLens of fir_filter sat above, for the placement test. */
let firLensLine: number | undefined;
/** The region's inline result, for the test that judges its numbers. */
let regionInline = '';
/** What the status bar said while the region's start was pending, and after its end was chosen. */
const hint = { pending: '', completed: '' };
/** Every notification toast shown from marking the region until its result was read. */
const regionToasts: string[] = [];
/** The region's hover at program_end. */
let regionHover = '';
/** The hint InjectedMeasurements shows in the status bar while a region's start waits for its end. */
const pendingHint = /region starts at line/;

before(
  async () => {
    // requireFirmware: the demo workspace builds its firmware in place, so the ELF's debug
    // information names the sources the editor has open (as in a user's project).
    harness = await CodeServerHarness.start({
      name: 'injection',
      requireFirmware: true,
      theme: dark,
      viewport: { width: 1440, height: 900 },
    });
    dsp = join(harness.workspace, 'src', 'dsp.c');
    regionStart = markerLine(dsp, '#REGION_START');
    regionEnd = markerLine(dsp, '#REGION_END');
    programEnd = markerLine(join(harness.workspace, 'src', 'runtime.c'), '#PROGRAM_END');
    fir = functionLines(dsp, 'fir_filter');
    mainLine = markerLine(join(harness.workspace, 'src', 'singlepass.c'), '#MAIN_FIRST');
  },
  { timeout: 15 * 60_000 },
);

after(() => stopAndExpectNothingLeft(harness));

/** Starts "QEMU RISC-V 32" from Run and Debug and waits for the stop at main. */
async function startAtMain(h: CodeServerHarness): Promise<void> {
  await h.startDebugging(rv32);
  await h.waitForTopFrame('main', mainLine, 60_000).catch(async (e: unknown) => {
    await h.screenshot('injection-start-failed');
    throw e;
  });
}

/** Puts a breakpoint on #PROGRAM_END by clicking runtime.c's gutter (unless one is there). */
async function breakpointAtProgramEnd(h: CodeServerHarness): Promise<void> {
  await h.openFile('src/runtime.c');
  if (!(await h.breakpointLines()).includes(programEnd)) await h.clickGutter(programEnd);
  const lines = await poll(
    () => h.breakpointLines(),
    (l) => l.includes(programEnd),
    5000,
  );
  assert.ok(
    lines.includes(programEnd),
    `a click in runtime.c's gutter puts a breakpoint on line ${programEnd} (#PROGRAM_END); ` +
      `glyphs on ${JSON.stringify(lines)}`,
  );
}

/** Continue (F5) and wait for the stop at program_end; returns how long the run took. */
async function continueToProgramEnd(h: CodeServerHarness): Promise<number> {
  const started = Date.now();
  await h.page.keyboard.press('F5');
  await h.waitForTopFrame('program_end', programEnd, 90_000);
  return Date.now() - started;
}

/** The number before "calls" or "passes" in `text`, or undefined. */
function countIn(text: string): number | undefined {
  const m = /(\d[\d,]*)\s+(?:calls|passes)\b/.exec(text);
  return m ? Number(m[1]!.replace(/,/g, '')) : undefined;
}

const rowText = (rows: TreeRow[]) => rows.map((r) => `${r.label} — ${r.description}`).join(' | ');

test(
  'a region marked from the line-number menu of dsp.c shows its passes at program_end',
  { timeout: 150_000 },
  async (t) => {
    const h = harness!;
    await h.showRunAndDebug();
    await h.setSidebarWidth(440);
    await h.setViewExpanded('Watch', false);
    await startAtMain(h);

    await h.openFile('src/dsp.c');
    await lineNumberMenu(h, regionStart, 'Measure Region from Here');
    const pending = await poll(
      () => gutterIconLines(h, 'region-pending'),
      (l) => l.includes(regionStart),
      5000,
    );
    hint.pending = await poll(
      () => statusBarText(h),
      (s) => pendingHint.test(s),
      5000,
    );
    await lineNumberMenu(h, regionEnd, 'Measure Region to Here');
    const starts = await poll(
      () => gutterIconLines(h, 'region-start'),
      (l) => l.includes(regionStart),
      10_000,
    );
    const ends = await poll(
      () => gutterIconLines(h, 'region-end'),
      (l) => l.includes(regionEnd),
      5000,
    );
    const measuring = await poll(
      () => afterLineText(h, regionStart),
      (s) => s !== '',
      5000,
    );
    // The hint goes with the pending start; anything the injection notifies has arrived by now.
    hint.completed = await poll(
      () => statusBarText(h),
      (s) => !pendingHint.test(s),
      3000,
    );
    for (const n of await notifications(h)) regionToasts.push(n);
    t.diagnostic(`status bar while pending: "${hint.pending}"; once the region is complete: "${hint.completed}"`);
    t.diagnostic(
      `after marking: pending marker on ${JSON.stringify(pending)}, start markers ${JSON.stringify(starts)}, ` +
        `end markers ${JSON.stringify(ends)}, inline "${measuring}"`,
    );
    await h.screenshot('injection-region-marked');
    assert.ok(
      pending.includes(regionStart),
      `"Measure Region from Here" marks line ${regionStart} (#REGION_START) as a pending start`,
    );
    assert.deepEqual(starts, [regionStart], `the region-start marker sits on #REGION_START (${regionStart})`);
    assert.deepEqual(ends, [regionEnd], `the region-end marker sits on #REGION_END (${regionEnd})`);
    assert.match(measuring, /measuring/i, 'until the next stop the line says it is measuring');

    await breakpointAtProgramEnd(h);
    t.diagnostic(`continue to program_end: ${await continueToProgramEnd(h)} ms`);

    await h.openFile('src/dsp.c');
    await revealLine(h, regionStart);
    regionInline = await poll(
      () => afterLineText(h, regionStart),
      (s) => countIn(s) !== undefined,
      15_000,
    );
    const rows = await showMeasurements(h, (r) => r.some((row) => countIn(row.description) !== undefined));
    const hover = await hoverOnLine(h, regionStart, /passes/).catch((e: unknown) => `(no hover: ${String(e)})`);
    regionHover = hover;
    for (const n of await notifications(h)) if (!regionToasts.includes(n)) regionToasts.push(n);
    await h.dismissHover();
    await h.screenshot('injection-region-result');
    await h.screenshotInThemes('injection-region', [dark, light], () => revealLine(h, regionStart));
    t.diagnostic(`#REGION_START line shows: "${regionInline}"`);
    t.diagnostic(`Measurements: ${rowText(rows)}`);
    t.diagnostic(`hover: ${hover.replace(/\s+/g, ' ')}`);

    const count = countIn(regionInline);
    assert.ok(count !== undefined, `the #REGION_START line shows a count of calls or passes ("${regionInline}")`);
    assert.ok(count > 0, `the count is above zero ("${regionInline}")`);
    const region = rows.find((r) => r.level === 1 && countIn(r.description) !== undefined);
    assert.ok(region, `the Measurements view lists the region with its result (${rowText(rows)})`);
    assert.match(region.label, /fir_filter/, 'the region is named after the function it lies in');
    assert.ok(
      region.label.includes(`dsp.c:${regionStart}–${regionEnd}`),
      `the region is named by its source lines dsp.c:${regionStart}–${regionEnd} ("${region.label}")`,
    );
    assert.doesNotMatch(region.label, /0x[0-9a-f]/i, "the region's name shows no patch addresses");
    assert.equal(countIn(region.description), count, 'the view and the editor show the same count');
    assert.match(hover, new RegExp(`passes ${count}\\b`), "the hover on the region's line shows the passes");
  },
);

test('the status-bar hint of a pending region goes once the region is complete', () => {
  assert.match(
    hint.pending,
    pendingHint,
    'while the start waits for its end, the status bar says how to finish the region',
  );
  assert.doesNotMatch(
    hint.completed,
    pendingHint,
    `the hint is still shown after "Measure Region to Here" ("${hint.completed}")`,
  );
});

test("marking an ordinary region pops up no trampoline note; the hover keeps the adapter's notes", (t) => {
  t.diagnostic(`toasts: ${JSON.stringify(regionToasts)}`);
  // The adapter's note that a call moved into the trampoline keeps memory reserved asks nothing of
  // the user: it belongs in the log and the hover, not in a toast.
  assert.deepEqual(
    regionToasts.filter((n) => /trampoline|stays reserved/i.test(n)),
    [],
    'a notification about the trampoline was shown',
  );
  t.diagnostic(`hover: ${regionHover.replace(/\s+/g, ' ')}`);
  const title = regionHover.split('\n')[0] ?? '';
  assert.ok(
    title.includes(`dsp.c:${regionStart}–${regionEnd}`),
    `the hover's title names the region by its source lines ("${title}")`,
  );
});

test("the region's inline result reads consistently: its mean lies between its min and max", () => {
  // "per pass MEAN (MIN–MAX)" as InjectedMeasurements draws it.
  const m = /per pass ([\d.]+)\s*([kMG]?) \(([\d.]+)\s*([kMG]?)–([\d.]+)\s*([kMG]?)\)/.exec(regionInline);
  assert.ok(m, `the inline result has "per pass … (min–max)" ("${regionInline}")`);
  const scale = (v: string, unit: string) =>
    Number(v) * ({ '': 1, k: 1e3, M: 1e6, G: 1e9 } as Record<string, number>)[unit]!;
  const [mean, min, max] = [scale(m[1]!, m[2]!), scale(m[3]!, m[4]!), scale(m[5]!, m[6]!)];
  assert.ok(
    min <= mean && mean <= max,
    `"${regionInline}" shows a mean of ${mean} outside its own range ${min}–${max}`,
  );
});

test('the "Measure" CodeLens of fir_filter counts its 20 calls', { timeout: 150_000 }, async (t) => {
  const h = harness!;
  // The region test ended at program_end; a fresh run measures from main.
  const { presses } = await h.stopDebugging({ maxPresses: 3 });
  t.diagnostic(`previous session stopped after ${presses} Shift+F5 press(es)`);
  // The first session's notifications are not about this one.
  await h.runCommand('Notifications: Clear All Notifications');
  await startAtMain(h);
  await h.openFile('src/dsp.c');
  await revealLine(h, fir.first);
  // fir_filter's CodeLens: the first one drawn from its definition line to its closing brace.
  const inFir = (lenses: CodeLensRow[]) =>
    lenses.filter((l) => l.line !== undefined && l.line >= fir.first && l.line <= fir.last);
  await poll(
    () => codeLenses(h),
    (l) => inFir(l).some((x) => x.text === 'Measure'),
    30_000,
  );
  // VS Code may first draw lenses from an earlier resolution and move them when the new ones
  // arrive: use the positions once two reads a second apart agree.
  let lenses = await codeLenses(h);
  for (let i = 0; i < 10; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    const again = await codeLenses(h);
    const same = JSON.stringify(inFir(again)) === JSON.stringify(inFir(lenses));
    lenses = again;
    if (same) break;
  }
  const offered = inFir(lenses).find((l) => l.text === 'Measure');
  t.diagnostic(`CodeLens of fir_filter (lines ${fir.first}–${fir.last}): ${JSON.stringify(inFir(lenses))}`);
  assert.ok(
    offered,
    `no "Measure" CodeLens within fir_filter (lines ${fir.first}–${fir.last}); drawn: ${JSON.stringify(lenses)}`,
  );
  firLensLine = offered.line!;
  await clickCodeLens(h, firLensLine, /^Measure$/);
  const measuring = await waitForCodeLens(h, firLensLine, /\$\(pulse\)/, 15_000);
  t.diagnostic(`after the click: "${measuring.text}"`);

  await breakpointAtProgramEnd(h);
  t.diagnostic(`continue to program_end: ${await continueToProgramEnd(h)} ms`);

  await h.openFile('src/dsp.c');
  await revealLine(h, fir.first);
  const lens = await waitForCodeLens(h, firLensLine, /\bcalls\b/, 15_000).catch(async (e: unknown) => {
    await h.screenshot('injection-function-codelens');
    throw e;
  });
  const rows = await showMeasurements(h, (r) => r.some((row) => row.label === 'fir_filter'));
  await h.dismissHover();
  await h.screenshot('injection-function-codelens');
  t.diagnostic(`CodeLens of fir_filter at program_end: "${lens.text}"`);
  t.diagnostic(`Measurements: ${rowText(rows)}`);
  assert.match(lens.text, /^\$\(pulse\)/, "the measured function's CodeLens carries the pulse icon");
  assert.match(
    lens.text,
    new RegExp(`(^|\\s)${firCalls} calls\\b`),
    `the CodeLens reads "${firCalls} calls" ("${lens.text}")`,
  );
  const row = rows.find((r) => r.label === 'fir_filter');
  assert.ok(row, `the Measurements view lists fir_filter (${rowText(rows)})`);
  assert.match(
    row.description,
    new RegExp(`^${firCalls} calls\\b`),
    `its row says ${firCalls} calls ("${row.description}")`,
  );
});

test('the "Measure" CodeLens sits directly above fir_filter\'s definition line', () => {
  assert.ok(firLensLine !== undefined, 'the CodeLens test found no CodeLens for fir_filter');
  // VS Code draws a CodeLens above the line it belongs to; for a function that is its signature
  // (as reference and test CodeLens do), not a line inside its body.
  assert.equal(
    firLensLine,
    fir.first,
    `the CodeLens sits above line ${firLensLine}, inside the body, not above the definition ` +
      `"void fir_filter(…)" on line ${fir.first}`,
  );
});
