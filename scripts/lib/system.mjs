// System prerequisites of CycleLens's build, fixtures and tests, and how to install them on Debian.
// Everything comes from Debian's archive: the project never downloads a prebuilt binary.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, symlinkSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';

/** One Debian package and the command that proves it is installed. */
export const debianPackages = [
  { pkg: 'make', probe: 'make' },
  // The host compiler builds the exact sampler's QEMU plugin (adapter/sampling/qemuInsnCount.c).
  { pkg: 'gcc', probe: 'gcc' },
  { pkg: 'gcc-arm-none-eabi', probe: 'arm-none-eabi-gcc' },
  { pkg: 'libnewlib-arm-none-eabi', file: '/usr/lib/arm-none-eabi/newlib' },
  { pkg: 'gcc-riscv64-unknown-elf', probe: 'riscv64-unknown-elf-gcc' },
  { pkg: 'picolibc-riscv64-unknown-elf', file: '/usr/lib/picolibc/riscv64-unknown-elf' },
  { pkg: 'qemu-system-arm', probe: 'qemu-system-arm' },
  { pkg: 'qemu-system-misc', probe: 'qemu-system-riscv32' },
  { pkg: 'gdb-multiarch', probe: 'gdb-multiarch' },
  { pkg: 'openocd', probe: 'openocd' },
  { pkg: 'lldb', probe: 'lldb' },
  // The LLDB backend (adapter/debugger/lldb) drives LLDB 14 through its Python SB API.
  { pkg: 'lldb-14', probe: 'lldb-14' },
  { pkg: 'python3-lldb-14', file: '/usr/lib/llvm-14/lib/python3.11/dist-packages/lldb/__init__.py' },
  { pkg: 'graphviz', probe: 'dot' },
  { pkg: 'valgrind', probe: 'callgrind_annotate' },
  // `go tool pprof` reads the pprof exports in the unit tier.
  { pkg: 'golang-go', probe: 'go' },
  // Its built-in LSP client drives the profile language server in the integration tier.
  { pkg: 'neovim', probe: 'nvim' },
  // The profile panel's page is tested in a real browser (test/integration/profilePanel.test.ts).
  { pkg: 'chromium', probe: 'chromium' },
];

/**
 * What scripts/buildArcBinutils.sh and scripts/buildArcGdb.sh need to build the ARC tools from
 * Debian's binutils and gdb source packages (ARC is not packaged; no ARC chip or simulator runs here).
 */
export const arcToolPackages = [
  { pkg: 'dpkg-dev', probe: 'dpkg-source' },
  { pkg: 'bison', probe: 'bison' },
  { pkg: 'flex', probe: 'flex' },
  { pkg: 'libexpat1-dev', file: '/usr/include/expat.h' },
  { pkg: 'libgmp-dev', file: '/usr/include/x86_64-linux-gnu/gmp.h' },
  { pkg: 'libmpfr-dev', file: '/usr/include/mpfr.h' },
  { pkg: 'libncurses-dev', file: '/usr/include/ncurses.h' },
  { pkg: 'xz-utils', probe: 'xz' },
];

/** Packages the real-VS-Code (code-server + Chromium) tier and `npm start` need on top. */
export const uiPackages = [
  { pkg: 'chromium', probe: 'chromium' },
  { pkg: 'ripgrep', probe: 'rg' },
  { pkg: 'libkrb5-dev', file: '/usr/include/krb5.h' },
  { pkg: 'g++', probe: 'g++' },
  { pkg: 'python3', probe: 'python3' },
];

function hasCommand(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

export function missingPackages(list) {
  return list.filter((p) => (p.probe ? !hasCommand(p.probe) : !existsSync(p.file))).map((p) => p.pkg);
}

/**
 * Installs missing Debian packages with apt-get when running as root; otherwise prints the exact
 * command and returns false so the caller can stop with a clear message.
 */
export function ensureDebianPackages(list, purpose) {
  const missing = missingPackages(list);
  if (missing.length === 0) return true;
  const line = `apt-get install -y --no-install-recommends ${missing.join(' ')}`;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!isRoot) {
    console.error(`CycleLens ${purpose} needs Debian packages that are not installed: ${missing.join(', ')}.`);
    console.error(`Install them, then run this command again:\n\n    sudo apt-get update && sudo ${line}\n`);
    return false;
  }
  console.log(`[setup] installing Debian packages: ${missing.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update'], { stdio: 'inherit', env });
  execFileSync('sh', ['-c', line], { stdio: 'inherit', env });
  const still = missingPackages(list);
  if (still.length > 0) {
    console.error(`apt-get finished but these are still missing: ${still.join(', ')}`);
    return false;
  }
  return true;
}

/**
 * Debian 12's python3-lldb-14 links its extension module to ../../../../../lib/liblldb.so, which does
 * not exist (the library is LLVM's lib/liblldb.so.1): `import lldb` then fails. Points every dangling
 * link at the library; does nothing when the links resolve (or when LLDB is not installed).
 */
export function fixLldbPythonModule() {
  const llvmLib = '/usr/lib/llvm-14/lib';
  if (!existsSync(join(llvmLib, 'liblldb.so.1'))) return;
  let pythons = [];
  try {
    pythons = readdirSync(llvmLib).filter((d) => /^python3/.test(d));
  } catch {
    return;
  }
  for (const py of pythons) {
    const dir = join(llvmLib, py, 'dist-packages', 'lldb');
    let names = [];
    try {
      names = readdirSync(dir).filter((n) => /^_lldb\..*\.so$/.test(n));
    } catch {
      continue;
    }
    for (const name of names) {
      const link = join(dir, name);
      if (existsSync(link) || !lstatSync(link).isSymbolicLink()) continue;
      console.log(`[setup] pointing ${link} at ${llvmLib}/liblldb.so.1 (Debian's link dangles)`);
      unlinkSync(link);
      symlinkSync('../../../liblldb.so.1', link);
    }
  }
}

/** Builds the ARC binutils and GDB into the tool cache (minutes the first time, nothing after). */
export function ensureArcTools(root) {
  for (const script of ['buildArcBinutils.sh', 'buildArcGdb.sh']) {
    execFileSync('bash', [`${root}/scripts/${script}`], { stdio: 'inherit' });
  }
}
