import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { repoRoot } from './paths';

/*
 * Typed access to the ES modules in scripts/lib/ that install and run code-server, package the .vsix
 * and write the demo workspace: the tests use the same code as `npm start`, declared here once.
 */

export interface StopResult {
  /** Processes that had left code-server's process group and were found (and killed) by its tag. */
  escaped: number[];
  /** Processes still alive after stop(): orphans. */
  survivors: number[];
}

export interface RunningCodeServer {
  /** The workbench URL, with `?folder=` when a folder was given. */
  url: string;
  base: string;
  port: number;
  pid: number;
  /** Value of CODE_SERVER_TAG_VAR in the environment of every process this server started. */
  tag: string;
  logFile: string;
  stop(): Promise<StopResult>;
  exited: Promise<{ code: number | null; signal: string | null }>;
}

export interface CodeServerLib {
  codeServerVersion: string;
  CODE_SERVER_TAG_VAR: string;
  ensureCodeServer(options?: { force?: boolean }): {
    entry: string;
    version: string;
    installed: boolean;
    seconds: number;
  };
  defaultSettings(options?: { theme?: string }): Record<string, unknown>;
  installExtension(vsixPath: string, extensionsDir: string, userDataDir?: string): string;
  listExtensions(extensionsDir: string, userDataDir?: string): string[];
  startCodeServer(options: {
    port?: number;
    host?: string;
    userDataDir: string;
    extensionsDir: string;
    folder?: string;
    settings?: Record<string, unknown>;
    env?: Record<string, string>;
    logFile?: string;
    timeoutMs?: number;
  }): Promise<RunningCodeServer>;
  taggedProcesses(tag: string, variable?: string): number[];
  freePort(host?: string): Promise<number>;
}

export interface VsixLib {
  defaultVsixPath: string;
  ensureVsix(options?: { out?: string }): string;
  packageExtension(options?: { out?: string; typecheck?: boolean }): string;
  extensionId(): { id: string; version: string; displayName: string };
}

export interface DemoWorkspaceLib {
  demoConfigurations: { name: string; target: string; machine: string }[];
  createDemoWorkspace(options?: {
    dir?: string;
    program?: string;
    server?: Record<string, unknown>;
    build?: boolean;
    allowMissingFirmware?: boolean;
  }): {
    dir: string;
    missingFirmware: string[];
  };
}

// Under "module": "commonjs" TypeScript turns `import()` into `require()`, which cannot load an ES
// module; a function built at run time keeps Node's real dynamic import.
const importEsm = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<unknown>;

function load<T>(file: string): Promise<T> {
  return importEsm(pathToFileURL(join(repoRoot, 'scripts', 'lib', file)).href) as Promise<T>;
}

export async function importScriptsLib(): Promise<{
  codeServer: CodeServerLib;
  vsix: VsixLib;
  demoWorkspace: DemoWorkspaceLib;
}> {
  const [codeServer, vsix, demoWorkspace] = await Promise.all([
    load<CodeServerLib>('codeServer.mjs'),
    load<VsixLib>('vsix.mjs'),
    load<DemoWorkspaceLib>('demoWorkspace.mjs'),
  ]);
  return { codeServer, vsix, demoWorkspace };
}
