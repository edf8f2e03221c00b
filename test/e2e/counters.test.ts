import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CodeServerHarness, poll, type TreeRow, sessionProcesses } from '../support/codeServerHarness';
import { markerLine } from '../support/markers';
import {
  clickCodeLens,
  codeLenses,
  functionLines,
  notifications,
  revealLine,
  stopAndExpectNothingLeft,
  waitForCodeLens,
} from '../support/codeServerUi';

// The Counters view of the packaged CycleLens in code-server: on QEMU RV32 the machine counters,
// configured through the view's title button and a multi-select quick pick, then read at each step;
// on QEMU Cortex-M4 the units QEMU does not model, shown as such. Assertions read the tree items'
// text, icons and tooltips as drawn.

const dark = 'Default Dark Modern';
const light = 'Default Light Modern';
const view = 'Counters';
/** A one-line C step in main of singlepass.c retires tens to hundreds of instructions, never this many. */
const plausibleStepInstructions = 10_000;

let harness: CodeServerHarness | undefined;
let mainLine = 0;

/** What the minstret row showed after each step over, for the test that judges the numbers. */
interface StepReading {
  from: string;
  to: string;
  description: string;
  icon: string | undefined;
  tooltip: string;
}
const steps: StepReading[] = [];

before(
  async () => {
    harness = await CodeServerHarness.start({
      name: 'counters',
      requireFirmware: true,
      theme: dark,
      viewport: { width: 1440, height: 900 },
    });
    // Sources and ELFs from one build, as in a user's project (see debugging.test.ts for the demo's own ELFs).
    harness.buildFirmwareInWorkspace(['rv32', 'cortex-m4']);
    mainLine = markerLine(join(harness.workspace, 'src', 'singlepass.c'), '#MAIN_FIRST');
  },
  { timeout: 15 * 60_000 },
);

after(() => stopAndExpectNothingLeft(harness, sessionProcesses));

/** Gives the Counters view most of the side bar, once it is open (its unit and slots are many rows). */
async function tallCounters(h: CodeServerHarness): Promise<void> {
  const box = await h.viewPane(view).boundingBox();
  if (box && box.height < 300) await h.growView(view, 320);
}

/** formatCount's text ("14", "100.4 k", "1.30 M") as a number. */
function parseCount(text: string): number {
  const m = /^([\d.]+)\s*([kMG]?)$/.exec(text.trim());
  if (!m) return NaN;
  return Number(m[1]) * ({ '': 1, k: 1e3, M: 1e6, G: 1e9 } as Record<string, number>)[m[2]!]!;
}

/** The minstret row's description, "instructions retired · 800.4 k (+700.0 k)", as value and change. */
function minstretReading(description: string): { value: number; change: number | undefined } {
  const m = /·\s*([\d.]+\s*[kMG]?)(?:\s*\(\+([\d.]+\s*[kMG]?)\))?\s*$/.exec(description);
  if (!m) return { value: NaN, change: undefined };
  return { value: parseCount(m[1]!), change: m[2] === undefined ? undefined : parseCount(m[2]) };
}

async function minstret(h: CodeServerHarness): Promise<TreeRow | undefined> {
  return (await h.treeRows(view)).find((r) => r.label === 'minstret');
}

async function topFrame(h: CodeServerHarness): Promise<string> {
  const top = (await h.callStack())[0];
  return top ? `${top.name}:${top.line}` : '(none)';
}

