// code-server's installation: a real VS Code (1.100) served to a browser, the only VS Code this
// machine can have. It is installed from the npm registry into a private prefix, .cache/code-server/,
// never as a dependency of CycleLens (it is ~700 MB). A plain `npm install code-server` fails here
// three ways (shared/reference/environment.md, "A real VS Code on these machines"): its postinstall
// refuses root, node-pty's rebuild runs `npx node-gyp` and would prompt, and @vscode/ripgrep downloads
// rg from GitHub. So we install with --ignore-scripts and do the postinstall's work ourselves, step by
// step, each step verified, using Debian's rg. Running it is scripts/lib/codeServer.mjs.
//
//   node scripts/lib/codeServerInstall.mjs [--force]     install (or check) code-server, print timings
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { repoRoot } from './root.mjs';
/** The last code-server that runs on Node 20; later ones need Node 22/24. Its VS Code is 1.100. */
export const codeServerVersion = '4.100.3';
export const codeServerPrefix = join(repoRoot, '.cache', 'code-server');
const packageDir = join(codeServerPrefix, 'node_modules', 'code-server');
const vscodeDir = join(packageDir, 'lib', 'vscode');
/** code-server's own CLI (package.json `bin`); run with the current Node. */
export const codeServerEntry = join(packageDir, 'out', 'node', 'entry.js');
const stampFile = join(codeServerPrefix, 'installed.json');
const lockDir = join(repoRoot, '.cache', 'code-server.lock');

/** The environment variable that marks every process a started code-server owns (see sweepTagged). */
export const CODE_SERVER_TAG_VAR = 'CYCLELENS_CODE_SERVER_TAG';

/** The environment of every code-server process: its config, data and state kept under `stateDir`. */
export function codeServerEnv(stateDir, tag, extra = {}) {
  return {
    ...process.env,
    XDG_CONFIG_HOME: join(stateDir, 'config'),
    XDG_DATA_HOME: join(stateDir, 'data'),
    [CODE_SERVER_TAG_VAR]: tag,
    ...extra,
  };
}

/** Native modules of VS Code's server that must be compiled against this Node's ABI. */
const vscodeNativeModules = [
  'kerberos',
  '@parcel/watcher',
  '@vscode/deviceid',
  '@vscode/spdlog',
  'native-watchdog',
  'node-pty',
];

// ---------------------------------------------------------------------------------------------
// Installation

function run(command, args, cwd, extraEnv = {}) {
  const env = {
    ...process.env,
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
    ...extraEnv,
  };
  const result = spawnSync(command, args, { cwd, env, stdio: 'inherit' });
  if (result.error) throw new Error(`${command} could not start: ${result.error.message}`);
  if (result.status !== 0)
    throw new Error(`${command} ${args.join(' ')} exited with ${result.status ?? result.signal}`);
}

/** Loads `modules` in a fresh Node started in `cwd`; returns the error text, or '' when all load. */
function loadError(cwd, modules) {
  const script = `for (const m of ${JSON.stringify(modules)}) require(m);`;
  const r = spawnSync(process.execPath, ['-e', script], { cwd, encoding: 'utf8' });
  return r.status === 0 ? '' : (r.stderr || r.stdout || `exit ${r.status}`).trim().split('\n').slice(0, 6).join('\n');
}

function isSymlinkTo(path, target) {
  try {
    return lstatSync(path).isSymbolicLink() && readlinkSync(path) === target;
  } catch {
    return false;
  }
}

function installedVersion() {
  try {
    return JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')).version;
  } catch {
    return undefined;
  }
}

/**
 * The install, as steps that each know how to check themselves: a step whose check already passes is
 * skipped, so a retry after a failure resumes where it stopped.
 */
