import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import type { Locator } from 'playwright-core';
import { poll, type CodeServerHarness, type TreeRow } from './codeServerHarness';
import { sleep } from './workbenchDriver';

/*
 * What the e2e tests of injected measurements and profiling read off the workbench: the editor's
 * line-number context menu, CodeLens, after-line decorations, gutter icons, notifications and the
 * input box. Everything here reads the DOM as drawn; nothing asks the extension for its state.
 */

/** What launch configurations and views are called in the demo workspace and the manifest. */
export const rv32 = 'QEMU RISC-V 32';
export const measurementsView = 'Measurements';
/** What a session leaves behind if it leaks: the emulator and the debugger. */
export const emulatorOrDebugger = /qemu-system-|gdb-multiarch/;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The 1-based line where C function `name` is defined: its name followed by '(' on a line that
 * starts a definition (not indented, not a prototype ending in ';'): the line a function's
 * CodeLens belongs above (DWARF's DW_AT_decl_line).
 */
export function functionLine(file: string, name: string): number {
  const re = new RegExp(`^[A-Za-z_].*\\b${escapeRegExp(name)}\\s*\\(`);
  const hits = readFileSync(file, 'utf8')
    .split('\n')
    .map((text, i) => ({ text, line: i + 1 }))
    .filter(({ text }) => re.test(text) && !/;\s*$/.test(text));
  if (hits.length !== 1) throw new Error(`${name} is defined ${hits.length} times in ${file} (expected exactly once)`);
  return hits[0]!.line;
}

/**
 * The lines of C function `name` in `file`: its definition line (see functionLine) to its closing
 * brace in column 0.
 */
export function functionLines(file: string, name: string): { first: number; last: number } {
  const first = functionLine(file, name);
  const lines = readFileSync(file, 'utf8').split('\n');
  const close = lines.findIndex((text, i) => i >= first && /^}/.test(text));
  if (close < 0) throw new Error(`${name} in ${file} has no closing brace in column 0`);
  return { first, last: close + 1 };
}

/** The active editor of the active editor group. */
export function activeEditor(h: CodeServerHarness): Locator {
  return h.page.locator('.editor-group-container.active .monaco-editor').first();
}

/** Moves the cursor of the active editor to `line` (Go to Line), which scrolls it into view. */
export async function revealLine(h: CodeServerHarness, line: number): Promise<void> {
  await h.closeQuickInput();
  await h.page.keyboard.press('F1');
  const input = h.page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: 10_000 });
  await input.fill(`:${line}`);
  await h.page.keyboard.press('Enter');
  await h.page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: 10_000 });
  await activeEditor(h)
    .locator('.margin-view-overlays .line-numbers', { hasText: new RegExp(`^\\s*${line}\\s*$`) })
    .first()
    .waitFor({ state: 'visible', timeout: 10_000 });
}

/** The y (top) of each rendered line number of the active editor. */
async function lineTops(h: CodeServerHarness): Promise<{ line: number; top: number; bottom: number }[]> {
  return activeEditor(h)
    .locator('.margin-view-overlays .line-numbers')
    .evaluateAll((els) =>
      els.map((e) => {
        const r = e.getBoundingClientRect();
        return { line: Number((e.textContent ?? '').trim()), top: r.top, bottom: r.bottom };
      }),
    );
}

/**
 * Reads `.view-line` elements as drawn, in the page: the text of each line's spans and, for each
 * span, the text of its ::before/::after pseudo-elements. An extension's `before`/`after`
 * decoration (contentText) is drawn that way in VS Code 1.100: an empty span in the line whose
 * ::after has `content: "…"`. Self-contained: Playwright ships its source to the page.
 */
function readDrawnLines(lines: Element[]): { top: number; own: string; decorations: string[] }[] {
  return lines.map((line) => {
    const decorations: string[] = [];
    for (const span of Array.from(line.querySelectorAll('span'))) {
      for (const pseudo of ['::before', '::after']) {
        const content = getComputedStyle(span, pseudo).content;
        // A CSS string: quoted, with backslash escapes.
        if (content && content !== 'none' && content !== 'normal')
          decorations.push(content.replace(/^"|"$/g, '').replace(/\\(.)/g, '$1'));
      }
    }
    return {
      top: line.getBoundingClientRect().top,
      own: (line.textContent ?? '').replace(/\u00a0/g, ' '),
      decorations,
    };
  });
}