test(
  'RV32: Configure Counters in the Counters view assigns "instructions retired" to minstret',
  { timeout: 120_000 },
  async (t) => {
    const h = harness!;
    await h.showRunAndDebug();
    await h.setSidebarWidth(420);
    // Room for the Counters view: the stack stays in sight, the other debug views fold.
    for (const other of ['Variables', 'Watch', 'Breakpoints']) await h.setViewExpanded(other, false);
    const started = Date.now();
    await h.startDebugging('QEMU RISC-V 32');
    await h.waitForTopFrame('main', mainLine, 60_000);
    t.diagnostic(`start button to stopped at main: ${Date.now() - started} ms`);
    await h.openView(view);

    const unit = await h.waitForTreeRow(view, 'RISC-V counters', /slot/);
    await tallCounters(h);
    const rows = await h.treeRows(view);
    t.diagnostic(`Counters: ${rows.map((r) => `${r.label} [${r.description}]`).join('; ')}`);
    assert.equal(unit.level, 1);
    for (const slot of ['mcycle', 'minstret', 'mhpmcounter3']) {
      assert.ok(
        rows.some((r) => r.label === slot && r.level === 2),
        `the RISC-V unit lists the slot ${slot}`,
      );
    }

    await h.clickViewAction(view, 'Configure Counters…');
    const offered = await h.quickPickItems();
    t.diagnostic(`Configure Counters offers: ${offered.map((o) => `${o.label} (${o.description})`).join('; ')}`);
    assert.deepEqual(
      offered.filter((o) => o.label === 'instructions retired').map((o) => o.description),
      ['minstret'],
      'the quick pick offers "instructions retired" once, counted on minstret',
    );
    assert.deepEqual(
      offered.filter((o) => o.label === 'cycles').map((o) => o.description),
      ['mcycle'],
      'and "cycles" once, counted on mcycle',
    );
    // QEMU's mhpmevent selectors 1 and 2 count what mcycle and minstret count: not events of their own.
    assert.deepEqual(
      offered.filter((o) => /QEMU/.test(o.label)),
      [],
      'no "(QEMU)" duplicate of a fixed counter\'s event is offered',
    );
    await h.pickMany(['instructions retired']);

    // The view names the event as the quick pick does: "instructions retired", on the minstret row.
    const row = await h.waitForTreeRow(view, 'minstret', /^instructions retired · \S/);
    t.diagnostic(`minstret after configuring: ${row.description}`);
    assert.ok(Number.isFinite(minstretReading(row.description).value), `minstret shows a count ("${row.description}")`);
    await h.screenshot('counters-configured');
  },
);

