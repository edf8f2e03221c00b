import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CodeServerHarness } from '../support/codeServerHarness';
import {
  activeEditorText,
  answerDescentPrompts,
  codeLenses,
  stopAndExpectNothingLeft,
  functionLines,
  notifications,
  revealLine,
  rv32,
  type CodeLensRow,
} from '../support/codeServerUi';
import { markerLine } from '../support/markers';

// "Where do my cycles go?" in the packaged CycleLens, in code-server: call-graph descent run from
// the command palette on a session stopped at main, with its threshold typed into the input box;
// it reports progress in a cancellable notification, opens its text report beside the source and
// puts the measured share above each profiled function as a "$(flame)" CodeLens (the profile
// language server's, from the saved result set). Assertions read
// the DOM.

const dark = 'Default Dark Modern';
const light = 'Default Light Modern';
const descentCommand = 'CycleLens: Where Do My Cycles Go? (Call-Graph Descent)…';
/** The progress notification's title (ProgressLocation.Notification). */
const progressTitle = /CycleLens: call-graph descent/;
/** How the command ends: an information or an error notification. */
const finished = /CycleLens descent finished/;
const failed = /CycleLens descent failed/;

let harness: CodeServerHarness | undefined;
let fir = { first: 0, last: 0 };
let mainLine = 0;

before(
  async () => {
    harness = await CodeServerHarness.start({
      name: 'profiling',
      requireFirmware: true,
      theme: dark,
      viewport: { width: 1440, height: 900 },
    });
    fir = functionLines(join(harness.workspace, 'src', 'dsp.c'), 'fir_filter');
    mainLine = markerLine(join(harness.workspace, 'src', 'singlepass.c'), '#MAIN_FIRST');
  },
  { timeout: 15 * 60_000 },
);

after(() => stopAndExpectNothingLeft(harness));

test('the demo launch configuration names program_end as the end of the single-pass program', () => {
  // Profiling runs a single-pass program to its end and restarts it; without programEnd it would
  // wait for exit/_exit, which the fixture never calls.
  const launch = JSON.parse(readFileSync(join(harness!.workspace, '.vscode', 'launch.json'), 'utf8')) as {
    configurations: { name: string; programEnd?: string }[];
  };
  assert.equal(launch.configurations.find((c) => c.name === rv32)?.programEnd, 'program_end');
});

test(
  'call-graph descent at 5% runs with progress and opens its report naming process_packet',
  { timeout: 180_000 },
  async (t) => {
    const h = harness!;
    await h.startDebugging(rv32);
    await h.waitForTopFrame('main', mainLine, 60_000);

    await h.runCommand(descentCommand);
    const box = await answerDescentPrompts(h, '5%');
    t.diagnostic(`input box: "${box.prompt}", offered "${box.offered}"`);
    assert.equal(box.offered, '1%', 'the threshold box offers 1% by default');

    // Read the notifications until the command ends, keeping every progress line shown on the way.
    const started = Date.now();
    const seen: string[] = [];
    let ended: string | undefined;
    while (Date.now() - started < 120_000) {
      for (const n of await notifications(h)) if (!seen.includes(n)) seen.push(n);
      ended = seen.find((n) => finished.test(n) || failed.test(n));
      if (ended) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    const tookMs = Date.now() - started;
    await h.page
      .locator('.notifications-toasts .notification-toast', { hasText: progressTitle })
      .waitFor({ state: 'hidden', timeout: 10_000 })
      .catch(() => undefined);
    const progressLeft = await h.page
      .locator('.notifications-toasts .notification-toast', { hasText: progressTitle })
      .count();
    const text = await activeEditorText(h);
    const tabs = await h.page.locator('.tabs-container .tab').evaluateAll((els) =>
      els.map((e) => ({
        label: (e.querySelector('.label-name')?.textContent ?? '').trim(),
        dirty: e.classList.contains('dirty'),
      })),
    );
    await h.screenshot('profiling-descent-report');
    t.diagnostic(`descent took ${tookMs} ms; notifications: ${seen.join(' || ')}`);
    t.diagnostic(`active editor "${await h.activeTab()}": ${text.split('\n').slice(0, 6).join(' / ')}`);

    const progress = seen.filter((n) => progressTitle.test(n));
    assert.ok(progress.length > 0, 'a progress notification "CycleLens: call-graph descent" was shown');
    assert.ok(
      progress.some((n) => /\bCancel\b/.test(n)),
      `the progress notification offers Cancel (${JSON.stringify(progress)})`,
    );
    assert.ok(
      progress.some((n) => /run \d+/.test(n)),
      `the progress notification reports the runs (${JSON.stringify(progress)})`,
    );
    assert.ok(ended, `the descent ended within 120 s (notifications: ${JSON.stringify(seen)})`);
    assert.equal(progressLeft, 0, 'the progress notification is gone once the descent has ended');
    assert.doesNotMatch(ended, failed, `the descent failed: "${ended}"`);
    assert.match(text, /Call-graph descent/, 'the report editor shows "Call-graph descent"');
    assert.match(text, /\bprocess_packet\b/, 'the report names process_packet');
    // Saved beside the result set, so closing it asks nothing ("Do you want to save…?").
    const report = tabs.find((tab) => /^descent-.*\.txt$/.test(tab.label));
    assert.ok(report, `the report is opened from its file in .cyclelens/results (tabs: ${JSON.stringify(tabs)})`);
    assert.equal(report.dirty, false, "the report's editor has no unsaved changes");
  },
);

test(
  'a "$(flame)" CodeLens with the measured share appears above fir_filter in dsp.c',
  { timeout: 60_000 },
  async (t) => {
    const h = harness!;
    await h.openFile('src/dsp.c');
    await revealLine(h, fir.first);
    // fir_filter's CodeLens: the ones drawn from its definition line to its closing brace
    // (injection.test.ts checks which line they sit above).
    const inFir = (lenses: CodeLensRow[]) =>
      lenses.filter((l) => l.line !== undefined && l.line >= fir.first && l.line <= fir.last);
    const deadline = Date.now() + 20_000;
    let lenses = inFir(await codeLenses(h));
    // The profile's lens and the session's "Measure" lens share the line ("… | …"), in either order.
    while (!lenses.some((l) => l.text.includes('$(flame)')) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      lenses = inFir(await codeLenses(h));
    }
    await h.dismissHover();
    await h.screenshot('profiling-flame-codelens');
    await h.screenshotInThemes('profiling-descent', [dark, light], () => revealLine(h, fir.first));
    t.diagnostic(`CodeLens of fir_filter (lines ${fir.first}–${fir.last}): ${JSON.stringify(lenses)}`);
    const flame = lenses.find((l) => l.text.includes('$(flame)'));
    assert.ok(flame, `no "$(flame)" CodeLens above fir_filter (drawn there: ${JSON.stringify(lenses)})`);
    const share = /\$\(flame\) (\d+(?:\.\d+)?) % incl/.exec(flame.text);
    assert.ok(share, `the CodeLens shows a percentage ("${flame.text}")`);
    assert.ok(
      Number(share[1]) > 0 && Number(share[1]) <= 100,
      `the share is a percentage of the run ("${flame.text}")`,
    );
    const shown =
      lenses
        .map((l) => l.text)
        .join(' | ')
        .match(/\$\(flame\)/g) ?? [];
    assert.equal(
      shown.length,
      1,
      `the profile's figures appear once above fir_filter (drawn there: ${JSON.stringify(lenses)})`,
    );
  },
);
