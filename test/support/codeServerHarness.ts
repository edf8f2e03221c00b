import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { repoRoot, testOutputDir } from './paths';
import { importScriptsLib, type RunningCodeServer, type StopResult } from './codeServerScripts';

/** Where e2e tests keep their state (one folder per test file) and screenshots. */
export const e2eOutputDir = join(testOutputDir, 'e2e');
/** The screenshots docs/ui.md shows. */
export const docsScreenshotsDir = join(repoRoot, 'docs', 'screenshots');

/**
 * Debian's Chromium, headless. The network flags matter here: this machine's closed network refuses
 * Chromium's background connections (updates, sync, QUIC probes), and each refusal costs time.
 */
const chromiumArgs = [
  '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run', '--disable-quic',
];
export const chromiumPath = process.env.CYCLELENS_CHROMIUM ?? '/usr/bin/chromium';

export interface HarnessOptions {
  /** Names the state folder test-output/e2e/<name>/ (wiped at start); use the test file's name. */
  name: string;
  /**
   * The folder VS Code opens. Default: a fresh demo workspace (scripts/lib/demoWorkspace.mjs) in
   * test-output/e2e/<name>/workspace.
   */
  workspace?: string;
  /** With the default workspace: fail unless the fixture ELFs are built (tests that debug need them). */
  requireFirmware?: boolean;
  /** With the default workspace: the fixture program its launch configurations run (default singlepass). */
  program?: string;
  /** With the default workspace: QEMU server options added to its launch configurations. */
  server?: Record<string, unknown>;
  /** User settings on top of the quiet defaults of scripts/lib/codeServer.mjs. */
  settings?: Record<string, unknown>;
  theme?: string;
  /** Browser viewport; screenshots have this size. */
  viewport?: { width: number; height: number };
}

/** How long each phase of start() took, for the test's diagnostics and the report. */
export interface HarnessTimings {
  codeServerInstallMs: number;
  vsixMs: number;
  installExtensionMs: number;
  /** From spawning code-server until the workbench is rendered and the extension host is up. */
  startupToWorkbenchMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Reads `read()` until `done` holds or `timeoutMs` passes; returns the last reading either way, for
 * the caller to assert on. The workbench draws a stop in steps (stack, editor, decorations, views).
 */
export async function poll<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!done(value) && Date.now() < deadline) {
    await sleep(100);
    value = await read();
  }
  return value;
}

/** One row of the CALL STACK view. */
export interface StackFrameRow {
  name: string;
  file: string;
  line: number;
}

/** One row of the VARIABLES view; `level` 1 is a scope (Locals, Registers), 2 its variables, and so on. */
export interface VariableRow {
  level: number;
  name: string;
  value: string;
}

/** One row of an extension's tree view, as drawn: label, description, and the accessible label. */
export interface TreeRow {
  label: string;
  description: string;
  /** The tooltip when it is plain text, else the label (VS Code's aria-label rule for tree items). */
  ariaLabel: string;
  level: number;
  /** The row's codicon (`warning`, `circle-slash` ...), if it has one. */
  icon: string | undefined;
}

/** A process that code-server (or anything it started: extension host, adapter, QEMU, GDB) runs. */
export interface ServerProcess {
  pid: number;
  command: string;
}

/**
 * CycleLens, packaged, in a real VS Code (code-server) driven through Debian's Chromium. One instance
 * per test file: its own user-data and extensions folders, its own code-server and browser.
 */
export class CodeServerHarness {
  private constructor(
    readonly page: Page,
    private readonly browser: Browser,
    private readonly server: RunningCodeServer,
    readonly url: string,
    readonly workspace: string,
    readonly stateDir: string,
    readonly userDataDir: string,
    readonly extensionsDir: string,
    readonly vsixPath: string,
    readonly timings: HarnessTimings,
  ) {}

  static async start(options: HarnessOptions): Promise<CodeServerHarness> {
    const { codeServer, vsix, demoWorkspace } = await importScriptsLib();
    let t = Date.now();
    codeServer.ensureCodeServer();
    const codeServerInstallMs = Date.now() - t;
    t = Date.now();
    const vsixPath = vsix.ensureVsix();
    const vsixMs = Date.now() - t;

    const stateDir = join(e2eOutputDir, options.name);
    rmSync(stateDir, { recursive: true, force: true });
    const workspace = options.workspace ?? demoWorkspace.createDemoWorkspace({
      dir: join(stateDir, 'workspace'), build: Boolean(options.requireFirmware), allowMissingFirmware: !options.requireFirmware,
      ...(options.program ? { program: options.program } : {}), ...(options.server ? { server: options.server } : {}),
    }).dir;
    const userDataDir = join(stateDir, 'user-data');
    const extensionsDir = join(stateDir, 'extensions');
    t = Date.now();
    codeServer.installExtension(vsixPath, extensionsDir);
    const installExtensionMs = Date.now() - t;

    t = Date.now();
    const server = await codeServer.startCodeServer({
      userDataDir, extensionsDir, folder: workspace,
      settings: { ...codeServer.defaultSettings(options.theme ? { theme: options.theme } : {}), ...options.settings },
    });
    try {
      return await CodeServerHarness.connect({ server, workspace, stateDir, userDataDir, extensionsDir, vsixPath, viewport: options.viewport, timings: { codeServerInstallMs, vsixMs, installExtensionMs }, startedAt: t });
    } catch (e) {
      await server.stop();
      throw e;
    }
  }

