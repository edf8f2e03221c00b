import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, resolve, sep } from 'node:path';

/**
 * The launch configuration the CLI runs, read from a VS Code launch.json: JSON with comments and
 * trailing commas, `${workspaceFolder}` the parent of the file's folder (`.vscode/`), as VS Code
 * would substitute it.
 */

export class LaunchConfigError extends Error {
  override name = 'LaunchConfigError';
}

/** Removes // and /* *\/ comments and trailing commas, leaving strings alone. */
export function stripJsonComments(text: string): string {
  let out = '';
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i]!;
    if (c === '"') {
      let j = i + 1;
      while (j < n && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < n && text[i] !== '\n') i++;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      // Keep line numbers: a comment's newlines stay.
      const comment = end < 0 ? text.slice(i) : text.slice(i, end + 2);
      out += comment.replace(/[^\n]/g, ' ');
      i += comment.length;
    } else {
      out += c;
      i++;
    }
  }
  // Trailing commas before } or ] (outside strings: strings were copied verbatim, so re-scan).
  let result = '';
  i = 0;
  while (i < out.length) {
    const c = out[i]!;
    if (c === '"') {
      let j = i + 1;
      while (j < out.length && out[j] !== '"') j += out[j] === '\\' ? 2 : 1;
      result += out.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    if (c === ',') {
      let j = i + 1;
      while (j < out.length && /\s/.test(out[j]!)) j++;
      if (out[j] === '}' || out[j] === ']') {
        i++;
        continue;
      }
    }
    result += c;
    i++;
  }
  return result;
}

export interface LaunchConfiguration {
  /** The configuration as the adapter's `launch` request receives it. */
  args: Record<string, unknown>;
  workspaceFolder: string;
  request: 'launch' | 'attach';
}

/** Substitutes VS Code's variables in every string of `value`. */
export function substituteVariables(
  value: unknown,
  vars: { workspaceFolder: string; env?: NodeJS.ProcessEnv },
  where = 'the configuration',
): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{([^}]+)\}/g, (_all, name: string) => {
      if (name === 'workspaceFolder' || name === 'workspaceRoot') return vars.workspaceFolder;
      if (name === 'workspaceFolderBasename') return basename(vars.workspaceFolder);
      if (name === 'userHome') return homedir();
      if (name === 'pathSeparator' || name === '/') return sep;
      if (name.startsWith('env:')) return (vars.env ?? process.env)[name.slice(4)] ?? '';
      throw new LaunchConfigError(
        `${where} uses \${${name}}, which the CLI cannot substitute (it knows workspaceFolder, ` +
          `workspaceFolderBasename, userHome, pathSeparator and env:NAME); write the value out in the ` +
          `configuration`,
      );
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => substituteVariables(v, vars, `${where}[${i}]`));
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = substituteVariables(v, vars, `${where}.${k}`);
    return out;
  }
  return value;
}

export function selectConfiguration(
  text: string,
  file: string,
  name: string,
  env?: NodeJS.ProcessEnv,
): LaunchConfiguration {
  let json: unknown;
  try {
    json = JSON.parse(stripJsonComments(text));
  } catch (err) {
    throw new LaunchConfigError(`${file} is not valid JSON (with comments): ${(err as Error).message}`);
  }
  const configs = (json as { configurations?: unknown } | null)?.configurations;
  if (!Array.isArray(configs))
    throw new LaunchConfigError(`${file} has no "configurations" array: is it a VS Code launch.json?`);
  const named = configs.filter(
    (c): c is Record<string, unknown> =>
      typeof c === 'object' && c !== null && (c as Record<string, unknown>).name === name,
  );
  const ours = configs
    .filter((c) => (c as Record<string, unknown> | null)?.type === 'cyclelens')
    .map((c) => `"${String((c as Record<string, unknown>).name)}"`);
  if (named.length === 0) {
    throw new LaunchConfigError(
      `${file} has no configuration named "${name}"` +
        (ours.length
          ? `; CycleLens configurations there: ${ours.join(', ')}`
          : ' and no configuration of type "cyclelens"'),
    );
  }
  if (named.length > 1)
    throw new LaunchConfigError(`${file} has ${named.length} configurations named "${name}": rename one`);
  const config = named[0]!;
  if (config.type !== 'cyclelens')
    throw new LaunchConfigError(
      `configuration "${name}" in ${file} is of type "${String(config.type)}", not "cyclelens"`,
    );
  const request = config.request === 'attach' ? 'attach' : 'launch';
  if (config.request !== undefined && config.request !== 'launch' && config.request !== 'attach') {
    throw new LaunchConfigError(
      `configuration "${name}" has request "${String(config.request)}": use "launch" or "attach"`,
    );
  }
  const workspaceFolder = dirname(dirname(resolve(file)));
  const args = substituteVariables(
    config,
    { workspaceFolder, ...(env ? { env } : {}) },
    `configuration "${name}"`,
  ) as Record<string, unknown>;
  // What VS Code would do: relative paths resolve against the workspace folder.
  if (args.cwd === undefined) args.cwd = workspaceFolder;
  if (typeof args.executable !== 'string' || args.executable === '')
    throw new LaunchConfigError(`configuration "${name}" has no "executable": name the firmware ELF`);
  for (const key of ['preLaunchTask', 'postDebugTask']) delete args[key];
  return { args, workspaceFolder, request };
}

export async function loadLaunchConfiguration(file: string, name: string): Promise<LaunchConfiguration> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new LaunchConfigError(
      code === 'ENOENT'
        ? `${file} does not exist: pass --config with the path of your launch.json`
        : `${file} cannot be read: ${(err as Error).message}`,
    );
  }
  return selectConfiguration(text, file, name);
}
