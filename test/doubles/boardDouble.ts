import { createServer, type Server, type Socket } from 'node:net';
import { ComparatorBudget, type ComparatorRefusal, type ComparatorUse } from './boardComparators';
import { FlashModel, type FlashSessionCounts } from './boardFlash';
import { memoryMapXml } from './boardMemoryMap';
import { boardMonitor } from './boardMonitor';
import { binaryData, isResume, packetKind, parseAddressLength, parseBreakpoint } from './boardPackets';
import { VFlashPackets } from './boardVFlash';
import { boardLayout, type BoardLayout, type FlashPlacement, type PartProfile } from './boardProfiles';
import { escapeBinary, fromHex, framePacket, RspDecoder, toHex } from './rspFraming';
import { RspUpstream } from './rspUpstream';

/**
 * TEST DOUBLE — a probe's gdbserver (OpenOCD, J-Link GDB Server, pyOCD) in front of QEMU's gdbstub,
 * so that CycleLens meets what a board does and QEMU does not: code in flash, a few comparators and
 * a round trip that costs time. It speaks the GDB Remote Serial Protocol on both sides (GDB manual,
 * "Remote Protocol") and forwards what a probe passes to the core (registers, memory outside flash,
 * run control, software breakpoints in RAM); it answers itself, as OpenOCD 0.12 does:
 *  - `qSupported` with OpenOCD's features (PacketSize=3fff, qXfer:memory-map:read+, QStartNoAckMode+);
 *  - `qXfer:memory-map:read`: the part profile's flash sectors (boardMemoryMap.ts);
 *  - `m` inside flash from the flash model; `M`/`X` touching flash: `E0E` (a bus write to flash fails);
 *  - `vFlashErase` (sector-aligned, else `E05`), `vFlashWrite` (buffered), `vFlashDone` (programs
 *    the buffer: `E.memtype` outside flash, `E05` where a bit would have to go from 0 to 1); with
 *    OpenOCD's default target events `gdb-flash-erase-start` (`reset init`) and
 *    `gdb-flash-write-end` (`reset halt`). Flash contents are mirrored into QEMU's memory when QEMU
 *    has memory under the flash, so the core runs what was programmed;
 *  - `Z0` touching flash: `E0E` (no flash breakpoints); `Z1`-`Z4` within the profile's comparators
 *    (boardComparators.ts), else `E0E`;
 *  - `qRcmd`: `reset halt`/`reset init`/`soft_reset_halt` reset and halt as OpenOCD does, the
 *    double's own `board status`, anything else goes to QEMU's monitor (boardMonitor.ts);
 *  - `D` leaves the core halted and `k` only closes the connection (QEMU would resume, or quit).
 * Every packet GDB sends waits `packetDelayMs` first (default 1 ms, a probe's USB round trip) and is
 * counted by kind; erases and programs wait their datasheet time times `flashTimeScale`.
 * What it does not model: a probe's read speed (a large read costs one delay), OpenOCD's 100 ms halt
 * polling, stores the program itself makes into flash (QEMU's code memory is RAM), and J-Link's or
 * pyOCD's own flash breakpoints.
 */

export interface BoardDoubleOptions {
  profile: PartProfile;
  placement?: FlashPlacement;
  /** QEMU's gdbstub (`host:port`), QEMU started halted (`-S`) and without an image. */
  qemu: string;
  /** Delay before every packet from GDB is handled, in ms. Default 1. */
  packetDelayMs?: number;
  /** Multiplies the modelled erase and program times before they are waited. Default 1; 0 waits nothing. */
  flashTimeScale?: number;
  /** Replaces the profile's comparator counts (`shared` profiles take `triggers`). */
  comparators?: { breakpoints?: number; watchpoints?: number; triggers?: number };
  /** Port to listen on (default: a free one). */
  port?: number;
  log?: (line: string) => void;
}

export type BoardRefusal = ComparatorRefusal | 'softwareBreakpointInFlash' | 'memoryWriteInFlash' | 'flashError';

export interface BoardStats {
  /** Packets GDB sent (acknowledgements and interrupts not included). */
  packets: number;
  byKind: Record<string, number>;
  /** Bare 0x03 interrupts GDB sent. */
  interrupts: number;
  /** Requests refused, by reason. */
  refused: Partial<Record<BoardRefusal, number>>;
  comparators: ComparatorUse;
  flash: FlashSessionCounts;
  /** Halting resets (`reset halt`, and the flash events). */
  resets: number;
  /** Why the last flash operation failed, as OpenOCD would log it. */
  lastFlashError?: string;
}

