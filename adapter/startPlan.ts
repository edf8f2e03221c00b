import { readdirSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { START_HINT_VAR } from '../common/startHint';
import { privateDir } from './codeCache';

/**
 * What the last launch of a configuration started, remembered under its start hint
 * (common/startHint.ts) in the cache directory, so that the next adapter spawned with the same hint
 * starts it from its loader's first line (adapter/loader.ts), while Node still loads the program.
 * A remembered plan only ever starts processes early: each launch builds its own commands and takes
 * a process started ahead only when that process runs exactly what it built.
 */
export interface StartPlan {
  /** The GDB the launch ran (an absolute path); it is started with GDB_ARGS. */
  gdb?: string;
  /** The QEMU command, as a template (servers/qemuPrestart.ts). */
  qemu?: QemuCommand;
}

/** A QEMU command as a template: `argv` holds PORT_SLOT and DIR_SLOT (servers/qemuPrestart.ts). */
export interface QemuCommand {
  binary: string;
  argv: string[];
  cwd: string;
}

/** Plans kept per cache directory: one per launch configuration in use. */
const PLANS_KEPT = 16;
const PLAN_FILE = /^start-[0-9a-f]{32}\.json$/;

function planFile(env: NodeJS.ProcessEnv, cacheDir: string | undefined): string | undefined {
  const key = env[START_HINT_VAR];
  if (!cacheDir || !key || !/^[0-9a-f]{32}$/.test(key)) return undefined;
  return join(cacheDir, `start-${key}.json`);
}

const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');

/**
 * The plan remembered under the hint in `env`, if any. Read only from a directory that is the
 * user's alone: a plan names programs to run.
 */
export function savedStartPlan(env: NodeJS.ProcessEnv, cacheDir: string | undefined): StartPlan | undefined {
  const file = planFile(env, cacheDir);
  if (!file) return undefined;
  try {
    if (!privateDir(cacheDir!)) return undefined;
    const raw = JSON.parse(readFileSync(file, 'utf8')) as { gdb?: unknown; qemu?: Partial<QemuCommand> };
    const plan: StartPlan = {};
    if (typeof raw.gdb === 'string') plan.gdb = raw.gdb;
    const q = raw.qemu;
    if (q && typeof q.binary === 'string' && typeof q.cwd === 'string' && strings(q.argv))
      plan.qemu = { binary: q.binary, argv: q.argv, cwd: q.cwd };
    return plan;
  } catch {
    return undefined;
  }
}

/** Adds what a launch started to the plan under the hint in `env` (when there is one). Never throws. */
export function rememberStart(part: StartPlan, env: NodeJS.ProcessEnv, cacheDir: string | undefined): void {
  const file = planFile(env, cacheDir);
  if (!file) return;
  const partial = `${file}.${process.pid}.partial`;
  try {
    const before = savedStartPlan(env, cacheDir) ?? {};
    const text = JSON.stringify({ ...before, ...part });
    if (JSON.stringify(before) === text || !privateDir(cacheDir!)) return;
    writeFileSync(partial, text, { mode: 0o600 });
    renameSync(partial, file);
    const saved = readdirSync(cacheDir!)
      .filter((name) => PLAN_FILE.test(name))
      .map((name) => ({ path: join(cacheDir!, name), mtime: statSync(join(cacheDir!, name)).mtimeMs }))
      .sort((a, b) => b.mtime - a.mtime);
    for (const old of saved.slice(PLANS_KEPT)) unlinkSync(old.path);
  } catch {
    rmSync(partial, { force: true });
  }
}