/** A rendered line of the active editor: its own text and the decoration texts drawn in it. */
export interface DrawnLine {
  own: string;
  decorations: string[];
}

/** Rendered line `line` of the active editor as drawn, or undefined when it is not rendered. */
export async function renderedLine(h: CodeServerHarness, line: number): Promise<DrawnLine | undefined> {
  const tops = await lineTops(h);
  const at = tops.find((t) => t.line === line);
  if (!at) return undefined;
  const lines = await activeEditor(h).locator('.view-lines .view-line').evaluateAll(readDrawnLines);
  const found = lines.find((l) => Math.abs(l.top - at.top) < 3);
  return found ? { own: found.own, decorations: found.decorations } : undefined;
}

/** The after-line decoration text drawn on `line` of the active editor (all of them, joined); '' if none. */
export async function afterLineText(h: CodeServerHarness, line: number): Promise<string> {
  return ((await renderedLine(h, line))?.decorations ?? []).join(' ').trim();
}

/** Every decoration text drawn in the lines of every visible editor. */
export async function allDecorationTexts(h: CodeServerHarness): Promise<string[]> {
  const lines = await h.page.locator('.monaco-editor .view-lines .view-line').evaluateAll(readDrawnLines);
  return lines.flatMap((l) => l.decorations);
}

/** One CodeLens as drawn: its text (codicons as `$(name)`), and the line it sits above. */
export interface CodeLensRow {
  text: string;
  line: number | undefined;
}

/** The CodeLens of the active editor that are drawn now, each with the line below it (the line it belongs to). */
export async function codeLenses(h: CodeServerHarness): Promise<CodeLensRow[]> {
  const tops = await lineTops(h);
  const lenses = await activeEditor(h)
    .locator('.contentWidgets .codelens-decoration')
    .evaluateAll((els) =>
      els
        // Monaco keeps the widgets of lines scrolled out of view in the DOM, hidden.
        .filter((e) => getComputedStyle(e).visibility !== 'hidden')
        .map((e) => {
          // A codicon is drawn as an empty span with class codicon-<name>: put its name back in the text.
          const clone = e.cloneNode(true) as HTMLElement;
          for (const icon of Array.from(clone.querySelectorAll('[class*="codicon-"]'))) {
            const name = Array.from(icon.classList).find(
              (c) => c.startsWith('codicon-') && c !== 'codicon-modifier-spin',
            );
            icon.replaceWith(`$(${name ? name.slice('codicon-'.length) : '?'})`);
          }
          const r = e.getBoundingClientRect();
          return { text: (clone.textContent ?? '').replace(/\u00a0/g, ' ').trim(), bottom: r.bottom };
        }),
    );
  // A CodeLens is drawn in a view zone directly above its line: the line whose top is its bottom.
  return lenses.map((l) => ({
    text: l.text,
    line: tops.find((t) => t.top >= l.bottom - 4 && t.top - l.bottom <= t.bottom - t.top)?.line,
  }));
}

/** Waits until the active editor shows a CodeLens above `line` matching `text`; returns it. */
export async function waitForCodeLens(
  h: CodeServerHarness,
  line: number,
  text: RegExp,
  timeoutMs = 20_000,
): Promise<CodeLensRow> {
  const rows = await poll(
    () => codeLenses(h),
    (ls) => ls.some((l) => l.line === line && text.test(l.text)),
    timeoutMs,
  );
  const found = rows.find((l) => l.line === line && text.test(l.text));
  if (!found) {
    const above = rows.filter((l) => l.line === line).map((l) => l.text);
    throw new Error(
      `no CodeLens matching ${text} above line ${line} within ${timeoutMs / 1000} s ` +
        `(above it: ${JSON.stringify(above)}; all: ${JSON.stringify(rows)})`,
    );
  }
  return found;
}

/**
 * Clicks the CodeLens command whose text matches `text` above `line` of the active editor. The
 * lenses are drawn again whenever their provider refreshes (a stop, a new result), so a lens seen a
 * moment ago may be gone from the DOM when it is looked for: it is looked for again until it is
 * clicked or `timeoutMs` has passed.
 */
