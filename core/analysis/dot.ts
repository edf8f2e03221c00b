import type { CallGraphResponse } from '../../common/dapCustom';
import { formatMetric, type MetricFormat } from './metrics';
import type { ProfileRow } from './profileRows';

/**
 * The annotated call graph in Graphviz DOT: one node per function (name, inclusive count, share),
 * filled by share from white to red, pruned functions dashed with their bound, refused ones dotted;
 * tail calls are dashed edges. Functions the roots cannot reach are left out.
 */

export interface DotOptions {
  title?: string;
  /** Also draw unreached functions (default false). */
  includeUnreached?: boolean;
  /** How the analysis metric's bounds print (default: percent, for shares). */
  metricFormat?: MetricFormat;
}

export function callGraphDot(graph: CallGraphResponse, rows: readonly ProfileRow[], options: DotOptions = {}): string {
  const byName = new Map(rows.map((r) => [r.name, r]));
  const format = options.metricFormat ?? 'percent';
  const bound = (r: ProfileRow): string =>
    r.bound === undefined || !Number.isFinite(r.bound) ? '?' : formatMetric(format, r.bound);
  const drawn = new Set(
    graph.functions
      .map((f) => f.name)
      .filter((n) => {
        const r = byName.get(n);
        return r !== undefined && (options.includeUnreached || r.status !== 'unreached');
      }),
  );
  const ids = new Map<string, string>();
  [...drawn].forEach((n, i) => ids.set(n, `f${i}`));
  const out: string[] = [];
  out.push('digraph cyclelens {');
  if (options.title) out.push(`  label=${quote(options.title)}; labelloc=t;`);
  out.push('  graph [rankdir=TB, fontname="Helvetica", fontsize=11];');
  out.push('  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, fillcolor="#ffffff"];');
  out.push('  edge [color="#555555", arrowsize=0.6];');
  for (const name of drawn) {
    const r = byName.get(name)!;
    const lines = [name];
    const attrs: string[] = [];
    switch (r.status) {
      case 'measured':
        if (r.inclusive !== undefined)
          lines.push(`${Math.round(r.inclusive).toLocaleString('en-US')} ${r.event ?? ''}`.trim());
        if (r.share !== undefined) lines.push(formatMetric('percent', r.share));
        attrs.push(`fillcolor=${quote(heat(r.share ?? 0))}`);
        if ((r.share ?? 0) > 0.6) attrs.push('fontcolor="#ffffff"');
        break;
      case 'pruned':
        lines.push(`pruned <= ${bound(r)}`);
        attrs.push('style="rounded,dashed"', 'color="#888888"', 'fontcolor="#666666"');
        break;
      case 'unmeasurable':
        lines.push(`refused <= ${bound(r)}`);
        attrs.push('style="rounded,dotted,filled"', 'fillcolor="#eeeeee"');
        break;
      case 'pending':
        lines.push(`open <= ${bound(r)}`);
        attrs.push('style="rounded,dashed,filled"', 'fillcolor="#fff7cc"');
        break;
      case 'unreached':
        lines.push('unreached');
        attrs.push('style="rounded,dotted"', 'fontcolor="#999999"');
        break;
    }
    const tooltip = r.source ? `${r.source.path}${r.source.line ? `:${r.source.line}` : ''}` : name;
    out.push(
      `  ${ids.get(name)} [label=${quote(lines.join('\n'))}, tooltip=${quote(tooltip)}` +
        `${attrs.length ? `, ${attrs.join(', ')}` : ''}];`,
    );
  }
  for (const e of graph.edges) {
    const a = ids.get(e.caller);
    const b = ids.get(e.callee);
    if (!a || !b) continue;
    const attrs = [
      e.kind === 'tail' ? 'style=dashed, label="tail", fontsize=8' : '',
      e.count !== undefined ? `tooltip=${quote(`${e.count} calls`)}` : '',
    ].filter(Boolean);
    out.push(`  ${a} -> ${b}${attrs.length ? ` [${attrs.join(', ')}]` : ''};`);
  }
  out.push('}');
  return `${out.join('\n')}\n`;
}

/** White (0 %) through yellow to red (100 %): a share reads at a glance. */
function heat(share: number): string {
  const s = Math.max(0, Math.min(1, share));
  // Square root: the many small shares stay distinguishable from zero.
  const t = Math.sqrt(s);
  const r = 255;
  const g = Math.round(255 - 200 * t);
  const b = Math.round(255 - 255 * Math.min(1, t * 1.6));
  return `#${[r, g, b].map((c) => c.toString(16).padStart(2, '0')).join('')}`;
}

/** A DOT string literal: quotes and backslashes escaped, newlines as \n (centred lines). */
function quote(s: string): string {
  return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\r?\n/g, '\\n')}"`;
}
