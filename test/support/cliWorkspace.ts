import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CycleLensLaunchArgs } from '../../common/launchArgs';
import { OWNER_TAG_VAR, newOwnerTag, waitForNoTaggedProcesses } from './ownedProcesses';
import { repoRoot } from './paths';

/** The built command line, as the tests run it (`node dist/cli.js …`). */
export const cliBundle = join(repoRoot, 'dist', 'cli.js');

/** One entry of a workspace's launch.json; `type: "cyclelens"` and `request: "launch"` are added. */
export type LaunchEntry = { name: string } & CycleLensLaunchArgs;

/**
 * Writes `<dir>/.vscode/launch.json` (making `.vscode` when it is missing) with one `cyclelens`
 * launch entry per element of `configurations`, in order, under `"version": "0.2.0"`: the file a
 * user's workspace holds and `cyclelens … --config .vscode/launch.json --name <name>` reads.
 * With `comment`, the file also carries a `// comment` line, as VS Code allows, so that a test can
 * check the reader takes JSON with comments. Returns the file's path.
 */
export function writeLaunchJson(dir: string, configurations: LaunchEntry[], comment?: string): string {
  mkdirSync(join(dir, '.vscode'), { recursive: true });
  const file = join(dir, '.vscode', 'launch.json');
  const json = JSON.stringify(
    { version: '0.2.0', configurations: configurations.map((c) => ({ type: 'cyclelens', request: 'launch', ...c })) },
    undefined,
    2,
  );
  writeFileSync(file, comment === undefined ? `${json}\n` : `${json.replace(/^\{\n/, `{\n  // ${comment}\n`)}\n`);
  return file;
}

/** How a finished `cyclelens` run ended and what it printed. */
export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** A `cyclelens` run in the background: its process, what it has written to stderr so far, and its exit code. */
export interface RunningCli {
  child: ChildProcessWithoutNullStreams;
  /** Everything the run has written to stderr up to now (stdout is read and dropped). */
  readonly stderr: string;
  /** The exit code, `null` when a signal ended it. */
  exited: Promise<number | null>;
}

export interface CliWorkspaceOptions {
  /** Written as a comment line in launch.json (see writeLaunchJson). */
  comment?: string;
  /** How long one `cli` call may take before it is killed. Default 300 s. */
  timeoutMs?: number;
  /** The message of close's assertion that no process of the workspace's runs is left. */
  leftBehind?: string;
}

/**
 * A temporary workspace for the `cyclelens` command line, and the command line run in it under an
 * owner tag that every process a run starts inherits (test/support/ownedProcesses.ts). Its functions
 * need no `this`: tests take them apart (`const { dir, cli, close } = cliWorkspace(...)`).
 */
export interface CliWorkspace {
  dir: string;
  tag: string;
  /** The environment runs get: this process's, with the owner tag. */
  env: NodeJS.ProcessEnv;
  /** Runs `node dist/cli.js ...args` in the workspace to its end. */
  cli: (...args: string[]) => CliResult;
  /** Starts `node dist/cli.js ...args` in the workspace and returns at once. */
  start: (args: string[]) => RunningCli;
  /** Asserts that no tagged process outlives the runs (waiting a little for them), then deletes the workspace. */
  close: () => Promise<void>;
}

/**
 * Makes a new directory under the system's temporary one (its name starts with `prefix`) and writes
 * its `.vscode/launch.json` with `configurations` (writeLaunchJson). Call `close` in an `after` hook.
 */
export function cliWorkspace(
  prefix: string,
  configurations: LaunchEntry[],
  options: CliWorkspaceOptions = {},
): CliWorkspace {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const tag = newOwnerTag();
  const env = { ...process.env, [OWNER_TAG_VAR]: tag };
  writeLaunchJson(dir, configurations, options.comment);
  return {
    dir,
    tag,
    env,
    cli(...args) {
      const r = spawnSync(process.execPath, [cliBundle, ...args], {
        cwd: dir,
        encoding: 'utf8',
        timeout: options.timeoutMs ?? 300_000,
        env,
      });
      return { status: r.status, stdout: r.stdout, stderr: r.stderr };
    },
    start(args) {
      const child = spawn(process.execPath, [cliBundle, ...args], { cwd: dir, env });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (t: string) => (stderr += t));
      child.stdout.resume();
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      return {
        child,
        get stderr() {
          return stderr;
        },
        exited,
      };
    },
    async close() {
      assert.deepEqual(
        await waitForNoTaggedProcesses(tag),
        [],
        options.leftBehind ?? 'the CLI leaves no QEMU or GDB behind',
      );
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