export async function clickCodeLens(
  h: CodeServerHarness,
  line: number,
  text: RegExp,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let look = 0; ; look++) {
    // A redraw of the lenses (the provider refreshes when a session starts, stops or measures) can
    // scroll the editor: bring the line back into the middle of the view before each new look.
    if (look > 0 || !(await lineTops(h)).some((t) => t.line === line)) await revealLine(h, line);
    const found = await waitForCodeLens(h, line, text, Math.min(5_000, Math.max(1_000, deadline - Date.now()))).catch(
      (e: unknown) => e as Error,
    );
    if (!(found instanceof Error) && (await clickLensOnce(h, line, text))) return;
    if (Date.now() > deadline) {
      const shown = (await lineTops(h)).map((t) => t.line);
      throw new Error(
        `no clickable CodeLens matching ${text} above line ${line} within ${timeoutMs / 1000} s ` +
          `(lines in view: ${shown[0] ?? '-'}–${shown[shown.length - 1] ?? '-'})` +
          (found instanceof Error ? `: ${found.message}` : ''),
      );
    }
    await sleep(200);
  }
}

/** One look for the lens link above `line` and a click on it; false when it is not drawn there now. */
async function clickLensOnce(h: CodeServerHarness, line: number, text: RegExp): Promise<boolean> {
  const at = (await lineTops(h)).find((t) => t.line === line);
  if (!at) return false;
  const links = activeEditor(h).locator('.contentWidgets .codelens-decoration a');
  for (let i = 0, n = await links.count(); i < n; i++) {
    const link = links.nth(i);
    const box = await link.boundingBox().catch(() => null);
    const lensBottom = box ? box.y + box.height : -1;
    if (
      box &&
      lensBottom <= at.top + 4 &&
      at.top - lensBottom <= at.bottom - at.top &&
      text.test((await link.innerText().catch(() => '')).trim())
    ) {
      await link.click();
      return true;
    }
  }
  return false;
}

/**
 * Right-clicks the line number of `line` in the active editor and picks `item` from the context
 * menu that opens; throws with the menu's entries when it is not there.
 */
export async function lineNumberMenu(h: CodeServerHarness, line: number, item: string): Promise<void> {
  await h.clickGutter(line, { area: 'lineNumber', button: 'right' });
  await chooseMenuItem(h, item, `the line-number context menu of line ${line}`);
}

/**
 * Picks `item` from the context menu that is opening (`what` names it in errors); throws with the
 * menu's entries when it is not there. A click at once on a just-opened menu can be taken as the end
 * of the right-click that opened it (the menu stays open, the entry highlighted): the entry is
 * pointed at first, as a hand does, and Enter runs it when the menu stays after the click.
 */
export async function chooseMenuItem(h: CodeServerHarness, item: string, what: string): Promise<void> {
  const menu = h.page.locator('.monaco-menu');
  await menu.first().waitFor({ state: 'visible', timeout: 10_000 });
  const entry = menu
    .locator('.action-item .action-label', { hasText: new RegExp(`^\\s*${escapeRegExp(item)}\\s*$`) })
    .first();
  if (!(await entry.isVisible().catch(() => false))) {
    const offered = (await menu.locator('.action-item .action-label').allInnerTexts())
      .map((t) => t.trim())
      .filter((t) => t !== '');
    await h.page.keyboard.press('Escape');
    throw new Error(`${what} offers ${JSON.stringify(offered)}, not "${item}"`);
  }
  await entry.hover();
  await new Promise((r) => setTimeout(r, 300));
  const closes = (): Promise<boolean> =>
    menu
      .first()
      .waitFor({ state: 'hidden', timeout: 2000 })
      .then(
        () => true,
        () => false,
      );
  await entry.click();
  if (await closes()) return;
  await h.page.keyboard.press('Enter');
  if (!(await closes())) throw new Error(`${what} did not close after a click on "${item}" and Enter`);
}