  /**
   * Opens Chromium on a code-server that is already serving (started by start() or by `npm start`)
   * and waits for its workbench. Closing the harness stops `server` (its stop() decides what that means).
   */
  static async connect(o: {
    server: RunningCodeServer; workspace: string; stateDir: string; userDataDir: string; extensionsDir: string; vsixPath: string;
    viewport?: { width: number; height: number }; timings?: Omit<HarnessTimings, 'startupToWorkbenchMs'>; startedAt?: number;
  }): Promise<CodeServerHarness> {
    const t = o.startedAt ?? Date.now();
    let browser: Browser | undefined;
    try {
      // Chromium keeps crash reports under XDG_CONFIG_HOME even with a throwaway profile: not in HOME.
      const env = { ...process.env, XDG_CONFIG_HOME: join(o.stateDir, 'chromium-config') } as Record<string, string>;
      browser = await chromium.launch({ executablePath: chromiumPath, args: chromiumArgs, env });
      const context = await browser.newContext({ viewport: o.viewport ?? { width: 1600, height: 1000 } });
      const page = await context.newPage();
      const timings: HarnessTimings = { codeServerInstallMs: 0, vsixMs: 0, installExtensionMs: 0, ...o.timings, startupToWorkbenchMs: 0 };
      const harness = new CodeServerHarness(page, browser, o.server, o.server.url, o.workspace, o.stateDir, o.userDataDir, o.extensionsDir, o.vsixPath, timings);
      // A loaded machine serves the workbench's first page slowly: its load is not what a test judges.
      await page.goto(o.server.url, { timeout: 180_000 });
      await harness.waitForWorkbench();
      timings.startupToWorkbenchMs = Date.now() - t;
      return harness;
    } catch (e) {
      await browser?.close().catch(() => undefined);
      throw e;
    }
  }

  /** Closes the browser only (the server's own fate is the test's business). */
  async closeBrowser(): Promise<void> {
    await Promise.race([this.browser.close(), sleep(10_000)]).catch(() => undefined);
  }

