import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ComparatorBudget } from '../doubles/boardComparators';
import { FlashModel } from '../doubles/boardFlash';
import { memoryMapXml } from '../doubles/boardMemoryMap';
import { isResume, packetKind, parseBreakpoint } from '../doubles/boardPackets';
import { boardLayout, partProfile, PART_PROFILES } from '../doubles/boardProfiles';

/**
 * The board double's pure parts on their own (the double against real GDB and QEMU is
 * test/integration/boardDouble.test.ts): part layouts, the flash model's rules, the memory map,
 * the comparator budget and the packet names.
 */

const KiB = 1024;

describe('board double part profiles', () => {
  it('lays out the STM32F407 sectors of RM0090 at the QEMU code address, or at 0x0800 0000', () => {
    const atCode = boardLayout(PART_PROFILES.stm32f407);
    assert.equal(atCode.flashSize, 1024 * KiB);
    assert.deepEqual(
      atCode.sectors.map((s) => [s.start, s.size]),
      [
        [0x0, 16 * KiB],
        [0x4000, 16 * KiB],
        [0x8000, 16 * KiB],
        [0xc000, 16 * KiB],
        [0x10000, 64 * KiB],
        [0x20000, 128 * KiB],
        [0x40000, 128 * KiB],
        [0x60000, 128 * KiB],
        [0x80000, 128 * KiB],
        [0xa0000, 128 * KiB],
        [0xc0000, 128 * KiB],
        [0xe0000, 128 * KiB],
      ],
    );
    assert.equal(atCode.flashBackedByQemu, true);
    const own = boardLayout(PART_PROFILES.stm32f407, 'own');
    assert.equal(own.sectors[11]!.start, 0x080e_0000);
    assert.equal(own.flashBackedByQemu, false);
  });

  it('gives the nRF52840 256 pages of 4 KiB and the RV32 part 4 KiB sectors at 0x8000 0000', () => {
    const nrf = boardLayout(PART_PROFILES.nrf52840);
    assert.equal(nrf.sectors.length, 256);
    assert.ok(nrf.sectors.every((s, i) => s.size === 4 * KiB && s.start === i * 4 * KiB));
    const esp = boardLayout(PART_PROFILES.esp32c6);
    assert.equal(esp.flashStart, 0x8000_0000);
    assert.ok(esp.sectors.every((s) => s.size === 4 * KiB));
  });

  it('refuses a profile on the other QEMU target, and a RAM placement where the flash is at the code address', () => {
    assert.throws(() => partProfile('nrf52840', 'rv32'), /core of QEMU's cortex-m4, not rv32: choose esp32c6/);
    assert.throws(() => partProfile('stm32f103', 'cortex-m4'), /unknown part profile 'stm32f103'/);
    assert.throws(() => boardLayout(PART_PROFILES.nrf52840, 'own'), /needs a part whose flash lies elsewhere/);
  });
});

describe('board double flash model', () => {
  const fresh = (name: keyof typeof PART_PROFILES = 'stm32f407'): FlashModel =>
    new FlashModel(boardLayout(PART_PROFILES[name]));

  it('starts erased, erases whole sectors only, and counts each erase with its datasheet time', () => {
    const f = fresh();
    assert.ok(f.read(0, 16).every((b) => b === 0xff));
    assert.deepEqual(f.erase(0x100, 0x3f00), {
      ok: false,
      reason: 'address range 0x100 .. 0x3fff is not sector-aligned (sectors 0x0 .. 0x3fff)',
      address: 0x100,
    });
    assert.equal(f.erase(0x0, 0x6000).ok, false, 'ends inside sector 1');
    const r = f.erase(0x0, 0x4000 + 0x4000 + 0x8000 + 0x10000);
    assert.deepEqual(r, { ok: true, modelledMs: 4 * 250 + 550 });
    assert.deepEqual(f.counts().erases.slice(0, 6), [1, 1, 1, 1, 1, 0]);
    assert.deepEqual(f.eraseCounts().slice(0, 6), [1, 1, 1, 1, 1, 0]);
    assert.equal(f.erase(0xf_0000, 0x2_0000).ok, false, 'past the end of the flash');
    f.resetCounts();
    assert.deepEqual(f.counts().erases.slice(0, 2), [0, 0]);
    assert.deepEqual(f.eraseCounts().slice(0, 2), [1, 1], 'wear stays');
  });

  it('programs by clearing bits, refuses a 0 that must become 1, and pads to the program unit', () => {
    const f = fresh();
    assert.deepEqual(f.program(0x10, Buffer.from([0xf0, 0x0f, 0x55])), { ok: true, modelledMs: 0.016 });
    assert.deepEqual([...f.read(0x10, 4)], [0xf0, 0x0f, 0x55, 0xff], 'the pad byte stays erased');
    // Clearing more bits of what is there is what RM0090 §3.5.4 allows.
    assert.equal(f.program(0x10, Buffer.from([0x30])).ok, true);
    const refused = f.program(0x11, Buffer.from([0x1f]));
    assert.equal(refused.ok, false);
    assert.match(!refused.ok ? refused.reason : '', /0x11 holds 0x0f and cannot become 0x1f without an erase/);
    assert.deepEqual([...f.read(0x10, 2)], [0x30, 0x0f], 'nothing of the refused unit was written');
    assert.equal(f.program(0x13, Buffer.from([0x00])).ok, true, 'the pad byte is programmable: it was never asked for');
    assert.equal(f.counts().unitsProgrammed, 3);
    f.erase(0, 0x4000);
    assert.equal(f.program(0x11, Buffer.from([0x1f])).ok, true, 'after an erase it can');
  });

  it('stops a long program at the first unit it cannot write, keeping what came before', () => {
    const f = fresh();
    f.program(0x8, Buffer.from([0x00]));
    const r = f.program(0x0, Buffer.alloc(16, 0x11));
    assert.equal(r.ok, false);
    assert.deepEqual([...f.read(0, 12)], [...Buffer.alloc(8, 0x11), 0x00, 0xff, 0xff, 0xff]);
  });

  it('allows an nRF52840 word two writes between erases (nWRITE)', () => {
    const f = fresh('nrf52840');
    assert.equal(f.program(0x1000, Buffer.from([0xfe])).ok, true);
    assert.equal(f.program(0x1001, Buffer.from([0xfe])).ok, true);
    const third = f.program(0x1002, Buffer.from([0xfe]));
    assert.equal(third.ok, false);
    assert.match(!third.ok ? third.reason : '', /written 2 times since its sector was erased/);
    assert.equal(f.program(0x1004, Buffer.from([0xfe])).ok, true, 'the next word is untouched');
    f.erase(0x1000, 0x1000);
    assert.equal(f.program(0x1002, Buffer.from([0xfe])).ok, true);
  });

  it('models SPI NOR page programs for the RV32 part: 0.4 ms per 256-byte page', () => {
    const f = fresh('esp32c6');
    const r = f.program(0x8000_0000 + 0x80, Buffer.alloc(0x200, 0));
    assert.deepEqual(r, { ok: true, modelledMs: 1.2 });
    assert.equal(f.counts().modelledProgramMs, 1.2);
  });
});

describe('board double memory map', () => {
  it('gives one flash element per run of equal sectors with its block size, and RAM around it', () => {
    const xml = memoryMapXml(boardLayout(PART_PROFILES.stm32f407, 'own').sectors);
    const regions = [...xml.matchAll(/<memory type="(\w+)" start="(0x[0-9a-f]+)" length="(0x[0-9a-f]+)"/g)].map((m) => [
      m[1],
      Number(m[2]),
      Number(m[3]),
    ]);
    assert.deepEqual(regions, [
      ['ram', 0, 0x0800_0000],
      ['flash', 0x0800_0000, 0x10000],
      ['flash', 0x0801_0000, 0x10000],
      ['flash', 0x0802_0000, 0xe0000],
      ['ram', 0x0810_0000, 0x1_0000_0000 - 0x0810_0000],
    ]);
    assert.deepEqual(
      [...xml.matchAll(/<property name="blocksize">(0x[0-9a-f]+)<\/property>/g)].map((m) => Number(m[1])),
      [0x4000, 0x10000, 0x20000],
    );
    assert.match(
      xml,
      /^<\?xml version="1.0"\?>\n<!DOCTYPE memory-map PUBLIC "\+\/\/IDN gnu.org\/\/DTD GDB Memory Map V1.0\/\/EN"/,
    );
    const atZero = memoryMapXml(boardLayout(PART_PROFILES.nrf52840).sectors);
    assert.doesNotMatch(atZero, /type="ram" start="0x00000000"/, 'no empty RAM region before flash at 0');
  });
});

describe('board double comparators', () => {
  const z = (text: string) => parseBreakpoint(text)!;

  it('gives a Cortex-M4 six FPB breakpoints below 0x2000 0000 and four DWT watchpoints', () => {
    const b = new ComparatorBudget(PART_PROFILES.stm32f407.comparators);
    for (let i = 0; i < 6; i++) {
      assert.equal(b.check(z(`Z1,${(0x100 + 4 * i).toString(16)},2`)), undefined);
      b.apply(z(`Z1,${(0x100 + 4 * i).toString(16)},2`));
    }
    assert.equal(b.check(z('Z1,200,2')), 'breakpointsExhausted');
    assert.equal(b.check(z('Z1,100,2')), 'duplicate');
    b.apply(z('z1,100,2'));
    assert.equal(b.check(z('Z1,200,2')), undefined);
    assert.equal(b.check(z('Z1,20000000,2')), 'breakpointOutsideCodeRegion');
    assert.equal(b.check(z('Z2,20000001,4')), 'watchpointUnaligned');
    assert.equal(b.check(z('Z2,20000000,3')), 'watchpointUnaligned');
    for (let i = 0; i < 4; i++) b.apply(z(`Z${2 + (i % 3)},${(0x20000000 + 8 * i).toString(16)},8`));
    assert.equal(b.check(z('Z3,20001000,4')), 'watchpointsExhausted');
    assert.deepEqual(b.use(), { breakpoints: 5, watchpoints: 4, peakBreakpoints: 6, peakWatchpoints: 4 });
    assert.equal(b.held().length, 9);
    assert.deepEqual(b.held().at(-1), { insert: false, type: 2, address: 0x20000018, kind: 8 });
  });

  it('takes RISC-V breakpoints and watchpoints from one pool of triggers', () => {
    const b = new ComparatorBudget(PART_PROFILES.esp32c6.comparators);
    b.apply(z('Z1,80000000,2'));
    b.apply(z('Z1,80000010,4'));
    b.apply(z('Z2,80100001,3'));
    assert.equal(b.check(z('Z4,80100010,4')), undefined, 'any length, any alignment');
    b.apply(z('Z4,80100010,4'));
    assert.equal(b.check(z('Z1,80000020,2')), 'breakpointsExhausted');
    assert.equal(b.check(z('Z3,80100020,4')), 'watchpointsExhausted');
  });
});

describe('board double packet names', () => {
  it('counts packets under their RSP names', () => {
    const cases: Array<[string, string]> = [
      ['m20000000,40', 'm'],
      ['vCont;c', 'vCont'],
      ['vCont?', 'vCont?'],
      ['vFlashWrite:0:\x01\x02', 'vFlashWrite'],
      ['qXfer:features:read:target.xml:0,ffb', 'qXfer:features:read'],
      ['qXfer:memory-map:read::0,3fff', 'qXfer:memory-map:read'],
      ['qSupported:multiprocess+;swbreak+', 'qSupported'],
      ['QStartNoAckMode', 'QStartNoAckMode'],
      ['Z1,800,2', 'Z1'],
      ['z0,800,2', 'z0'],
      ['Hg0', 'H'],
      ['?', '?'],
      ['qRcmd,7265736574', 'qRcmd'],
    ];
    for (const [packet, kind] of cases) assert.equal(packetKind(packet), kind, packet);
    assert.ok(isResume('vCont;s:1;c') && isResume('c') && isResume('S05'));
    assert.ok(!isResume('vCont?') && !isResume('qC'));
  });
});