/** Lines of the active editor whose glyph margin shows a gutter icon whose image URL contains `image`. */
export async function gutterIconLines(h: CodeServerHarness, image: string): Promise<number[]> {
  const tops = await lineTops(h);
  const marks = await activeEditor(h)
    .locator('.cgmr')
    .evaluateAll(
      (els, img) =>
        els.filter((e) => getComputedStyle(e).backgroundImage.includes(img)).map((e) => e.getBoundingClientRect().top),
      image,
    );
  const lines = marks
    .map((y) => tops.find((t) => Math.abs(t.top - y) < 3)?.line)
    .filter((l): l is number => l !== undefined);
  return [...new Set(lines)].sort((a, b) => a - b);
}

/**
 * Hovers the code of `line` in the active editor (its last token, the end of the line's own text)
 * and returns the text of the hover that appears and matches `contains`. The spot is read again
 * before each try, and the pointer is checked to be on that line: an editor that is still scrolling
 * (just revealed) can move the line between the reading and the move, and a hover asked for on
 * another line never comes. A try with no hover after 3 s leaves and points again, as a hand does.
 */
export async function hoverOnLine(
  h: CodeServerHarness,
  line: number,
  contains: RegExp,
  timeoutMs = 10_000,
): Promise<string> {
  const hover = h.page.locator('.monaco-hover').filter({ hasText: contains }).first();
  const deadline = Date.now() + timeoutMs;
  const tries: string[] = [];
  while (Date.now() < deadline) {
    await h.dismissHover();
    const at = (await lineTops(h)).find((t) => t.line === line);
    if (!at) throw new Error(`line ${line} is not rendered`);
    const spot = await activeEditor(h)
      .locator('.view-lines .view-line')
      .evaluateAll((els, y) => {
        const row = els.find((e) => Math.abs(e.getBoundingClientRect().top - y) < 3);
        const tokens = row
          ? Array.from(row.querySelectorAll('span[class^="mtk"]')).filter((t) => (t.textContent ?? '').trim() !== '')
          : [];
        const r = tokens[tokens.length - 1]?.getBoundingClientRect();
        return r ? { x: r.left + r.width / 2, y: r.top + r.height / 2 } : undefined;
      }, at.top);
    if (!spot) throw new Error(`line ${line} has no text to hover`);
    await h.page.mouse.move(spot.x, spot.y, { steps: 4 });
    // The line drawn under the pointer now, by its number in the margin.
    const under = (await lineTops(h)).find((t) => spot.y >= t.top && spot.y < t.bottom)?.line;
    if (under !== line) {
      tries.push(`the pointer landed on line ${under ?? '(none)'}`);
      continue;
    }
    const shown = await hover
      .waitFor({ state: 'visible', timeout: Math.max(500, Math.min(3000, deadline - Date.now())) })
      .then(
        () => true,
        () => false,
      );
    if (shown) return (await hover.innerText()).trim();
    const others = await h.page
      .locator('.monaco-hover:visible')
      .allInnerTexts()
      .catch(() => []);
    tries.push(
      others.length > 0
        ? `hovers shown: ${JSON.stringify(others.map((o) => o.replace(/\s+/g, ' ').trim()))}`
        : 'no hover shown',
    );
  }
  throw new Error(
    `no hover matching ${String(contains)} on line ${line} within ${timeoutMs} ms (${tries.join('; ') || 'no try'})`,
  );
}

/**
 * Shows the Measurements view with room for its rows (Variables and Watch collapsed, the view
 * expanded and grown), then reads its rows until `done` holds (15 s at most); returns the last reading.
 */
export async function showMeasurements(
  h: CodeServerHarness,
  done: (rows: TreeRow[]) => boolean,
  timeoutMs = 15_000,
): Promise<TreeRow[]> {
  await h.setViewExpanded('Variables', false);
  await h.setViewExpanded('Watch', false);
  await h.setViewExpanded(measurementsView, true);
  const box = await h.viewPane(measurementsView).boundingBox();
  // Layout only: a view that cannot grow is still read (treeRows lists the rows drawn).
  if (box && box.height < 150) await h.growView(measurementsView, 200).catch(() => undefined);
  return poll(() => h.treeRows(measurementsView), done, timeoutMs);
}

/** The text of every notification toast shown now (message and source), one string each. */
export async function notifications(h: CodeServerHarness): Promise<string[]> {
  return h.page
    .locator('.notifications-toasts .notification-toast')
    .evaluateAll((els) =>
      els.map((e) => (e as HTMLElement).innerText.replace(/\s+/g, ' ').trim()).filter((t) => t !== ''),
    );
}