  /**
   * The workbench is rendered and the (remote) extension host has started its eager extensions. The
   * second fact is not in the DOM; VS Code's server writes it to the extension host's log.
   */
  async waitForWorkbench(timeoutMs = 90_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    await this.page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: timeoutMs });
    await this.page.locator('.part.statusbar').waitFor({ state: 'visible', timeout: Math.max(1000, deadline - Date.now()) });
    while (!/Eager extensions activated/i.test(this.extensionHostLog())) {
      if (Date.now() > deadline) throw new Error(`the extension host did not come up within ${timeoutMs / 1000} s; see ${this.userDataDir}/logs`);
      await sleep(200);
    }
  }

  /** The remote extension host's log (user-data/logs/<session>/exthost*\/remoteexthost.log), all sessions. */
  extensionHostLog(): string {
    const logs = join(this.userDataDir, 'logs');
    const found: string[] = [];
    const walk = (dir: string) => {
      if (!existsSync(dir)) return;
      for (const name of readdirSync(dir)) {
        const full = join(dir, name);
        if (statSync(full).isDirectory()) walk(full);
        else if (name === 'remoteexthost.log') found.push(readFileSync(full, 'utf8'));
      }
    };
    walk(logs);
    return found.join('\n');
  }

  /** Waits until the extension host log says `extensionId` was activated; returns the log line. */
  async waitForActivation(extensionId: string, timeoutMs = 30_000): Promise<string> {
    const re = new RegExp(`ExtensionService#_doActivateExtension ${extensionId.replace(/\./g, '\\.')}\\b[^\\n]*`, 'i');
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = re.exec(this.extensionHostLog());
      if (m) return m[0];
      if (Date.now() > deadline) throw new Error(`${extensionId} was not activated within ${timeoutMs / 1000} s`);
      await sleep(200);
    }
  }

  private quickInput(): Locator {
    return this.page.locator('.quick-input-widget');
  }

  /**
   * Runs a command by its title through the command palette (F1, type, Enter), as a person would.
   * Waits for a palette entry whose label is `title` before pressing Enter, so a slow filter never
   * runs the wrong command.
   */
  async runCommand(title: string, timeoutMs = 15_000): Promise<void> {
    await this.quickOpen(`>${title}`, timeoutMs);
    const row = this.quickInput().locator('.monaco-list-row').filter({
      has: this.page.locator('.label-name', { hasText: new RegExp(`^${escapeRegExp(title)}$`) }),
    }).first();
    await row.waitFor({ state: 'visible', timeout: timeoutMs });
    await row.click();
    // Some commands open a picker of their own in the same widget; the caller then goes on in it.
    await this.quickInput().waitFor({ state: 'hidden', timeout: 2000 }).catch(() => undefined);
  }

  /**
   * Opens the quick input (F1) and types `text` over its '>' prefix: '>' runs commands, 'view ' opens
   * views, ':' goes to a line, no prefix opens files.
   */
  private async quickOpen(text: string, timeoutMs: number): Promise<Locator> {
    await this.closeQuickInput();
    await this.page.keyboard.press('F1');
    const input = this.quickInput().locator('input');
    await input.waitFor({ state: 'visible', timeout: timeoutMs });
    await input.fill(text);
    return input;
  }

  /**
   * Opens a view by its name ("Counters") through View: Open View, wherever its container is; this
   * expands and focuses it, which is what fires an extension's `onView:` activation.
   */
  async openView(name: string, timeoutMs = 15_000): Promise<void> {
    await this.quickOpen(`view ${name}`, timeoutMs);
    const row = this.quickInput().locator('.monaco-list-row').filter({
      has: this.page.locator('.label-name', { hasText: new RegExp(`^${escapeRegExp(name)}$`) }),
    }).first();
    await row.waitFor({ state: 'visible', timeout: timeoutMs });
    await row.click();
    await this.quickInput().waitFor({ state: 'hidden', timeout: timeoutMs });
    // A view that shares its container has an expanded header; one alone in it has none (the
    // container's title stands in), so the header is waited for briefly and not required.
    await this.page.locator('.pane-header.expanded .title', { hasText: new RegExp(`^${escapeRegExp(name)}$`, 'i') })
      .first().waitFor({ state: 'visible', timeout: 3000 }).catch(() => undefined);
  }

  /** Shows Run and Debug; returns the launch configuration dropdown. */
  async showRunAndDebug(timeoutMs = 15_000): Promise<Locator> {
    await this.runCommand('View: Show Run and Debug', timeoutMs);
    const select = this.page.locator('.part.sidebar .start-debug-action-item select');
    await select.waitFor({ state: 'visible', timeout: timeoutMs });
    return select;
  }

  /** The entries of the Run and Debug dropdown, as shown (launch.json names, "<debugger>...", ...). */
  async debugConfigurations(): Promise<string[]> {
    const select = await this.showRunAndDebug();
    return (await select.locator('option').allTextContents()).map((o) => o.trim());
  }

  /**
   * Picks an entry of the Run and Debug dropdown by its exact text, as a person would (VS Code draws
   * the list itself, so a plain selectOption on the <select> would not reach it).
   */
  async selectDebugConfiguration(label: string, timeoutMs = 15_000): Promise<void> {
    const select = await this.showRunAndDebug(timeoutMs);
    await select.click();
    const row = this.page.locator('.monaco-select-box-dropdown-container .monaco-list-row').filter({
      has: this.page.locator('.option-text', { hasText: new RegExp(`^\\s*${escapeRegExp(label)}\\s*$`) }),
    }).first();
    await row.waitFor({ state: 'visible', timeout: timeoutMs });
    await row.click();
  }

  /**
   * Opens a workspace file by its path relative to the folder, through Quick Open. `textEditor: false`
   * for a file that opens in a custom editor (a webview: no text view to wait for).
   */
  async openFile(relPath: string, timeoutMs = 15_000, options: { textEditor?: boolean } = {}): Promise<void> {
    await this.quickOpen(relPath, timeoutMs);
    const name = basename(relPath);
    const row = this.quickInput().locator('.monaco-list-row').filter({
      has: this.page.locator('.label-name', { hasText: new RegExp(`^${escapeRegExp(name)}$`) }),
    }).filter({ hasText: relPath.includes('/') ? relPath.slice(0, relPath.lastIndexOf('/')) : '' }).first();
    await row.waitFor({ state: 'visible', timeout: timeoutMs });
    await row.click();
    await this.page.locator('.tab.active', { hasText: name }).waitFor({ state: 'visible', timeout: timeoutMs });
    if (options.textEditor === false) return;
    await this.page.locator('.editor-group-container.active .monaco-editor .view-lines').waitFor({ state: 'visible', timeout: timeoutMs });
  }

  /** Writes test-output/e2e/<name>.png and returns its path. */
  async screenshot(name: string): Promise<string> {
    mkdirSync(e2eOutputDir, { recursive: true });
    const path = join(e2eOutputDir, `${name}.png`);
    await this.page.screenshot({ path });
    return path;
  }

  /**
   * Clicks the active editor's gutter at 1-based `line`: in the glyph margin (where breakpoints are
   * toggled) by default, or on the line number. The line is revealed first (Go to Line).
   */
  async clickGutter(line: number, options: { area?: 'glyph' | 'lineNumber'; button?: 'left' | 'right' } = {}): Promise<void> {
    await this.quickOpen(`:${line}`, 10_000);
    await this.page.keyboard.press('Enter');
    await this.quickInput().waitFor({ state: 'hidden', timeout: 10_000 });
    const editor = this.page.locator('.editor-group-container.active .monaco-editor').first();
    const number = editor.locator('.margin-view-overlays .line-numbers', { hasText: new RegExp(`^\\s*${line}\\s*$`) }).first();
    await number.waitFor({ state: 'visible', timeout: 10_000 });
    const numberBox = await number.boundingBox();
    if (!numberBox) throw new Error(`line ${line} is not rendered in the editor`);
    let x = numberBox.x + numberBox.width / 2;
    if ((options.area ?? 'glyph') === 'glyph') {
      const glyph = await editor.locator('.glyph-margin').first().boundingBox();
      if (!glyph) throw new Error('the editor has no glyph margin');
      x = glyph.x + glyph.width / 2;
    }
    await this.page.mouse.click(x, numberBox.y + numberBox.height / 2, { button: options.button ?? 'left' });
  }

  /** Waits for an element matching `selector` that contains `text`; returns it. */
  async waitForText(selector: string, text: string | RegExp, timeoutMs = 15_000): Promise<Locator> {
    const found = this.page.locator(selector).filter({ hasText: text }).first();
    await found.waitFor({ state: 'visible', timeout: timeoutMs });
    return found;
  }

  /**
   * Closes the quick input (palette, quick pick) if one is open, after waiting up to `appearMs` for
   * one that an earlier action opens asynchronously.
   */
  async closeQuickInput(appearMs = 0): Promise<void> {
    if (appearMs > 0) await this.quickInput().waitFor({ state: 'visible', timeout: appearMs }).catch(() => undefined);
    if (await this.quickInput().isVisible().catch(() => false)) {
      await this.page.keyboard.press('Escape');
      await this.quickInput().waitFor({ state: 'hidden', timeout: 5000 }).catch(() => undefined);
    }
  }

  // ---- views, editors and debugging, as a person sees them ------------------------------------

  /** The pane of a view in a side bar container ("Counters", "Call Stack"), found by its header. */
  viewPane(name: string): Locator {
    return this.page.locator('.pane').filter({ has: this.page.locator(`:scope > .pane-header[aria-label="${name} Section"]`) });
  }

  /** Expands or collapses a view's pane by clicking its header (a no-op when it already is). */
  async setViewExpanded(name: string, expanded: boolean): Promise<void> {
    const header = this.viewPane(name).locator(':scope > .pane-header');
    await header.waitFor({ state: 'visible', timeout: 10_000 });
    await this.dismissHover();
    if ((await header.getAttribute('aria-expanded')) !== String(expanded)) await this.clickPastHovers(header);
  }

  /**
   * Clicks `target`; when a hover that showed up late covers it (a toolbar tooltip appears some
   * 500 ms after the pointer or the keyboard focus reached its button, so dismissHover() before the
   * click can miss it), dismisses the hover and clicks again.
   */
  async clickPastHovers(target: Locator, attempts = 3): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await target.click({ timeout: attempt === attempts ? 30_000 : 3000 });
        return;
      } catch (e) {
        if (attempt === attempts) throw e;
        const covering = await this.page.locator('.context-view .hover-contents:visible, .monaco-hover:visible, .workbench-hover:visible').allInnerTexts().catch(() => []);
        const focused = await this.page.evaluate(() => {
          const a = document.activeElement;
          return a ? `${a.tagName.toLowerCase()}.${Array.from(a.classList).join('.')} "${(a.getAttribute('aria-label') ?? '').slice(0, 60)}"` : 'none';
        });
        console.error(`[harness] a click was covered (attempt ${attempt}); hovers ${JSON.stringify(covering)}, focus on ${focused}; screenshot ${await this.screenshot(`covered-click-${attempt}`)}`);
        await this.dismissHover();
      }
    }
  }

  /**
   * The rows of a tree view (an extension's or a built-in one) that are rendered now, top first. Row
   * readers here sort by `data-index`: Monaco's virtual list reuses row elements, so their DOM order
   * is not their order on screen.
   */
  async treeRows(view: string): Promise<TreeRow[]> {
    return this.viewPane(view).locator('.monaco-list-row').evaluateAll((rows) => rows.sort((a, b) => Number(a.getAttribute('data-index')) - Number(b.getAttribute('data-index'))).map((row) => {
      const text = (selector: string) => (row.querySelector(selector)?.textContent ?? '').trim();
      const icon = Array.from(row.querySelector('.custom-view-tree-node-item-icon')?.classList ?? []).find((c) => c.startsWith('codicon-'));
      return {
        label: text('.label-name'),
        description: text('.label-description'),
        ariaLabel: row.getAttribute('aria-label') ?? '',
        level: Number(row.getAttribute('aria-level') ?? 0),
        icon: icon?.slice('codicon-'.length),
      };
    }));
  }

  /** The row of tree view `view` whose label is exactly `label`. */
  treeItem(view: string, label: string): Locator {
    return this.viewPane(view).locator('.monaco-list-row').filter({
      has: this.page.locator('.label-name', { hasText: new RegExp(`^\\s*${escapeRegExp(label)}\\s*$`) }),
    }).first();
  }

  /** Waits until `view` has a row labelled `label` whose description matches `description`; returns the row. */
  async waitForTreeRow(view: string, label: string, description: RegExp | ((d: string) => boolean), timeoutMs = 15_000): Promise<TreeRow> {
    const matches = typeof description === 'function' ? description : (d: string) => description.test(d);
    const deadline = Date.now() + timeoutMs;
    let last: TreeRow | undefined;
    for (;;) {
      last = (await this.treeRows(view)).find((r) => r.label === label);
      if (last && matches(last.description)) return last;
      if (Date.now() > deadline) {
        throw new Error(`the ${view} view has no row "${label}" with a matching description within ${timeoutMs / 1000} s (last: ${JSON.stringify(last)})`);
      }
      await sleep(100);
    }
  }

  /** Hovers `target` and returns the text of the hover that appears (a tree item's tooltip, say). */
  async hoverText(target: Locator, contains: string | RegExp, timeoutMs = 10_000): Promise<string> {
    await this.dismissHover();
    await target.hover();
    const hover = this.page.locator('.monaco-hover, .workbench-hover').filter({ hasText: contains }).first();
    await hover.waitFor({ state: 'visible', timeout: timeoutMs });
    return (await hover.innerText()).trim();
  }

  /** Moves the mouse off whatever it hovers and waits for any hover to close (before a screenshot). */
  async dismissHover(): Promise<void> {
    const status = await this.page.locator('.part.statusbar').boundingBox();
    // The empty middle of the status bar: nothing there shows a hover.
    if (status) await this.page.mouse.move(status.x + status.width / 2, status.y + status.height / 2);
    // A toolbar button with keyboard focus shows its tooltip some 500 ms later, wherever the pointer
    // is (Run and Debug's start button, once the view is shown from the palette): take the focus away
    // before that tooltip can cover the next click.
    await this.page.evaluate(() => {
      const active = document.activeElement as HTMLElement | null;
      if (active?.closest('.monaco-action-bar, .start-debug-action-item')) active.blur();
    });
    // Toolbar tooltips ("Start Debugging (F5)") live in a context view, not a Monaco hover.
    const hovers = this.page.locator('.monaco-hover:visible, .workbench-hover:visible, .context-view .hover-contents:visible');
    const gone = async (ms: number): Promise<boolean> => {
      const deadline = Date.now() + ms;
      while ((await hovers.count()) > 0 && Date.now() < deadline) await sleep(100);
      return (await hovers.count()) === 0;
    };
    if (await gone(3000)) return;
    await this.page.keyboard.press('Escape');
    if (await gone(1000)) return;
    // A toolbar button that has keyboard focus (Run and Debug's start button, once the view is
    // shown from the palette) keeps its tooltip up wherever the pointer is: take the focus away.
    await this.page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    await gone(2000);
  }

  /** Clicks a view's title bar action by its label ("Configure Counters…"); hovering shows the actions. */
  async clickViewAction(view: string, action: string, timeoutMs = 10_000): Promise<void> {
    const pane = this.viewPane(view);
    await pane.locator(':scope > .pane-header').hover();
    const button = pane.locator(`:scope > .pane-header .action-label[aria-label="${action}"]`);
    await button.waitFor({ state: 'visible', timeout: timeoutMs });
    await button.click();
  }

  /**
   * In an open multi-select quick pick: checks the items labelled exactly `labels`, asserts that
   * many are selected, and accepts with OK. Throws with the offered labels when one is missing.
   */
  async pickMany(labels: string[], timeoutMs = 15_000): Promise<void> {
    const widget = this.quickInput();
    await widget.locator('.monaco-list-row').first().waitFor({ state: 'visible', timeout: timeoutMs });
    for (const label of labels) {
      const row = widget.locator('.monaco-list-row').filter({
        has: this.page.locator('.label-name', { hasText: new RegExp(`^\\s*${escapeRegExp(label)}\\s*$`) }),
      }).first();
      if (!(await row.isVisible())) {
        const offered = await widget.locator('.monaco-list-row .label-name').allInnerTexts();
        throw new Error(`the quick pick offers ${JSON.stringify(offered)}, not "${label}"`);
      }
      await row.locator('.quick-input-list-checkbox, input[type=checkbox], .monaco-checkbox').first().click();
    }
    const count = widget.locator('.quick-input-count');
    await count.filter({ hasText: new RegExp(`^\\s*${labels.length} Selected`) }).waitFor({ state: 'visible', timeout: 5000 });
    await widget.locator('.monaco-button', { hasText: /^OK$/ }).click();
    await widget.waitFor({ state: 'hidden', timeout: timeoutMs });
  }

  /** Labels and descriptions offered by the open quick pick. */
  async quickPickItems(): Promise<{ label: string; description: string }[]> {
    const widget = this.quickInput();
    await widget.locator('.monaco-list-row').first().waitFor({ state: 'visible', timeout: 15_000 });
    return widget.locator('.monaco-list-row').evaluateAll((rows) => rows.sort((a, b) => Number(a.getAttribute('data-index')) - Number(b.getAttribute('data-index'))).map((r) => ({
      label: (r.querySelector('.label-name')?.textContent ?? '').trim(),
      description: (r.querySelector('.label-description')?.textContent ?? '').trim(),
    })));
  }

  private activeEditor(): Locator {
    return this.page.locator('.editor-group-container.active .monaco-editor').first();
  }

  /** File name on the active editor tab. */
  async activeTab(): Promise<string> {
    return (await this.page.locator('.editor-group-container.active .tab.active .label-name').first().innerText()).trim();
  }

  /**
   * The 1-based lines of the active editor that carry a decoration or glyph matching `selector`,
   * found by lining its box up with the rendered line numbers (Monaco draws both absolutely).
   */
  async decoratedLines(selector: string): Promise<number[]> {
    const editor = this.activeEditor();
    const numbers = await editor.locator('.margin-view-overlays .line-numbers').evaluateAll((els) =>
      els.map((e) => ({ line: Number((e.textContent ?? '').trim()), y: e.getBoundingClientRect().top })));
    const marks = await editor.locator(selector).evaluateAll((els) => els.map((e) => e.getBoundingClientRect().top));
    const lines = marks.map((y) => numbers.find((n) => Math.abs(n.y - y) < 3)?.line).filter((l): l is number => l !== undefined);
    return [...new Set(lines)].sort((a, b) => a - b);
  }

  /** Lines of the active editor with the "stopped here" (top stack frame) line decoration. */
  stoppedLines(): Promise<number[]> {
    return this.decoratedLines('.debug-top-stack-frame-line');
  }

  /** Lines of the active editor with a breakpoint glyph (verified or not) in the gutter. */
  breakpointLines(): Promise<number[]> {
    return this.decoratedLines('.glyph-margin-widgets [class*="codicon-debug-breakpoint"]');
  }

  /** The debug toolbar (continue, step, stop) that VS Code shows while a session runs. */
  debugToolbar(): Locator {
    return this.page.locator('.debug-toolbar');
  }

  /**
   * Starts the launch configuration `name` as a person does: picks it in the Run and Debug dropdown
   * (when another one is selected) and presses the green start button. Waits for the debug toolbar.
   */
  async startDebugging(name: string, timeoutMs = 60_000): Promise<void> {
    const select = await this.showRunAndDebug();
    const selected = await select.evaluate((s: HTMLSelectElement) => s.options[s.selectedIndex]?.text.trim());
    if (selected !== name) await this.selectDebugConfiguration(name);
    await this.page.locator('.part.sidebar .start-debug-action-item .codicon-debug-start').click();
    await this.debugToolbar().waitFor({ state: 'visible', timeout: timeoutMs });
  }

  /** The frames in the CALL STACK view, top first. */
  async callStack(): Promise<StackFrameRow[]> {
    const rows = await this.viewPane('Call Stack').locator('.monaco-list-row').evaluateAll((els) => els.sort((a, b) => Number(a.getAttribute('data-index')) - Number(b.getAttribute('data-index'))).map((e) => ({
      name: (e.querySelector('.stack-frame .label')?.textContent ?? '').trim(),
      file: (e.querySelector('.file-name')?.textContent ?? '').trim(),
      line: Number((e.querySelector('.line-number')?.textContent ?? '').trim().split(':')[0]),
    })));
    return rows.filter((r) => r.name !== '');
  }

  /** Waits until the CALL STACK's top frame is `name` (at `line`, if given); returns the frames. */
  async waitForTopFrame(name: string, line?: number, timeoutMs = 30_000): Promise<StackFrameRow[]> {
    const deadline = Date.now() + timeoutMs;
    let frames: StackFrameRow[] = [];
    for (;;) {
      frames = await this.callStack().catch(() => []);
      const top = frames[0];
      if (top && top.name === name && (line === undefined || top.line === line)) return frames;
      if (Date.now() > deadline) {
        throw new Error(`the CALL STACK's top frame is not ${name}${line ? `:${line}` : ''} within ${timeoutMs / 1000} s (it shows ${JSON.stringify(frames)})`);
      }
      await sleep(100);
    }
  }

  /** The text next to the CALL STACK title: "Paused on breakpoint", "Paused on step" ... */
  async callStackState(): Promise<string> {
    return (await this.viewPane('Call Stack').locator(':scope > .pane-header .call-stack-state-message').first().innerText().catch(() => '')).trim();
  }

  /** The rows of the VARIABLES view that are rendered now. */
  async variables(): Promise<VariableRow[]> {
    return this.viewPane('Variables').locator('.monaco-list-row').evaluateAll((els) => els.sort((a, b) => Number(a.getAttribute('data-index')) - Number(b.getAttribute('data-index'))).map((e) => {
      const level = Number(e.getAttribute('aria-level') ?? 0);
      const name = (e.querySelector('.name')?.textContent ?? e.textContent ?? '').trim().replace(/\s*[=:]$/, ''); // drawn as "st ="
      const value = (e.querySelector('.value')?.textContent ?? '').trim();
      return { level, name, value };
    }));
  }

  /** Waits until the VARIABLES view lists every one of `names` at `level` (2: a scope's variables). */
  async waitForVariables(names: string[], level = 2, timeoutMs = 15_000): Promise<VariableRow[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const rows = await this.variables();
      const shown = rows.filter((r) => r.level === level).map((r) => r.name);
      if (names.every((n) => shown.includes(n))) return rows;
      if (Date.now() > deadline) throw new Error(`VARIABLES does not list ${names.join(', ')} within ${timeoutMs / 1000} s (it shows ${shown.join(', ') || 'nothing'})`);
      await sleep(100);
    }
  }

  /** Expands the variable `name` (at `level`) in the VARIABLES view and waits for its children. */
  async expandVariable(name: string, level = 2, timeoutMs = 15_000): Promise<VariableRow[]> {
    const row = this.viewPane('Variables').locator(`.monaco-list-row[aria-level="${level}"]`).filter({
      has: this.page.locator('.name', { hasText: new RegExp(`^\\s*${escapeRegExp(name)}\\s*[=:]?\\s*$`) }),
    }).first();
    await row.waitFor({ state: 'visible', timeout: timeoutMs });
    if ((await row.getAttribute('aria-expanded')) !== 'true') await row.locator('.monaco-tl-twistie').click();
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const rows = await this.variables();
      const at = rows.findIndex((r) => r.level === level && r.name === name);
      const children: VariableRow[] = [];
      for (let i = at + 1; at >= 0 && i < rows.length && rows[i]!.level > level; i++) if (rows[i]!.level === level + 1) children.push(rows[i]!);
      if (children.length > 0) return children;
      if (Date.now() > deadline) throw new Error(`${name} in VARIABLES shows no children within ${timeoutMs / 1000} s`);
      await sleep(100);
    }
  }

  /**
   * Stop (Shift+F5) and wait for the debug toolbar to go. Returns how many presses it took: more than
   * one means the first did not end the session (`maxPresses` bounds the tries, each `perPressMs`).
   */
  async stopDebugging(options: { maxPresses?: number; perPressMs?: number } = {}): Promise<{ presses: number; ended: boolean }> {
    const maxPresses = options.maxPresses ?? 2;
    for (let presses = 1; presses <= maxPresses; presses++) {
      await this.page.keyboard.press('Shift+F5');
      const gone = await this.debugToolbar().waitFor({ state: 'hidden', timeout: options.perPressMs ?? 10_000 }).then(() => true, () => false);
      if (gone) return { presses, ended: true };
    }
    return { presses: maxPresses, ended: false };
  }

  // ---- themes, layout, screenshots ------------------------------------------------------------

  /**
   * Switches the color theme through "Preferences: Color Theme", as a person does (VS Code does not
   * watch the settings file written at start). Waits until the workbench carries the theme's class.
   */
  async setColorTheme(theme: string, timeoutMs = 15_000): Promise<void> {
    const kind = /light/i.test(theme) ? 'vs' : /high contrast/i.test(theme) ? 'hc-black' : 'vs-dark';
    const before = await this.themeClass();
    await this.runCommand('Preferences: Color Theme', timeoutMs);
    const input = this.quickInput().locator('input');
    await input.waitFor({ state: 'visible', timeout: timeoutMs });
    await input.fill(theme);
    // The picker labels a theme by its short name ("Light Modern") and names the setting's value after it.
    const row = this.quickInput().locator('.monaco-list-row').filter({ hasText: theme }).first();
    await row.waitFor({ state: 'visible', timeout: timeoutMs });
    await row.click();
    await this.quickInput().waitFor({ state: 'hidden', timeout: timeoutMs });
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const now = await this.themeClass();
      if (now.split(' ').includes(kind) && (now !== before || before.split(' ').includes(kind))) break;
      if (Date.now() > deadline) throw new Error(`the workbench did not switch to "${theme}" within ${timeoutMs / 1000} s (classes: ${now})`);
      await sleep(100);
    }
    // A theme switch makes VS Code activate extensions, shown as "Activating Extensions..." in the
    // status bar a moment later: wait for it to come and go, so it is not in the picture.
    const activating = this.page.locator('.part.statusbar', { hasText: 'Activating Extensions' });
    await activating.waitFor({ state: 'visible', timeout: 1500 }).catch(() => undefined);
    await activating.waitFor({ state: 'hidden', timeout: 10_000 }).catch(() => undefined);
    await sleep(300); // the editors repaint after the class flips
  }

  private async themeClass(): Promise<string> {
    return this.page.locator('.monaco-workbench').first().evaluate((e) => Array.from(e.classList).filter((c) => /^(vs|vs-dark|hc-black|hc-light)$|^vscode-theme-/.test(c)).join(' '));
  }

  /** Drags the sash between the primary side bar and the editors so the side bar is `width` px wide. */
  async setSidebarWidth(width: number): Promise<void> {
    const sidebar = await this.page.locator('.part.sidebar').boundingBox();
    if (!sidebar) throw new Error('the side bar is not visible');
    const edge = sidebar.x + sidebar.width;
    const y = sidebar.y + sidebar.height / 2;
    await this.page.mouse.move(edge, y);
    await this.page.mouse.down();
    await this.page.mouse.move(edge + (width - sidebar.width) / 2, y, { steps: 4 });
    await this.page.mouse.move(sidebar.x + width, y, { steps: 4 });
    await this.page.mouse.up();
    // The pointer now rests wherever the sash went, perhaps on a button whose hover covers a view.
    await this.dismissHover();
  }

  /**
   * Makes the view `name` taller by `pixels` by dragging the sash above its header up (the views
   * above give the room); negative `pixels` drag it down, so the views above grow instead. Use it
   * when a view with many rows gets a sliver of the side bar.
   */
  async growView(name: string, pixels: number): Promise<void> {
    const header = await this.viewPane(name).locator(':scope > .pane-header').boundingBox();
    if (!header) throw new Error(`the ${name} view is not visible`);
    const sashes = await this.page.locator('.part.sidebar .monaco-sash.horizontal').evaluateAll((els) => els.map((e) => {
      const r = e.getBoundingClientRect();
      return { x: r.left + r.width / 2, y: r.top + r.height / 2, visible: r.width > 0 };
    }));
    const sash = sashes.filter((s) => s.visible).sort((a, b) => Math.abs(a.y - header.y) - Math.abs(b.y - header.y))[0];
    if (!sash || Math.abs(sash.y - header.y) > 10) {
      throw new Error(`no sash above the ${name} view's header at y=${header.y} (nearest at ${sash ? sash.y : 'none'})`);
    }
    await this.page.mouse.move(sash.x, sash.y);
    await this.page.mouse.down();
    await this.page.mouse.move(sash.x, sash.y - pixels / 2, { steps: 4 });
    await this.page.mouse.move(sash.x, sash.y - pixels, { steps: 4 });
    await this.page.mouse.up();
    await this.dismissHover();
  }

  /**
   * One screenshot per theme, named `<name>-<light|dark>.png`, in test-output/e2e/themes/ and, when
   * CYCLELENS_DOCS_SCREENSHOTS=1, also in docs/screenshots/ (kept out of plain test runs so they do
   * not rewrite tracked files). `prepare` runs after each switch (a theme change closes hovers, for
   * one). Ends in the first theme of the list. Returns the paths written.
   */
  async screenshotInThemes(name: string, themes: string[], prepare?: () => Promise<void>): Promise<string[]> {
    const dirs = [join(e2eOutputDir, 'themes')];
    if (process.env.CYCLELENS_DOCS_SCREENSHOTS === '1') dirs.push(docsScreenshotsDir);
    const written: string[] = [];
    for (const theme of themes) {
      await this.setColorTheme(theme);
      await prepare?.();
      for (const dir of dirs) {
        const path = join(dir, `${name}-${/light/i.test(theme) ? 'light' : 'dark'}.png`);
        mkdirSync(dir, { recursive: true });
        await this.page.screenshot({ path });
        written.push(path);
      }
    }
    if (themes.length > 1) await this.setColorTheme(themes[0]!);
    return written;
  }

  // ---- firmware and processes -----------------------------------------------------------------

  /**
   * Rebuilds the workspace's firmware from the workspace's own sources (its Makefile), so the ELFs'
   * debug information names the files VS Code has open, as in a user's own project. The demo
   * workspace otherwise carries ELFs built in test/fixtures/, whose DWARF names those paths.
   */
  buildFirmwareInWorkspace(targets: string[]): void {
    for (const target of targets) {
      rmSync(join(this.workspace, 'build', target), { recursive: true, force: true });
      execFileSync('make', ['-C', this.workspace, `TARGET=${target}`, '-j2', '--no-print-directory'], { stdio: 'pipe' });
    }
  }

  /**
   * Live processes started by this code-server, found by the tag every one of them inherits (even
   * re-parented ones); `pattern` filters on the command line.
   */
  async serverProcesses(pattern?: RegExp): Promise<ServerProcess[]> {
    const { codeServer } = await importScriptsLib();
    const found: ServerProcess[] = [];
    for (const pid of codeServer.taggedProcesses(this.server.tag)) {
      try {
        const command = readFileSync(`/proc/${pid}/cmdline`, 'latin1').replace(/\0/g, ' ').trim();
        if (!pattern || pattern.test(command)) found.push({ pid, command });
      } catch {
        // exited while we looked
      }
    }
    return found;
  }

  /** Waits up to `timeoutMs` for no process matching `pattern` to be left; returns those still there. */
  async waitForNoServerProcesses(pattern: RegExp, timeoutMs = 10_000): Promise<ServerProcess[]> {
    const deadline = Date.now() + timeoutMs;
    let left = await this.serverProcesses(pattern);
    while (left.length > 0 && Date.now() < deadline) {
      await sleep(200);
      left = await this.serverProcesses(pattern);
    }
    return left;
  }

  /**
   * Closes the browser and stops code-server with everything it started (its process group, then any
   * process carrying its tag). `escaped` lists processes that had left the group and were found by
   * the tag; `survivors` lists any still alive after that (an orphan: a test asserts it is empty).
   */
  async stop(): Promise<StopResult> {
    await Promise.race([this.browser.close(), sleep(10_000)]).catch(() => undefined);
    return this.server.stop();
  }

  /** code-server's own log (stdout and stderr of the server). */
  get serverLog(): string {
    return this.server.logFile;
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
