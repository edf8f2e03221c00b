import { open, type FileHandle } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';

/**
 * Follows a file another process appends to, handing each new piece of text to `deliver`.
 *
 * QEMU's guest UART goes to a file rather than to a pipe for the sake of exact counts: QEMU writes
 * its stdio chardev non-blocking, one byte per guest write, and on a unix socket each byte costs a
 * whole socket buffer entry. A reader that falls behind (a loaded host) makes the write fail with
 * EAGAIN; the CMSDK UART then keeps TXFULL set until the host drains it, and firmware spinning on
 * TXFULL runs a host-time-dependent number of extra instructions. Writes to a regular file never
 * wait, so the guest's instruction stream stays the same from run to run.
 */
export class FileFollower {
  private handle: FileHandle | undefined;
  private offset = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Reads run one after another, so two never read the same bytes. */
  private reads: Promise<void> = Promise.resolve();
  private stopped = false;
  private closed = false;
  private readonly decoder = new StringDecoder('utf8');
  private readonly buffer = Buffer.allocUnsafe(64 * 1024);

  constructor(
    private readonly path: string,
    private readonly deliver: (text: string) => void,
    private readonly intervalMs = 50,
  ) {}

  start(): void {
    this.schedule();
  }

  /** Delivers everything written so far, now. */
  drain(): Promise<void> {
    this.reads = this.reads.then(() => this.readNew());
    return this.reads;
  }

  /** Reads what is left, then stops following. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.drain();
    const rest = this.decoder.end();
    if (rest) this.deliver(rest);
    this.closed = true;
    await this.handle?.close().catch(() => undefined);
    this.handle = undefined;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.drain().finally(() => this.schedule()), this.intervalMs);
    // Following output never keeps the adapter alive by itself.
    this.timer.unref();
  }

  private async readNew(): Promise<void> {
    if (this.closed) return;
    try {
      this.handle ??= await open(this.path, 'r');
    } catch {
      return; // not created yet, or already removed
    }
    for (;;) {
      const { bytesRead } = await this.handle
        .read(this.buffer, 0, this.buffer.length, this.offset)
        .catch(() => ({ bytesRead: 0 }));
      if (bytesRead === 0) return;
      this.offset += bytesRead;
      const text = this.decoder.write(this.buffer.subarray(0, bytesRead));
      if (text) this.deliver(text);
    }
  }
}
