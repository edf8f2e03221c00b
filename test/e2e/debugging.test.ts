import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { START_HINT_VAR } from '../../common/startHint';
import { CodeServerHarness, poll, sessionProcesses, spareAdapters } from '../support/codeServerHarness';
import { markerLine } from '../support/markers';

// Debugging the demo firmware in the packaged CycleLens, in code-server, as a person does it: a
// breakpoint set by clicking the gutter of src/dsp.c, "QEMU RISC-V 32" started from Run and Debug,
// stop at main, continue to the breakpoint, read the CALL STACK and VARIABLES, stop with Shift+F5.
// Every assertion reads the workbench (DOM text, editor decorations) or /proc.

const dark = 'Default Dark Modern';
const light = 'Default Light Modern';
const rv32 = 'QEMU RISC-V 32';

let harness: CodeServerHarness | undefined;
let dspLine = 0;
let mainLine = 0;

before(
  async () => {
    harness = await CodeServerHarness.start({
      name: 'debugging',
      requireFirmware: true,
      theme: dark,
      viewport: { width: 1440, height: 900 },
    });
    dspLine = markerLine(join(harness.workspace, 'src', 'dsp.c'), '#BP_LOCALS');
    mainLine = markerLine(join(harness.workspace, 'src', 'singlepass.c'), '#MAIN_FIRST');
  },
  { timeout: 15 * 60_000 },
);

after(async () => {
  if (!harness) return;
  // A failed test may leave a session running; end it so the process check below is about leaks.
  if (
    await harness
      .debugToolbar()
      .isVisible()
      .catch(() => false)
  )
    await harness.stopDebugging({ maxPresses: 3 });
  const { survivors } = await harness.stop();
  assert.deepEqual(survivors, [], 'code-server left processes behind');
});

/** Sets the #BP_LOCALS breakpoint by clicking the gutter of dsp.c, unless it is there already. */
async function breakpointAtLocals(h: CodeServerHarness): Promise<void> {
  await h.openFile('src/dsp.c');
  if ((await h.breakpointLines()).includes(dspLine)) return;
  await h.clickGutter(dspLine);
  const deadline = Date.now() + 5000;
  while (!(await h.breakpointLines()).includes(dspLine) && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 100));
}

test('the demo as `npm start` writes it: a breakpoint clicked in src/dsp.c binds', { timeout: 90_000 }, async (t) => {
  const h = harness!;
  await breakpointAtLocals(h);
  assert.deepEqual(
    await h.breakpointLines(),
    [dspLine],
    `a click in the gutter puts a breakpoint glyph on line ${dspLine} (#BP_LOCALS)`,
  );
  const started = Date.now();
  await h.startDebugging(rv32);
  try {
    await h.waitForTopFrame('main', mainLine, 60_000);
    t.diagnostic(`start button to stopped at main: ${Date.now() - started} ms`);
    // The window's first session: its adapter began loading as the configuration was resolved and
    // was handed the start hint on its pipe. One spawned for the session has it in its environment.
    const adapter = (await h.serverProcesses(sessionProcesses)).find((p) => /dist\/adapter\.js$/.test(p.command));
    assert.ok(adapter, 'the session has its adapter');
    const environment = readFileSync(`/proc/${adapter.pid}/environ`, 'latin1').split('\0');
    assert.ok(
      !environment.some((v) => v.startsWith(`${START_HINT_VAR}=`)),
      'the first session of the window runs on an adapter started ahead, as its configuration was resolved',
    );
    const row = h.viewPane('Breakpoints').locator('.monaco-list-row', { hasText: 'dsp.c' }).first();
    // Breakpoints are bound while the session starts, before the stop at main: give it a moment more.
    const unverified = await poll(
      () => row.locator('.codicon-debug-breakpoint-unverified').count(),
      (n) => n === 0,
      3000,
    );
    const label = (await row.getAttribute('aria-label')) ?? '';
    await h.screenshot('debugging-demo-breakpoint');
    t.diagnostic(`BREAKPOINTS: ${label}`);
    // The demo's ELFs are built in test/fixtures/ and copied: their DWARF names those paths, so GDB
    // finds no "<workspace>/src/dsp.c" and the breakpoint stays pending for the whole run.
    assert.equal(
      unverified,
      0,
      `the breakpoint is not bound in the demo workspace (BREAKPOINTS says "${label}"); ` +
        `continuing would run past #BP_LOCALS to the end of the program`,
    );
  } finally {
    const stopped = Date.now();
    const { presses } = await h.stopDebugging({ maxPresses: 3 });
    t.diagnostic(`stopped after ${presses} Shift+F5 press(es), ${Date.now() - stopped} ms`);
  }
});

