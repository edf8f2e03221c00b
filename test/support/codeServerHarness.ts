import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { importScriptsLib, type RunningCodeServer, type StopResult } from './codeServerScripts';
import { DebugWorkbench } from './debugWorkbench';
import { e2eOutputDir, sleep } from './workbenchDriver';

export { docsScreenshotsDir, e2eOutputDir, poll, type TreeRow } from './workbenchDriver';
export type { StackFrameRow, VariableRow } from './debugWorkbench';

/**
 * Debian's Chromium, headless. The network flags matter here: this machine's closed network refuses
 * Chromium's background connections (updates, sync, QUIC probes), and each refusal costs time.
 */
const chromiumArgs = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];
/**
 * What a debug session runs: QEMU, GDB and its adapter. A spare adapter (core/dap/adapterSpare.ts),
 * loaded and waiting for the window's next session, is not one of them until it is handed a
 * session, when its title drops `--spare` (common/startHint.ts).
 */
export const sessionProcesses = /qemu-system-|gdb-multiarch|dist\/adapter\.js(?! --spare)/;
/** An idle spare adapter. */
export const spareAdapters = /dist\/adapter\.js --spare/;

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

/** A process that code-server (or anything it started: extension host, adapter, QEMU, GDB) runs. */
export interface ServerProcess {
  pid: number;
  command: string;
}

/**
 * CycleLens, packaged, in a real VS Code (code-server) driven through Debian's Chromium. One instance
 * per test file: its own user-data and extensions folders, its own code-server and browser.
 */
export class CodeServerHarness extends DebugWorkbench {
  private constructor(
    page: Page,
    private readonly browser: Browser,
    private readonly server: RunningCodeServer,
    readonly url: string,
    readonly workspace: string,
    readonly stateDir: string,
    readonly userDataDir: string,
    readonly extensionsDir: string,
    readonly vsixPath: string,
    readonly timings: HarnessTimings,
  ) {
    super(page);
  }

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
    const workspace =
      options.workspace ??
      demoWorkspace.createDemoWorkspace({
        dir: join(stateDir, 'workspace'),
        build: Boolean(options.requireFirmware),
        allowMissingFirmware: !options.requireFirmware,
        ...(options.program ? { program: options.program } : {}),
        ...(options.server ? { server: options.server } : {}),
      }).dir;
    const userDataDir = join(stateDir, 'user-data');
    const extensionsDir = join(stateDir, 'extensions');
    t = Date.now();
    codeServer.installExtension(vsixPath, extensionsDir);
    const installExtensionMs = Date.now() - t;

    t = Date.now();
    const server = await codeServer.startCodeServer({
      userDataDir,
      extensionsDir,
      folder: workspace,
      settings: { ...codeServer.defaultSettings(options.theme ? { theme: options.theme } : {}), ...options.settings },
    });
    try {
      return await CodeServerHarness.connect({
        server,
        workspace,
        stateDir,
        userDataDir,
        extensionsDir,
        vsixPath,
        viewport: options.viewport,
        timings: { codeServerInstallMs, vsixMs, installExtensionMs },
        startedAt: t,
      });
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
    server: RunningCodeServer;
    workspace: string;
    stateDir: string;
    userDataDir: string;
    extensionsDir: string;
    vsixPath: string;
    viewport?: { width: number; height: number };
    timings?: Omit<HarnessTimings, 'startupToWorkbenchMs'>;
    startedAt?: number;
  }): Promise<CodeServerHarness> {
    const t = o.startedAt ?? Date.now();
    let browser: Browser | undefined;
    try {
      // Chromium keeps crash reports under XDG_CONFIG_HOME even with a throwaway profile: not in HOME.
      const env = { ...process.env, XDG_CONFIG_HOME: join(o.stateDir, 'chromium-config') } as Record<string, string>;
      browser = await chromium.launch({ executablePath: chromiumPath, args: chromiumArgs, env });
      const context = await browser.newContext({ viewport: o.viewport ?? { width: 1600, height: 1000 } });
      const page = await context.newPage();
      const timings: HarnessTimings = {
        codeServerInstallMs: 0,
        vsixMs: 0,
        installExtensionMs: 0,
        ...o.timings,
        startupToWorkbenchMs: 0,
      };
      const harness = new CodeServerHarness(
        page,
        browser,
        o.server,
        o.server.url,
        o.workspace,
        o.stateDir,
        o.userDataDir,
        o.extensionsDir,
        o.vsixPath,
        timings,
      );
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
    await this.page
      .locator('.part.statusbar')
      .waitFor({ state: 'visible', timeout: Math.max(1000, deadline - Date.now()) });
    while (!/Eager extensions activated/i.test(this.extensionHostLog())) {
      if (Date.now() > deadline)
        throw new Error(
          `the extension host did not come up within ${timeoutMs / 1000} s; see ${this.userDataDir}/logs`,
        );
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

  // ---- firmware and processes -----------------------------------------------------------------

  /**
   * Rebuilds the workspace's firmware from the workspace's own sources (its Makefile), so the ELFs'
   * debug information names the files VS Code has open, as in a user's own project. The demo
   * workspace otherwise carries ELFs built in test/fixtures/, whose DWARF names those paths.
   */
  buildFirmwareInWorkspace(targets: string[]): void {
    for (const target of targets) {
      rmSync(join(this.workspace, 'build', target), { recursive: true, force: true });
      execFileSync('make', ['-C', this.workspace, `TARGET=${target}`, '-j2', '--no-print-directory'], {
        stdio: 'pipe',
      });
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
