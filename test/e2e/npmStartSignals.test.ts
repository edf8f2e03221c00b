import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { CodeServerHarness, e2eOutputDir } from '../support/codeServerHarness';
import { importScriptsLib, type RunningCodeServer } from '../support/codeServerScripts';
import { rv32 } from '../support/codeServerUi';
import { markerLine } from '../support/markers';
import { repoRoot } from '../support/paths';

// `npm start` as a process manager, `timeout` or a `kill` meets it: the real chain (npm, the shell
// npm runs the script in, scripts/start.mjs, code-server) serves the demo, a browser has a debug
// session stopped at main (so the extension host, the debug adapter, QEMU and GDB run too), and one
// process of the chain gets SIGTERM. Every process of the chain and under it must be gone within
// 2 s of the signal: a requirement of "nothing left behind", read from /proc. One start per case.

/** The deadline for everything `npm start` started to be gone after the signal. */
const deadlineMs = 2000;
/** How long the test keeps looking, to report how late any straggler was. */
const watchMs = 10_000;

interface Proc {
  pid: number;
  /** Field 22 of /proc/<pid>/stat: with the pid, names one process even if the pid is reused. */
  startTime: string;
  command: string;
}

function statOf(pid: number): { ppid: number; state: string; startTime: string } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0]!, ppid: Number(fields[1]), startTime: fields[19]! };
  } catch {
    return undefined;
  }
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1').replace(/\0/g, ' ').trim();
  } catch {
    return '';
  }
}

/** `root` and every process below it (by parent pid), read from /proc. */
function processTree(root: number): Proc[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = statOf(Number(name));
    if (s && s.state !== 'Z') children.set(s.ppid, [...(children.get(s.ppid) ?? []), Number(name)]);
  }
  const found: Proc[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    const s = statOf(pid);
    if (!s || s.state === 'Z') continue;
    found.push({ pid, startTime: s.startTime, command: commandOf(pid) });
    queue.push(...(children.get(pid) ?? []));
  }
  return found;
}

/** The process still runs (a zombie has exited: it only waits for its parent to read its status). */
function running(p: Proc): boolean {
  const s = statOf(p.pid);
  return s !== undefined && s.startTime === p.startTime && s.state !== 'Z';
}

const short = (p: Proc): string =>
  `${p.pid} ${p.command
    .split(' ')
    .slice(0, 2)
    .map((w) => w.split('/').pop())
    .join(' ')}`;

interface Demo {
  npm: ChildProcess;
  output: () => string;
  harness: CodeServerHarness;
  chain: { npm: Proc; shell?: Proc; startScript: Proc; codeServer: Proc };
  tag: string;
}

let vsixPath = '';
const started: Demo[] = [];

