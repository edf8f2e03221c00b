import { readFileSync } from 'node:fs';

/**
 * Finds the 1-based line that carries `marker` (e.g. `#BP1`) in a trailing comment. Tests locate
 * lines this way so that editing a fixture never silently moves a breakpoint.
 */
export function markerLine(file: string, marker: string): number {
  const lines = readFileSync(file, 'utf8').split('\n');
  const hits: number[] = [];
  const re = new RegExp(`//.*${marker.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`);
  lines.forEach((text, i) => {
    if (re.test(text)) hits.push(i + 1);
  });
  if (hits.length !== 1) {
    throw new Error(`marker ${marker} found ${hits.length} times in ${file} (expected exactly once)`);
  }
  return hits[0]!;
}
