import type { Profile } from '../core/profile/model';

/**
 * The profile panel's messages, declared once: the extension host (extension/panels/) posts
 * `HostToWebview` and handles `WebviewToHost`; the webview (webview/) does the reverse. Both sides
 * switch over `type` exhaustively, so a message added here fails to compile until both handle it.
 */

export type PanelTab = 'graph' | 'flame' | 'source' | 'table';

/**
 * A live profile's state (the live hotspot overlay's samples, rebuilt at most once a second): still
 * sampling, or the last picture of a run that stopped. Which sampler and what its PC means are in the
 * profile's provenance; its unit (samples, or instructions for the counting plugin) in `profile.unit`.
 */
export interface LiveProfileState {
  running: boolean;
  /** The sampler as the user picks it ("QEMU monitor"), when the overlay knows its description. */
  samplerLabel?: string;
}

export type HostToWebview =
  /**
   * A whole profile: the first one after `ready`, and each update. Live sampling pushes one a second;
   * the page redraws those in place (webview/layout/live.ts, `isUpdateOf`).
   */
  | {
      type: 'profile';
      profile: Profile;
      title: string;
      /** Present for a live profile (still sampling or stopped); absent for a saved one. */
      live?: LiveProfileState;
      /** The saved file it came from (a window reload reopens it); none for a live profile. */ file?: string;
    }
  /** The text of a source file the webview asked for, or why it could not be read. */
  | { type: 'source'; path: string; text?: string; problem?: string }
  /** The editor's cursor moved into a function (undefined: into none the profile knows). */
  | { type: 'cursorFunction'; name: string | undefined }
  /** Show a tab (the command palette opens the panel on the flame graph, for example). */
  | { type: 'showTab'; tab: PanelTab };

export type WebviewToHost =
  /** The script has loaded and listens: the host sends the profile now. */
  | { type: 'ready' }
  /**
   * Open a source location in the editor (a node, row or source line was clicked). `keepFocus`: the
   * panel keeps the keyboard (a table row: the arrow keys go on moving the row).
   */
  | { type: 'openLocation'; path: string; line: number; keepFocus?: true }
  /** The user selected a function; the host may reveal it. */
  | { type: 'selectFunction'; name: string }
  /** Read a source file for the annotated source tab (paths as DWARF wrote them). */
  | { type: 'requestSource'; path: string }
  /** Something failed in the webview that the user should see (the layout worker, a bad profile). */
  | { type: 'problem'; message: string };

/** What the webview keeps across hiding the panel and a window reload (VS Code's getState/setState). */
export interface PanelState {
  tab: PanelTab;
  /** The file shown, for the panel serializer to reopen after a window reload. */
  file?: string;
  /** Selected function, by name: ids change when a profile is updated, names do not. */
  selected?: string;
  search: string;
  /** Neighbourhood depth around the selected node in the call graph; 0 shows the whole graph. */
  depth: number;
  /** Nodes whose share is below this (0..1) collapse into a summary node per caller. */
  collapseBelow: number;
  tableSort: { key: string; descending: boolean };
  tableView: 'functions' | 'lines';
}
