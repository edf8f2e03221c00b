import { createServer, Server, Socket } from 'node:net';
import { ArcCpuModel, ArcProgram, REG } from './arcCpuModel';
import { ArcPctBuild, ArcPctModel, IllegalAuxRegister, PCT_REGISTER_NAMES } from './arcPctModel';
import { arcTargetXml, FIRST_PCT_REGNUM } from './arcTargetXml';
import { escapeBinary, framePacket, fromHex, RspDecoder, toHex, u32FromLeHex, u32LeHex } from './rspFraming';

/**
 * TEST DOUBLE — a gdbserver for an imaginary ARCv2 core with a PCT block, speaking the real GDB
 * Remote Serial Protocol over TCP so that a real `arc-elf32-gdb` can drive it. It stands in for
 * OpenOCD/nSIM in tests; it is not a product component and not a simulator of real silicon.
 *
 * Packets (GDB manual, "Remote Protocol" → "Packets", "General Query Packets", "Stop Reply
 * Packets", "Target Description Format"): qSupported, QStartNoAckMode, qXfer:features:read,
 * ?, g/G, p/P, m/M/X, Z0/z0, c/s/C/S, vCont?/vCont, qRcmd, D, k, vKill, qAttached, qC,
 * qfThreadInfo/qsThreadInfo, H, T, qSymbol; anything else gets the empty reply ("unsupported"),
 * including qTStatus, as a bare-metal stub without tracepoints does.
 *
 * Monitor commands mirror OpenOCD's ARC target (src/target/arc_cmd.c):
 *   `arc jtag get-aux-reg <regnum>`  → prints the value (OpenOCD ≥ 0.13: "0x%x"; 0.12's Jim
 *                                      handler returns it as a decimal result: `monitorNumberFormat`)
 *   `arc jtag set-aux-reg <regnum> <value>` → prints nothing.
 * Like OpenOCD's qRcmd handler, a failing command prints its error and the packet still ends OK.
 */

export interface ArcGdbStubOptions {
  build?: Partial<ArcPctBuild>;
  /** Put the PCT registers into target.xml (feature org.gnu.gdb.arc.aux-other). Default true. */
  exposePctRegisters?: boolean;
  monitorNumberFormat?: 'hex' | 'decimal';
  program?: ArcProgram;
  maxInstructionsPerResume?: number;
  /** Receives one line per packet exchanged (for debugging a failing test). */
  log?: (line: string) => void;
}

const SIGINT = 0x02;
const SIGTRAP = 0x05;
const PACKET_SIZE = 0x4000;

export class ArcGdbStub {
  readonly pct: ArcPctModel;
  readonly cpu: ArcCpuModel;
  readonly exposePctRegisters: boolean;
  readonly monitorNumberFormat: 'hex' | 'decimal';
  /** Every packet payload received, in order (tests assert on the traffic). */
  readonly received: string[] = [];
  private readonly xml: string;
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private lastSignal = SIGTRAP;

  constructor(private readonly options: ArcGdbStubOptions = {}) {
    this.pct = new ArcPctModel(options.build);
    this.cpu = new ArcCpuModel(this.pct, {
      ...(options.program ? { program: options.program } : {}),
      ...(options.maxInstructionsPerResume !== undefined
        ? { maxInstructionsPerResume: options.maxInstructionsPerResume }
        : {}),
    });
    this.exposePctRegisters = options.exposePctRegisters ?? true;
    this.monitorNumberFormat = options.monitorNumberFormat ?? 'hex';
    this.xml = arcTargetXml(this.exposePctRegisters);
    this.server = createServer((socket) => this.accept(socket));
  }

