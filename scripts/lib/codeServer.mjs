// Running code-server (installed by scripts/lib/codeServerInstall.mjs): its settings, its CLI for
// extensions, and servers started with every process they own tagged, so that none outlives a test.
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, openSync, closeSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import {
  CODE_SERVER_TAG_VAR,
  codeServerEntry,
  codeServerEnv,
  codeServerPrefix,
  codeServerVersion,
  ensureCodeServer,
} from './codeServerInstall.mjs';

export { CODE_SERVER_TAG_VAR, codeServerEntry, codeServerPrefix, codeServerVersion, ensureCodeServer };

// ---------------------------------------------------------------------------------------------
// Running

/** User settings that keep a fresh VS Code quiet and offline: no welcome page, no trust prompt. */
export function defaultSettings({ theme = 'Default Dark Modern' } = {}) {
  return {
    'workbench.colorTheme': theme,
    'workbench.startupEditor': 'none',
    'workbench.welcomePage.walkthroughs.openOnInstall': false,
    'workbench.tips.enabled': false,
    'workbench.enableExperiments': false,
    'security.workspace.trust.enabled': false,
    'telemetry.telemetryLevel': 'off',
    'update.mode': 'none',
    'extensions.autoUpdate': false,
    'extensions.autoCheckUpdates': false,
    'extensions.ignoreRecommendations': true,
    'chat.commandCenter.enabled': false,
    'chat.disableAIFeatures': true,
    // The demo workspace lives inside CycleLens's own Git repository: do not ask about it.
    'git.openRepositoryInParentFolders': 'never',
    'git.autoRepositoryDetection': false,
  };
}

/** Flags shared by the CLI and the server: no password, no phoning home, state in `userDataDir`. */
function commonArgs(userDataDir, extensionsDir) {
  return [
    '--auth',
    'none',
    '--disable-telemetry',
    '--disable-update-check',
    '--config',
    join(dirname(userDataDir), 'code-server.yaml'),
    '--user-data-dir',
    userDataDir,
    '--extensions-dir',
    extensionsDir,
  ];
}

function runCli(args, userDataDir, extensionsDir) {
  mkdirSync(userDataDir, { recursive: true });
  mkdirSync(extensionsDir, { recursive: true });
  const r = spawnSync(process.execPath, [codeServerEntry, ...commonArgs(userDataDir, extensionsDir), ...args], {
    encoding: 'utf8',
    timeout: 120_000,
    env: codeServerEnv(dirname(userDataDir), randomUUID()),
  });
  return { status: r.status, output: `${r.stdout ?? ''}${r.stderr ?? ''}`.trim() };
}

/**
 * Installs a packaged extension (`code-server --install-extension`), replacing any installed version
 * (same version numbers are normal while developing). Throws with code-server's output on failure.
 */
export function installExtension(vsixPath, extensionsDir, userDataDir = join(dirname(extensionsDir), 'cli-user-data')) {
  if (!existsSync(vsixPath)) throw new Error(`no .vsix at ${vsixPath}: build it with scripts/lib/vsix.mjs first`);
  const r = runCli(['--install-extension', vsixPath, '--force'], userDataDir, extensionsDir);
  if (r.status !== 0 || !/successfully installed/i.test(r.output)) {
    throw new Error(`code-server --install-extension ${vsixPath} failed (exit ${r.status}):\n${r.output}`);
  }
  return r.output;
}

/** `code-server --list-extensions --show-versions`: ids such as `cyclelens.cyclelens@0.1.0`. */
export function listExtensions(extensionsDir, userDataDir = join(dirname(extensionsDir), 'cli-user-data')) {
  const r = runCli(['--list-extensions', '--show-versions'], userDataDir, extensionsDir);
  if (r.status !== 0) throw new Error(`code-server --list-extensions failed (exit ${r.status}):\n${r.output}`);
  return r.output
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => /^[\w-]+\.[\w-]+@/.test(l));
}

/** A TCP port nobody listens on right now. */
export function freePort(host = '127.0.0.1') {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}

function httpStatus(url) {
  return new Promise((resolveStatus) => {
    const req = httpGet(url, (res) => {
      res.resume();
      resolveStatus(res.statusCode ?? 0);
    });
    req.setTimeout(2000, () => req.destroy());
    req.on('error', () => resolveStatus(0));
  });
}

function groupAlive(pgid) {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

/** The process group of `pid` (Linux /proc), or undefined when it is gone. */
function groupOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
  } catch {
    return undefined;
  }
}

/** Pids of live processes whose environment carries `var=tag`, read from /proc (survives re-parenting). */
export function taggedProcesses(tag, variable = CODE_SERVER_TAG_VAR) {
  const needle = `${variable}=${tag}`;
  const found = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (!readFileSync(`/proc/${name}/environ`, 'latin1').split('\0').includes(needle)) continue;
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      if (stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z') continue;
      found.push(Number(name));
    } catch {
      // gone while we looked
    }
  }
  return found;
}

