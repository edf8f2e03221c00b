import { inclusiveShare, selfShare, type Profile, type ProfileFunction } from '../profile/model';
import { formatBound, formatNumber, formatShare, unitLabel, unitShort } from '../profile/units';
import { programName } from './common';

/**
 * The annotated call graph of a profile in Graphviz DOT: each function with its inclusive value,
 * share, self value and bound, filled from white to red by inclusive share; edges labelled with
 * their call counts; functions the analysis pruned or refused are dashed or dotted with the reason.
 * (core/analysis/dot.ts draws the same picture from a live analysis' rows; this one reads only the
 * profile model, so it works for imported and loaded profiles too.)
 */
export function profileDot(p: Profile): string {
  const out: string[] = ['digraph cyclelens {'];
  out.push(`  label=${quote(`${programName(p)}: ${unitLabel(p.unit)}`)}; labelloc=t;`);
  out.push('  graph [rankdir=TB, fontname="Helvetica", fontsize=11];');
  out.push('  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, fillcolor="#ffffff"];');
  out.push('  edge [color="#555555", arrowsize=0.6, fontsize=8];');
  const drawn = new Set<number>();
  for (const f of p.functions) {
    if (f.status === 'unreached') continue;
    drawn.add(f.id);
    out.push(`  f${f.id} [${nodeAttributes(p, f).join(', ')}];`);
  }
  for (const e of p.edges) {
    if (!drawn.has(e.caller) || !drawn.has(e.callee)) continue;
    const attrs = [
      e.calls !== undefined ? `label=${quote(`${formatNumber(e.calls)}×`)}` : '',
      e.kind === 'tail' ? 'style=dashed' : '',
      e.kind === 'interrupt' ? 'style=dotted' : '',
    ].filter(Boolean);
    out.push(`  f${e.caller} -> f${e.callee}${attrs.length ? ` [${attrs.join(', ')}]` : ''};`);
  }
  out.push('}');
  return `${out.join('\n')}\n`;
}

function nodeAttributes(p: Profile, f: ProfileFunction): string[] {
  const label = [f.name];
  const attrs: string[] = [];
  const share = inclusiveShare(p, f);
  if (f.inclusive) {
    const bound = formatBound(f.inclusive, p.unit);
    label.push(
      `${formatNumber(f.inclusive.value)} ${unitShort(p.unit)}${bound ? ` ${bound}` : ''}` +
        `${share !== undefined ? ` (${formatShare(share)})` : ''}`,
    );
  }
  if (f.self) {
    const s = selfShare(p, f);
    label.push(`self ${formatNumber(f.self.value)}${s !== undefined ? ` (${formatShare(s)})` : ''}`);
  }
  if (f.calls !== undefined) label.push(`${formatNumber(f.calls)} calls`);
  if (f.status === 'pruned') {
    label.push(`pruned${f.boundShare !== undefined ? ` ≤ ${formatShare(f.boundShare)}` : ''}`);
    attrs.push('style="rounded,dashed"', 'color="#888888"', 'fontcolor="#666666"');
  } else if (f.status === 'unmeasurable') {
    label.push('not measurable');
    attrs.push('style="rounded,dotted,filled"', 'fillcolor="#eeeeee"');
  } else if (f.inclusive) {
    attrs.push(`fillcolor=${quote(heat(share ?? 0))}`);
    if ((share ?? 0) > 0.6) attrs.push('fontcolor="#ffffff"');
  }
  const tooltip = [f.location ? `${f.location.path}:${f.location.line}` : f.name, f.reason ?? f.selfNote ?? '']
    .filter(Boolean)
    .join('\n');
  return [`label=${quote(label.join('\n'))}`, `tooltip=${quote(tooltip)}`, ...attrs];
}

/** White (0 %) through yellow to red (100 %); square root so small shares stay distinguishable from zero. */
function heat(share: number): string {
  const s = Math.sqrt(Math.max(0, Math.min(1, share)));
  const g = Math.round(255 * (1 - s * 0.85));
  const b = Math.round(255 * (1 - Math.min(1, s * 1.6)));
  return `#ff${hex(g)}${hex(b)}`;
}

function hex(n: number): string {
  return n.toString(16).padStart(2, '0');
}

/** A DOT string: quotes and backslashes escaped, newlines as DOT's centred line break. */
function quote(s: string): string {
  return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\r?\n/g, '\\n')}"`;
}