const OPENOCD_FEATURES = 'PacketSize=3fff;qXfer:memory-map:read+;qXfer:features:read+;QStartNoAckMode+;vContSupported+';
/** QEMU 7.2's gdbstub refuses `m` of more than 2048 bytes (MAX_PACKET_LENGTH / 2) and has no `X`. */
const QEMU_READ_CHUNK = 2048;
const QEMU_WRITE_CHUNK = 1024;
/** OpenOCD's gdb_error(): a failure reaches GDB as EFAULT (flash packets: boardVFlash.ts). */
const E_FAULT = 'E0E';

export class BoardDouble {
  readonly layout: BoardLayout;
  readonly flash: FlashModel;
  readonly comparators: ComparatorBudget;
  packetDelayMs: number;
  flashTimeScale: number;
  private readonly server: Server;
  private gdb: Socket | undefined;
  private counts = freshCounts();
  private readonly vflash: VFlashPackets;
  /** Connections come and go in order: a new GDB is attached only once the last one's leaving is done. */
  private lifecycle: Promise<void> = Promise.resolve();
  private resumeQueued = false;
  private interruptQueued = false;
  private readonly goneListeners: Array<(reason: string) => void> = [];

  private constructor(
    private readonly upstream: RspUpstream,
    private readonly options: BoardDoubleOptions,
  ) {
    this.layout = boardLayout(options.profile, options.placement);
    this.flash = new FlashModel(this.layout);
    const c = options.profile.comparators;
    const o = options.comparators ?? {};
    this.comparators = new ComparatorBudget(
      c.kind === 'separate'
        ? { ...c, breakpoints: o.breakpoints ?? c.breakpoints, watchpoints: o.watchpoints ?? c.watchpoints }
        : { ...c, triggers: o.triggers ?? c.triggers },
    );
    this.vflash = new VFlashPackets(this.flash, {
      resetHalt: () => this.resetHalt(),
      mirror: (address, length) => this.mirror(address, length),
      wait: (ms) => this.modelledWait(ms),
      failed: (reason) => {
        this.refuse('flashError');
        this.counts.lastFlashError = reason;
        this.log(`   flash operation failed: ${reason}`);
      },
    });
    this.packetDelayMs = options.packetDelayMs ?? 1;
    this.flashTimeScale = options.flashTimeScale ?? 1;
    this.server = createServer((socket) => this.accept(socket));
    upstream.onClose((why) => {
      this.log(`!! ${why}`);
      this.gdb?.destroy();
      for (const l of this.goneListeners) l(why);
    });
    upstream.onStray((p) => this.log(`<< (nobody connected) ${p.toString('latin1').slice(0, 80)}`));
  }

  /** Connects to QEMU's gdbstub and listens for GDB on 127.0.0.1. */
  static async start(options: BoardDoubleOptions): Promise<BoardDouble> {
    const m = /^(.*):(\d+)$/.exec(options.qemu);
    if (!m) throw new Error(`qemu address '${options.qemu}' is not host:port`);
    const upstream = await RspUpstream.connect(m[1] || '127.0.0.1', Number(m[2]));
    const double = new BoardDouble(upstream, options);
    try {
      await double.listen(options.port ?? 0);
    } catch (err) {
      upstream.close();
      throw err;
    }
    return double;
  }

  get port(): number {
    const a = this.server.address();
    return typeof a === 'object' && a ? a.port : 0;
  }

  /** `127.0.0.1:PORT`, for `server: { type: 'remote', address }`. */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Called once when QEMU's gdbstub goes away (QEMU ended, or was killed): the board is gone. */
  onGone(listener: (reason: string) => void): void {
    this.goneListeners.push(listener);
  }

  stats(): BoardStats {
    return {
      packets: this.counts.packets,
      byKind: { ...this.counts.byKind },
      interrupts: this.counts.interrupts,
      refused: { ...this.counts.refused },
      comparators: this.comparators.use(),
      flash: this.flash.counts(),
      resets: this.counts.resets,
      ...(this.counts.lastFlashError ? { lastFlashError: this.counts.lastFlashError } : {}),
    };
  }

  /** Starts the counts afresh (erase counts per sector, the wear, are kept: `flash.eraseCounts()`). */
  resetStats(): void {
    this.counts = freshCounts();
    this.flash.resetCounts();
    this.comparators.resetPeaks();
  }

