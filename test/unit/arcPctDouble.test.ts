import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect, Socket } from 'node:net';
import { ArcCpuModel } from '../doubles/arcCpuModel';
import {
  ArcPctModel,
  DEFAULT_CONDITIONS,
  IllegalAuxRegister,
  PCT_AUX,
  shuffledConditions,
} from '../doubles/arcPctModel';
import { ArcGdbStub } from '../doubles/arcGdbStub';
import { decodePayload, escapeBinary, framePacket, RspDecoder } from '../doubles/rspFraming';
import { arcTargetXml } from '../doubles/arcTargetXml';

/** The test double itself: its framing, its register model and its protocol, checked on their own. */

describe('RSP framing (test double)', () => {
  it('frames with the mod-256 checksum the GDB manual gives', () => {
    assert.equal(framePacket('OK').toString(), '$OK#9a');
    assert.equal(framePacket('').toString(), '$#00');
  });

  it('decodes packets split across chunks, acks, interrupts, and bad checksums', () => {
    const d = new RspDecoder();
    assert.deepEqual(d.push(Buffer.from('+$qSupp')), [{ type: 'ack' }]);
    const events = d.push(Buffer.from('orted#37\x03-$g#00'));
    assert.equal(events.length, 4);
    assert.deepEqual(events[0], { type: 'packet', payload: Buffer.from('qSupported') });
    assert.deepEqual(events[1], { type: 'interrupt' });
    assert.deepEqual(events[2], { type: 'nack' });
    assert.deepEqual(events[3], { type: 'bad-checksum', raw: 'g' });
  });

  it('undoes run-length encoding and escapes on receive', () => {
    assert.equal(decodePayload(Buffer.from('0* ')).toString(), '0000'); // ' ' = 32 → 3 more
    assert.deepEqual([...decodePayload(Buffer.from([0x7d, 0x03, 0x7d, 0x5d]))], [0x23, 0x7d]);
    assert.deepEqual([...escapeBinary(Buffer.from('#$}*a'))], [0x7d, 0x03, 0x7d, 0x04, 0x7d, 0x5d, 0x7d, 0x0a, 0x61]);
  });
});