test(
  'with firmware built from the workspace: stops at main, then at the #BP_LOCALS breakpoint',
  { timeout: 120_000 },
  async (t) => {
    const h = harness!;
    // As in a user's project, the ELF's debug information names the sources VS Code has open.
    h.buildFirmwareInWorkspace(['rv32']);
    await breakpointAtLocals(h);
    await h.showRunAndDebug();
    await h.setSidebarWidth(420);
    await h.setViewExpanded('Watch', false);

    const started = Date.now();
    await h.startDebugging(rv32);
    await h.waitForTopFrame('main', mainLine, 60_000);
    t.diagnostic(`start button to stopped at main: ${Date.now() - started} ms`);
    assert.equal(
      await poll(
        () => h.callStackState(),
        (s) => s !== '',
      ),
      'Paused on entry',
    );
    assert.equal(
      await poll(
        () => h.activeTab(),
        (f) => f === 'singlepass.c',
      ),
      'singlepass.c',
      "the editor shows the entry point's file",
    );
    assert.deepEqual(
      await poll(
        () => h.stoppedLines(),
        (l) => l.length > 0,
      ),
      [mainLine],
      "the editor highlights main's first line (#MAIN_FIRST)",
    );

    await h.page.keyboard.press('F5');
    await h.waitForTopFrame('summarise_window', dspLine);
    assert.equal(
      await poll(
        () => h.callStackState(),
        (s) => s === 'Paused on breakpoint',
      ),
      'Paused on breakpoint',
    );
    assert.equal(
      await poll(
        () => h.activeTab(),
        (f) => f === 'dsp.c',
      ),
      'dsp.c',
      "the editor switches to the breakpoint's file",
    );
    assert.deepEqual(
      await poll(
        () => h.stoppedLines(),
        (l) => l.includes(dspLine),
      ),
      [dspLine],
      `the editor highlights the stopped line ${dspLine} (#BP_LOCALS)`,
    );
    assert.ok(
      (
        await poll(
          () => h.breakpointLines(),
          (l) => l.includes(dspLine),
        )
      ).includes(dspLine),
      'the breakpoint glyph stays on the stopped line',
    );
    await h.screenshot('debugging-stopped-at-breakpoint');
  },
);

test('the CALL STACK shows summarise_window above main', { timeout: 30_000 }, async (t) => {
  const h = harness!;
  const frames = await h.callStack();
  t.diagnostic(`CALL STACK: ${frames.map((f) => `${f.name} ${f.file}:${f.line}`).join(' < ')}`);
  const names = frames.map((f) => f.name);
  assert.equal(names[0], 'summarise_window', 'the top frame is the function with the breakpoint');
  assert.deepEqual(frames[0], { name: 'summarise_window', file: 'dsp.c', line: dspLine });
  assert.ok(names.includes('main'), `main is on the stack (${names.join(', ')})`);
  assert.ok(names.indexOf('summarise_window') < names.indexOf('main'), 'summarise_window is drawn above main');
  // The fixture's call chain (pipeline.c: main > process_packet > analyse_samples > summarise_window).
  assert.deepEqual(names, ['summarise_window', 'analyse_samples', 'process_packet', 'main']);
});

test('VARIABLES shows the locals st and hist; st expands to its fields', { timeout: 90_000 }, async (t) => {
  const h = harness!;
  // The view fills in after the stop (scopes, then variables): wait for it, then read what it lists.
  const locals = (await h.waitForVariables(['st', 'hist'])).filter((v) => v.level === 2).map((v) => v.name);
  t.diagnostic(`Locals: ${locals.join(', ')}`);
  // Room for the expanded struct (the list draws only the rows in sight): the stack's four frames need
  // less than their view has. Layout only, so a failure here is reported, not failed on.
  await h.growView('Call Stack', -150).catch((e: unknown) => t.diagnostic(`could not resize the views: ${String(e)}`));
  const fields = await h.expandVariable('st');
  t.diagnostic(`st: ${fields.map((f) => `${f.name} = ${f.value}`).join(', ')}`);
  const names = fields.map((f) => f.name);
  assert.ok(
    names.includes('mean') && names.includes('variance'),
    `st expands to mean and variance (${names.join(', ')})`,
  );
  // By #BP_LOCALS window_moments() has filled them: real numbers, not placeholders.
  for (const field of fields.filter((f) => f.name === 'mean' || f.name === 'variance')) {
    assert.match(field.value, /^-?\d+$/, `st.${field.name} shows a number, not "${field.value}"`);
  }
  await h.screenshot('debugging-variables');
  const shots = await h.screenshotInThemes('debugging-breakpoint', [dark, light]);
  t.diagnostic(`themed screenshots: ${shots.join(', ')}`);
});

