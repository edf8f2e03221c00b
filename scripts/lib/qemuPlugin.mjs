// Builds the exact sampler's QEMU TCG plugin (adapter/sampling/qemuInsnCount.c) into .cache/qemu-plugin/.
// QEMU loads it with `-plugin`; the adapter finds it there (adapter/sampling/pluginLocation.ts).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, statSync } from 'node:fs';
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
  execFileSync('gcc', ['-shared', '-fPIC', '-O2', '-Wall', '-Wextra', '-Werror', '-fvisibility=hidden', '-pthread', '-o', tmp, source], { stdio: 'inherit' });
  renameSync(tmp, target);
  return target;
}
