import { spawn, type ChildProcess } from 'node:child_process';

/**
 * The watchdog's program, run by `node -e`. It reads `+PGID` / `-PGID` lines on stdin, and when stdin
 * ends (the parent died, whatever the signal: SIGKILL runs no exit hook in the parent, but the kernel
 * always closes its pipe ends) it sends SIGTERM to every process group still registered, then SIGKILL
 * to the survivors 700 ms later. Written as plain ES5-level JavaScript so any Node can run it.
 */
const watchdogProgram = `
'use strict';
const groups = new Set();
let pending = '';
function alive(pgid) { try { process.kill(-pgid, 0); return true; } catch (e) { return false; } }
function signalAll(sig) { for (const g of groups) { try { process.kill(-g, sig); } catch (e) { groups.delete(g); } } }
function parentGone() {
  for (const g of groups) if (!alive(g)) groups.delete(g);
  if (groups.size === 0) process.exit(0);
  signalAll('SIGTERM');
  setTimeout(() => { signalAll('SIGKILL'); process.exit(0); }, 700);
}
process.stdin.setEncoding('utf8');
process.stdin.on('data', (text) => {
  pending += text;
  let nl;
  while ((nl = pending.indexOf('\\n')) >= 0) {
    const line = pending.slice(0, nl);
    pending = pending.slice(nl + 1);
    const m = /^([+-])(\\d+)$/.exec(line);
    if (!m) continue;
    if (m[1] === '+') groups.add(Number(m[2])); else groups.delete(Number(m[2]));
  }
});
process.stdin.on('end', parentGone);
process.stdin.on('error', parentGone);
// A terminal's Ctrl-C or hang-up is for the parent to handle; we act when the parent is gone.
for (const sig of ['SIGINT', 'SIGHUP']) process.on(sig, () => {});
`;

/**
 * Kills this process's children when it dies abnormally. Exit hooks cover every ending that runs
 * JavaScript (exit, SIGTERM, SIGINT, SIGHUP), but not SIGKILL (the OOM killer, a crashed VS Code
 * killing its debug adapters), and children spawned detached (their own process group, so a group
 * kill reaches their helpers) are then re-parented to init and run on: QEMU at full CPU.
 *
 * The watchdog is a tiny separate Node process in its own process group that holds only the read end
 * of a pipe from us. Our death closes the pipe; the watchdog then kills the registered groups.
 * Linux's PR_SET_PDEATHSIG would do this per child, but Node cannot set it before exec.
 */
export class ChildWatchdog {
  private child: ChildProcess | undefined;
  private failed = false;
  private readonly watched = new Set<number>();

  /** Registers a child's process group (its pid: children are spawned detached). */
  watch(pgid: number): void {
    this.watched.add(pgid);
    this.send(`+${pgid}\n`);
  }

  /**
   * The group has been reaped by us: the watchdog must not signal a recycled pid later. With the last
   * group gone the watchdog is retired (its pipe closed: it finds nothing to kill and exits), so no
   * process of ours outlives the children it guards; the next child starts a new one.
   */
  forget(pgid: number): void {
    if (!this.child) return;
    this.send(`-${pgid}\n`);
    this.watched.delete(pgid);
    if (this.watched.size === 0) {
      const retired = this.child;
      this.child = undefined;
      retired.stdin?.end();
    }
  }

  /** The watchdog's pid, for tests. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  private send(line: string): void {
    const child = this.ensureStarted();
    if (!child?.stdin || child.stdin.destroyed) return;
    child.stdin.write(line);
  }

  private ensureStarted(): ChildProcess | undefined {
    if (this.child || this.failed) return this.child;
    try {
      const child = spawn(process.execPath, ['-e', watchdogProgram], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
      // The watchdog must not keep this process alive, nor its pipe: it lives exactly as long as we do.
      child.unref();
      const stdin = child.stdin as (NodeJS.WritableStream & { unref?: () => void }) | null;
      stdin?.unref?.();
      child.stdin?.on('error', () => undefined);
      child.once('error', () => {
        this.failed = true;
        this.child = undefined;
      });
      this.child = child;
    } catch {
      // Without a watchdog the exit hooks still cover every ending except SIGKILL.
      this.failed = true;
    }
    return this.child;
  }
}
