/**
 * UI benchmark: the packaged CycleLens in code-server (Debian's Chromium, headless), on the demo
 * workspace. Prints three figures, as medians over several runs:
 *  1. Activation: the time from a click on "Counters" in View: Open View (the `onView` activation)
 *     to the view showing its first row, in a window reloaded so the extension is not active yet;
 *     next to it, VS Code's own "Activation" figure from Developer: Show Running Extensions (the
 *     time to load and run activate()).
 *  2. Counter refresh: the time from the adapter's `stopped` event after a step over (F10) to the
 *     Counters view drawing minstret's new value. VS Code reaches the adapter through a TCP proxy in
 *     this process (the `cyclelens.debugAdapterPort` setting), which timestamps each `stopped` event
 *     as it passes; the page timestamps the view's change with a MutationObserver. Both clocks are
 *     this machine's wall clock. The CALL STACK's change is timed the same way, for comparison.
 *  3. Descent results: call-graph descent run from the command palette (as a person does, threshold
 *     typed into its input box) on a session stopped at main, with dsp.c open at fir_filter. The
 *     descent's end is the adapter's response to the descent's last request (the proxy timestamps
 *     every response); from there the page times the "$(flame)" CodeLens of the profiled functions
 *     appearing in the source editor and the report ("Call-graph descent …") appearing in its own
 *     editor. Each descent runs in a freshly reloaded window: the profile's CodeLens of an earlier
 *     descent would otherwise be on screen already.
 * Prints figures; record them in docs/benchmarks.md with the commit.
 *   npm run bench -- ui [--runs N] [--steps N] [--descents N] [--only activation|steps|descent]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { CodeServerHarness } from '../test/support/codeServerHarness';
import { importScriptsLib } from '../test/support/codeServerScripts';
import { answerInputBox, functionLines, notifications, revealLine, rv32 } from '../test/support/codeServerUi';
import { markerLine } from '../test/support/markers';
import { OWNER_TAG_VAR, killTagged, newOwnerTag, waitForNoTaggedProcesses } from '../test/support/ownedProcesses';
import { median, option, printTable } from './support';

const countOption = (flag: string, fallback: number): number => Number(option(process.argv, flag) ?? 0) || fallback;
const runs = countOption('--runs', 5);
const stepCount = countOption('--steps', 10);
const descentCount = countOption('--descents', 5);
const only = option(process.argv, '--only');
const part = (name: 'activation' | 'steps' | 'descent'): boolean => only === undefined || only === name;

/** The profiler's own requests: the last response to one of them is where a descent ends. */
const descentRequests = new Set([
  'cyclelens/run',
  'cyclelens/inject',
  'cyclelens/injectedResults',
  'cyclelens/removeInjections',
  'cyclelens/callGraph',
]);

/**
 * A DAP server that VS Code connects to: each connection gets its own adapter process over stdio
 * (as VS Code would start it), and every `stopped` event the adapter sends is timestamped here.
 */
class TimingAdapterProxy {
  readonly tag = newOwnerTag();
  readonly stoppedAt: number[] = [];
  /** Every response the adapter sent, with its command and when it passed. */
  readonly responses: { command: string; at: number }[] = [];
  private readonly adapters = new Set<ChildProcess>();
  private server: Server | undefined;

  /** `adapterPath` is asked at each connection: the installed adapter is known only after install. */
  constructor(private readonly adapterPath: () => string) {}