function installSteps() {
  const ripgrepLink = join(vscodeDir, 'node_modules', '@vscode', 'ripgrep', 'bin', 'rg');
  const asarLink = join(vscodeDir, 'node_modules.asar');
  const extensionsDir = join(vscodeDir, 'extensions');
  const cliLinks = [
    [join(vscodeDir, 'bin', 'remote-cli', 'code-server'), 'code-linux.sh'],
    [join(vscodeDir, 'bin', 'helpers', 'browser.sh'), 'browser-linux.sh'],
  ];
  const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  // node-pty's rebuild runs `npx node-gyp`: without `yes` npx would wait for an answer that never comes.
  const rebuildEnv = { npm_config_yes: 'true', ...(asRoot ? { npm_config_unsafe_perm: 'true' } : {}) };
  return [
    {
      name: `npm install code-server@${codeServerVersion} (without its install scripts)`,
      cwd: codeServerPrefix,
      command: `npm install --ignore-scripts code-server@${codeServerVersion}`,
      check: () =>
        installedVersion() === codeServerVersion && existsSync(codeServerEntry) ? '' : 'code-server is not installed',
      run: () => {
        // Our own package.json stops npm from walking up and installing into CycleLens's node_modules.
        writeFileSync(
          join(codeServerPrefix, 'package.json'),
          `${JSON.stringify({ name: 'cyclelens-code-server', private: true }, null, 2)}\n`,
        );
        run(
          'npm',
          ['install', '--ignore-scripts', '--no-package-lock', `code-server@${codeServerVersion}`],
          codeServerPrefix,
        );
      },
    },
    {
      name: "install VS Code server's own dependencies",
      cwd: vscodeDir,
      command: 'npm install --omit=dev --ignore-scripts',
      check: () =>
        existsSync(join(vscodeDir, 'node_modules', '.package-lock.json'))
          ? ''
          : 'lib/vscode/node_modules is incomplete',
      run: () => run('npm', ['install', '--omit=dev', '--ignore-scripts'], vscodeDir),
    },
    {
      name: "compile VS Code server's native modules for this Node",
      cwd: vscodeDir,
      command:
        `npm_config_yes=true${asRoot ? ' npm_config_unsafe_perm=true' : ''} ` +
        `npm rebuild ${vscodeNativeModules.join(' ')}`,
      check: () => loadError(vscodeDir, vscodeNativeModules),
      run: () => run('npm', ['rebuild', ...vscodeNativeModules], vscodeDir, rebuildEnv),
    },
    {
      name: "link Debian's ripgrep for VS Code's search",
      cwd: vscodeDir,
      command: `ln -sf /usr/bin/rg ${ripgrepLink}`,
      check: () =>
        isSymlinkTo(ripgrepLink, '/usr/bin/rg') && existsSync('/usr/bin/rg')
          ? ''
          : 'rg is not linked (is Debian package ripgrep installed?)',
      run: () => {
        if (!existsSync('/usr/bin/rg')) throw new Error('/usr/bin/rg is missing: apt-get install ripgrep');
        mkdirSync(dirname(ripgrepLink), { recursive: true });
        rmSync(ripgrepLink, { force: true });
        symlinkSync('/usr/bin/rg', ripgrepLink);
      },
    },
    {
      // The server loads some modules from node_modules.asar, which a packaged VS Code has.
      name: 'link node_modules.asar to node_modules',
      cwd: vscodeDir,
      command: 'ln -s node_modules node_modules.asar',
      check: () => (isSymlinkTo(asarLink, 'node_modules') ? '' : 'node_modules.asar is not linked'),
      run: () => {
        rmSync(asarLink, { force: true, recursive: true });
        symlinkSync('node_modules', asarLink);
      },
    },
    {
      // What code-server's postinstall also does: `code-server` in the integrated terminal (remote CLI)
      // and its browser helper are links to the Linux variants of the scripts.
      name: 'link the remote CLI scripts',
      cwd: join(vscodeDir, 'bin'),
      command: 'ln -s code-linux.sh remote-cli/code-server && ln -s browser-linux.sh helpers/browser.sh',
      check: () =>
        cliLinks.every(([link, target]) => isSymlinkTo(link, target)) ? '' : 'remote CLI scripts are not linked',
      run: () => {
        for (const [link, target] of cliLinks) {
          rmSync(link, { force: true });
          symlinkSync(target, link);
        }
      },
    },
    {
      name: "install the built-in extensions' dependencies",
      cwd: extensionsDir,
      command: 'npm install --omit=dev --ignore-scripts',
      check: () =>
        existsSync(join(extensionsDir, 'node_modules', '.package-lock.json'))
          ? ''
          : 'lib/vscode/extensions/node_modules is incomplete',
      run: () => run('npm', ['install', '--omit=dev', '--ignore-scripts'], extensionsDir),
    },
    {
      // argon2 hashes passwords; the prebuilt binary would come from GitHub, so compile it.
      name: 'compile argon2 from source',
      cwd: codeServerPrefix,
      command: 'npm_config_build_from_source=true npm rebuild argon2',
      check: () => loadError(codeServerPrefix, ['argon2']),
      run: () =>
        run('npm', ['rebuild', 'argon2'], codeServerPrefix, { npm_config_build_from_source: 'true', ...rebuildEnv }),
    },
    {
      name: 'check that code-server starts',
      cwd: codeServerPrefix,
      command: `node ${codeServerEntry} --version`,
      check: versionProblem,
      run: () => {},
    },
  ];
}

function readStamp() {
  try {
    return JSON.parse(readFileSync(stampFile, 'utf8'));
  } catch {
    return undefined;
  }
}

/** '' when `code-server --version` names our version, else what it printed. */
function versionProblem() {
  const stateDir = join(codeServerPrefix, 'cli-state');
  // Any run of code-server writes a default config and logs under XDG dirs: keep them out of HOME.
  const r = spawnSync(process.execPath, [codeServerEntry, '--version'], {
    encoding: 'utf8',
    timeout: 60_000,
    env: codeServerEnv(stateDir, 'version-check'),
  });
  if (r.status === 0 && r.stdout.split('\n').some((l) => l.startsWith(`${codeServerVersion} `))) return '';
  return `code-server --version failed: ${(r.stderr || r.stdout || r.error?.message || '').trim().slice(0, 400)}`;
}

