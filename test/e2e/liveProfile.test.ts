import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { FrameLocator } from 'playwright-core';
import { runOracle, type OracleSummary } from '../oracle/oracle';
import { CodeServerHarness, poll, sessionProcesses } from '../support/codeServerHarness';
import { notifications, statusBarText, stopAndExpectNothingLeft } from '../support/codeServerUi';
import { markerLine } from '../support/markers';

// "CycleLens: Show Live Profile" in the packaged CycleLens, in code-server: without sampling it says
// what to start; with the live hotspot overlay sampling the demo's endless hot loop on QEMU RISC-V
// 32 (the command is then in the debug toolbar), the profile panel opens on the live profile and
// takes each new picture in place (its page loads once while the count grows), its hottest
// function is the oracle's, and when the session ends it keeps the last picture and says it is no
// longer live. The launch configurations load QEMU's counting plugin, so the counts are exact
// instructions, judged against the oracle's trace of the same ELF as test/e2e/liveHotspots.test.ts
// does.

const dark = 'Default Dark Modern';
const configuration = 'QEMU RISC-V 32';
/** The oracle's window: 45 rounds of the hot loop, start-up included (liveHotspots.test.ts). */
const oracleInstructions = 3_000_000;

let harness: CodeServerHarness | undefined;
let oracle: OracleSummary | undefined;
let mainLine = 0;

before(
  async () => {
    harness = await CodeServerHarness.start({
      name: 'liveProfile',
      requireFirmware: true,
      theme: dark,
      viewport: { width: 1440, height: 900 },
      program: 'hotloop',
      server: { instructionCounts: true },
    });
    mainLine = markerLine(join(harness.workspace, 'src', 'hotloop.c'), '#MAIN_FIRST');
    oracle = await runOracle({
      elf: join(harness.workspace, 'build', 'rv32', 'hotloop.elf'),
      maxInstructions: oracleInstructions,
    });
  },
  { timeout: 15 * 60_000 },
);

after(() => stopAndExpectNothingLeft(harness, sessionProcesses));

/** The panel's page: VS Code nests a webview in two frames. */
function webview(h: CodeServerHarness): FrameLocator {
  return h.page.frameLocator('iframe.webview.ready').last().frameLocator('iframe#active-frame');
}

/** What the panel shows of the live profile now: its page's load marker, badge, banner and count. */
async function panelNow(page: FrameLocator): Promise<{ load: string; badge: string; note: string; count: number }> {
  const note = (await page.locator('.live-note').textContent()) ?? '';
  const count = /^([\d,]+) instructions\b/.exec(note.replace(/^Sampling stopped[^:]*: the last /, ''))?.[1];
  return {
    load: (await page.locator('#app').getAttribute('data-page-load')) ?? '',
    badge: ((await page.locator('.header .live').textContent()) ?? '').trim(),
    note,
    count: count ? Number(count.replace(/,/g, '')) : NaN,
  };
}

/** The function at the top of the table sorted by self count (the first row's name). */
async function hottestRow(page: FrameLocator): Promise<string> {
  return ((await page.locator('table.grid tbody tr').first().locator('td').first().textContent()) ?? '').trim();
}

test('Show Live Profile without sampling says to start live hotspots', { timeout: 60_000 }, async () => {
  const h = harness!;
  await h.runCommand('CycleLens: Show Live Profile');
  const toast = await poll(
    () => notifications(h),
    (n) => n.some((t) => /No live sampling is running/.test(t)),
    15_000,
  );
  const text = toast.find((t) => /No live sampling is running/.test(t)) ?? '';
  assert.match(
    text,
    /No live sampling is running/,
    `a notification says why there is nothing to show (${toast.join(' || ')})`,
  );
  assert.match(text, /CycleLens: Toggle Live Hotspots/, 'and names the command that starts sampling');
  assert.equal(await h.page.locator('iframe.webview.ready').count(), 0, 'no panel opened');
  await h.page.keyboard.press('Escape');
});

