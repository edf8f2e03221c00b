/**
 * UI benchmark: the packaged CycleLens in code-server (Debian's Chromium, headless), on the demo
 * workspace. Prints two figures, as medians over several runs:
 *  1. Activation: the time from a click on "Counters" in View: Open View (the `onView` activation)
 *     to the view showing its first row, in a window reloaded so the extension is not active yet;
 *     next to it, VS Code's own "Activation" figure from Developer: Show Running Extensions (the
 *     time to load and run activate()).
 *  2. Counter refresh: the time from the adapter's `stopped` event after a step over (F10) to the
 *     Counters view drawing minstret's new value. VS Code reaches the adapter through a TCP proxy in
 *     this process (the `cyclelens.debugAdapterPort` setting), which timestamps each `stopped` event
 *     as it passes; the page timestamps the view's change with a MutationObserver. Both clocks are
 *     this machine's wall clock. The CALL STACK's change is timed the same way, for comparison.
 * Prints figures; record them in docs/benchmarks.md with the commit.
 *   npm run bench -- ui [--runs N] [--steps N]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { CodeServerHarness } from '../test/support/codeServerHarness';
import { importScriptsLib } from '../test/support/codeServerScripts';
import { OWNER_TAG_VAR, killTagged, newOwnerTag, waitForNoTaggedProcesses } from '../test/support/ownedProcesses';
import { median, printTable } from './support';

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return (at >= 0 ? Number(process.argv[at + 1]) : 0) || fallback;
}
const runs = option('runs', 5);
const stepCount = option('steps', 10);

/**
 * A DAP server that VS Code connects to: each connection gets its own adapter process over stdio
 * (as VS Code would start it), and every `stopped` event the adapter sends is timestamped here.
 */
class TimingAdapterProxy {
  readonly tag = newOwnerTag();
  readonly stoppedAt: number[] = [];
  private readonly adapters = new Set<ChildProcess>();
  private server: Server | undefined;

  /** `adapterPath` is asked at each connection: the installed adapter is known only after install. */
  constructor(private readonly adapterPath: () => string) {}

  async listen(): Promise<number> {
    this.server = createServer((socket) => {
      const adapter = spawn(process.execPath, [this.adapterPath()], { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, [OWNER_TAG_VAR]: this.tag } });
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
      const message = JSON.parse(buffer.subarray(headerEnd + 4, headerEnd + 4 + length).toString('utf8')) as { type?: string; event?: string };
      if (message.type === 'event' && message.event === 'stopped') this.stoppedAt.push(Date.now());
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

async function activationRun(h: CodeServerHarness, extensionId: string, displayName: string, first: boolean): Promise<ActivationRun> {
  if (!first) {
    // A reloaded window gets a new extension host; with the Explorer shown, nothing activates CycleLens.
    await h.runCommand('View: Close All Editors');
    await h.runCommand('View: Show Explorer');
    const hosts = count(h, /Eager extensions activated/);
    await h.runCommand('Developer: Reload Window');
    const deadline = Date.now() + 90_000;
    while (count(h, /Eager extensions activated/) <= hosts) {
      if (Date.now() > deadline) throw new Error('the reloaded window\'s extension host did not come up');
      await new Promise((r) => setTimeout(r, 200));
    }
    await h.waitForWorkbench();
  }
  const activations = count(h, new RegExp(`_doActivateExtension ${extensionId.replace(/\./g, '\\.')}\\b`));
  const page = h.page;
  // Open View, typed up to the row, so the clock starts at the click that opens the view.
  await h.closeQuickInput();
  await page.keyboard.press('F1');
  await page.locator('.quick-input-widget input').fill('view Counters');
  const row = page.locator('.quick-input-widget .monaco-list-row').filter({ has: page.locator('.label-name', { hasText: /^Counters$/ }) }).first();
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
    const minstret = () => text('Counters', (r) => (r.querySelector('.label-name')?.textContent ?? '').trim() === 'minstret');
    const top = () => text('Call Stack', () => true);
    let lastCounters = minstret();
    let lastStack = top();
    new MutationObserver(() => {
      const now = Date.now();
      const c = minstret();
      if (c !== lastCounters) { lastCounters = c; w.__clTimes.counters.push(now); }
      const s = top();
      if (s !== lastStack) { lastStack = s; if (s !== '') w.__clTimes.stack.push(now); }
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
    while (proxy.stoppedAt.length === before.stopped || times.counters.length === before.counters.length || times.stack.length === before.stack.length) {
      if (Date.now() > deadline) throw new Error(`step ${i + 1}: no stopped event, CALL STACK change and Counters change within 30 s`);
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
    harness = await CodeServerHarness.start({ name: 'bench-ui', requireFirmware: true, settings: { 'cyclelens.debugAdapterPort': port } });
    harness.buildFirmwareInWorkspace(['rv32']);

    const activation: ActivationRun[] = [];
    for (let i = 0; i < runs; i++) activation.push(await activationRun(harness, id, displayName, i === 0));
    await harness.runCommand('View: Close All Editors');
    const stepsTimed = await stepTimings(harness, proxy);

    console.log(`\nCycleLens ${version} in code-server, ${runs} activations (window reloads), ${stepCount} steps over (F10) on QEMU RISC-V 32; median (min–max)\n`);
    printTable(['figure', 'value'], [
      ['click on "Counters" (Open View) → view shows its first row, extension not yet active', spread(activation.map((a) => a.viewMs))],
      ['"Activation" in Developer: Show Running Extensions', spread(activation.map((a) => a.reportedMs))],
      ['F10 → adapter sends `stopped`', spread(stepsTimed.map((s) => s.keyToStoppedMs))],
      ['`stopped` → CALL STACK shows the new frame', spread(stepsTimed.map((s) => s.stoppedToCallStackMs))],
      ['`stopped` → Counters view shows minstret\'s new value', spread(stepsTimed.map((s) => s.stoppedToCountersMs))],
    ]);
  } finally {
    if (harness) {
      const { survivors } = await harness.stop();
      if (survivors.length > 0) console.error(`code-server left ${survivors.length} process(es): ${survivors.join(', ')}`);
    }
    await proxy?.close();
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.stack ?? e.message : e);
  process.exitCode = 1;
});