/** The stamp is for this version and this Node ABI, and code-server still answers `--version`. */
function stampMatches(stamp) {
  if (stamp === undefined || stamp.version !== codeServerVersion || stamp.nodeModules !== process.versions.modules)
    return false;
  return versionProblem() === '';
}

function sleepSync(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function pidAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

/** One installer at a time (`npm start` and `npm test` may both ask); a dead holder's lock is taken over. */
function withInstallLock(fn) {
  mkdirSync(dirname(lockDir), { recursive: true });
  let announced = false;
  for (;;) {
    try {
      mkdirSync(lockDir);
      writeFileSync(join(lockDir, 'pid'), String(process.pid));
      break;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
      const holder = Number(readFileSync(join(lockDir, 'pid'), { encoding: 'utf8', flag: 'a+' }) || 0);
      if (holder > 0 && !pidAlive(holder)) {
        rmSync(lockDir, { recursive: true, force: true });
        continue;
      }
      if (!announced) console.log(`[code-server] waiting for another install (pid ${holder || '?'}) to finish`);
      announced = true;
      sleepSync(1000);
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lockDir, { recursive: true, force: true });
  }
}

/**
 * Installs code-server 4.100.3 into .cache/code-server/ unless a working install is there already
 * (stamp file for this version and this Node ABI). Synchronous; throws with the failed step, its
 * command and how to retry. Returns where it is and whether this call installed it.
 */
export function ensureCodeServer({ force = false } = {}) {
  if (!force && stampMatches(readStamp()))
    return { entry: codeServerEntry, version: codeServerVersion, installed: false, seconds: 0 };
  return withInstallLock(() => {
    if (!force && stampMatches(readStamp()))
      return { entry: codeServerEntry, version: codeServerVersion, installed: false, seconds: 0 };
    mkdirSync(codeServerPrefix, { recursive: true });
    rmSync(stampFile, { force: true });
    const started = Date.now();
    const steps = installSteps();
    const timings = [];
    console.log(
      `[code-server] installing ${codeServerVersion} into ${codeServerPrefix} (a first install ` +
        `takes one to a few minutes)`,
    );
    for (const [i, step] of steps.entries()) {
      const label = `step ${i + 1}/${steps.length}: ${step.name}`;
      const t0 = Date.now();
      // Later steps depend on earlier ones' files; once one step runs, every later one runs too.
      const skip = !force && timings.every((t) => t.skipped) && step.check() === '';
      if (skip) {
        timings.push({ step: step.name, seconds: 0, skipped: true });
        continue;
      }
      console.log(`[code-server] ${label}`);
      let problem;
      try {
        step.run();
        problem = step.check();
      } catch (e) {
        problem = e instanceof Error ? e.message : String(e);
      }
      if (problem) {
        throw new Error(
          [
            `code-server install failed at ${label}`,
            `  what went wrong: ${problem}`,
            `  the command:     (cd ${step.cwd} && ${step.command})`,
            '  to retry:        fix the cause, then run `node scripts/lib/codeServerInstall.mjs` (it resumes at the',
            '                   first step whose check fails); `--force` redoes every step, and',
            `                   \`rm -rf ${codeServerPrefix}\` starts from nothing.`,
          ].join('\n'),
        );
      }
      timings.push({ step: step.name, seconds: (Date.now() - t0) / 1000, skipped: false });
    }
    const seconds = (Date.now() - started) / 1000;
    writeFileSync(
      stampFile,
      `${JSON.stringify(
        {
          version: codeServerVersion,
          node: process.version,
          nodeModules: process.versions.modules,
          installedAt: new Date().toISOString(),
          seconds,
          steps: timings,
        },
        null,
        2,
      )}\n`,
    );
    console.log(`[code-server] ${codeServerVersion} ready after ${seconds.toFixed(0)} s`);
    return { entry: codeServerEntry, version: codeServerVersion, installed: true, seconds, steps: timings };
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  try {
    const result = ensureCodeServer({ force: process.argv.includes('--force') });
    const stepLine = (s) => `  ${s.skipped ? 'skipped' : `${s.seconds.toFixed(1).padStart(6)} s`}  ${s.step}`;
    console.log(
      result.installed
        ? `[code-server] installed ${result.version} in ${result.seconds.toFixed(0)} s:\n` +
            result.steps.map(stepLine).join('\n')
        : `[code-server] ${result.version} already installed and working (${codeServerPrefix})`,
    );
  } catch (e) {
    console.error(e instanceof Error ? e.message : e);
    process.exitCode = 1;
  }
}
