import * as vscode from 'vscode';
import { HEAT_LEVELS, type LineHeat, linesByLevel } from '../../core/profile/lineHeat';

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
        backgroundColor: `${colour}${Math.round(0x18 + (0x50 * level) / (HEAT_LEVELS - 1)).toString(16).padStart(2, '0')}`,
        gutterIconPath: gutterIcon(colour, level),
        gutterIconSize: 'contain',
        overviewRulerColor: level >= HEAT_LEVELS / 2 ? colour : undefined,
        overviewRulerLane: vscode.OverviewRulerLane.Right,
      }),
    );
  }

  /** Sets the heat of `editor`; lines with no samples get no decoration. */
  apply(editor: vscode.TextEditor, lines: readonly LineHeat[], hover: (l: LineHeat) => vscode.MarkdownString): void {
    const byLine = new Map(lines.map((l) => [l.line, l]));
    const lastLine = editor.document.lineCount;
    linesByLevel(lines).forEach((levelLines, level) => {
      const options: vscode.DecorationOptions[] = [];
      for (const line of levelLines) {
        if (line < 1 || line > lastLine) continue;
        options.push({ range: new vscode.Range(line - 1, 0, line - 1, 0), hoverMessage: hover(byLine.get(line)!) });
      }
      editor.setDecorations(this.types[level]!, options);
    });
  }

  clear(editor: vscode.TextEditor): void {
    for (const t of this.types) editor.setDecorations(t, []);
  }

  dispose(): void {
    for (const t of this.types) t.dispose();
  }
}
