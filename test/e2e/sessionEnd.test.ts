import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { TreeRow } from '../support/workbenchDriver';
import { CodeServerHarness, poll, sessionProcesses } from '../support/codeServerHarness';
import {
  afterLineText,
  allDecorationTexts,
  codeLenses,
  emulatorOrDebugger,
  stopAndExpectNothingLeft,
  gutterIconLines,
  lineNumberMenu,
  processesMatching,
  revealLine,
  rv32,
  showMeasurements,
} from '../support/codeServerUi';
import { markerLine } from '../support/markers';

// The end of a session in the packaged CycleLens, in code-server: with a region of src/dsp.c
// measured and its result read at program_end, Stop (Shift+F5) must take everything of the
// session off the screen (the result text, the region's gutter markers, the view's entry) and
// leave no QEMU or GDB behind. Assertions read the DOM and /proc.

const dark = 'Default Dark Modern';
/** The region's result as InjectedMeasurements draws it: "<n> calls · …" or "measuring…". */
const resultText = /\d+\s+(calls|passes)\b|measuring/;

let harness: CodeServerHarness | undefined;
let workspaceElf = '';
let regionStart = 0;
let regionEnd = 0;
let programEnd = 0;
let mainLine = 0;
/** The region's name in the Measurements view while the session ran. */
let regionLabel = '';
/** How the stop went: presses needed, and what was on screen between a press that did not end it and the next. */
let stop = { presses: 0, endedByFirst: false, between: '' };
/** When the region was completed ("Measure Region to Here"). */
let marked = 0;

before(
  async () => {
    harness = await CodeServerHarness.start({
      name: 'sessionEnd',
      requireFirmware: true,
      theme: dark,
      viewport: { width: 1440, height: 900 },
    });
    workspaceElf = join(harness.workspace, 'build', 'rv32');
    const dsp = join(harness.workspace, 'src', 'dsp.c');
    regionStart = markerLine(dsp, '#REGION_START');
    regionEnd = markerLine(dsp, '#REGION_END');
    programEnd = markerLine(join(harness.workspace, 'src', 'runtime.c'), '#PROGRAM_END');
    mainLine = markerLine(join(harness.workspace, 'src', 'singlepass.c'), '#MAIN_FIRST');
  },
  { timeout: 15 * 60_000 },
);

after(() => stopAndExpectNothingLeft(harness));

test('a region of dsp.c is measured and its result read at program_end', { timeout: 150_000 }, async (t) => {
  const h = harness!;
  await h.showRunAndDebug();
  await h.setSidebarWidth(440);
  await h.startDebugging(rv32);
  await h.waitForTopFrame('main', mainLine, 60_000);

  await h.openFile('src/dsp.c');
  await lineNumberMenu(h, regionStart, 'Measure Region from Here');
  await lineNumberMenu(h, regionEnd, 'Measure Region to Here');
  marked = Date.now();
  await h.openFile('src/runtime.c');
  await h.clickGutter(programEnd);
  await poll(
    () => h.breakpointLines(),
    (l) => l.includes(programEnd),
    5000,
  );
  await h.page.keyboard.press('F5');
  await h.waitForTopFrame('program_end', programEnd, 90_000);

  await h.openFile('src/dsp.c');
  await revealLine(h, regionStart);
  const inline = await poll(
    () => afterLineText(h, regionStart),
    (s) => /\d+\s+(calls|passes)\b/.test(s),
    15_000,
  );
  const rows = await showMeasurements(h, (r) => r.some((row) => /\bcalls\b/.test(row.description)));
  await h.dismissHover();
  await h.screenshot('sessionEnd-before-stop');
  t.diagnostic(
    `#REGION_START shows "${inline}"; Measurements: ${rows.map((r) => `${r.label} — ${r.description}`).join(' | ')}`,
  );
  // The state the stop must clear: this test only sets it up.
  assert.match(inline, /\d+\s+(calls|passes)\b/, "the region's result is drawn on #REGION_START");
  assert.deepEqual(await gutterIconLines(h, 'region-start'), [regionStart], 'the region-start marker is drawn');
  assert.deepEqual(await gutterIconLines(h, 'region-end'), [regionEnd], 'the region-end marker is drawn');
  const region = rows.find((r) => /\bcalls\b/.test(r.description));
  assert.ok(region, 'the Measurements view lists the region');
  regionLabel = region.label;
});

