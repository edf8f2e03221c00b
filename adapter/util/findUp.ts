import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The first of `relative` that exists in `from` or one of its parents, nearest first. The adapter's
 * code runs from dist/ when packaged and from out/adapter/<room>/ in a checkout, so the files it
 * ships beside itself lie a few levels up.
 */
export function findUp(from: string, relative: readonly string[], levels = 5): string | undefined {
  let dir = from;
  for (let i = 0; i < levels; i++) {
    for (const r of relative) {
      const candidate = join(dir, r);
      if (existsSync(candidate)) return candidate;
    }
    dir = dirname(dir);
  }
  return undefined;
}