test('RV32: each step over (F10) changes the instruction count minstret shows', { timeout: 120_000 }, async (t) => {
  const h = harness!;
  for (let i = 0; i < 3; i++) {
    const from = await topFrame(h);
    const before = (await minstret(h))?.description ?? '';
    await h.page.keyboard.press('F10');
    const deadline = Date.now() + 20_000;
    // While the target runs the CALL STACK is empty ("(none)"); the step ends at the next frame shown.
    const moved = (frame: string) => frame !== from && frame !== '(none)';
    while (!moved(await topFrame(h)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const to = await topFrame(h);
    assert.notEqual(to, from, `step ${i + 1}: F10 moved from ${from}`);
    const after = await h.waitForTreeRow(view, 'minstret', (d) => d !== before, 20_000);
    const tooltip = await h.hoverText(h.treeItem(view, 'minstret').locator('.label-name'), 'minstret').catch(() => '');
    steps.push({ from, to, description: after.description, icon: after.icon, tooltip });
    t.diagnostic(
      `step ${i + 1}: ${from} → ${to}: minstret "${before}" → "${after.description}" ` + `(icon ${after.icon})`,
    );
    const was = minstretReading(before).value;
    const now = minstretReading(after.description).value;
    assert.notEqual(after.description, before, `step ${i + 1}: the minstret description changes`);
    assert.ok(Number.isFinite(now) && now > was, `step ${i + 1}: instructions retired grows (${was} → ${now})`);
    if (i === 1) {
      // For the docs: two lines in, before the fixture arms its timer (see the next test for why).
      await h.dismissHover();
      await h.screenshotInThemes('counters-rv32', [dark, light]);
    }
  }
  await h.dismissHover();
  await h.screenshot('counters-rv32-stepped');
});

/**
 * On QEMU, minstret is the virtual clock, and once the firmware arms its timer every debugger stop
 * lets that clock jump to the next timer deadline (README, "QEMU as a measuring instrument"). A step
 * over board_timer_start therefore shows a jump. What the view must never do is present such a
 * count as trusted: every implausible step is marked with a warning whose note says why.
 */
test('RV32: the Counters view never shows an implausible step count as trusted', { timeout: 30_000 }, () => {
  assert.ok(steps.length > 0, 'the stepping test recorded no readings');
  const problems: string[] = [];
  let plausible = 0;
  for (const [i, s] of steps.entries()) {
    const change = minstretReading(s.description).change;
    const note = s.tooltip
      .split('\n')
      .filter((l) => l.includes('⚠'))
      .join(' ');
    if (change !== undefined && change > plausibleStepInstructions) {
      if (s.icon !== 'warning')
        problems.push(
          `step ${i + 1} (${s.from} → ${s.to}) shows +${change} instructions as a trusted count ("${s.description}")`,
        );
      else if (!/virtual clock/.test(note))
        problems.push(`step ${i + 1} is marked, but the note does not say why: ${note || '(none)'}`);
    } else if (change !== undefined) {
      plausible++;
    }
  }
  assert.deepEqual(problems, []);
  assert.ok(plausible > 0, 'the steps before the timer starts show plausible counts');
});

test('Cortex-M4: the Counters view shows DWT as not available, with the QEMU note', { timeout: 120_000 }, async (t) => {
  const h = harness!;
  await h.stopDebugging({ maxPresses: 3 });
  await h.startDebugging('QEMU Cortex-M4');
  await h.waitForTopFrame('main', mainLine, 60_000);
  await h.openView(view);

  const dwt = await h.waitForTreeRow(view, 'DWT', /./);
  await tallCounters(h);
  const rows = await h.treeRows(view);
  t.diagnostic(`Counters: ${rows.map((r) => `${r.label} [${r.description}] (${r.ariaLabel})`).join('; ')}`);
  assert.equal(dwt.description, 'not available');
  assert.equal(dwt.icon, 'circle-slash', 'an absent unit has the "circle-slash" icon');
  const tooltip = await h.hoverText(h.treeItem(view, 'DWT').locator('.label-name'), 'DWT');
  t.diagnostic(`DWT tooltip: ${tooltip}`);
  assert.match(tooltip, /QEMU does not model it/, 'the tooltip says why: QEMU has no DWT');
  const pmu = rows.find((r) => r.label === 'PMU');
  assert.equal(pmu?.description, 'not available', 'the Armv8.1-M PMU is shown as not available too');
  assert.ok(
    rows.some((r) => r.label === 'SysTick' && /slot/.test(r.description)),
    'SysTick is offered as the cycle source',
  );
  await h.screenshot('counters-cortex-m4');
  await h.screenshotInThemes('counters-cortex-m4', [dark, light], async () => {
    await h.hoverText(h.treeItem(view, 'DWT').locator('.label-name'), 'DWT');
  });
  await h.dismissHover();
});

test(
  'Cortex-M4: after "Measure" while halted, VARIABLES keeps answering, at the stop and each step after',
  { timeout: 120_000 },
  async (t) => {
    const h = harness!;
    // Halted at main from the test above. The measurement's calibration runs the core to its stubs
    // and back, hidden: the frames the client holds must stay valid, and so must those of the stops
    // after it (the Variables view once broke for good here: "That stack frame is no longer valid").
    await h.openFile('src/dsp.c');
    const fir = functionLines(join(h.workspace, 'src', 'dsp.c'), 'fir_filter');
    await revealLine(h, fir.first);
    const inFir = (l: { text: string; line?: number }): boolean =>
      l.text === 'Measure' && l.line !== undefined && l.line >= fir.first - 1 && l.line <= fir.last;
    const lenses = await poll(
      () => codeLenses(h),
      (ls) => ls.some(inFir),
      20_000,
    );
    const lens = lenses.find(inFir)?.line;
    assert.ok(lens !== undefined, `a "Measure" CodeLens on fir_filter; drawn: ${JSON.stringify(lenses)}`);
    await clickCodeLens(h, lens, /^Measure$/);
    await waitForCodeLens(h, lens, /\$\(pulse\)/, 15_000);
    const problems: string[] = [];
    for (let step = 0; step <= 3; step++) {
      if (step > 0) {
        await h.page.keyboard.press('F10');
        await h.waitForTopFrame('main', undefined, 30_000);
      }
      await h.setViewExpanded('Variables', true);
      const rows = await h.waitForVariables(['checksum']).catch((e: unknown) => {
        problems.push(`after ${step} steps: ${String(e)}`);
        return [];
      });
      t.diagnostic(`after ${step} steps: ${rows.map((r) => r.name).join(', ')}`);
      const toasts = (await notifications(h)).filter((n) => /no longer valid|is running/.test(n));
      if (toasts.length > 0) problems.push(`after ${step} steps: ${toasts.join(' | ')}`);
    }
    assert.deepEqual(problems, []);
    await h.stopDebugging({ maxPresses: 3 });
  },
);