test(
  'the panel follows the live profile in place: the count grows, the page loads once, the ' +
    'hottest function is the oracle’s',
  { timeout: 300_000 },
  async (t) => {
    const h = harness!;
    const truth = oracle!.functions.filter((f) => f.exclusive > 0).sort((a, b) => b.exclusive - a.exclusive);
    t.diagnostic(
      `oracle: ${truth
        .slice(0, 4)
        .map((f) => `${f.name} ${((100 * f.exclusive) / oracle!.totals.instructions).toFixed(2)} %`)
        .join(', ')}`,
    );
    await h.startDebugging(configuration);
    await h.waitForTopFrame('main', mainLine, 90_000);
    await h.page.keyboard.press('F5');
    await poll(
      () => h.callStackState(),
      (s) => !/Paused/.test(s),
      15_000,
    );
    await h.runCommand('CycleLens: Toggle Live Hotspots');
    await poll(
      () => statusBarText(h),
      (s) => /qemu-plugin · [\d,.]+\/s · [1-9][\d,]* instructions/.test(s),
      60_000,
    );

    // While the overlay samples, the debug toolbar offers the command (the palette's path is the
    // first test's).
    const button = h.debugToolbar().locator('.codicon-graph-line');
    await button.waitFor({ state: 'visible', timeout: 15_000 });
    await h.clickPastHovers(button);
    const page = webview(h);
    await page.locator('.header .live', { hasText: /^live$/ }).waitFor({ timeout: 60_000 });
    const first = await panelNow(page);
    t.diagnostic(`first picture: ${JSON.stringify(first)}`);
    assert.ok(first.load, 'the page marks its load');
    assert.ok(first.count > 0, `the banner gives the count so far ("${first.note}")`);
    assert.match(first.note, /qemu-plugin/, 'the banner names the sampler');
    assert.match(first.note, /every one counted/, "and what a sample's PC means");
    assert.doesNotMatch(first.note, /cycles/i, 'the counts are not called cycles');
    assert.match(await h.activeTab(), /^Live profile: hotloop\.elf$/);

    // Two more pictures: each has a larger count, and the page that draws them is the first one.
    let last = first;
    for (let update = 1; update <= 2; update++) {
      const next = await poll(
        () => panelNow(page),
        (p) => p.count > last.count,
        30_000,
      );
      t.diagnostic(`update ${update}: ${next.count} instructions`);
      assert.ok(next.count > last.count, `update ${update}: the count grows (${last.count}, then ${next.count})`);
      assert.equal(next.load, first.load, `update ${update} redrew the page in place; it did not load it again`);
      assert.equal(next.badge, 'live');
      last = next;
    }

    // The table of functions, sorted by self count: the oracle's hottest function leads.
    await page.getByRole('tab', { name: 'Table' }).click();
    await page.getByRole('button', { name: /^Self/ }).click();
    const hottest = await poll(
      () => hottestRow(page),
      (name) => name === truth[0]!.name,
      30_000,
    );
    t.diagnostic(`the panel's hottest function: ${hottest}`);
    assert.equal(hottest, truth[0]!.name, `the panel's hottest function is the oracle's (${truth[0]!.name})`);
    const sorted = await poll(
      () => panelNow(page),
      (p) => p.count > last.count,
      30_000,
    );
    assert.equal(
      await page.locator('th[aria-sort="descending"] button').textContent(),
      'Self (insn) ▼',
      'an update keeps the sort',
    );
    assert.equal(sorted.load, first.load, 'the page still has not loaded again');
    await h.screenshot('live-profile-panel');
  },
);

test(
  'when the session ends the panel keeps the last picture and says it is no longer live',
  { timeout: 120_000 },
  async () => {
    const h = harness!;
    const page = webview(h);
    const before = await panelNow(page);
    const { ended } = await h.stopDebugging({ maxPresses: 3 });
    assert.ok(ended, 'the session ends');
    await page.locator('.header .live', { hasText: 'no longer live' }).waitFor({ timeout: 30_000 });
    const after = await panelNow(page);
    assert.match(after.note, /^Sampling stopped/, `the banner says sampling stopped ("${after.note}")`);
    assert.ok(after.count >= before.count, `the last picture's count stays (${before.count}, then ${after.count})`);
    assert.equal(after.load, before.load, 'the page was not reloaded');
    assert.ok((await page.locator('table.grid tbody tr').count()) > 1, 'the last picture stays drawn');
    assert.deepEqual(
      await h.waitForNoServerProcesses(sessionProcesses, 15_000),
      [],
      'the session left processes running',
    );
  },
);
