import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { testOutputDir } from './paths';
import { importScriptsLib, type RunningCodeServer, type StopResult } from './codeServerScripts';

/** Where e2e tests keep their state (one folder per test file) and screenshots. */
export const e2eOutputDir = join(testOutputDir, 'e2e');

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
      dir: join(stateDir, 'workspace'), allowMissingFirmware: !options.requireFirmware,
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
    let browser: Browser | undefined;
    try {
      // Chromium keeps crash reports under XDG_CONFIG_HOME even with a throwaway profile: not in HOME.
      const env = { ...process.env, XDG_CONFIG_HOME: join(stateDir, 'chromium-config') } as Record<string, string>;
      browser = await chromium.launch({ executablePath: chromiumPath, args: chromiumArgs, env });
      const context = await browser.newContext({ viewport: options.viewport ?? { width: 1600, height: 1000 } });
      const page = await context.newPage();
      const timings: HarnessTimings = { codeServerInstallMs, vsixMs, installExtensionMs, startupToWorkbenchMs: 0 };
      const harness = new CodeServerHarness(page, browser, server, server.url, workspace, stateDir, userDataDir, extensionsDir, vsixPath, timings);
      await page.goto(server.url);
      await harness.waitForWorkbench();
      timings.startupToWorkbenchMs = Date.now() - t;
      return harness;
    } catch (e) {
      await browser?.close().catch(() => undefined);
      await server.stop();
      throw e;
    }
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

  /** Opens a workspace file by its path relative to the folder, through Quick Open. */
  async openFile(relPath: string, timeoutMs = 15_000): Promise<void> {
    await this.quickOpen(relPath, timeoutMs);
    const name = basename(relPath);
    const row = this.quickInput().locator('.monaco-list-row').filter({
      has: this.page.locator('.label-name', { hasText: new RegExp(`^${escapeRegExp(name)}$`) }),
    }).filter({ hasText: relPath.includes('/') ? relPath.slice(0, relPath.lastIndexOf('/')) : '' }).first();
    await row.waitFor({ state: 'visible', timeout: timeoutMs });
    await row.click();
    await this.page.locator('.tab.active', { hasText: name }).waitFor({ state: 'visible', timeout: timeoutMs });
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
