import * as vscode from 'vscode';
import { changedLevels, HEAT_LEVELS } from '../../core/profile/lineHeat';

/** Cool to hot (yellow → deep red), readable in light and dark themes. */
const PALETTE = ['#fff3b0', '#ffe08a', '#ffc766', '#ffab4a', '#ff8c3a', '#f2672e', '#d94325', '#b3201c'];

function gutterIcon(colour: string, level: number): vscode.Uri {
  // A bar whose height grows with the level: heat is visible without relying on colour alone.
  const h = Math.round(4 + (12 * (level + 1)) / HEAT_LEVELS);
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16"><rect x="5" y="${16 - h}" width="6" height="${h}" rx="1" fill="${colour}"/></svg>`;
  return vscode.Uri.parse(`data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`);
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
        gutterIconPath: gutterIcon(colour, level),
        gutterIconSize: 'contain',
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
