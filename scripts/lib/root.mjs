import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this file lives in scripts/lib/). */
export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