/** The status bar's text as drawn, whitespace collapsed (messages, items, the debug target). */
export async function statusBarText(h: CodeServerHarness): Promise<string> {
  return (
    (await h.page
      .locator('.part.statusbar')
      .innerText()
      .catch(() => '')) ?? ''
  )
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * Answers an open input box (showInputBox): checks what it offers, types `value` over it and
 * presses Enter. Returns the title/prompt and the offered value, for the test to assert on.
 */
export async function answerInputBox(
  h: CodeServerHarness,
  value: string,
  timeoutMs = 15_000,
): Promise<{ offered: string; prompt: string }> {
  const widget = h.page.locator('.quick-input-widget');
  const answered = await fillInputBox(h, value, timeoutMs);
  await widget.waitFor({ state: 'hidden', timeout: timeoutMs });
  return answered;
}

/** Types `value` into the open input box and presses Enter; what it offered first, and its text. */
async function fillInputBox(
  h: CodeServerHarness,
  value: string,
  timeoutMs: number,
): Promise<{ offered: string; prompt: string }> {
  const widget = h.page.locator('.quick-input-widget');
  const input = widget.locator('input');
  await input.waitFor({ state: 'visible', timeout: timeoutMs });
  // The box opens empty and gets its value a moment later.
  const offered = await poll(
    () => input.inputValue(),
    (v) => v !== '',
    3000,
  );
  const prompt = (await widget.innerText()).replace(/\s+/g, ' ').trim();
  await input.fill(value);
  await h.page.keyboard.press('Enter');
  return { offered, prompt };
}

/**
 * The descent command's prompts: the threshold box, then "where does a run end?", answered with
 * the program's own end (the other choice is a window of passes, for firmware that never ends).
 */
export async function answerDescentPrompts(
  h: CodeServerHarness,
  threshold: string,
  timeoutMs = 15_000,
): Promise<{ offered: string; prompt: string }> {
  const widget = h.page.locator('.quick-input-widget');
  const answered = await fillInputBox(h, threshold, timeoutMs);
  const toTheEnd = widget.locator('.monaco-list-row', { hasText: 'To the end of the program' });
  await toTheEnd.waitFor({ state: 'visible', timeout: timeoutMs });
  await toTheEnd.click();
  await widget.waitFor({ state: 'hidden', timeout: timeoutMs });
  return answered;
}

/** The text of the active editor as drawn (the lines currently rendered, top to bottom). */
export async function activeEditorText(h: CodeServerHarness): Promise<string> {
  const lines = await activeEditor(h)
    .locator('.view-lines .view-line')
    .evaluateAll((els) =>
      els
        .map((e) => ({ top: e.getBoundingClientRect().top, text: (e.textContent ?? '').replace(/\u00a0/g, ' ') }))
        .sort((a, b) => a.top - b.top)
        .map((l) => l.text),
    );
  return lines.join('\n');
}

/**
 * Every live process on this machine whose command line matches `pattern`, read from /proc (not
 * from code-server's process tagging: this also finds a process that lost the tag).
 */
export function processesMatching(pattern: RegExp): { pid: number; command: string }[] {
  const found: { pid: number; command: string }[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const command = readFileSync(`/proc/${name}/cmdline`, 'latin1').replace(/\0/g, ' ').trim();
      if (pattern.test(command)) found.push({ pid: Number(name), command });
    } catch {
      // exited while we looked
    }
  }
  return found;
}

/**
 * Ends a scenario file: stops a debug session still running, then code-server, and asserts that
 * no session process (`processes`: QEMU and GDB by default) and no code-server process is left.
 */
export async function stopAndExpectNothingLeft(
  h: CodeServerHarness | undefined,
  processes = emulatorOrDebugger,
): Promise<void> {
  if (!h) return;
  if (
    await h
      .debugToolbar()
      .isVisible()
      .catch(() => false)
  )
    await h.stopDebugging({ maxPresses: 3 });
  const left = await h.waitForNoServerProcesses(processes, 10_000);
  const { survivors } = await h.stop();
  assert.deepEqual(left, [], `a debug session left processes running (${processes.source})`);
  assert.deepEqual(survivors, [], 'code-server left processes behind');
}
