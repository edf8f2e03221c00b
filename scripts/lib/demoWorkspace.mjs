// The demo workspace that `npm start` opens and the e2e tests drive: the fixture firmware's sources,
// its Makefile and per-target files, the ELFs built from them, and a .vscode/launch.json with one
// `cyclelens` configuration per QEMU target. It is generated, so every call rewrites it whole.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { repoRoot } from './root.mjs';

export const fixturesDir = join(repoRoot, 'test', 'fixtures');
export const demoWorkspaceDir = join(repoRoot, '.cache', 'demo-workspace');

/**
 * One launch configuration per QEMU target. `target` is the fixture build directory
 * (test/fixtures/build/<target>/), as in test/support/paths.ts.
 */
export const demoConfigurations = [
  { name: 'QEMU RISC-V 32', target: 'rv32', machine: 'virt' },
  { name: 'QEMU Cortex-M4', target: 'cortex-m4', machine: 'mps2-an386' },
];

/**
 * What the demo's QEMU loads by default: the counting plugin, so that live hotspots start with the
 * exact sampler (every instruction counted) rather than one that samples host time.
 */
export const DEMO_SERVER = { instructionCounts: true };

/** RAM the demo firmware leaves to CycleLens: the on-target sampler needs 32 KiB of it. */
export const DEMO_SCRATCH_BYTES = 32 * 1024;

/**
 * The launch.json body. Each entry is a common/launchArgs.ts `CycleLensLaunchArgs` plus VS Code's
 * `DebugConfigurationBase` fields; `${workspaceFolder}` keeps it valid wherever the folder is.
 * `server` adds QEMU server options to every configuration (`{ instructionCounts: true }` loads the
 * counting plugin, for exact live hotspots).
 */
export function demoLaunchJson(program = 'singlepass', server = DEMO_SERVER) {
  return {
    version: '0.2.0',
    configurations: demoConfigurations.map((c) => ({
      type: 'cyclelens',
      request: 'launch',
      name: c.name,
      executable: `\${workspaceFolder}/build/${c.target}/${program}.elf`,
      server: { type: 'qemu', machine: c.machine, ...server },
      stopAtEntry: 'main',
      // The single-pass demo calls program_end() when its work is done: profiling runs stop there.
      programEnd: 'program_end',
    })),
  };
}

/** The demo workspace's README.md: what is in the folder, what to try, and how to rebuild it here. */
export function demoReadme(program = 'singlepass') {
  const elfs = demoConfigurations.map((c) => `build/${c.target}/${program}.elf`).join(' ');
  const rows = demoConfigurations.map(
    (c) => `| ${c.name} | \`build/${c.target}/${program}.elf\` | QEMU \`${c.machine}\` |`,
  );
  return [
    '# CycleLens demo firmware',
    '',
    'Small bare-metal C programs, built for two QEMU boards. Each launch configuration in',
    '`.vscode/launch.json` runs one of them under QEMU and stops at `main`:',
    '',
    '| configuration | program | machine |',
    '|---|---|---|',
    ...rows,
    '',
    '## Things to try',
    '',
    '1. Open **Run and Debug**, pick a configuration and press F5: the program stops at `main`.',
    '2. **CycleLens: Where Do My Cycles Go?** finds the hottest functions in a few runs,',
    '   then **Open Call Graph** shows them annotated.',
    '3. Click **Measure** above a function, or right-click a line number for **Measure Region from Here**,',
    '   and continue: each pass is counted by the target itself.',
    '4. **CycleLens: Toggle Live Hotspots** (the flame in the debug toolbar) puts heat on the lines that run.',
    '',
    '## Layout',
    '',
    '- `src/`: the programs (`singlepass.c`, `cyclic.c`, `hotloop.c`) and the processing they share',
    '  (`pipeline.c`, `crc16.c`, `dsp.c`, `sort.c`, `hash.c`, `script_vm.c`); `src/firmware/` a larger',
    '  program shaped like real firmware.',
    '- `cortex-m4/`, `rv32/`: start-up code, board drivers and linker script of each board.',
    '- `build/<target>/`: the programs, built in this folder, so their debug information names these sources.',
    '',
    '## Rebuilding',
    '',
    'From this folder (a terminal opened in VS Code starts here), with the cross compilers',
    '`arm-none-eabi-gcc` and `riscv64-unknown-elf-gcc`:',
    '',
    '```sh',
    `make -j2 ${elfs}   # what the launch configurations run`,
    'make -j2                # every program for both boards (takes a few minutes)',
    'make TARGET=rv32        # one board: cortex-m4 or rv32',
    '```',
    '',
  ].join('\n');
}