  async listen(): Promise<number> {
    this.server = createServer((socket) => {
      const adapter = spawn(process.execPath, [this.adapterPath()], {
        stdio: ['pipe', 'pipe', 'inherit'],
        env: { ...process.env, [OWNER_TAG_VAR]: this.tag },
      });
      this.adapters.add(adapter);
      let pending: Buffer = Buffer.alloc(0);
      adapter.stdout!.on('data', (chunk: Buffer) => {
        socket.write(chunk);
        pending = Buffer.concat([pending, chunk]);
        pending = this.scan(pending);
      });
      socket.on('data', (chunk) => adapter.stdin!.write(chunk));
      socket.on('close', () => adapter.stdin!.end());
      socket.on('error', () => adapter.kill());
      adapter.on('exit', () => {
        this.adapters.delete(adapter);
        socket.end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as AddressInfo).port;
  }

  /** Takes whole DAP messages (Content-Length framed) off `buffer`; returns what is left. */
  private scan(buffer: Buffer): Buffer {
    for (;;) {
      const headerEnd = buffer.indexOf('\r\n\r\n');
      if (headerEnd < 0) return buffer;
      const length = Number(/Content-Length: (\d+)/i.exec(buffer.subarray(0, headerEnd).toString('ascii'))?.[1] ?? NaN);
      if (!Number.isFinite(length) || buffer.length < headerEnd + 4 + length) return buffer;
      const message = JSON.parse(buffer.subarray(headerEnd + 4, headerEnd + 4 + length).toString('utf8')) as {
        type?: string;
        event?: string;
        command?: string;
      };
      if (message.type === 'event' && message.event === 'stopped') this.stoppedAt.push(Date.now());
      if (message.type === 'response' && message.command)
        this.responses.push({ command: message.command, at: Date.now() });
      buffer = buffer.subarray(headerEnd + 4 + length);
    }
  }

  async close(): Promise<void> {
    for (const a of this.adapters) a.kill();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    const left = await waitForNoTaggedProcesses(this.tag, 5000);
    if (left.length > 0) {
      console.error(`killing ${left.length} process(es) the adapter left: ${left.map((p) => p.cmdline).join('; ')}`);
      killTagged(this.tag);
    }
  }
}

interface ActivationRun {
  viewMs: number;
  reportedMs: number;
}

/** Counts of a log line in the extension host logs of every window so far. */
function count(h: CodeServerHarness, re: RegExp): number {
  return h.extensionHostLog().match(new RegExp(re.source, 'g'))?.length ?? 0;
}

/**
 * Reloads the window: a new extension host, so CycleLens starts afresh (inactive, no profile kept).
 * With the Explorer shown, nothing activates CycleLens on the way.
 */
async function reloadWindow(h: CodeServerHarness): Promise<void> {
  await h.runCommand('View: Close All Editors');
  await h.runCommand('View: Show Explorer');
  const hosts = count(h, /Eager extensions activated/);
  await h.runCommand('Developer: Reload Window');
  const deadline = Date.now() + 90_000;
  while (count(h, /Eager extensions activated/) <= hosts) {
    if (Date.now() > deadline) throw new Error("the reloaded window's extension host did not come up");
    await new Promise((r) => setTimeout(r, 200));
  }
  await h.waitForWorkbench();
}

async function activationRun(
  h: CodeServerHarness,
  extensionId: string,
  displayName: string,
  first: boolean,
): Promise<ActivationRun> {
  if (!first) await reloadWindow(h);
  const activations = count(h, new RegExp(`_doActivateExtension ${extensionId.replace(/\./g, '\\.')}\\b`));
  const page = h.page;
  // Open View, typed up to the row, so the clock starts at the click that opens the view.
  await h.closeQuickInput();
  await page.keyboard.press('F1');
  await page.locator('.quick-input-widget input').fill('view Counters');
  const row = page
    .locator('.quick-input-widget .monaco-list-row')
    .filter({ has: page.locator('.label-name', { hasText: /^Counters$/ }) })
    .first();
  await row.waitFor({ state: 'visible', timeout: 15_000 });
  const t0 = Date.now();
  await row.click();
  await h.viewPane('Counters').locator('.monaco-list-row').first().waitFor({ state: 'visible', timeout: 30_000 });
  const viewMs = Date.now() - t0;
  if (count(h, new RegExp(`_doActivateExtension ${extensionId.replace(/\./g, '\\.')}\\b`)) <= activations) {
    throw new Error('opening the Counters view did not activate CycleLens in this window (was it active already?)');
  }
  await h.runCommand('Developer: Show Running Extensions');
  const running = await h.waitForText('.runtime-extensions-editor .monaco-list-row', displayName);
  const text = (await running.innerText()).replace(/\s+/g, ' ');
  const reportedMs = Number(/Activation: (\d+)\s*ms/.exec(text)?.[1] ?? NaN);
  return { viewMs, reportedMs };
}

interface StepTiming {
  stoppedToCountersMs: number;
  stoppedToCallStackMs: number;
  keyToStoppedMs: number;
}

/** Watches, in the page, when minstret's row and the CALL STACK's top frame change text. */
async function installWatcher(h: CodeServerHarness): Promise<void> {
  await h.page.evaluate(() => {
    const w = window as unknown as { __clTimes: { counters: number[]; stack: number[] } };
    w.__clTimes = { counters: [], stack: [] };
    const text = (title: string, row: (r: Element) => boolean): string => {
      const header = document.querySelector(`.pane-header[aria-label="${title} Section"]`);
      const rows = header?.parentElement?.querySelectorAll('.monaco-list-row') ?? [];
      const found = Array.from(rows).find(row);
      return found?.textContent ?? '';
    };
    const minstret = () =>
      text('Counters', (r) => (r.querySelector('.label-name')?.textContent ?? '').trim() === 'minstret');
    const top = () => text('Call Stack', () => true);
    let lastCounters = minstret();
    let lastStack = top();
    new MutationObserver(() => {
      const now = Date.now();
      const c = minstret();
      if (c !== lastCounters) {
        lastCounters = c;
        w.__clTimes.counters.push(now);
      }
      const s = top();
      if (s !== lastStack) {
        lastStack = s;
        if (s !== '') w.__clTimes.stack.push(now);
      }
    }).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
  });
}

async function pageTimes(h: CodeServerHarness): Promise<{ counters: number[]; stack: number[] }> {
  return h.page.evaluate(() => (window as unknown as { __clTimes: { counters: number[]; stack: number[] } }).__clTimes);
}

async function stepTimings(h: CodeServerHarness, proxy: TimingAdapterProxy): Promise<StepTiming[]> {
  await h.startDebugging('QEMU RISC-V 32');
  await h.waitForTopFrame('main', undefined, 60_000);
  await h.openView('Counters');
  await h.clickViewAction('Counters', 'Configure Counters…');
  await h.pickMany(['instructions retired']);
  await h.waitForTreeRow('Counters', 'minstret', /·/);
  await installWatcher(h);
  const out: StepTiming[] = [];
  for (let i = 0; i < stepCount; i++) {
    const before = { stopped: proxy.stoppedAt.length, ...(await pageTimes(h)) };
    const pressed = Date.now();
    await h.page.keyboard.press('F10');
    const deadline = Date.now() + 30_000;
    let times = await pageTimes(h);
    while (
      proxy.stoppedAt.length === before.stopped ||
      times.counters.length === before.counters.length ||
      times.stack.length === before.stack.length
    ) {
      if (Date.now() > deadline)
        throw new Error(`step ${i + 1}: no stopped event, CALL STACK change and Counters change within 30 s`);
      await new Promise((r) => setTimeout(r, 20));
      times = await pageTimes(h);
    }
    const stopped = proxy.stoppedAt[before.stopped]!;
    out.push({
      stoppedToCountersMs: times.counters[before.counters.length]! - stopped,
      stoppedToCallStackMs: times.stack[before.stack.length]! - stopped,
      keyToStoppedMs: stopped - pressed,
    });
    await new Promise((r) => setTimeout(r, 300)); // let the views settle before the next step
  }
  await h.stopDebugging({ maxPresses: 3 });
  return out;
}

interface DescentTiming {
  /** Enter in the threshold box → the adapter's response to the descent's last request. */
  descentMs: number;
  endToLensMs: number;
  endToReportMs: number;
  /** The later of the two: the editor shows the descent's results. */
  endToResultsMs: number;
}

/**
 * Watches, in the page, for the descent's results: a visible CodeLens with the flame icon (the
 * profiled share above a function) and an editor line reading "Call-graph descent" (the report's
 * title). Monaco draws spaces as no-break spaces (U+00A0): text is compared with them made plain.
 */
async function installDescentWatcher(h: CodeServerHarness): Promise<void> {
  await h.page.evaluate(() => {
    const w = window as unknown as { __clDescent: { lens?: number; report?: number } };
    w.__clDescent = {};
    const lens = () =>
      Array.from(document.querySelectorAll('.monaco-editor .contentWidgets .codelens-decoration')).some(
        (e) => getComputedStyle(e).visibility !== 'hidden' && e.querySelector('.codicon-flame') !== null,
      );
    const report = () =>
      Array.from(document.querySelectorAll('.monaco-editor .view-lines .view-line')).some((e) =>
        (e.textContent ?? '').replace(/\u00a0/g, ' ').includes('Call-graph descent'),
      );
    const check = () => {
      const now = Date.now();
      if (w.__clDescent.lens === undefined && lens()) w.__clDescent.lens = now;
      if (w.__clDescent.report === undefined && report()) w.__clDescent.report = now;
    };
    check();
    new MutationObserver(check).observe(document.body, {
      subtree: true,
      childList: true,
      characterData: true,
      attributes: true,
    });
  });
}

async function descentTiming(
  h: CodeServerHarness,
  proxy: TimingAdapterProxy,
  fir: { first: number },
  mainLine: number,
  first: boolean,
): Promise<DescentTiming> {
  try {
    return await timeDescent(h, proxy, fir, mainLine, first);
  } catch (e) {
    console.error(`descent failed; screenshot ${await h.screenshot('bench-ui-descent-failed')}`);
    throw e;
  }
}

async function timeDescent(
  h: CodeServerHarness,
  proxy: TimingAdapterProxy,
  fir: { first: number },
  mainLine: number,
  first: boolean,
): Promise<DescentTiming> {
  if (!first) await reloadWindow(h);
  await h.startDebugging(rv32);
  await h.waitForTopFrame('main', mainLine, 60_000);
  // dsp.c, at fir_filter, in an editor group of its own: the profiling runs stop at main and at
  // program_end, and VS Code shows each stop in the active group (or where the file is visible).
  // With the second group active, those stops land there, the report opens beside it, and dsp.c
  // stays in sight in the first group.
  await h.runCommand('View: Split Editor Right');
  await h.openFile('src/runtime.c');
  await h.runCommand('View: Focus First Editor Group');
  await h.openFile('src/dsp.c');
  await revealLine(h, fir.first);
  // (Focus Second Editor Group is not in the palette: a click on that group's tab focuses it.)
  await h.page.locator('.editor-group-container').nth(1).locator('.tab.active').click();
  await h.page
    .locator('.editor-group-container.active .tab.active', { hasText: 'runtime.c' })
    .waitFor({ state: 'visible', timeout: 10_000 });
  await h.runCommand('Notifications: Clear All Notifications');
  await installDescentWatcher(h);
  const seen = await h.page.evaluate(
    () => (window as unknown as { __clDescent: { lens?: number; report?: number } }).__clDescent,
  );
  if (seen.lens !== undefined || seen.report !== undefined)
    throw new Error('results of an earlier descent are on screen before this one started');

  await h.runCommand('CycleLens: Where Do My Cycles Go? (Call-Graph Descent)…');
  const responsesBefore = proxy.responses.length;
  await answerInputBox(h, '5%');
  const started = Date.now();
  const deadline = started + 180_000;
  let times: { lens?: number; report?: number } = {};
  let ended: string | undefined;
  while (times.lens === undefined || times.report === undefined) {
    if (Date.now() > deadline) {
      const lenses = await h.page.locator('.monaco-editor .contentWidgets .codelens-decoration').allInnerTexts();
      const tabs = await h.page.locator('.tab .label-name').allInnerTexts();
      const screenshot = await h.screenshot('bench-ui-descent-timeout');
      console.error(`tabs: ${JSON.stringify(tabs)}; CodeLens: ${JSON.stringify(lenses)}; screenshot ${screenshot}`);
      throw new Error(
        `the descent's results were not all shown within 180 s (CodeLens at ${times.lens}, report ` +
          `at ${times.report}; ${ended ?? 'no end notification'})`,
      );
    }
    ended ??= (await notifications(h)).find((n) => /CycleLens descent (finished|failed)/.test(n));
    if (ended && /failed/.test(ended)) throw new Error(`the descent failed: ${ended}`);
    await new Promise((r) => setTimeout(r, 100));
    times = await h.page.evaluate(
      () => (window as unknown as { __clDescent: { lens?: number; report?: number } }).__clDescent,
    );
  }
  const shown = Math.max(times.lens, times.report);
  const own = proxy.responses.slice(responsesBefore).filter((r) => descentRequests.has(r.command));
  const last = [...own].reverse().find((r) => r.at <= shown);
  if (!last) throw new Error('the proxy saw no response to a descent request before the results were shown');
  const later = own.filter((r) => r.at > shown);
  if (later.length > 0)
    throw new Error(
      `the results were shown before the descent's last requests (${later.map((r) => r.command).join(', ')}): ` +
        `the end of the descent is not the last response`,
    );
  await h.stopDebugging({ maxPresses: 3 });
  return {
    descentMs: last.at - started,
    endToLensMs: times.lens - last.at,
    endToReportMs: times.report - last.at,
    endToResultsMs: shown - last.at,
  };
}

function spread(values: number[]): string {
  return `${median(values).toFixed(0)} ms (${Math.min(...values).toFixed(0)}–${Math.max(...values).toFixed(0)})`;
}

async function main(): Promise<void> {
  const { vsix } = await importScriptsLib();
  const { id, version, displayName } = vsix.extensionId();
  let proxy: TimingAdapterProxy | undefined;
  let harness: CodeServerHarness | undefined;
  try {
    // The proxy's port goes into the settings code-server starts with; the adapter it runs is the one
    // installed from the .vsix.
    proxy = new TimingAdapterProxy(() => join(harness!.extensionsDir, `${id}-${version}`, 'dist', 'adapter.js'));
    const port = await proxy.listen();
    harness = await CodeServerHarness.start({
      name: 'bench-ui',
      requireFirmware: true,
      settings: { 'cyclelens.debugAdapterPort': port },
    });
    harness.buildFirmwareInWorkspace(['rv32']);

    const rows: string[][] = [];
    const what: string[] = [];
    if (part('activation')) {
      const activation: ActivationRun[] = [];
      for (let i = 0; i < runs; i++) activation.push(await activationRun(harness, id, displayName, i === 0));
      await harness.runCommand('View: Close All Editors');
      what.push(`${runs} activations (window reloads)`);
      rows.push(
        [
          'click on "Counters" (Open View) → view shows its first row, extension not yet active',
          spread(activation.map((a) => a.viewMs)),
        ],
        ['"Activation" in Developer: Show Running Extensions', spread(activation.map((a) => a.reportedMs))],
      );
    }
    if (part('steps')) {
      const stepsTimed = await stepTimings(harness, proxy);
      what.push(`${stepCount} steps over (F10) on QEMU RISC-V 32`);
      const stepSpread = (key: keyof StepTiming): string => spread(stepsTimed.map((s) => s[key]));
      rows.push(
        ['F10 → adapter sends `stopped`', stepSpread('keyToStoppedMs')],
        ['`stopped` → CALL STACK shows the new frame', stepSpread('stoppedToCallStackMs')],
        ["`stopped` → Counters view shows minstret's new value", stepSpread('stoppedToCountersMs')],
      );
    }
    if (part('descent')) {
      const dsp = join(harness.workspace, 'src', 'dsp.c');
      const fir = functionLines(dsp, 'fir_filter');
      const mainLine = markerLine(join(harness.workspace, 'src', 'singlepass.c'), '#MAIN_FIRST');
      const descents: DescentTiming[] = [];
      for (let i = 0; i < descentCount; i++) {
        const d = await descentTiming(harness, proxy, fir, mainLine, i === 0);
        console.log(`descent ${i + 1}: ${JSON.stringify(d)}`);
        descents.push(d);
      }
      what.push(`${descentCount} descents at 5% on QEMU RISC-V 32, each in a reloaded window`);
      rows.push(
        [
          "Enter in the threshold box → adapter answers the descent's last request",
          spread(descents.map((d) => d.descentMs)),
        ],
        ['descent\'s last response → "$(flame)" CodeLens shown in dsp.c', spread(descents.map((d) => d.endToLensMs))],
        ["descent's last response → report shown in its editor", spread(descents.map((d) => d.endToReportMs))],
        [
          "descent's last response → both shown (the editor shows the results)",
          spread(descents.map((d) => d.endToResultsMs)),
        ],
      );
    }

    console.log(`\nCycleLens ${version} in code-server, ${what.join('; ')}; median (min–max)\n`);
    printTable(['figure', 'value'], rows);
  } finally {
    if (harness) {
      const { survivors } = await harness.stop();
      if (survivors.length > 0)
        console.error(`code-server left ${survivors.length} process(es): ${survivors.join(', ')}`);
    }
    await proxy?.close();
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? (e.stack ?? e.message) : e);
  process.exitCode = 1;
});