  /**
   * The board as a factory programmer leaves it: `segments` (an ELF's PT_LOAD contents at their load
   * addresses) erased and programmed into flash, or written to RAM, then a halting reset. Counts
   * nothing as GDB traffic; the erases are wear like any other.
   */
  async program(segments: ReadonlyArray<{ address: number; data: Uint8Array }>): Promise<void> {
    for (const s of segments) {
      if (s.data.length === 0) continue;
      if (!this.flash.overlaps(s.address, s.data.length)) {
        await this.writeTarget(s.address, Buffer.from(s.data));
        continue;
      }
      if (!this.flash.contains(s.address, s.data.length))
        throw new Error(`a segment at 0x${s.address.toString(16)} straddles the end of the flash`);
      for (const sector of this.flash.sectorsIn(s.address, s.data.length)) {
        // A sector two segments share is erased once, before the first.
        if (this.flash.read(sector.start, sector.size).every((b) => b === 0xff)) continue;
        this.flash.erase(sector.start, sector.size);
      }
    }
    for (const s of segments) {
      if (s.data.length === 0 || !this.flash.overlaps(s.address, s.data.length)) continue;
      const r = this.flash.program(s.address, s.data);
      if (!r.ok) throw new Error(`programming failed: ${r.reason}`);
    }
    await this.mirror(this.flash.start, this.flash.size);
    await this.resetHalt();
  }

  /** QEMU's own memory, past the flash model: what the core fetches. */
  async readTarget(address: number, length: number): Promise<Buffer> {
    const parts: Buffer[] = [];
    for (let at = address; at < address + length; at += QEMU_READ_CHUNK) {
      const n = Math.min(QEMU_READ_CHUNK, address + length - at);
      const reply = (await this.upstream.request(`m${at.toString(16)},${n.toString(16)}`)).toString('latin1');
      if (reply.startsWith('E')) throw new Error(`QEMU refused to read 0x${at.toString(16)}: ${reply}`);
      parts.push(fromHex(reply));
    }
    return Buffer.concat(parts);
  }

