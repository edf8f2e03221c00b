import type { Locator } from 'playwright-core';
import { WorkbenchDriver, escapeRegExp, sleep } from './workbenchDriver';

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

/**
 * The workbench's debugging surfaces, as a person sees them: Run and Debug with its configuration
 * dropdown, the debug toolbar, CALL STACK, VARIABLES, and the stop and breakpoint decorations of the
 * active editor.
 */
export class DebugWorkbench extends WorkbenchDriver {
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
    const row = this.page
      .locator('.monaco-select-box-dropdown-container .monaco-list-row')
      .filter({
        has: this.page.locator('.option-text', { hasText: new RegExp(`^\\s*${escapeRegExp(label)}\\s*$`) }),
      })
      .first();
    await row.waitFor({ state: 'visible', timeout: timeoutMs });
    await row.click();
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
    const rows = await this.viewPane('Call Stack')
      .locator('.monaco-list-row')
      .evaluateAll((els) =>
        els
          .sort((a, b) => Number(a.getAttribute('data-index')) - Number(b.getAttribute('data-index')))
          .map((e) => ({
            name: (e.querySelector('.stack-frame .label')?.textContent ?? '').trim(),
            file: (e.querySelector('.file-name')?.textContent ?? '').trim(),
            line: Number((e.querySelector('.line-number')?.textContent ?? '').trim().split(':')[0]),
          })),
      );
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
        throw new Error(
          `the CALL STACK's top frame is not ${name}${line ? `:${line}` : ''} within ${timeoutMs / 1000} ` +
            `s (it shows ${JSON.stringify(frames)})`,
        );
      }
      await sleep(100);
    }
  }

  /** The text next to the CALL STACK title: "Paused on breakpoint", "Paused on step" ... */
  async callStackState(): Promise<string> {
    return (
      await this.viewPane('Call Stack')
        .locator(':scope > .pane-header .call-stack-state-message')
        .first()
        .innerText()
        .catch(() => '')
    ).trim();
  }

  /** The rows of the VARIABLES view that are rendered now. */
  async variables(): Promise<VariableRow[]> {
    return this.viewPane('Variables')
      .locator('.monaco-list-row')
      .evaluateAll((els) =>
        els
          .sort((a, b) => Number(a.getAttribute('data-index')) - Number(b.getAttribute('data-index')))
          .map((e) => {
            const level = Number(e.getAttribute('aria-level') ?? 0);
            // drawn as "st ="
            const name = (e.querySelector('.name')?.textContent ?? e.textContent ?? '').trim().replace(/\s*[=:]$/, '');
            const value = (e.querySelector('.value')?.textContent ?? '').trim();
            return { level, name, value };
          }),
      );
  }

  /** Waits until the VARIABLES view lists every one of `names` at `level` (2: a scope's variables). */
  async waitForVariables(names: string[], level = 2, timeoutMs = 15_000): Promise<VariableRow[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const rows = await this.variables();
      const shown = rows.filter((r) => r.level === level).map((r) => r.name);
      if (names.every((n) => shown.includes(n))) return rows;
      if (Date.now() > deadline)
        throw new Error(
          `VARIABLES does not list ${names.join(', ')} within ${timeoutMs / 1000} s ` +
            `(it shows ${shown.join(', ') || 'nothing'})`,
        );
      await sleep(100);
    }
  }

  /** Expands the variable `name` (at `level`) in the VARIABLES view and waits for its children. */
  async expandVariable(name: string, level = 2, timeoutMs = 15_000): Promise<VariableRow[]> {
    const row = this.viewPane('Variables')
      .locator(`.monaco-list-row[aria-level="${level}"]`)
      .filter({
        has: this.page.locator('.name', { hasText: new RegExp(`^\\s*${escapeRegExp(name)}\\s*[=:]?\\s*$`) }),
      })
      .first();
    await row.waitFor({ state: 'visible', timeout: timeoutMs });
    if ((await row.getAttribute('aria-expanded')) !== 'true') await row.locator('.monaco-tl-twistie').click();
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const rows = await this.variables();
      const at = rows.findIndex((r) => r.level === level && r.name === name);
      const children: VariableRow[] = [];
      if (at >= 0)
        for (let i = at + 1; i < rows.length && rows[i]!.level > level; i++)
          if (rows[i]!.level === level + 1) children.push(rows[i]!);
      if (children.length > 0) return children;
      if (Date.now() > deadline) throw new Error(`${name} in VARIABLES shows no children within ${timeoutMs / 1000} s`);
      await sleep(100);
    }
  }

  /**
   * Stop (Shift+F5) and wait for the debug toolbar to go. Returns how many presses it took: more than
   * one means the first did not end the session (`maxPresses` bounds the tries, each `perPressMs`).
   */
  async stopDebugging(
    options: { maxPresses?: number; perPressMs?: number } = {},
  ): Promise<{ presses: number; ended: boolean }> {
    const maxPresses = options.maxPresses ?? 2;
    for (let presses = 1; presses <= maxPresses; presses++) {
      await this.page.keyboard.press('Shift+F5');
      const gone = await this.debugToolbar()
        .waitFor({ state: 'hidden', timeout: options.perPressMs ?? 10_000 })
        .then(
          () => true,
          () => false,
        );
      if (gone) return { presses, ended: true };
    }
    return { presses: maxPresses, ended: false };
  }
}
