// Builds the exact sampler's QEMU TCG plugin (adapter/sampling/qemuInsnCount.c) into .cache/qemu-plugin/.
// QEMU loads it with `-plugin`; the adapter finds it there (adapter/sampling/pluginLocation.ts).
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { join } from 'node:path';

export function qemuPluginPath(root) {
  return join(root, '.cache', 'qemu-plugin', 'qemuInsnCount.so');
}

/** Compiles the plugin when the .so is missing or older than its source; returns its path. */
export function buildQemuPlugin(root) {
  const source = join(root, 'adapter', 'sampling', 'qemuInsnCount.c');
  const target = qemuPluginPath(root);
  if (existsSync(target) && statSync(target).mtimeMs >= statSync(source).mtimeMs) return target;
  mkdirSync(join(root, '.cache', 'qemu-plugin'), { recursive: true });
  const tmp = `${target}.${process.pid}.tmp`;
  // -fvisibility=hidden: only qemu_plugin_install and qemu_plugin_version are exported (QEMU's advice).
  execFileSync(
    'gcc',
    ['-shared', '-fPIC', '-O2', '-Wall', '-Wextra', '-Werror', '-fvisibility=hidden', '-pthread', '-o', tmp, source],
    { stdio: 'inherit' },
  );
  renameSync(tmp, target);
  return target;
}

/**
 * Puts the built plugin beside the bundles, at dist/qemu-plugin/<platform>-<arch>/, with its C source
 * at dist/qemu-plugin/: dist/ is what the .vsix holds, so the packaged extension has the plugin for
 * the platform it was packaged on and builds it from the source on first use elsewhere
 * (adapter/sampling/pluginLocation.ts).
 */
export function stageQemuPlugin(root) {
  const built = buildQemuPlugin(root);
  const dir = join(root, 'dist', 'qemu-plugin', `${process.platform}-${process.arch}`);
  mkdirSync(dir, { recursive: true });
  copyFileSync(built, join(dir, 'qemuInsnCount.so'));
  copyFileSync(
    join(root, 'adapter', 'sampling', 'qemuInsnCount.c'),
    join(root, 'dist', 'qemu-plugin', 'qemuInsnCount.c'),
  );
  return join(dir, 'qemuInsnCount.so');
}