/** Copies build/<target>/*.elf (the linked programs; not the objects under obj/). */
function copyElfs(builtDir, toDir) {
  if (!existsSync(builtDir)) return;
  for (const target of readdirSync(builtDir, { withFileTypes: true })) {
    if (!target.isDirectory()) continue;
    for (const file of readdirSync(join(builtDir, target.name))) {
      if (!file.endsWith('.elf')) continue;
      mkdirSync(join(toDir, target.name), { recursive: true });
      cpSync(join(builtDir, target.name, file), join(toDir, target.name, file));
    }
  }
}

/**
 * Writes the demo workspace into `dir`: every fixture source file (src/, the per-target directories,
 * the Makefile; not the object files), the built ELFs under build/<target>/, and .vscode/launch.json.
 * `program` names the fixture program the configurations run (`hotloop` never ends, for live
 * hotspots); `server` adds QEMU server options to them. `build` runs make first. Unless
 * `allowMissingFirmware`, the ELFs that launch.json names must exist (the e2e tests that only look
 * at the UI allow them to be missing).
 */
export function createDemoWorkspace({
  dir = demoWorkspaceDir,
  program = 'singlepass',
  server = DEMO_SERVER,
  build = false,
  allowMissingFirmware = false,
} = {}) {
  if (!existsSync(fixturesDir))
    throw new Error(`${fixturesDir} is missing: no fixture firmware to put in the demo workspace`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const builtDir = join(fixturesDir, 'build');
  cpSync(fixturesDir, dir, { recursive: true, filter: (src) => src !== builtDir });
  if (build) {
    // Built in place, the ELFs' debug information names the workspace's own sources, so
    // breakpoints set in its editors bind and stops open its files.
    // Only the programs launch.json names: the fixture suite's other programs (the ten benchmark
    // programs, each with its listing) take minutes to build and the demo does not use them.
    const elfs = demoConfigurations.map((c) => `build/${c.target}/${program}.elf`);
    // The on-target (interrupt) sampler needs 32 KiB of RAM the program never uses: the demo reserves it.
    execFileSync(
      'make',
      [
        '-C',
        dir,
        '-j2',
        '--no-print-directory',
        `EXTRA_LDFLAGS=-Wl,--defsym=SCRATCH_SIZE=${DEMO_SCRATCH_BYTES}`,
        ...elfs,
      ],
      { stdio: 'inherit' },
    );
  } else {
    copyElfs(builtDir, join(dir, 'build'));
  }

  const missing = demoConfigurations
    .map((c) => join('build', c.target, `${program}.elf`))
    .filter((elf) => !existsSync(join(dir, elf)));
  if (missing.length > 0 && !allowMissingFirmware) {
    throw new Error(
      `the demo firmware is not built (${missing.join(', ')} missing): run \`make -C test/fixtures -j2\``,
    );
  }
  mkdirSync(join(dir, '.vscode'), { recursive: true });
  writeFileSync(join(dir, '.vscode', 'launch.json'), `${JSON.stringify(demoLaunchJson(program, server), null, 2)}\n`);
  // The fixtures' README is written for the CycleLens repository (`make -C test/fixtures`, test
  // markers): the demo's own says what this folder holds and how to rebuild it from here.
  writeFileSync(join(dir, 'README.md'), demoReadme(program));
  return { dir, missingFirmware: missing };
}
