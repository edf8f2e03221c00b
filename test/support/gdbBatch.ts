import { spawn } from 'node:child_process';

export interface GdbBatchResult {
  /** What GDB printed: its standard output, then its standard error (each kept whole, not interleaved). */
  output: string;
  /** Payloads of the packets GDB sent, from its own `set debug remote 1` log, in order. */
  sent: string[];
  code: number | null;
}

/**
 * Real GDB in batch mode, one `-ex` per command, as a user drives it from a command file. With
 * `logRemote` GDB logs every packet it sends (`[remote] Sending packet: $…#cs`), which is how a
 * test counts GDB's traffic without trusting the server that receives it.
 * Spawned asynchronously: a server under test may run in the calling process.
 */
export function gdbBatch(
  elf: string | undefined,
  commands: readonly string[],
  options: { logRemote?: boolean; timeoutMs?: number; gdb?: string } = {},
): Promise<GdbBatchResult> {
  const argv = ['-nx', '-batch', ...(options.logRemote ? ['-ex', 'set debug remote 1'] : [])];
  for (const c of commands) argv.push('-ex', c);
  if (elf) argv.push(elf);
  return new Promise((resolve, reject) => {
    const child = spawn(options.gdb ?? 'gdb-multiarch', argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('latin1').on('data', (t: string) => (stdout += t));
    child.stderr.setEncoding('latin1').on('data', (t: string) => (stderr += t));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`GDB did not finish within ${options.timeoutMs ?? 60_000} ms. It printed:\n${stdout}${stderr}`));
    }, options.timeoutMs ?? 60_000);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      const sent: string[] = [];
      // The packet log goes to standard error, a line per packet.
      for (const line of stderr.split('\n')) {
        // A long packet is logged cut short ("… [4115 bytes omitted]"), without its checksum.
        const m = /\[remote\] Sending packet: \$(.*?)(#[0-9a-f]{2})?\s*$/.exec(line);
        if (m) sent.push(m[1]!);
      }
      resolve({ output: `${stdout}${stderr}`, sent, code });
    });
  });
}
