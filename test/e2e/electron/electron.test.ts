import { spawnSync } from 'node:child_process';
import { existsSync, realpathSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { test } from 'node:test';
import { runTests } from '@vscode/test-electron';
import { importScriptsLib } from '../../support/codeServerScripts';
import { e2eOutputDir } from '../../support/codeServerHarness';
import { repoRoot } from '../../support/paths';

// The desktop tier: CycleLens as a development extension in an installed desktop VS Code, through
// @vscode/test-electron. VS Code cannot be downloaded on these machines, so this tier runs only where
// one is installed (`code` on PATH, or VSCODE_EXECUTABLE naming its binary). Elsewhere it is not
// registered at all and the reason is printed: never counted as a pass.

/** The desktop VS Code binary (Electron), or the reason there is none. */
function findDesktopVsCode(): { executable: string } | { missing: string } {
  const fromEnv = process.env.VSCODE_EXECUTABLE;
  if (fromEnv)
    return existsSync(fromEnv) ? { executable: fromEnv } : { missing: `VSCODE_EXECUTABLE=${fromEnv} does not exist` };
  const which = spawnSync('sh', ['-c', 'command -v code'], { encoding: 'utf8' });
  const onPath = which.status === 0 ? which.stdout.trim() : '';
  if (!onPath) return { missing: 'no desktop VS Code: `code` is not on PATH and VSCODE_EXECUTABLE is not set' };
  // `code` on PATH is a shell launcher in <install>/bin/; the Electron binary is <install>/code.
  const launcher = realpathSync(onPath);
  const beside = join(dirname(dirname(launcher)), basename(launcher));
  const executable = basename(dirname(launcher)) === 'bin' && existsSync(beside) ? beside : launcher;
  const env = { ...process.env };
  delete env.ELECTRON_RUN_AS_NODE; // would make the binary a plain Node
  const version = spawnSync(executable, ['--version'], { encoding: 'utf8', timeout: 30_000, env });
  if (version.status !== 0 || !/^\d+\.\d+\.\d+/.test(version.stdout)) {
    return {
      missing:
        `${executable} is not a desktop VS Code ` +
        `(\`--version\` printed ${JSON.stringify(version.stdout.slice(0, 80))})`,
    };
  }
  return { executable };
}

const found = findDesktopVsCode();
const noDisplay = !process.env.DISPLAY && !process.env.WAYLAND_DISPLAY;
const skip =
  'missing' in found
    ? `electron tier NOT RUN: ${found.missing}`
    : noDisplay
      ? 'electron tier NOT RUN: desktop VS Code needs a display (set DISPLAY, e.g. run under xvfb-run)'
      : false;
// Without a desktop VS Code the test is not registered at all: it is neither a pass nor a skip
// in the counts, and the reason is printed for whoever reads the log.
if (skip) console.log(`\n*** ${skip}. The code-server tier (test/e2e/*.test.ts) covers the packaged extension. ***\n`);
else
  test('CycleLens loads and activates in desktop VS Code', { timeout: 10 * 60_000 }, async () => {
    if (!('executable' in found)) return;
    const { demoWorkspace } = await importScriptsLib();
    const stateDir = join(e2eOutputDir, 'electron');
    rmSync(stateDir, { recursive: true, force: true });
    const { dir: workspace } = demoWorkspace.createDemoWorkspace({
      dir: join(stateDir, 'workspace'),
      allowMissingFirmware: true,
    });
    const exitCode = await runTests({
      vscodeExecutablePath: found.executable,
      extensionDevelopmentPath: repoRoot,
      extensionTestsPath: join(__dirname, 'suite', 'index.js'),
      launchArgs: [
        workspace,
        '--user-data-dir',
        join(stateDir, 'user-data'),
        '--extensions-dir',
        join(stateDir, 'extensions'),
        '--disable-workspace-trust',
        '--skip-welcome',
        '--skip-release-notes',
        '--disable-gpu',
      ],
    });
    if (exitCode !== 0) throw new Error(`the in-VS-Code suite failed (exit ${exitCode})`);
  });