async function startDemo(name: string): Promise<Demo> {
  const { codeServer, vsix } = await importScriptsLib();
  codeServer.ensureCodeServer();
  vsixPath ||= vsix.ensureVsix();
  const stateDir = join(e2eOutputDir, 'npmStartSignals', name);
  rmSync(stateDir, { recursive: true, force: true });
  const port = await codeServer.freePort();
  // Its own process group, as from a terminal: the signal goes to one process only, and the test can
  // still end the whole group if a case fails.
  const npm = spawn(
    'npm',
    ['start', '--', '--no-setup', '--port', String(port), '--vsix', vsixPath, '--state', stateDir],
    {
      cwd: repoRoot,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let text = '';
  npm.stdout!.setEncoding('utf8').on('data', (d: string) => (text += d));
  npm.stderr!.setEncoding('utf8').on('data', (d: string) => (text += d));
  const demo: Partial<Demo> = { npm, output: () => text };
  started.push(demo as Demo);
  const servedAt = /CycleLens demo is served at\s+(\S+)/;
  for (const t0 = Date.now(); !servedAt.test(text); await new Promise((r) => setTimeout(r, 250))) {
    if (npm.exitCode !== null || npm.signalCode !== null) throw new Error(`npm start ended before serving:\n${text}`);
    if (Date.now() - t0 > 15 * 60_000) throw new Error(`npm start did not serve within 15 minutes:\n${text}`);
  }
  const url = servedAt.exec(text)![1]!;

  const tree = processTree(npm.pid!);
  const shell = tree.find((p) => /^(\/bin\/)?sh -c /.test(p.command));
  const startScript = tree.find((p) => /scripts\/start\.mjs/.test(p.command) && !/^(\/bin\/)?sh /.test(p.command));
  const server = tree.find(
    (p) => /code-server\/out\/node\/entry\.js/.test(p.command) && statOf(p.pid)?.ppid === startScript?.pid,
  );
  assert.ok(
    startScript && server,
    `the chain npm → start.mjs → code-server is not there: ${tree.map(short).join(', ')}`,
  );
  const tag = readFileSync(`/proc/${server.pid}/environ`, 'latin1')
    .split('\0')
    .find((v) => v.startsWith(`${codeServer.CODE_SERVER_TAG_VAR}=`))
    ?.split('=')[1];
  assert.ok(tag, 'code-server carries its tag');
  const running: RunningCodeServer = {
    url,
    base: url.replace(/\?.*$/, ''),
    port,
    pid: server.pid,
    tag,
    logFile: join(stateDir, 'code-server.log'),
    // npm start owns the server: the test's own clean-up is in after().
    stop: () => Promise.resolve({ escaped: [], survivors: [] }),
    exited: new Promise(() => undefined),
  };
  // Known before the browser connects, so after() can end this server's processes if that fails.
  demo.chain = { npm: tree[0]!, ...(shell ? { shell } : {}), startScript, codeServer: server };
  demo.tag = tag;
  const workspace = join(stateDir, 'workspace');
  demo.harness = await CodeServerHarness.connect({
    server: running,
    workspace,
    stateDir,
    userDataDir: join(stateDir, 'user-data'),
    extensionsDir: join(stateDir, 'extensions'),
    vsixPath,
  });
  return demo as Demo;
}

after(async () => {
  // Whatever a failed case left: the npm group, and anything that carries a demo's tag.
  const { codeServer } = await importScriptsLib();
  for (const d of started) {
    await d.harness?.closeBrowser();
    try {
      process.kill(-d.npm.pid!, 'SIGKILL');
    } catch {
      /* gone */
    }
    // code-server runs in a process group of its own.
    if (d.chain)
      try {
        process.kill(-d.chain.codeServer.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    for (const pid of d.tag ? codeServer.taggedProcesses(d.tag) : []) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  }
});

for (const victim of ['npm', 'shell', 'startScript', 'codeServer'] as const) {
  const label = {
    npm: 'the npm process',
    shell: 'the shell npm runs the script in',
    startScript: 'scripts/start.mjs',
    codeServer: 'code-server',
  }[victim];
  test(
    `SIGTERM to ${label} of \`npm start\`, with a debug session on QEMU: every process under npm is gone within 2 s`,
    { timeout: 20 * 60_000 },
    async (t) => {
      const demo = await startDemo(victim);
      const h = demo.harness;
      await h.startDebugging(rv32);
      await h.waitForTopFrame('main', markerLine(join(h.workspace, 'src', 'singlepass.c'), '#MAIN_FIRST'), 90_000);

      const { codeServer } = await importScriptsLib();
      const before = processTree(demo.chain.npm.pid);
      // Everything code-server started carries its tag, including any process that left the tree.
      for (const pid of codeServer.taggedProcesses(demo.tag)) {
        const s = statOf(pid);
        if (s && !before.some((p) => p.pid === pid))
          before.push({ pid, startTime: s.startTime, command: commandOf(pid) });
      }
      for (const what of [
        /qemu-system-riscv32/,
        /gdb-multiarch/,
        /dist\/adapter\.js/,
        /extensionHost|bootstrap-fork/,
      ]) {
        assert.ok(
          before.some((p) => what.test(p.command)),
          `no ${what.source} process runs before the signal: ${before.map(short).join(', ')}`,
        );
      }
      const target = demo.chain[victim];
      assert.ok(target, `${label} is not in the chain (${before.map(short).join(', ')})`);

      process.kill(target.pid, 'SIGTERM');
      const signalled = Date.now();
      const goneAfter = new Map<number, number>();
      while (goneAfter.size < before.length && Date.now() - signalled < watchMs) {
        for (const p of before) if (!goneAfter.has(p.pid) && !running(p)) goneAfter.set(p.pid, Date.now() - signalled);
        await new Promise((r) => setTimeout(r, 20));
      }
      await h.closeBrowser();
      const late = before.filter((p) => !((goneAfter.get(p.pid) ?? Infinity) <= deadlineMs));
      const lastMs = Math.max(...before.map((p) => goneAfter.get(p.pid) ?? Infinity));
      t.diagnostic(`${before.length} processes; the last gone ${lastMs} ms after SIGTERM to ${short(target)}`);
      t.diagnostic(before.map((p) => `${short(p)}: ${goneAfter.get(p.pid) ?? 'still running'} ms`).join('; '));
      assert.deepEqual(
        late.map((p) => `${short(p)} (${goneAfter.get(p.pid) ?? 'still running'} ms)`),
        [],
        `processes of \`npm start\` outlived the ${deadlineMs} ms after SIGTERM to ${label}; npm ` +
          `start printed:\n${demo.output().slice(-2000)}`,
      );
      assert.deepEqual(codeServer.taggedProcesses(demo.tag), [], 'a process code-server started is still running');
    },
  );
}
