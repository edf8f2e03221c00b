import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CycleLensError, ErrorCode } from '../errors';

const RELATIVE = join('.cache', 'qemu-plugin', 'qemuInsnCount.so');

/**
 * Where the exact sampler's TCG plugin is: the build (scripts/lib/qemuPlugin.mjs) compiles
 * adapter/sampling/qemuInsnCount.c into .cache/qemu-plugin/ at the package root. The adapter runs from dist/
 * (bundled) or out/adapter/sampling/ (tests), so the root is found by walking up.
 */
export function qemuPluginPath(): string {
  const override = process.env['CYCLELENS_QEMU_PLUGIN'];
  if (override) return override;
  let dir = __dirname;
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, RELATIVE);
    if (existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  throw new CycleLensError(
    ErrorCode.ProgramNotFound,
    'The instruction-counting QEMU plugin is not built. Run `node scripts/build.mjs` (it compiles adapter/sampling/qemuInsnCount.c with gcc into .cache/qemu-plugin/), or set CYCLELENS_QEMU_PLUGIN to the .so.',
  );
}
