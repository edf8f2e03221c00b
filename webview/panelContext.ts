import type { Profile } from '../core/profile/model';
import type { PanelState, WebviewToHost } from '../common/webviewMessages';

/** What every tab gets from the panel: the host channel, the shared state and selection. */
export interface PanelContext {
  post(message: WebviewToHost): void;
  state: PanelState;
  saveState(): void;
  /**
   * Selects a function everywhere (tabs highlight it); `open` also opens its source in the editor,
   * which takes the keyboard unless `keepFocus`.
   */
  select(fn: number | undefined, open: boolean, options?: { keepFocus?: boolean }): void;
  /** Text of a source file, asked of the host once and cached. */
  sourceText(path: string): { text?: string; problem?: string } | undefined;
}

/** One tab. */
export interface PanelView {
  readonly element: HTMLElement;
  /**
   * A profile to draw. `update`: a newer picture of the one shown (live sampling's next second): keep
   * the zoom, scroll and keyboard place; otherwise start from the top.
   */
  setProfile(p: Profile, update: boolean): void;
  /** The selection changed (from another tab or the editor's cursor). */
  selectionChanged(fn: number | undefined): void;
  /** The tab became visible: draw what waited for a size. */
  shown(): void;
}

/** The theme's colour behind a panel variable (media/webview.css maps them to VS Code's). */
export function themeColour(name: string, fallback: string): string {
  const v = getComputedStyle(document.body).getPropertyValue(name).trim();
  return v || fallback;
}