  /** Listens on 127.0.0.1; port 0 picks a free one. Resolves with the port. */
  listen(port = 0, host = '127.0.0.1'): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        const address = this.server.address();
        resolve(typeof address === 'object' && address ? address.port : port);
      });
    });
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  get connectionCount(): number {
    return this.sockets.size;
  }

  private log(line: string): void {
    this.options.log?.(line);
  }

  private accept(socket: Socket): void {
    this.sockets.add(socket);
    socket.setNoDelay(true);
    const decoder = new RspDecoder();
    let noAck = false;
    let lastSent: Buffer | undefined;
    const send = (payload: Buffer | string): void => {
      const framed = framePacket(payload);
      lastSent = framed;
      this.log(`<- ${framed.toString('latin1').slice(0, 200)}`);
      if (!socket.destroyed) socket.write(framed);
    };
    socket.on('data', (chunk: Buffer) => {
      for (const event of decoder.push(chunk)) {
        switch (event.type) {
          case 'ack':
            break;
          case 'nack':
            if (lastSent && !socket.destroyed) socket.write(lastSent);
            break;
          case 'interrupt':
            // Resumes complete synchronously, so the core is already halted: nothing to stop.
            break;
          case 'bad-checksum':
            this.log(`-> bad checksum: ${event.raw.slice(0, 80)}`);
            if (!noAck) socket.write('-');
            break;
          case 'packet': {
            const text = event.payload.toString('latin1');
            this.received.push(text);
            this.log(`-> ${text.slice(0, 200)}`);
            if (!noAck) socket.write('+');
            const reply = this.handle(text, event.payload, (out) =>
              send(`O${Buffer.from(out, 'latin1').toString('hex')}`),
            );
            if (reply.kind === 'reply') send(reply.payload);
            if (text === 'QStartNoAckMode') noAck = true;
            if (reply.kind === 'close' || reply.closeAfter) socket.end();
            break;
          }
        }
      }
    });
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => this.sockets.delete(socket));
  }

  private handle(
    text: string,
    raw: Buffer,
    output: (text: string) => void,
  ): { kind: 'reply'; payload: Buffer | string; closeAfter?: boolean } | { kind: 'close' } {
    const reply = (payload: Buffer | string, closeAfter = false) => ({ kind: 'reply' as const, payload, closeAfter });
    try {
      if (text.startsWith('qSupported'))
        return reply(`PacketSize=${PACKET_SIZE.toString(16)};qXfer:features:read+;QStartNoAckMode+;vContSupported+`);
      if (text === 'QStartNoAckMode') return reply('OK');
      if (text.startsWith('qXfer:features:read:'))
        return reply(this.readFeatures(text.slice('qXfer:features:read:'.length)));
      if (text === '?') return reply(this.stopReply(this.lastSignal));
      if (text === 'qAttached' || text.startsWith('qAttached:')) return reply('1');
      if (text === 'qC') return reply('QC1');
      if (text === 'qfThreadInfo') return reply('m1');
      if (text === 'qsThreadInfo') return reply('l');
      if (text.startsWith('qSymbol')) return reply('OK');
      if (text.startsWith('H') || text.startsWith('T')) return reply('OK');
      if (text === 'g') return reply(this.readAllRegisters());
      if (text.startsWith('G')) return reply(this.writeAllRegisters(text.slice(1)));
      if (text.startsWith('p')) return reply(this.readOneRegister(parseInt(text.slice(1), 16)));
      if (text.startsWith('P')) {
        const [n, v] = text.slice(1).split('=');
        return reply(this.writeOneRegister(parseInt(n!, 16), v ?? ''));
      }
      if (text.startsWith('m')) {
        const [a, l] = text.slice(1).split(',');
        return reply(toHex(this.cpu.readMemory(parseInt(a!, 16), Math.min(parseInt(l!, 16), PACKET_SIZE / 2))));
      }
      if (text.startsWith('M')) {
        const [head, hex] = text.slice(1).split(':');
        const [a] = head!.split(',');
        this.cpu.writeMemory(parseInt(a!, 16), fromHex(hex ?? ''));
        return reply('OK');
      }
      if (text.startsWith('X')) {
        const colon = raw.indexOf(0x3a);
        const [a, l] = raw.subarray(1, colon).toString('latin1').split(',');
        const data = raw.subarray(colon + 1);
        if (data.length !== parseInt(l!, 16)) return reply('E01');
        this.cpu.writeMemory(parseInt(a!, 16), data);
        return reply('OK');
      }
      if (text.startsWith('Z0,') || text.startsWith('z0,')) {
        const address = parseInt(text.split(',')[1]!, 16);
        if (text[0] === 'Z') this.cpu.breakpoints.add(address);
        else this.cpu.breakpoints.delete(address);
        return reply('OK');
      }
      if (text === 'vCont?') return reply('vCont;c;C;s;S');
      if (text.startsWith('vCont;')) {
        const action = text.slice('vCont;'.length).split(';')[0]!.split(':')[0]!;
        return reply(this.resume(action[0] === 's' || action[0] === 'S' ? 'step' : 'continue'));
      }
      if (/^[cCsS]/.test(text) && !text.startsWith('qC')) return reply(this.resume(text, true));
      if (text.startsWith('qRcmd,')) {
        const out = this.monitor(fromHex(text.slice('qRcmd,'.length)).toString('latin1'));
        if (out.length > 0) output(out);
        return reply('OK');
      }
      if (text === 'D' || text.startsWith('D;')) return reply('OK', true);
      if (text === 'k') return { kind: 'close' };
      if (text.startsWith('vKill')) return reply('OK', true);
      return reply(''); // unsupported (qTStatus, qOffsets, vMustReplyEmpty, Z1…, …)
    } catch (err) {
      this.log(`!! ${(err as Error).message}`);
      return reply('E01');
    }
  }

  private readFeatures(args: string): string | Buffer {
    const [annex, range] = args.split(':');
    if (annex !== 'target.xml' || !range) return 'E00';
    const [off, len] = range.split(',').map((s) => parseInt(s, 16));
    const all = Buffer.from(this.xml, 'latin1');
    const chunk = all.subarray(off!, off! + len!);
    const more = off! + len! < all.length;
    return Buffer.concat([Buffer.from(more ? 'm' : 'l'), escapeBinary(chunk)]);
  }

  private stopReply(signal: number): string {
    return `T${signal.toString(16).padStart(2, '0')}thread:1;`;
  }

  /** `c`, `c ADDR`, `s`, `C SIG;ADDR` …, or the single letter of a vCont action. */
  private resume(packetOrMode: string, isPacket = false): string {
    let mode: 'continue' | 'step';
    if (isPacket) {
      const letter = packetOrMode[0]!;
      mode = letter === 's' || letter === 'S' ? 'step' : 'continue';
      const rest = packetOrMode.slice(1);
      const addr = letter === 'c' || letter === 's' ? rest : rest.split(';')[1];
      if (addr) this.cpu.pc = parseInt(addr, 16);
    } else {
      mode = packetOrMode as 'continue' | 'step';
    }
    const result = this.cpu.resume(mode);
    this.lastSignal = result.reason === 'budget' ? SIGINT : SIGTRAP;
    this.log(
      `   resume ${mode}: ${result.instructions} instructions, ` +
        `stop (${result.reason}) at 0x${this.cpu.pc.toString(16)}`,
    );
    return this.stopReply(this.lastSignal);
  }

  private readAllRegisters(): string {
    let hex = '';
    for (let n = 0; n < REG.G_PACKET_COUNT; n++) hex += u32LeHex(this.cpu.readRegister(n));
    return hex;
  }

  private writeAllRegisters(hex: string): string {
    for (let n = 0; n < REG.G_PACKET_COUNT && (n + 1) * 8 <= hex.length; n++) {
      if (n === REG.PCL) continue;
      this.cpu.writeRegister(n, u32FromLeHex(hex.slice(n * 8, n * 8 + 8)));
    }
    return 'OK';
  }

  private pctAuxOf(regnum: number): number | undefined {
    if (!this.exposePctRegisters) return undefined;
    return PCT_REGISTER_NAMES[regnum - FIRST_PCT_REGNUM]?.[1];
  }

  private readOneRegister(n: number): string {
    if (n < REG.G_PACKET_COUNT) return u32LeHex(this.cpu.readRegister(n));
    const aux = this.pctAuxOf(n);
    if (aux === undefined) return 'E45';
    try {
      return u32LeHex(this.cpu.readAux(aux));
    } catch (err) {
      if (err instanceof IllegalAuxRegister) return 'E14';
      throw err;
    }
  }

  private writeOneRegister(n: number, hex: string): string {
    const value = u32FromLeHex(hex);
    if (n < REG.G_PACKET_COUNT) {
      this.cpu.writeRegister(n, value);
      return 'OK';
    }
    const aux = this.pctAuxOf(n);
    if (aux === undefined) return 'E45';
    try {
      this.cpu.writeAux(aux, value);
      return 'OK';
    } catch (err) {
      if (err instanceof IllegalAuxRegister) return 'E14';
      throw err;
    }
  }

  /** Runs one monitor command; returns what it prints. */
  monitor(command: string): string {
    const words = command.trim().split(/\s+/);
    const number = (s: string | undefined): number | undefined => {
      if (s === undefined || !/^(0x[0-9a-f]+|\d+)$/i.test(s)) return undefined;
      const v = Number(s);
      return v >= 0 && v <= 0xffffffff ? v : undefined;
    };
    if (words[0] === 'arc' && words[1] === 'jtag' && (words[2] === 'get-aux-reg' || words[2] === 'set-aux-reg')) {
      const get = words[2] === 'get-aux-reg';
      const regnum = number(words[3]);
      const value = number(words[4]);
      if (regnum === undefined || words.length !== (get ? 4 : 5) || (!get && value === undefined)) {
        return `Error: usage: arc jtag ${words[2]} ${get ? '<regnum>' : '<regnum> <value>'}\n`;
      }
      try {
        if (get) {
          const v = this.cpu.readAux(regnum);
          return this.monitorNumberFormat === 'hex' ? `0x${v.toString(16)}\n` : `${v}\n`;
        }
        this.cpu.writeAux(regnum, value!);
        return '';
      } catch (err) {
        if (err instanceof IllegalAuxRegister) return `Error: ${err.message}\n`;
        throw err;
      }
    }
    return `invalid command name "${words[0] ?? ''}"\n`;
  }
}
