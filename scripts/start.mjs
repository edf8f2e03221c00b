// `npm start`: CycleLens in a real VS Code (code-server) on 127.0.0.1, on the demo firmware workspace,
// from a fresh clone: Debian packages, npm packages, the production build packaged as a .vsix, the
// fixture firmware, code-server itself; then it serves until Ctrl-C and stops everything it started.
//   node scripts/start.mjs [--port N] [--theme "Default Light Modern"] [--no-setup] [--vsix FILE] [--state DIR]
//   (PORT and CYCLELENS_THEME in the environment do the same; the default port is 8080)
//   --vsix FILE  serves that packaged CycleLens instead of building and packaging this tree
//   --state DIR  keeps code-server's user data, extensions, log and the demo workspace in DIR
//                (default .cache/demo and .cache/demo-workspace), e.g. to run two demos side by side
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, relative, resolve } from 'node:path';
import { repoRoot } from './lib/root.mjs';
import { ensureDebianPackages, debianPackages, uiPackages } from './lib/system.mjs';
import { ensureNpmDependencies } from './lib/npmDeps.mjs';
import { packageExtension } from './lib/vsix.mjs';
import { createDemoWorkspace } from './lib/demoWorkspace.mjs';
import { defaultSettings, ensureCodeServer, installExtension, startCodeServer } from './lib/codeServer.mjs';

const host = '127.0.0.1';

function option(name) {
  const at = process.argv.indexOf(`--${name}`);
  if (at >= 0) return process.argv[at + 1];
  const inline = process.argv.find((a) => a.startsWith(`--${name}=`));
  return inline?.slice(name.length + 3);
}

function parsePort() {
  const text = option('port') ?? process.env.PORT ?? '8080';
  const port = Number(text);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(`the port must be a number from 1 to 65535, not "${text}" (npm start -- --port 8081)`);
  }
  return port;
}

function portIsFree(port) {
  return new Promise((resolveFree) => {
    const probe = createServer();
    probe.once('error', () => resolveFree(false));
    probe.listen(port, host, () => probe.close(() => resolveFree(true)));
  });
}

function step(text) {
  console.log(`\n[start] ${text}`);
}

async function main() {
  const port = parsePort();
  const theme = option('theme') ?? process.env.CYCLELENS_THEME ?? 'Default Dark Modern';
  if (!(await portIsFree(port))) {
    throw new Error(
      `${host}:${port} is in use: stop what listens there or pick another port (npm start -- --port ${port + 1})`,
    );
  }

  if (!process.argv.includes('--no-setup')) {
    step('system and npm packages');
    if (!ensureDebianPackages([...debianPackages, ...uiPackages], 'npm start')) process.exit(1);
    ensureNpmDependencies(repoRoot);
  }
  const givenVsix = option('vsix');
  if (givenVsix !== undefined && !existsSync(givenVsix))
    throw new Error(
      `--vsix ${givenVsix} does not exist: give a packaged CycleLens (.vsix) or leave the option out to build one`,
    );
  step(givenVsix ? `using the packaged extension ${givenVsix}` : 'building and packaging the extension');
  const vsix = givenVsix ? resolve(givenVsix) : packageExtension();
  const givenState = option('state');
  step('building the demo firmware in the demo workspace');
  const { dir: workspace } = createDemoWorkspace({
    build: true,
    ...(givenState ? { dir: resolve(givenState, 'workspace') } : {}),
  });
  step('code-server');
  ensureCodeServer();
  const stateDir = givenState ? resolve(givenState) : join(repoRoot, '.cache', 'demo');
  const userDataDir = join(stateDir, 'user-data');
  const extensionsDir = join(stateDir, 'extensions');
  installExtension(vsix, extensionsDir);

  const server = await startCodeServer({
    port,
    host,
    userDataDir,
    extensionsDir,
    folder: workspace,
    settings: defaultSettings({ theme }),
    logFile: join(stateDir, 'code-server.log'),
  });
  console.log(
    [
      '',
      `CycleLens demo is served at  ${server.url}`,
      `  workspace: ${relative(repoRoot, workspace)} (regenerated at every start)`,
      `  log:       ${relative(repoRoot, server.logFile)}`,
      '  Ctrl-C stops code-server and everything it started.',
    ].join('\n'),
  );

  let stopping = false;
  const shutdown = async (why, code) => {
    if (stopping) return;
    stopping = true;
    console.log(`\n[start] ${why}: stopping code-server`);
    await server.stop();
    process.exit(code);
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => void shutdown(signal, 0));
  watchLaunchers((who) => void shutdown(`${who} ended`, 0));
  watchCodeServerWindDown(server.pid, () => void shutdown('code-server is stopping (it got a signal)', 0));
  const exit = await server.exited;
  if (!stopping)
    await shutdown(`code-server exited on its own (${exit.code ?? exit.signal}); see ${server.logFile}`, 1);
}

/** The parent pid of `pid` (Linux /proc), or undefined. */
function parentOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

/**
 * Stops everything when whatever started us goes away. A SIGTERM to `npm start` ends npm (and
 * perhaps the shell it ran us in) without passing the signal on: we would be re-parented to init
 * with code-server, its extension host, QEMU and GDB still running. So the chain up to npm is
 * polled: our parent changing, or npm (our parent or grandparent under `npm start`) disappearing,
 * stops code-server at once (its stop() sends SIGTERM, then SIGKILL).
 */
function watchLaunchers(onGone) {
  const parent = process.ppid;
  const underNpm = process.env.npm_lifecycle_event !== undefined;
  const grandparent = underNpm ? parentOf(parent) : undefined;
  const alive = (pid) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch (e) {
      return e.code === 'EPERM';
    }
  };
  const timer = setInterval(() => {
    if (process.ppid !== parent || !alive(parent))
      onGone(underNpm ? 'the npm process (or the shell it ran this in)' : 'the process that started this');
    else if (grandparent !== undefined && grandparent > 1 && !alive(grandparent)) onGone('the npm process');
    else return;
    clearInterval(timer);
  }, 200);
  timer.unref();
}

/** Whether `pid` has a handler for SIGTERM now (the SigCgt mask of /proc/<pid>/status), or undefined when gone. */
function catchesSigterm(pid) {
  try {
    const m = /^SigCgt:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'));
    return m ? (BigInt(`0x${m[1]}`) & (1n << 14n)) !== 0n : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A SIGTERM to code-server itself starts its own wind-down, which waits for its server process to
 * dispose everything (seconds on a busy machine) before it exits, with the extension host, the debug
 * adapter, QEMU and GDB running all that while. code-server drops its signal handlers the moment it
 * starts winding down (its wrapper's first step), so the SIGTERM bit leaving its caught-signals mask
 * says it is stopping: we stop everything at once instead of waiting for its exit.
 */
function watchCodeServerWindDown(pid, onStopping) {
  if (catchesSigterm(pid) !== true) return;
  const timer = setInterval(() => {
    const catches = catchesSigterm(pid);
    if (catches === true) return;
    clearInterval(timer);
    if (catches === false) onStopping();
  }, 100);
  timer.unref();
}

main().catch((e) => {
  console.error(`\n[start] ${e instanceof Error ? e.message : e}`);
  process.exit(1);
});
