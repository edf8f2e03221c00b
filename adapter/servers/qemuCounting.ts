import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseInstructionCounts, type InstructionCountSnapshot } from '../sampling/pluginSampler';
import { OwnedProcess, requireExecutable } from '../util/processes';
import { OutputTail } from './readiness';

/**
 * One free run of the guest under QEMU with the counting plugin (adapter/sampling/qemuInsnCount.c):
 * no debugger, no halt, from reset until the plugin's end stop (`stop`: where the measured runs end,
 * so a spinning exit or a program that never ends is no matter) or, without one, until the program
 * makes QEMU exit (semihosting exit, a test device). The plugin writes its table when it ends QEMU.
 */

export type CountingRunResult =
  | { counted: true; snapshot: InstructionCountSnapshot; exitCode: number | null; elapsedMs: number }
  | { counted: false; reason: string; elapsedMs: number };

/**
 * Where a counting run ends: before the `hits`-th execution of the instruction at `address` (the plugin's
 * end stop).
 */
export interface CountingStop {
  address: number;
  hits: number;
}

export interface CountingRunOptions {
  binary: string;
  argv: (countsFile: string) => string[];
  cwd: string;
  timeoutMs: number;
  signal?: AbortSignal;
}

export async function runCountingQemu(options: CountingRunOptions): Promise<CountingRunResult> {
  const started = Date.now();
  const elapsed = (): number => Date.now() - started;
  const exe = requireExecutable(options.binary, 'QEMU', 'Install it or set `server.path` in the launch configuration.');
  const dir = mkdtempSync(join(tmpdir(), 'cyclelens-count-'));
  const file = join(dir, 'insn-counts.txt');
  // stdin closed: a program that reads its console through semihosting sees the end of input,
  // as in a session (nobody types into it there either).
  const proc = OwnedProcess.spawn('qemu (counting run)', exe, options.argv(file), {
    cwd: options.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const tail = new OutputTail(6);
  // Drained, never left to fill: a program printing through semihosting would stop on a full pipe.
  proc.child.stdout?.on('data', () => undefined);
  proc.child.stderr?.setEncoding('utf8');
  proc.child.stderr?.on('data', (text: string) => tail.push(text));
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    const outcome = await Promise.race([
      proc.exited.then((e) => ({ kind: 'exited' as const, ...e })),
      new Promise<{ kind: 'timeout' }>(
        (resolve) => (timer = setTimeout(() => resolve({ kind: 'timeout' }), options.timeoutMs)),
      ),
      new Promise<{ kind: 'aborted' }>((resolve) => {
        onAbort = () => resolve({ kind: 'aborted' });
        if (options.signal?.aborted) onAbort();
        else options.signal?.addEventListener('abort', onAbort);
      }),
    ]);
    if (outcome.kind === 'aborted') {
      const err = new Error('the counting run was cancelled');
      err.name = 'AbortError';
      throw err;
    }
    if (outcome.kind === 'timeout')
      return {
        counted: false,
        reason:
          `the program did not end within ${Math.round(options.timeoutMs / 1000)} s when run without ` +
          `the debugger (it may never reach the end the runs stop at: firmware that never ends is ` +
          `measured in a window of passes)`,
        elapsedMs: elapsed(),
      };
    await proc.outputEnded(500);
    if (outcome.signal) return { counted: false, reason: `QEMU was killed by ${outcome.signal}`, elapsedMs: elapsed() };
    if (!existsSync(file))
      return {
        counted: false,
        reason:
          `QEMU exited with code ${outcome.code} without writing the counts` +
          `${tail.text ? `; it printed: ${tail.text}` : ''}`,
        elapsedMs: elapsed(),
      };
    return {
      counted: true,
      snapshot: parseInstructionCounts(readFileSync(file, 'utf8')),
      exitCode: outcome.code,
      elapsedMs: elapsed(),
    };
  } finally {
    clearTimeout(timer);
    if (onAbort) options.signal?.removeEventListener('abort', onAbort);
    await proc.kill(200);
    rmSync(dir, { recursive: true, force: true });
  }
}