test('Stop (Shift+F5) ends the session: the debug toolbar goes', { timeout: 60_000 }, async () => {
  const h = harness!;
  const once = await h.stopDebugging({ maxPresses: 1, perPressMs: 10_000 });
  let second = '';
  if (!once.ended) {
    // Go on stopping so the next test checks for leaked processes, not for a running session.
    const again = await h.stopDebugging({ maxPresses: 2, perPressMs: 10_000 });
    second = again.ended ? ' (a second Shift+F5 ended it)' : ' (nor did two more)';
  }
  await h.screenshot('debugging-stopped-session');
  assert.equal(
    await poll(
      () => h.callStack().then((f) => f.length),
      (n) => n === 0,
    ),
    0,
    'the CALL STACK is empty',
  );
  assert.deepEqual(
    await poll(
      () => h.stoppedLines(),
      (l) => l.length === 0,
    ),
    [],
    'no stopped-line highlight is left in the editor',
  );
  assert.ok(once.ended, `the debug toolbar is still shown 10 s after Shift+F5${second}`);
});

test('no QEMU, GDB or adapter process of the session is left', { timeout: 30_000 }, async () => {
  const h = harness!;
  const left = await h.waitForNoServerProcesses(sessionProcesses, 10_000);
  assert.deepEqual(left, [], 'processes of the ended session are still running');
  // What stays is at most the one adapter loaded ahead for the window's next session.
  const spares = await h.serverProcesses(spareAdapters);
  assert.ok(
    spares.length <= 1,
    `more than one spare adapter waits: ${spares.map((p) => `${p.pid} ${p.command}`).join('; ')}`,
  );
});

test('a restart runs on the adapter loaded ahead for it, and stops at main', { timeout: 120_000 }, async (t) => {
  const h = harness!;
  // A few seconds after a session starts, the window loads one adapter for its next session.
  const spares = await poll(
    () => h.serverProcesses(spareAdapters),
    (p) => p.length === 1,
    30_000,
  );
  assert.equal(spares.length, 1, 'one adapter waits, loaded ahead of the next session');
  const spare = spares[0]!;
  const started = Date.now();
  await h.startDebugging(rv32);
  await h.waitForTopFrame('main', mainLine, 60_000);
  t.diagnostic(`start button to stopped at main, on the adapter loaded ahead: ${Date.now() - started} ms`);
  const serving = (await h.serverProcesses(sessionProcesses)).find((p) => p.pid === spare.pid);
  assert.ok(serving, `the session runs on the spare (pid ${spare.pid}), which no longer calls itself one`);
  assert.match(serving.command, /dist\/adapter\.js$/);
});

test(
  'the adapter killed in a session: the session ends, the Debug Console says why, nothing is left',
  { timeout: 90_000 },
  async () => {
    const h = harness!;
    const adapter = (await h.serverProcesses(sessionProcesses)).find((p) => /dist\/adapter\.js$/.test(p.command));
    assert.ok(adapter, 'the session has its adapter');
    process.kill(adapter.pid, 'SIGKILL');
    await h.debugToolbar().waitFor({ state: 'hidden', timeout: 30_000 });
    await h.runCommand('Debug Console: Focus on Debug Console View');
    const consoleText = await poll(
      () => h.page.locator('.repl .monaco-list-row').allInnerTexts(),
      (rows) => rows.some((r) => /The CycleLens debug adapter was ended by SIGKILL/.test(r)),
      15_000,
    );
    assert.ok(
      consoleText.some((r) => /The CycleLens debug adapter was ended by SIGKILL/.test(r)),
      `the Debug Console names the end of the adapter; it shows: ${JSON.stringify(consoleText.slice(-5))}`,
    );
    const left = await h.waitForNoServerProcesses(sessionProcesses, 15_000);
    assert.deepEqual(left, [], 'QEMU and GDB end with the killed adapter');
  },
);
