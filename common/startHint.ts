import { createHash } from 'node:crypto';

/**
 * The start hint: what the debug adapter is told, as it is spawned, about the launch it is about to
 * receive, so that it can start the slow parts of that launch (QEMU) before the request arrives. It
 * is an opaque key of the resolved launch configuration, passed in the environment by whoever spawns
 * the adapter (the extension's DebugAdapterDescriptorFactory; the benches do the same). The adapter
 * remembers, under that key, the QEMU command its last launch of that configuration ran, and starts
 * that command at once the next time; the launch takes the process only when the command it builds
 * is the same (adapter/servers/qemuPrestart.ts).
 */
export const START_HINT_VAR = 'CYCLELENS_START_HINT';

/** Stable JSON: object keys sorted, so that the same configuration always gives the same key. */
function stable(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stable).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stable(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * The key of a launch configuration. VS Code's own bookkeeping (`__sessionId`, `__configurationTarget`
 * and the like) differs from session to session and is left out.
 */
export function startHintKey(configuration: Record<string, unknown>): string {
  const own = Object.fromEntries(Object.entries(configuration).filter(([k]) => !k.startsWith('__')));
  return createHash('sha256').update(stable(own)).digest('hex').slice(0, 32);
}

/** The environment to add when spawning the adapter for `configuration`. */
export function adapterStartEnv(configuration: Record<string, unknown>): Record<string, string> {
  return { [START_HINT_VAR]: startHintKey(configuration) };
}

/**
 * The argument of an adapter spawned as a spare (core/dap/adapterSpare.ts): it loads, writes `ready`
 * on its control pipe (file descriptor CONTROL_FD), and waits there for one line of JSON,
 * `{"hint": KEY}`, before it starts anything or reads DAP. Handed its session, it drops the argument
 * from its process title, so that `ps` tells an idle spare from an adapter serving a session.
 */
export const SPARE_ARG = '--spare';
/** The spare's control pipe: the first descriptor after stdin, stdout and stderr. */
export const CONTROL_FD = 3;
/** What a spare is told when it is handed a session. */
export interface SpareHandover {
  /** The start hint (startHintKey) of the launch it will serve. */
  hint?: string;
}
