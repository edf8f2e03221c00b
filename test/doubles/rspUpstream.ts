import { connect, type Socket } from 'node:net';
import { escapeBinary, framePacket, RspDecoder } from './rspFraming';

/**
 * TEST DOUBLE support — the board double's side of its link to QEMU's gdbstub: one request at a
 * time, as an all-stop GDB talks (GDB manual, "Remote Protocol"). QEMU 7.2 does not offer no-ack
 * mode, so every packet it sends is acknowledged with `+`, and one it could not read (`-`) is sent
 * again. `O` packets (monitor output) that arrive before a reply are handed to the caller.
 */
export class RspUpstream {
  private readonly decoder = new RspDecoder();
  private pending: { resolve: (reply: Buffer) => void; output?: (packet: Buffer) => void } | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private lastSent: Buffer | undefined;
  private closedReason: string | undefined;
  private readonly closeListeners: Array<(reason: string) => void> = [];
  private readonly strayListeners: Array<(packet: Buffer) => void> = [];
  /** Packets sent to QEMU (the double's own traffic, not GDB's). */
  sent = 0;

  private constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    const closed = (why: string): void => {
      if (this.closedReason !== undefined) return;
      this.closedReason = why;
      for (const l of this.closeListeners) l(why);
    };
    socket.on('close', () => closed("QEMU's gdbstub closed the connection"));
    socket.on('error', (err) => closed(`the connection to QEMU's gdbstub failed: ${err.message}`));
  }

  static connect(host: string, port: number, timeoutMs = 5_000): Promise<RspUpstream> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host, port });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`QEMU's gdbstub at ${host}:${port} did not accept a connection within ${timeoutMs} ms`));
      }, timeoutMs);
      socket.once('connect', () => {
        clearTimeout(timer);
        resolve(new RspUpstream(socket));
      });
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(new Error(`cannot reach QEMU's gdbstub at ${host}:${port}: ${err.message}`));
      });
    });
  }

  get closed(): string | undefined {
    return this.closedReason;
  }

  /** Whether a request (a resume, typically) is waiting for its reply. */
  get waiting(): boolean {
    return this.pending !== undefined;
  }

  onClose(listener: (reason: string) => void): void {
    this.closeListeners.push(listener);
  }

  /** A packet that arrived with no request waiting (a stop reply after the GDB that resumed left). */
  onStray(listener: (packet: Buffer) => void): void {
    this.strayListeners.push(listener);
  }

  /**
   * Sends one packet and resolves with QEMU's reply, after any `O` packets (passed to `output`).
   * Requests queue behind each other; a resume's reply is its stop, however long that takes.
   */
  request(payload: Buffer | string, output?: (packet: Buffer) => void): Promise<Buffer> {
    const run = this.queue.then(
      () =>
        new Promise<Buffer>((resolve, reject) => {
          if (this.closedReason !== undefined) return reject(new Error(this.closedReason));
          const onClose = (why: string): void => {
            this.pending = undefined;
            reject(new Error(why));
          };
          this.closeListeners.push(onClose);
          this.pending = {
            resolve: (reply) => {
              this.closeListeners.splice(this.closeListeners.indexOf(onClose), 1);
              resolve(reply);
            },
            ...(output ? { output } : {}),
          };
          const body = typeof payload === 'string' ? Buffer.from(payload, 'latin1') : payload;
          this.lastSent = framePacket(escapeBinary(body));
          this.sent++;
          this.socket.write(this.lastSent);
        }),
    );
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Resolves once every request sent so far has its reply. */
  idle(): Promise<void> {
    return this.queue.then(() => undefined);
  }

  /** A bare 0x03: asks a running QEMU to stop; the waiting resume then gets its stop reply. */
  interrupt(): void {
    if (this.closedReason === undefined) this.socket.write(Buffer.from([0x03]));
  }

  close(): void {
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    for (const event of this.decoder.push(chunk)) {
      if (event.type === 'nack' && this.lastSent) this.socket.write(this.lastSent);
      else if (event.type === 'bad-checksum') this.socket.write('-');
      else if (event.type === 'packet') {
        this.socket.write('+');
        const p = event.payload;
        const pending = this.pending;
        if (isOutput(p) && pending?.output) {
          pending.output(p);
          continue;
        }
        if (!pending) {
          for (const l of this.strayListeners) l(p);
          continue;
        }
        this.pending = undefined;
        pending.resolve(p);
      }
    }
  }
}

/** `O` + hex digits is console output; `OK` is a reply. */
export function isOutput(packet: Buffer): boolean {
  return packet.length > 1 && packet[0] === 0x4f && packet.toString('latin1') !== 'OK';
}
