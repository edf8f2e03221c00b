import { mkdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { repoRoot, testOutputDir } from './paths';

/** Where e2e tests keep their state (one folder per test file) and screenshots. */
export const e2eOutputDir = join(testOutputDir, 'e2e');
/** The screenshots docs/ui.md shows. */
export const docsScreenshotsDir = join(repoRoot, 'docs', 'screenshots');

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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

/**
 * The VS Code workbench in a browser page, driven as a person drives it: the command palette and
 * quick picks, views and tree rows, hovers, editors and their gutters, themes and the side bar's
 * layout. Knows nothing of how the workbench was started (CodeServerHarness) or of debugging
 * (DebugWorkbench).
 */
export class WorkbenchDriver {
  constructor(readonly page: Page) {}

  protected quickInput(): Locator {
    return this.page.locator('.quick-input-widget');
  }

  /**
   * Runs a command by its title through the command palette (F1, type, Enter), as a person would.
   * Waits for a palette entry whose label is `title` before pressing Enter, so a slow filter never
   * runs the wrong command.
   */
  async runCommand(title: string, timeoutMs = 15_000): Promise<void> {
    await this.quickOpen(`>${title}`, timeoutMs);
    const row = this.quickInput()
      .locator('.monaco-list-row')
      .filter({
        has: this.page.locator('.label-name', { hasText: new RegExp(`^${escapeRegExp(title)}$`) }),
      })
      .first();
    await row.waitFor({ state: 'visible', timeout: timeoutMs });
    await row.click();
    // Some commands open a picker of their own in the same widget; the caller then goes on in it.
    await this.quickInput()
      .waitFor({ state: 'hidden', timeout: 2000 })
      .catch(() => undefined);
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
    const row = this.quickInput()
      .locator('.monaco-list-row')
      .filter({
        has: this.page.locator('.label-name', { hasText: new RegExp(`^${escapeRegExp(name)}$`) }),
      })
      .first();
    await row.waitFor({ state: 'visible', timeout: timeoutMs });
    await row.click();
    await this.quickInput().waitFor({ state: 'hidden', timeout: timeoutMs });
    // A view that shares its container has an expanded header; one alone in it has none (the
    // container's title stands in), so the header is waited for briefly and not required.
    await this.page
      .locator('.pane-header.expanded .title', { hasText: new RegExp(`^${escapeRegExp(name)}$`, 'i') })
      .first()
      .waitFor({ state: 'visible', timeout: 3000 })
      .catch(() => undefined);
  }

  /**
   * Opens a workspace file by its path relative to the folder, through Quick Open. `textEditor: false`
   * for a file that opens in a custom editor (a webview: no text view to wait for).
   */
  async openFile(relPath: string, timeoutMs = 15_000, options: { textEditor?: boolean } = {}): Promise<void> {
    await this.quickOpen(relPath, timeoutMs);
    const name = basename(relPath);
    const row = this.quickInput()
      .locator('.monaco-list-row')
      .filter({
        has: this.page.locator('.label-name', { hasText: new RegExp(`^${escapeRegExp(name)}$`) }),
      })
      .filter({ hasText: relPath.includes('/') ? relPath.slice(0, relPath.lastIndexOf('/')) : '' })
      .first();
    await row.waitFor({ state: 'visible', timeout: timeoutMs });
    await row.click();
    await this.page.locator('.tab.active', { hasText: name }).waitFor({ state: 'visible', timeout: timeoutMs });
    if (options.textEditor === false) return;
    await this.page
      .locator('.editor-group-container.active .monaco-editor .view-lines')
      .waitFor({ state: 'visible', timeout: timeoutMs });
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
  async clickGutter(
    line: number,
    options: { area?: 'glyph' | 'lineNumber'; button?: 'left' | 'right' } = {},
  ): Promise<void> {
    await this.quickOpen(`:${line}`, 10_000);
    await this.page.keyboard.press('Enter');
    await this.quickInput().waitFor({ state: 'hidden', timeout: 10_000 });
    const editor = this.page.locator('.editor-group-container.active .monaco-editor').first();
    const number = editor
      .locator('.margin-view-overlays .line-numbers', { hasText: new RegExp(`^\\s*${line}\\s*$`) })
      .first();
    await number.waitFor({ state: 'visible', timeout: 10_000 });
    const numberBox = await this.settledBox(number);
    if (!numberBox) throw new Error(`line ${line} is not rendered in the editor`);
    // The line's row of the margin spans the glyph margin and the line numbers. It is clicked at a
    // position relative to itself, which Playwright resolves at the moment of the click: a view zone
    // that comes or goes just before (a CodeLens redrawn when a session ends) cannot move the click
    // onto the next line, as a click at page coordinates read earlier could.
    const row = number.locator('xpath=..');
    const rowBox = await row.boundingBox();
    if (!rowBox) throw new Error(`line ${line}'s margin row is not rendered in the editor`);
    let x = numberBox.x + numberBox.width / 2;
    if ((options.area ?? 'glyph') === 'glyph') {
      const glyph = await editor.locator('.glyph-margin').first().boundingBox();
      if (!glyph) throw new Error('the editor has no glyph margin');
      x = glyph.x + glyph.width / 2;
    }
    // force: the glyph margin's layer lies over the row, so the row itself is never the hit target.
    await row.click({
      position: { x: x - rowBox.x, y: rowBox.height / 2 },
      button: options.button ?? 'left',
      force: true,
    });
  }

  /**
   * The element's box once it has stopped moving (the editor may still be scrolling to a line it
   * was sent to): two reads 100 ms apart that agree, or the last read after 3 s.
   */
  private async settledBox(element: Locator): Promise<{ x: number; y: number; width: number; height: number } | null> {
    let box = await element.boundingBox();
    for (const deadline = Date.now() + 3000; Date.now() < deadline;) {
      await sleep(100);
      const again = await element.boundingBox();
      if (box && again && again.x === box.x && again.y === box.y) return again;
      box = again;
    }
    return box;
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
    if (appearMs > 0)
      await this.quickInput()
        .waitFor({ state: 'visible', timeout: appearMs })
        .catch(() => undefined);
    if (
      await this.quickInput()
        .isVisible()
        .catch(() => false)
    ) {
      await this.page.keyboard.press('Escape');
      await this.quickInput()
        .waitFor({ state: 'hidden', timeout: 5000 })
        .catch(() => undefined);
    }
  }

  // ---- views, trees, hovers and editors, as a person sees them --------------------------------

  /** The pane of a view in a side bar container ("Counters", "Call Stack"), found by its header. */
  viewPane(name: string): Locator {
    return this.page
      .locator('.pane')
      .filter({ has: this.page.locator(`:scope > .pane-header[aria-label="${name} Section"]`) });
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
        const covering = await this.page
          .locator('.context-view .hover-contents:visible, .monaco-hover:visible, .workbench-hover:visible')
          .allInnerTexts()
          .catch(() => []);
        const focused = await this.page.evaluate(() => {
          const a = document.activeElement;
          return a
            ? `${a.tagName.toLowerCase()}.${Array.from(a.classList).join('.')} ` +
                `"${(a.getAttribute('aria-label') ?? '').slice(0, 60)}"`
            : 'none';
        });
        console.error(
          `[harness] a click was covered (attempt ${attempt}); hovers ${JSON.stringify(covering)}, ` +
            `focus on ${focused}; screenshot ${await this.screenshot(`covered-click-${attempt}`)}`,
        );
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
    return this.viewPane(view)
      .locator('.monaco-list-row')
      .evaluateAll((rows) =>
        rows
          .sort((a, b) => Number(a.getAttribute('data-index')) - Number(b.getAttribute('data-index')))
          .map((row) => {
            const text = (selector: string) => (row.querySelector(selector)?.textContent ?? '').trim();
            const icon = Array.from(row.querySelector('.custom-view-tree-node-item-icon')?.classList ?? []).find((c) =>
              c.startsWith('codicon-'),
            );
            return {
              label: text('.label-name'),
              description: text('.label-description'),
              ariaLabel: row.getAttribute('aria-label') ?? '',
              level: Number(row.getAttribute('aria-level') ?? 0),
              icon: icon?.slice('codicon-'.length),
            };
          }),
      );
  }

  /** The row of tree view `view` whose label is exactly `label`. */
  treeItem(view: string, label: string): Locator {
    return this.viewPane(view)
      .locator('.monaco-list-row')
      .filter({
        has: this.page.locator('.label-name', { hasText: new RegExp(`^\\s*${escapeRegExp(label)}\\s*$`) }),
      })
      .first();
  }

  /** Waits until `view` has a row labelled `label` whose description matches `description`; returns the row. */
  async waitForTreeRow(
    view: string,
    label: string,
    description: RegExp | ((d: string) => boolean),
    timeoutMs = 15_000,
  ): Promise<TreeRow> {
    const matches = typeof description === 'function' ? description : (d: string) => description.test(d);
    const deadline = Date.now() + timeoutMs;
    let last: TreeRow | undefined;
    for (;;) {
      last = (await this.treeRows(view)).find((r) => r.label === label);
      if (last && matches(last.description)) return last;
      if (Date.now() > deadline) {
        throw new Error(
          `the ${view} view has no row "${label}" with a matching description within ${timeoutMs / 1000} ` +
            `s (last: ${JSON.stringify(last)})`,
        );
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
    const hovers = this.page.locator(
      '.monaco-hover:visible, .workbench-hover:visible, .context-view .hover-contents:visible',
    );
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
      const row = widget
        .locator('.monaco-list-row')
        .filter({
          has: this.page.locator('.label-name', { hasText: new RegExp(`^\\s*${escapeRegExp(label)}\\s*$`) }),
        })
        .first();
      if (!(await row.isVisible())) {
        const offered = await widget.locator('.monaco-list-row .label-name').allInnerTexts();
        throw new Error(`the quick pick offers ${JSON.stringify(offered)}, not "${label}"`);
      }
      await row.locator('.quick-input-list-checkbox, input[type=checkbox], .monaco-checkbox').first().click();
    }
    const count = widget.locator('.quick-input-count');
    await count
      .filter({ hasText: new RegExp(`^\\s*${labels.length} Selected`) })
      .waitFor({ state: 'visible', timeout: 5000 });
    await widget.locator('.monaco-button', { hasText: /^OK$/ }).click();
    await widget.waitFor({ state: 'hidden', timeout: timeoutMs });
  }

  /** Labels and descriptions offered by the open quick pick. */
  async quickPickItems(): Promise<{ label: string; description: string }[]> {
    const widget = this.quickInput();
    await widget.locator('.monaco-list-row').first().waitFor({ state: 'visible', timeout: 15_000 });
    return widget.locator('.monaco-list-row').evaluateAll((rows) =>
      rows
        .sort((a, b) => Number(a.getAttribute('data-index')) - Number(b.getAttribute('data-index')))
        .map((r) => ({
          label: (r.querySelector('.label-name')?.textContent ?? '').trim(),
          description: (r.querySelector('.label-description')?.textContent ?? '').trim(),
        })),
    );
  }

  private activeEditor(): Locator {
    return this.page.locator('.editor-group-container.active .monaco-editor').first();
  }

  /** File name on the active editor tab. */
  async activeTab(): Promise<string> {
    return (
      await this.page.locator('.editor-group-container.active .tab.active .label-name').first().innerText()
    ).trim();
  }

  /**
   * The 1-based lines of the active editor that carry a decoration or glyph matching `selector`,
   * found by lining its box up with the rendered line numbers (Monaco draws both absolutely).
   */
  async decoratedLines(selector: string): Promise<number[]> {
    const editor = this.activeEditor();
    const numbers = await editor
      .locator('.margin-view-overlays .line-numbers')
      .evaluateAll((els) =>
        els.map((e) => ({ line: Number((e.textContent ?? '').trim()), y: e.getBoundingClientRect().top })),
      );
    const marks = await editor.locator(selector).evaluateAll((els) => els.map((e) => e.getBoundingClientRect().top));
    const lines = marks
      .map((y) => numbers.find((n) => Math.abs(n.y - y) < 3)?.line)
      .filter((l): l is number => l !== undefined);
    return [...new Set(lines)].sort((a, b) => a - b);
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
      if (Date.now() > deadline)
        throw new Error(`the workbench did not switch to "${theme}" within ${timeoutMs / 1000} s (classes: ${now})`);
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
    return this.page
      .locator('.monaco-workbench')
      .first()
      .evaluate((e) =>
        Array.from(e.classList)
          .filter((c) => /^(vs|vs-dark|hc-black|hc-light)$|^vscode-theme-/.test(c))
          .join(' '),
      );
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
    const sashes = await this.page.locator('.part.sidebar .monaco-sash.horizontal').evaluateAll((els) =>
      els.map((e) => {
        const r = e.getBoundingClientRect();
        return { x: r.left + r.width / 2, y: r.top + r.height / 2, visible: r.width > 0 };
      }),
    );
    const sash = sashes.filter((s) => s.visible).sort((a, b) => Math.abs(a.y - header.y) - Math.abs(b.y - header.y))[0];
    if (!sash || Math.abs(sash.y - header.y) > 10) {
      throw new Error(
        `no sash above the ${name} view's header at y=${header.y} (nearest at ${sash ? sash.y : 'none'})`,
      );
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
}

export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
