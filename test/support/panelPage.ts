import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { HostToWebview, WebviewToHost } from '../../common/webviewMessages';
import { panelHtml } from '../../extension/panels/panelHtml';
import { chromiumPath } from './codeServerHarness';
import { repoRoot } from './paths';

/**
 * The profile panel's page in Debian's Chromium, outside VS Code: the built dist/webview.js and
 * dist/webviewLayout.js, served over HTTP with the page and Content Security Policy the extension
 * host builds (extension/panels/panelHtml.ts). VS Code's `acquireVsCodeApi` is provided by an init
 * script that records what the page posts; the host's messages are posted to the window.
 */
const chromiumArgs = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
const types: Record<string, string> = { '.js': 'text/javascript', '.css': 'text/css', '.html': 'text/html' };
export const PANEL_NONCE = 'testnonce0123456789abcdefABCDEF0';

export class PanelPage {
  private constructor(
    private readonly server: Server,
    private readonly browser: Browser,
    readonly page: Page,
    readonly errors: string[],
  ) {}

  static async open(
    options: { theme?: 'vscode-light' | 'vscode-dark'; viewport?: { width: number; height: number } } = {},
  ): Promise<PanelPage> {
    let origin = '';
    const server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      if (url.pathname === '/panel.html') {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end(
          panelHtml({
            cspSource: origin,
            nonce: PANEL_NONCE,
            scriptUri: `${origin}/dist/webview.js`,
            workerUri: `${origin}/dist/webviewLayout.js`,
            styleUri: `${origin}/media/webview.css`,
            title: 'profile',
          }),
        );
        return;
      }
      // Chromium asks for a favicon by itself; the page never does.
      if (url.pathname === '/favicon.ico') {
        res.writeHead(204).end();
        return;
      }
      const file = normalize(join(repoRoot, url.pathname));
      if (!file.startsWith(join(repoRoot, 'dist')) && !file.startsWith(join(repoRoot, 'media'))) {
        res.writeHead(404).end();
        return;
      }
      readFile(file).then(
        (data) => res.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream' }).end(data),
        () => res.writeHead(404).end(),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: chromiumArgs });
    const page = await browser.newPage({ viewport: options.viewport ?? { width: 1200, height: 800 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(`console: ${m.text()}`);
    });
    const theme = options.theme ?? 'vscode-light';
    await page.addInitScript((themeClass: string) => {
      const w = window as unknown as Record<string, unknown>;
      w['__posted'] = [];
      w['__violations'] = [];
      w['__state'] = undefined;
      document.addEventListener('securitypolicyviolation', (e) =>
        (w['__violations'] as string[]).push(`${e.violatedDirective}: ${e.blockedURI}`),
      );
      document.addEventListener('DOMContentLoaded', () => {
        document.body.classList.add(themeClass);
        // VS Code sets these on the webview's root; the dark theme's values ("Dark Modern"), so the
        // page can be looked at in both themes outside VS Code.
        if (themeClass === 'vscode-dark') {
          const dark: Record<string, string> = {
            '--vscode-editor-background': '#1f1f1f',
            '--vscode-foreground': '#cccccc',
            '--vscode-editor-foreground': '#cccccc',
            '--vscode-panel-border': '#2b2b2b',
            '--vscode-descriptionForeground': '#9d9d9d',
            '--vscode-input-background': '#313131',
            '--vscode-input-foreground': '#cccccc',
            '--vscode-button-secondaryBackground': '#313131',
            '--vscode-button-secondaryForeground': '#cccccc',
            '--vscode-list-hoverBackground': '#2a2d2e',
            '--vscode-editorLineNumber-foreground': '#6e7681',
            '--vscode-focusBorder': '#0078d4',
            '--vscode-charts-red': '#f14c4c',
            '--vscode-charts-orange': '#d18616',
            '--vscode-charts-yellow': '#cca700',
            '--vscode-charts-blue': '#3794ff',
          };
          for (const [k, v] of Object.entries(dark)) document.documentElement.style.setProperty(k, v);
        }
      });
      w['acquireVsCodeApi'] = () => ({
        postMessage: (m: unknown) => (w['__posted'] as unknown[]).push(m),
        getState: () => w['__state'],
        setState: (s: unknown) => (w['__state'] = s),
      });
    }, theme);
    await page.goto(`${origin}/panel.html`);
    await page.waitForFunction(() =>
      (window as unknown as { __posted: Array<{ type: string }> }).__posted.some((m) => m.type === 'ready'),
    );
    return new PanelPage(server, browser, page, errors);
  }

  /** Posts a host message to the page, as VS Code does. */
  async send(message: HostToWebview): Promise<void> {
    await this.page.evaluate((m) => window.postMessage(m, '*'), message);
  }

  async posted(): Promise<WebviewToHost[]> {
    return this.page.evaluate(() => (window as unknown as { __posted: WebviewToHost[] }).__posted);
  }

  async violations(): Promise<string[]> {
    return this.page.evaluate(() => (window as unknown as { __violations: string[] }).__violations);
  }

  /** Waits until the call graph's latest layout is drawn. */
  async graphDrawn(): Promise<void> {
    await this.page.evaluate(
      () => (window as unknown as { cyclelensPanel: { graph: { drawn: Promise<void> } } }).cyclelensPanel.graph.drawn,
    );
  }

  async close(): Promise<void> {
    await this.browser.close();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
