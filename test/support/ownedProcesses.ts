import { readdirSync, readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';

/**
 * Leak detection. A test gives the adapter a unique tag in its environment; every process the
 * adapter starts inherits it, so after the session we can find any survivor by reading
 * /proc/PID/environ, even when it has been re-parented to init.
 */
export const OWNER_TAG_VAR = 'CYCLELENS_TEST_OWNER';

export function newOwnerTag(): string {
  return randomUUID();
}

export interface LiveProcess {
  pid: number;
  /** Its parent's pid (1, or a subreaper, once its parent died). */
  ppid: number;
  cmdline: string;
}

/** Processes (other than zombies) whose environment carries `tag`. */
export function processesWithTag(tag: string): LiveProcess[] {
  const needle = `${OWNER_TAG_VAR}=${tag}`;
  const found: LiveProcess[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const env = readFileSync(`/proc/${name}/environ`, 'latin1').split('\0');
      if (!env.includes(needle)) continue;
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (state === 'Z') continue;
      found.push({
        pid: Number(name),
        ppid: Number(ppid),
        cmdline: readFileSync(`/proc/${name}/cmdline`, 'latin1').replace(/\0/g, ' ').trim(),
      });
    } catch {
      // exited while we looked, or not ours to read
    }
  }
  return found;
}

/** Waits up to `timeoutMs` for every tagged process to be gone; returns the survivors. */
export async function waitForNoTaggedProcesses(tag: string, timeoutMs = 5000): Promise<LiveProcess[]> {
  const deadline = Date.now() + timeoutMs;
  let left = processesWithTag(tag);
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    left = processesWithTag(tag);
  }
  return left;
}

/** Kills survivors so one failing test does not poison the next; used in `after` hooks. */
export function killTagged(tag: string): void {
  for (const p of processesWithTag(tag)) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}