  async close(): Promise<void> {
    this.gdb?.destroy();
    this.upstream.close();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private listen(port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
  }

  private log(line: string): void {
    this.options.log?.(line);
  }

  private accept(socket: Socket): void {
    socket.setNoDelay(true);
    const current = this.gdb;
    if (!current) return this.serve(socket);
    // A client that probes the port and connects again at once (the adapter's readiness check)
    // may be accepted before the end of its first connection is read: give that end a moment.
    socket.pause();
    const timer = setTimeout(() => {
      current.off('close', retry);
      // OpenOCD's default gdb-max-connections is 1.
      this.log('-- a second GDB connection refused: one is already open');
      socket.destroy();
    }, 500);
    const retry = (): void => {
      clearTimeout(timer);
      socket.resume();
      this.accept(socket);
    };
    current.once('close', retry);
  }

  private serve(socket: Socket): void {
    this.gdb = socket;
    const decoder = new RspDecoder();
    let noAck = false;
    let lastSent: Buffer | undefined;
    let queue: Promise<void> = (this.lifecycle = this.lifecycle.then(() => this.attach()));
    const send = (payload: Buffer | string): void => {
      lastSent = framePacket(escapeBinary(typeof payload === 'string' ? Buffer.from(payload, 'latin1') : payload));
      this.log(`<- ${lastSent.toString('latin1').slice(0, 160)}`);
      if (!socket.destroyed) socket.write(lastSent);
    };
    socket.on('data', (chunk: Buffer) => {
      for (const event of decoder.push(chunk)) {
        if (event.type === 'nack' && lastSent && !socket.destroyed) socket.write(lastSent);
        else if (event.type === 'bad-checksum' && !noAck) socket.write('-');
        else if (event.type === 'interrupt') this.interrupt();
        else if (event.type === 'packet') {
          const text = event.payload.toString('latin1');
          if (!noAck) socket.write('+');
          if (isResume(text)) this.resumeQueued = true;
          queue = queue
            .then(() => this.handle(text, event.payload, send))
            .then((close) => {
              if (text === 'QStartNoAckMode') noAck = true;
              if (close) socket.end();
            })
            .catch((err: unknown) => {
              this.log(`!! ${err instanceof Error ? err.message : String(err)}`);
              socket.destroy();
            });
        }
      }
    });
    const closed = (): void => {
      if (this.gdb !== socket) return;
      this.gdb = undefined;
      this.lifecycle = this.lifecycle
        .then(() => this.detached())
        .catch((err: unknown) => this.log(`!! ${String(err)}`));
    };
    socket.on('close', closed);
    socket.on('error', closed);
  }

  /** OpenOCD's default `gdb-attach` event (`halt 1000`): a core left running is halted for the new GDB. */
  private async attach(): Promise<void> {
    if (!this.upstream.waiting) return;
    this.upstream.interrupt();
    await this.upstream.idle();
  }

  /**
   * GDB went away (OpenOCD's gdb_connection_closed): its breakpoints and watchpoints are removed,
   * and a core it left running goes on running.
   */
  private async detached(): Promise<void> {
    const held = this.comparators.held();
    if (held.length === 0 || this.upstream.closed) return;
    const running = this.upstream.waiting;
    if (running) {
      // The resume of the GDB that left gets its stop (and sends it nowhere).
      this.upstream.interrupt();
      await this.upstream.idle();
    }
    for (const p of held) await this.upstream.request(`z${p.type},${p.address.toString(16)},${p.kind.toString(16)}`);
    this.comparators.clear();
    if (running) void this.upstream.request('c').catch(() => undefined);
  }

  private interrupt(): void {
    this.counts.interrupts++;
    if (this.upstream.waiting) this.upstream.interrupt();
    // The resume is still waiting its turn (its delay): stop it as soon as it is sent.
    else if (this.resumeQueued) this.interruptQueued = true;
  }

  /** Handles one packet; resolves true when the connection is to be closed after the reply. */
  private async handle(text: string, raw: Buffer, send: (payload: Buffer | string) => void): Promise<boolean> {
    const kind = packetKind(text);
    this.counts.packets++;
    this.counts.byKind[kind] = (this.counts.byKind[kind] ?? 0) + 1;
    this.log(`-> ${text.slice(0, 160)}`);
    if (this.packetDelayMs > 0) await sleep(this.packetDelayMs);
    const output = (packet: Buffer): void => send(packet);
    switch (kind) {
      case 'qSupported':
        send(OPENOCD_FEATURES);
        return false;
      case 'QStartNoAckMode':
        send('OK');
        return false;
      case 'vMustReplyEmpty':
        send('');
        return false;
      case 'qXfer:memory-map:read':
        send(this.memoryMap(text));
        return false;
      case 'vFlashErase':
        send(await this.vflash.erase(text));
        return false;
      case 'vFlashWrite':
        send(this.vflash.write(text, raw));
        return false;
      case 'vFlashDone':
        send(await this.vflash.done());
        return false;
      case 'm':
        send(await this.readMemory(text));
        return false;
      case 'M':
      case 'X':
        send(await this.writeMemory(text, raw));
        return false;
      case 'qRcmd':
        send(await boardMonitor(this, fromHex(text.slice('qRcmd,'.length)).toString('latin1'), output));
        return false;
      case 'D':
        // OpenOCD's gdb_detach only answers: the core stays as it is (QEMU's own stub would resume it).
        send('OK');
        return true;
      case 'k':
        return true;
      case 'vKill':
        send('OK');
        return true;
      default:
        break;
    }
    if (kind[0] === 'Z' || kind[0] === 'z') {
      send(await this.breakpoint(text));
      return false;
    }
    if (isResume(text)) {
      send(await this.resume(text));
      return false;
    }
    send(await this.upstream.request(raw, output));
    return false;
  }

  private async resume(text: string): Promise<Buffer> {
    const reply = this.upstream.request(text);
    this.resumeQueued = false;
    if (this.interruptQueued) {
      this.interruptQueued = false;
      this.upstream.interrupt();
    }
    return await reply;
  }

  private memoryMap(text: string): string {
    const m = /^qXfer:memory-map:read::([0-9a-fA-F]+),([0-9a-fA-F]+)$/.exec(text);
    if (!m) return 'E00';
    const all = Buffer.from(memoryMapXml(this.layout.sectors), 'latin1');
    const offset = parseInt(m[1]!, 16);
    const length = parseInt(m[2]!, 16);
    const chunk = all.subarray(offset, offset + length);
    return `${offset + length < all.length ? 'm' : 'l'}${chunk.toString('latin1')}`;
  }

  private async readMemory(text: string): Promise<string> {
    const a = parseAddressLength(text);
    if (!a) return 'E01';
    const end = a.address + a.length;
    const flashEnd = this.flash.start + this.flash.size;
    let hex = '';
    for (let at = a.address; at < end;) {
      if (this.flash.contains(at, 1)) {
        const n = Math.min(end, flashEnd) - at;
        hex += toHex(this.flash.read(at, n));
        at += n;
        continue;
      }
      const boundary = at < this.flash.start && end > this.flash.start ? this.flash.start : end;
      const n = Math.min(boundary - at, QEMU_READ_CHUNK);
      const reply = (await this.upstream.request(`m${at.toString(16)},${n.toString(16)}`)).toString('latin1');
      // A read that fails part-way answers what it read (GDB then asks for the rest).
      if (reply.startsWith('E')) return hex.length > 0 ? hex : reply;
      hex += reply;
      at += n;
    }
    return hex;
  }

  private async writeMemory(text: string, raw: Buffer): Promise<string> {
    const a = parseAddressLength(text);
    if (!a) return 'E01';
    const data = text[0] === 'X' ? binaryData(raw) : fromHex(text.slice(text.indexOf(':') + 1));
    if (data.length !== a.length) return 'E01';
    if (this.flash.overlaps(a.address, a.length)) {
      this.refuse('memoryWriteInFlash');
      this.log(`   memory write into flash at 0x${a.address.toString(16)} refused`);
      return E_FAULT;
    }
    return (await this.writeTarget(a.address, data)) ?? 'OK';
  }

  /** Writes QEMU's memory in chunks its gdbstub takes; resolves with QEMU's error, if any. */
  private async writeTarget(address: number, data: Buffer): Promise<string | undefined> {
    for (let at = 0; at < data.length; at += QEMU_WRITE_CHUNK) {
      const part = data.subarray(at, at + QEMU_WRITE_CHUNK);
      const reply = (
        await this.upstream.request(`M${(address + at).toString(16)},${part.length.toString(16)}:${toHex(part)}`)
      ).toString('latin1');
      if (reply !== 'OK') return reply;
    }
    return undefined;
  }

  /** Copies flash contents into QEMU's memory, where QEMU has memory under the flash. */
  private async mirror(address: number, length: number): Promise<void> {
    if (!this.layout.flashBackedByQemu || length === 0) return;
    const failed = await this.writeTarget(address, this.flash.read(address, length));
    if (failed) throw new Error(`QEMU refused the flash contents at 0x${address.toString(16)}: ${failed}`);
  }

  private async breakpoint(text: string): Promise<string | Buffer> {
    const p = parseBreakpoint(text);
    if (!p) return 'E01';
    if (p.type === 0) {
      if (p.insert && this.flash.overlaps(p.address, Math.max(p.kind, 1))) {
        // A software breakpoint writes an instruction: in flash the write fails, and without a flash
        // breakpoint feature OpenOCD answers the error.
        this.refuse('softwareBreakpointInFlash');
        return E_FAULT;
      }
      return await this.upstream.request(text);
    }
    if (p.insert) {
      const refusal = this.comparators.check(p);
      if (refusal) {
        this.refuse(refusal);
        this.log(`   ${text} refused: ${refusal} (${JSON.stringify(this.comparators.use())})`);
        return E_FAULT;
      }
    }
    const reply = await this.upstream.request(text);
    if (reply.toString('latin1') === 'OK') this.comparators.apply(p);
    return reply;
  }

  private async modelledWait(ms: number): Promise<void> {
    if (ms > 0 && this.flashTimeScale > 0) await sleep(ms * this.flashTimeScale);
  }

  /** A halting reset through QEMU's monitor: QEMU keeps a VM stopped by its gdbstub stopped across it. */
  async resetHalt(): Promise<void> {
    const reply = (await this.upstream.request(`qRcmd,${toHex(Buffer.from('system_reset'))}`, () => {})).toString(
      'latin1',
    );
    if (reply !== 'OK') throw new Error(`QEMU's system_reset answered ${reply}`);
    this.counts.resets++;
  }

  /** Forwards a packet to QEMU unchanged (the monitor's pass-through). */
  forward(text: string, output?: (packet: Buffer) => void): Promise<Buffer> {
    return this.upstream.request(text, output);
  }

  private refuse(why: BoardRefusal): void {
    this.counts.refused[why] = (this.counts.refused[why] ?? 0) + 1;
  }
}

function freshCounts(): {
  packets: number;
  byKind: Record<string, number>;
  interrupts: number;
  refused: Partial<Record<BoardRefusal, number>>;
  resets: number;
  lastFlashError?: string;
} {
  return { packets: 0, byKind: {}, interrupts: 0, refused: {}, resets: 0 };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