function tail(file, lines = 30) {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/**
 * Starts code-server on 127.0.0.1:`port` (0 or absent: a free port) serving `folder`, with `settings`
 * written as the user settings of `userDataDir`. code-server runs in its own process group, and every
 * process it starts carries a tag in its environment, so stop() ends all of them, including any that
 * left the group (terminals call setsid). Resolves once the HTTP server answers.
 * stop() resolves to `{ escaped, survivors }`: pids found only by the tag (they had left the group;
 * killed now), and pids still alive at the end (orphans; should always be empty).
 */
export async function startCodeServer({
  port = 0,
  host = '127.0.0.1',
  userDataDir,
  extensionsDir,
  folder,
  settings = defaultSettings(),
  env = {},
  logFile = join(dirname(userDataDir), 'code-server.log'),
  timeoutMs = 60_000,
}) {
  if (!existsSync(codeServerEntry)) throw new Error('code-server is not installed: call ensureCodeServer() first');
  if (!userDataDir || !extensionsDir) throw new Error('startCodeServer needs userDataDir and extensionsDir');
  const chosenPort = port || (await freePort(host));
  mkdirSync(join(userDataDir, 'User'), { recursive: true });
  mkdirSync(extensionsDir, { recursive: true });
  writeFileSync(join(userDataDir, 'User', 'settings.json'), `${JSON.stringify(settings, null, 2)}\n`);

  const tag = randomUUID();
  const out = openSync(logFile, 'w');
  const args = [
    codeServerEntry,
    ...commonArgs(userDataDir, extensionsDir),
    '--bind-addr',
    `${host}:${chosenPort}`,
    '--disable-workspace-trust',
    '--disable-getting-started-override',
    '--ignore-last-opened',
    ...(folder ? [folder] : []),
  ];
  const child = spawn(process.execPath, args, {
    detached: true,
    stdio: ['ignore', out, out],
    env: codeServerEnv(dirname(userDataDir), tag, env),
  });
  closeSync(out);
  let exited = null;
  const exitPromise = new Promise((resolveExit) =>
    child.once('exit', (code, signal) => {
      exited = { code, signal };
      resolveExit(exited);
    }),
  );
  // If our own process dies without calling stop(), do not leave a server behind.
  const onExit = () => {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  };
  process.on('exit', onExit);

  let stopped;
  const stop = () => {
    stopped ??= (async () => {
      process.off('exit', onExit);
      const pgid = child.pid;
      try {
        process.kill(-pgid, 'SIGTERM');
      } catch {
        /* gone */
      }
      // Short grace: whatever stops us (npm getting SIGTERM, a process manager) expects everything gone
      // within 2 s. The debug adapter kills its QEMU/GDB on SIGTERM, and its watchdog on SIGKILL.
      const deadline = Date.now() + 1200;
      // While the group ends, find what has left it (QEMU and GDB run in groups of their own, and the
      // adapter's watchdog): scanning /proc takes a while on a busy machine, and the grace is idle time.
      const outside = taggedProcesses(tag).filter((pid) => groupOf(pid) !== pgid);
      while (groupAlive(pgid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      try {
        process.kill(-pgid, 'SIGKILL');
      } catch {
        /* gone */
      }
      // The group is gone, and with it whatever would have ended these: they are orphans now.
      const killed = (pid) => {
        try {
          process.kill(pid, 'SIGKILL');
          return true;
        } catch {
          return false;
        }
      };
      const orphans = outside.filter(killed);
      const swept = taggedProcesses(tag).filter(killed);
      const escaped = [...new Set([...orphans, ...swept])];
      if (exited === null) await Promise.race([exitPromise, new Promise((r) => setTimeout(r, 2000))]);
      // Only when the sweep still found some is it worth waiting for them to be gone.
      let survivors = swept.length > 0 ? taggedProcesses(tag) : [];
      for (let i = 0; i < 20 && survivors.length > 0; i += 1) {
        await new Promise((r) => setTimeout(r, 100));
        survivors = taggedProcesses(tag);
      }
      return { escaped, survivors };
    })();
    return stopped;
  };

  const base = `http://${host}:${chosenPort}/`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (exited !== null) {
      await stop();
      throw new Error(
        `code-server exited (${exited.code ?? exited.signal}) before serving; log ${logFile}:\n${tail(logFile)}`,
      );
    }
    if ((await httpStatus(`${base}healthz`)) === 200) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(
        `code-server did not answer on ${base} within ${timeoutMs / 1000} s; log ${logFile}:\n${tail(logFile)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const url = folder ? `${base}?folder=${encodeURIComponent(folder)}` : base;
  return { url, base, port: chosenPort, pid: child.pid, tag, logFile, stop, exited: exitPromise };
}