describe('ARC PCT register model (test double)', () => {
  it('encodes PCT_BUILD and CC_BUILD as the Linux driver decodes them', () => {
    const m = new ArcPctModel({ counters: 8, width: 48, interrupts: true, version: 3 });
    const b = m.read(PCT_AUX.PCT_BUILD);
    assert.equal(b & 0xff, 3);
    assert.equal(32 + (((b >>> 8) & 3) << 4), 48);
    assert.equal((b >>> 10) & 1, 1);
    assert.equal((b >>> 16) & 0xff, 8);
    assert.equal(m.read(PCT_AUX.CC_BUILD) >>> 16, DEFAULT_CONDITIONS.length);
  });

  it('packs CC_NAME little-endian, NUL-padded', () => {
    const m = new ArcPctModel();
    m.write(PCT_AUX.CC_INDEX, DEFAULT_CONDITIONS.indexOf('crun'));
    assert.equal(m.read(PCT_AUX.CC_NAME0), 0x6e757263);
    assert.equal(m.read(PCT_AUX.CC_NAME1), 0);
  });

  it('counts only when globally enabled and a non-zero condition is set; snapshot copies the selected counter', () => {
    const m = new ArcPctModel({ counters: 2, width: 32 });
    const crun = DEFAULT_CONDITIONS.indexOf('crun');
    m.write(PCT_AUX.PCT_INDEX, 1);
    m.write(PCT_AUX.PCT_CONFIG, crun);
    m.count({ crun: 5 });
    assert.equal(m.peekCount(1), 0n, 'PCT_CONTROL bit 0 is off');
    m.write(PCT_AUX.PCT_CONTROL, 1);
    m.count({ crun: 5, iall: 3 });
    assert.equal(m.peekCount(1), 5n);
    assert.equal(m.peekCount(0), 0n, 'condition 0 never counts');
    m.write(PCT_AUX.PCT_CONTROL, 1 | (1 << 17));
    assert.equal(m.read(PCT_AUX.PCT_SNAPL), 5);
    assert.equal(m.read(PCT_AUX.PCT_CONTROL), 1, 'the snapshot bit reads back 0');
    m.count({ crun: 1 });
    assert.equal(m.read(PCT_AUX.PCT_SNAPL), 5, 'the snapshot holds still');
    assert.equal(m.read(PCT_AUX.PCT_COUNTL), 6);
    m.write(PCT_AUX.PCT_CONTROL, 1 | (1 << 16));
    assert.equal(m.peekCount(1), 0n, 'bit 16 clears all counts');
  });

  it('honours the user/kernel qualifiers (bits 18/19) with the core in kernel mode', () => {
    const m = new ArcPctModel({ counters: 3 });
    const iall = DEFAULT_CONDITIONS.indexOf('iall');
    m.write(PCT_AUX.PCT_CONTROL, 1);
    [iall | (1 << 18), iall | (1 << 19), iall].forEach((cfg, n) => {
      m.write(PCT_AUX.PCT_INDEX, n);
      m.write(PCT_AUX.PCT_CONFIG, cfg);
    });
    m.count({ iall: 4 });
    assert.deepEqual(
      [0, 1, 2].map((n) => m.peekCount(n)),
      [0n, 4n, 4n],
    );
  });

  it('keeps COUNTH to the build width: 32-bit builds read 0 there', () => {
    const m32 = new ArcPctModel({ width: 32 });
    m32.write(PCT_AUX.PCT_COUNTH, 0xffff);
    assert.equal(m32.read(PCT_AUX.PCT_COUNTH), 0);
    const m48 = new ArcPctModel({ width: 48 });
    m48.write(PCT_AUX.PCT_COUNTH, 0xffffffff);
    assert.equal(m48.read(PCT_AUX.PCT_COUNTH), 0xffff);
  });

  it('without PCT: the build registers read 0 and the rest are illegal', () => {
    const m = new ArcPctModel({ present: false });
    assert.equal(m.read(PCT_AUX.PCT_BUILD), 0);
    assert.equal(m.read(PCT_AUX.CC_BUILD), 0);
    assert.throws(() => m.read(PCT_AUX.PCT_CONTROL), IllegalAuxRegister);
    assert.throws(() => m.write(PCT_AUX.PCT_INDEX, 0), IllegalAuxRegister);
  });

  it('shuffles indices 1.. and keeps "never" at 0', () => {
    const s = shuffledConditions(42);
    assert.equal(s[0], 'never');
    assert.deepEqual([...s].sort(), [...DEFAULT_CONDITIONS].sort());
    assert.notDeepEqual(s, DEFAULT_CONDITIONS);
  });

  it('the CPU model runs to a breakpoint or for its budget', () => {
    const cpu = new ArcCpuModel(new ArcPctModel(), { maxInstructionsPerResume: 100 });
    cpu.breakpoints.add(0x1020);
    const r1 = cpu.resume('continue');
    assert.deepEqual([r1.reason, r1.instructions, cpu.pc], ['breakpoint', 8, 0x1020]);
    cpu.breakpoints.clear();
    const r2 = cpu.resume('continue');
    assert.deepEqual([r2.reason, r2.instructions], ['budget', 100]);
    // From slot 8 the back branch is the 8th instruction, then every 16th: 8, 24, 40, 56, 72, 88.
    assert.equal(r2.raised.get('ijmp'), 6n);
    assert.equal(r2.raised.get('crun'), 106n);
  });
});

/** A raw RSP client, to check the double's replies byte for byte. */
class RawClient {
  private readonly decoder = new RspDecoder();
  private readonly packets: string[] = [];
  private readonly waiters: Array<() => void> = [];
  readonly raw: string[] = [];

  constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.raw.push(chunk.toString('latin1'));
      for (const e of this.decoder.push(chunk))
        if (e.type === 'packet') this.packets.push(e.payload.toString('latin1'));
      for (const w of this.waiters.splice(0)) w();
    });
  }

  static async open(port: number): Promise<RawClient> {
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    return new RawClient(socket);
  }

  async next(): Promise<string> {
    while (this.packets.length === 0) await new Promise<void>((r) => this.waiters.push(r));
    return this.packets.shift()!;
  }

  async ask(payload: string): Promise<string> {
    this.socket.write(framePacket(payload));
    return this.next();
  }

  close(): void {
    this.socket.destroy();
  }
}

describe('ARC gdbserver double over TCP', () => {
  it('answers the connection handshake GDB sends', async () => {
    const stub = new ArcGdbStub();
    const client = await RawClient.open(await stub.listen());
    try {
      assert.match(
        await client.ask('qSupported:multiprocess+;swbreak+;xmlRegisters=arc'),
        /PacketSize=[0-9a-f]+;qXfer:features:read\+;QStartNoAckMode\+/,
      );
      assert.ok(client.raw.join('').startsWith('+'), 'acknowledged before no-ack mode');
      assert.equal(await client.ask('QStartNoAckMode'), 'OK');
      const xml = await client.ask('qXfer:features:read:target.xml:0,3fff');
      assert.equal(xml[0], 'l');
      assert.equal(xml.slice(1), arcTargetXml(true));
      assert.equal(await client.ask('?'), 'T05thread:1;');
      assert.equal(await client.ask('qTStatus'), '');
      assert.equal(await client.ask('qAttached'), '1');
      assert.equal(await client.ask('qC'), 'QC1');
      const g = await client.ask('g');
      assert.equal(g.length, 39 * 8);
      assert.equal(g.slice(34 * 8, 35 * 8), '00100000', 'pc = 0x1000, little-endian');
      assert.equal(await client.ask('p27'), '02000200', 'register 39 = pct_build: version 2, 2 counters'); // 0x27 = 39
      assert.equal(await client.ask('P30=01000000'), 'OK'); // 0x30 = 48 = pct_config (PCT_INDEX is 0)
      assert.equal(stub.pct.peekConfig(0), 1);
      assert.equal(await client.ask('p80'), 'E45', 'no such register');
    } finally {
      client.close();
      await stub.close();
    }
  });

  it('serves memory, breakpoints, continue and monitor commands', async () => {
    const stub = new ArcGdbStub({ monitorNumberFormat: 'hex' });
    const client = await RawClient.open(await stub.listen());
    try {
      assert.equal(await client.ask('M2000,4:deadbeef'), 'OK');
      assert.equal(await client.ask('m1ffe,8'), '0000deadbeef0000');
      assert.equal(await client.ask('Z0,1010,4'), 'OK');
      assert.equal(await client.ask('vCont?'), 'vCont;c;C;s;S');
      assert.equal(await client.ask('vCont;c:1'), 'T05thread:1;');
      assert.equal(stub.cpu.pc, 0x1010);
      assert.equal(await client.ask('s'), 'T05thread:1;');
      assert.equal(stub.cpu.pc, 0x1014);
      const hex = (s: string) => Buffer.from(s).toString('hex');
      assert.equal(await client.ask(`qRcmd,${hex('arc jtag set-aux-reg 0x255 1')}`), 'OK');
      assert.equal(stub.pct.enabled, true);
      const out = await client.ask(`qRcmd,${hex('arc jtag get-aux-reg 0xf5')}`);
      assert.equal(Buffer.from(out.slice(1), 'hex').toString(), '0x20002\n');
      assert.equal(await client.next(), 'OK');
      assert.equal(await client.ask('qSomethingUnknown'), '');
    } finally {
      client.close();
      await stub.close();
    }
  });
});