test('one Stop (Shift+F5) ends the session', { timeout: 60_000 }, async (t) => {
  const h = harness!;
  const first = await h.stopDebugging({ maxPresses: 1, perPressMs: 10_000 });
  stop = { presses: 1, endedByFirst: first.ended, between: '' };
  if (!first.ended) {
    // What a person sees while the first press has not ended the session.
    const procs = await h.serverProcesses(sessionProcesses);
    stop.between =
      `call stack ${JSON.stringify(await h.callStack())} (${await h.callStackState()}); ` +
      `inline "${await afterLineText(h, regionStart)}"; ` +
      `processes: ${procs.map((p) => p.command.split(' ')[0]!.split('/').pop()).join(', ') || 'none'}`;
    await h.screenshot('sessionEnd-after-first-stop');
    t.diagnostic(`10 s after the first Shift+F5: ${stop.between}`);
    // Go on stopping so the next tests judge an ended session.
    const again = await h.stopDebugging({ maxPresses: 2, perPressMs: 10_000 });
    stop.presses += again.presses;
    t.diagnostic(`further Shift+F5 presses: ${again.presses}, ended: ${again.ended}`);
  }
  assert.ok(stop.endedByFirst, `the debug toolbar is still shown 10 s after Shift+F5; meanwhile: ${stop.between}`);
});

test(
  "after the stop, dsp.c shows neither the result text nor the region's gutter markers",
  { timeout: 60_000 },
  async (t) => {
    const h = harness!;
    assert.equal(
      await h.debugToolbar().isVisible(),
      false,
      `the session did not end (Shift+F5 pressed ${stop.presses} times)`,
    );
    await h.openFile('src/dsp.c');
    await revealLine(h, regionStart);
    const texts = await poll(
      () => allDecorationTexts(h),
      (d) => !d.some((x) => resultText.test(x)),
      5000,
    );
    const markers = {
      start: await gutterIconLines(h, 'region-start'),
      end: await gutterIconLines(h, 'region-end'),
      pending: await gutterIconLines(h, 'region-pending'),
    };
    const lenses = await codeLenses(h);
    const status = (await h.page.locator('.part.statusbar').innerText()).replace(/\s+/g, ' ');
    await h.screenshot('sessionEnd-after-stop');
    t.diagnostic(
      `status bar ${Math.round((Date.now() - marked) / 1000)} s after the region was completed: "${status}"`,
    );
    t.diagnostic(
      `decoration texts: ${JSON.stringify(texts)}; markers: ${JSON.stringify(markers)}; CodeLens: ` +
        `${JSON.stringify(lenses)}`,
    );
    assert.deepEqual(
      texts.filter((x) => resultText.test(x)),
      [],
      'no result text is drawn in the editor',
    );
    assert.deepEqual(markers, { start: [], end: [], pending: [] }, 'no region marker is left in the gutter');
    assert.deepEqual(
      lenses.filter((l) => l.text.startsWith('$(pulse)')),
      [],
      'no measured-function CodeLens is left',
    );
    assert.doesNotMatch(
      status,
      /region starts at line/,
      'the hint for a pending region start is not left in the status bar',
    );
  },
);

test(
  'after the stop, the Measurements view keeps the injected region only as from the ended run',
  { timeout: 30_000 },
  async (t) => {
    const h = harness!;
    assert.ok(regionLabel !== '', 'the first test found the region in the view');
    const ended = (row: TreeRow): boolean => /from the ended run/.test(row.description);
    const rows = await showMeasurements(
      h,
      (r) => r.some((row) => row.label === regionLabel) && r.filter((row) => row.label === regionLabel).every(ended),
      5000,
    );
    await h.screenshot('sessionEnd-measurements');
    t.diagnostic(`Measurements rows: ${JSON.stringify(rows)}`);
    const region = rows.filter((r) => r.label === regionLabel);
    assert.ok(region.length > 0, `the view lists "${regionLabel}" from the ended run`);
    for (const r of region) assert.ok(ended(r), `"${regionLabel}" is marked as from the ended run: ${r.description}`);
  },
);

test('no QEMU or GDB process of the session is left', { timeout: 30_000 }, async (t) => {
  const h = harness!;
  const tagged = await h.waitForNoServerProcesses(emulatorOrDebugger, 10_000);
  // Also by command line, in /proc: QEMU names this workspace's ELF.
  const qemu = processesMatching(new RegExp(`qemu-system-.*${workspaceElf.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  const adapters = await h.serverProcesses(/dist\/adapter\.js/);
  t.diagnostic(`adapter processes left: ${adapters.length}`);
  assert.deepEqual(tagged, [], 'QEMU or GDB started by this code-server is still running');
  assert.deepEqual(qemu, [], "a QEMU running this workspace's firmware is still alive");
});
