import * as vscode from 'vscode';
import { changedLevels, HEAT_LEVELS } from '../../core/profile/lineHeat';

/** Cool to hot (yellow → deep red), readable in light and dark themes. */
const PALETTE = ['#fff3b0', '#ffe08a', '#ffc766', '#ffab4a', '#ff8c3a', '#f2672e', '#d94325', '#b3201c'];

/**
 * The width of a level's stripe at the line's left edge, in pixels: heat is visible without relying
 * on colour alone. A stripe, not a gutter icon: VS Code takes no breakpoint click in the glyph margin
 * of a line that has another extension's glyph there (breakpointEditorContribution's
 * marginFreeFromNonDebugDecorations), so gutter bars made hot lines the ones a user could not break on.
 */
export function heatStripeWidth(level: number): number {
  return 1 + level;
}

/**
 * One decoration type per heat level, created once and disposed with the extension: an update
 * only hands each type its ranges, the cheapest way VS Code repaints (decorator-sample).
 */
export class HeatDecorations implements vscode.Disposable {
  private readonly types: vscode.TextEditorDecorationType[];

  constructor() {
    this.types = PALETTE.map((colour, level) =>
      vscode.window.createTextEditorDecorationType({
        isWholeLine: true,
        // Low alpha keeps the text readable on any theme; hotter levels are more opaque.
        backgroundColor: `${colour}${Math.round(0x18 + (0x50 * level) / (HEAT_LEVELS - 1))
          .toString(16)
          .padStart(2, '0')}`,
        // In the text area (the view overlays, under the text), never the margin: its clicks stay the debugger's.
        borderStyle: 'solid',
        borderColor: colour,
        borderWidth: `0 0 0 ${heatStripeWidth(level)}px`,
        overviewRulerColor: level >= HEAT_LEVELS / 2 ? colour : undefined,
        overviewRulerLane: vscode.OverviewRulerLane.Right,
      }),
    );
  }

  /** What each editor shows now, per level: a repaint diffs against it. */
  private readonly shown = new WeakMap<vscode.TextEditor, number[][]>();

  /**
   * Sets the heat of `editor` from its lines per level (levels[level] = 1-based line numbers),
   * handing VS Code only the levels that changed since this editor's last repaint. Hovers come
   * from a hover provider (liveHotspots.ts), not from the decorations: per-line hover texts would
   * change with every count and defeat the diff.
   */
  apply(editor: vscode.TextEditor, levels: number[][]): number {
    const lastLine = editor.document.lineCount;
    const changed = changedLevels(this.shown.get(editor), levels);
    for (const level of changed) {
      const ranges: vscode.Range[] = [];
      for (const line of levels[level]!)
        if (line >= 1 && line <= lastLine) ranges.push(new vscode.Range(line - 1, 0, line - 1, 0));
      editor.setDecorations(this.types[level]!, ranges);
    }
    this.shown.set(editor, levels);
    return changed.length;
  }

  clear(editor: vscode.TextEditor): void {
    for (const t of this.types) editor.setDecorations(t, []);
    this.shown.delete(editor);
  }

  dispose(): void {
    for (const t of this.types) t.dispose();
  }
}
