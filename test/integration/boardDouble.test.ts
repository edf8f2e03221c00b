import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ElfImage } from '../../adapter/elf';
import { packetKind } from '../doubles/boardPackets';
import { boardLayout, DEFAULT_PROFILE, PART_PROFILES } from '../doubles/boardProfiles';
import { BoardOnQemu, loadSegments } from '../support/boardOnQemu';
import { startGdb } from '../support/gdb';
import { gdbBatch } from '../support/gdbBatch';
import { fixtureElf, repoRoot, type FixtureTarget } from '../support/paths';

/**
 * The board double (test/doubles/boardDouble.ts) against real GDB (gdb-multiarch) and real QEMU on
 * both targets: GDB reads its memory map and loads the fixture into flash through vFlash packets,
 * and the core runs what was programmed (the program's known checksum comes out); plain writes and
 * software breakpoints into flash are refused; comparators run out where the part's do, with the
 * error GDB shows on a board; every packet GDB's own log says it sent is counted, by kind.
 */

const TARGETS: FixtureTarget[] = ['cortex-m4', 'rv32'];
/** singlepass ends with `program_end(checksum)`, checksum=0xe420b5dd on both targets (test/fixtures/README.md). */
const CHECKSUM = 'e420b5dd';
const ARGUMENT: Record<FixtureTarget, string> = { 'cortex-m4': '$r0', rv32: '$a0' };
const FAMILY = { 'cortex-m4': 'cortex-m', rv32: 'riscv' } as const;
/** Function entries in flash on both targets, more than any profile has comparators. */
const FUNCTIONS = [
  'main',
  'process_packet',
  'crc16_step',
  'vm_run',
  'fir_filter',
  'quicksort',
  'hash_mix',
  'partition',
];
/** 4-byte globals in RAM. */
const GLOBALS = ['g_final_checksum', 'g_input_overruns', 'g_input_ready', 'g_ticks', 's_lfsr'];

const leftBehind: unknown[] = [];
after(() => assert.deepEqual(leftBehind, [], 'no QEMU may outlive its test'));

/** A board for one test, without the link's delay or the flash's modelled times; stopped after it. */
async function withBoard(
  target: FixtureTarget,
  options: Parameters<typeof BoardOnQemu.start>[1],
  fn: (b: BoardOnQemu) => Promise<void>,
): Promise<void> {
  const b = await BoardOnQemu.start(target, { packetDelayMs: 0, flashTimeScale: 0, ...options });
  try {
    await fn(b);
  } finally {
    leftBehind.push(...(await b.stop()));
  }
}

function kinds(sent: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const p of sent) out[packetKind(p)] = (out[packetKind(p)] ?? 0) + 1;
  return out;
}

/** The sector indices [address, address + length) touches, from the profile's table of sector sizes. */
function sectorsTouched(target: FixtureTarget, ranges: ReadonlyArray<{ address: number; data: Uint8Array }>): number[] {
  const profile = PART_PROFILES[DEFAULT_PROFILE[target]];
  const bounds: number[] = [profile.codeAddress];
  for (const run of profile.flash.sectors) for (let i = 0; i < run.count; i++) bounds.push(bounds.at(-1)! + run.size);
  const touched = new Array<number>(bounds.length - 1).fill(0);
  for (const r of ranges)
    for (let i = 0; i + 1 < bounds.length; i++)
      if (bounds[i]! < r.address + r.data.length && bounds[i + 1]! > r.address) touched[i] = 1;
  return touched;
}

for (const target of TARGETS) {
  const elf = fixtureElf(target, 'singlepass');
  const image = ElfImage.loadSync(elf);
  const profile = PART_PROFILES[DEFAULT_PROFILE[target]];
  const layout = boardLayout(profile);
  const limits =
    profile.comparators.kind === 'separate'
      ? { breakpoints: profile.comparators.breakpoints, watchpoints: profile.comparators.watchpoints }
      : { breakpoints: profile.comparators.triggers, watchpoints: profile.comparators.triggers };

  describe(`board double (${profile.name} on QEMU ${target})`, () => {
    it('serves the flash map, loads through vFlash packets, and the core runs the programmed bytes', async () => {
      await withBoard(target, {}, async (b) => {
        const r = await gdbBatch(
          elf,
          [
            `target remote ${b.address}`,
            'info mem',
            'load',
            'break program_end',
            'continue',
            `p/x ${ARGUMENT[target]}`,
          ],
          { logRemote: true },
        );
        // GDB took the map: one flash region per sector size, with its block size.
        for (const size of new Set(profile.flash.sectors.map((s) => s.size)))
          assert.match(r.output, new RegExp(`flash blocksize 0x${size.toString(16)} `), r.output);
        assert.doesNotMatch(r.output, /Error|failed|Cannot/, r.output);
        assert.match(r.output, new RegExp(`= 0x${CHECKSUM}\\b`), 'the program ran to its end with its checksum');
        assert.match(b.qemu.uartOutput(), new RegExp(`checksum=0x${CHECKSUM}`));

        const sent = kinds(r.sent);
        assert.ok((sent['vFlashErase'] ?? 0) >= 1 && (sent['vFlashWrite'] ?? 0) >= 1, JSON.stringify(sent));
        assert.equal(sent['vFlashDone'], 1);
        const stats = b.board.stats();
        assert.equal(stats.packets, r.sent.length, 'every packet GDB sent was counted');
        assert.deepEqual(stats.byKind, sent);
        assert.deepEqual(stats.refused, {});

        const inFlash = loadSegments(elf).filter((s) => b.board.flash.contains(s.address, s.data.length));
        assert.ok(inFlash.length > 0);
        for (const s of inFlash) {
          assert.deepEqual(b.board.flash.read(s.address, s.data.length), Buffer.from(s.data), 'flash holds the ELF');
          assert.deepEqual(await b.board.readTarget(s.address, s.data.length), Buffer.from(s.data), 'and so does QEMU');
        }
        assert.deepEqual(stats.flash.erases, sectorsTouched(target, inFlash), 'each touched sector erased once');
        assert.deepEqual(b.board.flash.eraseCounts(), stats.flash.erases);
      });
    });

    it('refuses plain memory writes and software breakpoints in flash, and takes them in RAM', async () => {
      await withBoard(target, { programmed: elf }, async (b) => {
        const code = image.functionNamed('crc16_step')!.address;
        const ram = image.symbols.objectNamed('g_ticks')!.address;
        const before = b.board.flash.read(code, 4);
        const r = await gdbBatch(elf, [
          `target remote ${b.address}`,
          `maint packet M${code.toString(16)},4:00000000`,
          `maint packet Z0,${code.toString(16)},2`,
          `set {int}${code} = 0`,
          `set {int}${ram} = 0x5a5a1234`,
          `p/x *(int*)${ram}`,
        ]);
        assert.match(r.output, /sending: M[0-9a-f]+,4:00000000\s+received: "E0E"/);
        assert.match(r.output, /sending: Z0,[0-9a-f]+,2\s+received: "E0E"/);
        // GDB itself refuses what the map marks flash, before asking the server.
        assert.match(r.output, /Writing to flash memory forbidden in this context/);
        assert.match(r.output, /= 0x5a5a1234/);
        assert.deepEqual(b.board.flash.read(code, 4), before, 'flash unchanged');
        assert.deepEqual(b.board.stats().refused, { memoryWriteInFlash: 1, softwareBreakpointInFlash: 1 });
      });
    });

    it(`takes ${limits.breakpoints} hardware breakpoints and refuses one more as a board does`, async () => {
      await withBoard(target, { programmed: elf }, async (b) => {
        const set = (n: number): string[] => FUNCTIONS.slice(0, n).map((f) => `hbreak ${f}`);
        const ok = await gdbBatch(elf, [`target remote ${b.address}`, ...set(limits.breakpoints), 'continue']);
        assert.match(ok.output, /Breakpoint \d+, main \(\)/, ok.output);
        assert.equal(b.board.stats().comparators.peakBreakpoints, limits.breakpoints);
        assert.equal(b.board.stats().refused.breakpointsExhausted, undefined);

        const over = await gdbBatch(elf, [`target remote ${b.address}`, ...set(limits.breakpoints + 1), 'continue']);
        assert.match(over.output, /Cannot insert hardware breakpoint \d+\./, over.output);
        assert.match(over.output, /Could not insert hardware breakpoints:\nYou may have requested too many/);
        assert.equal(b.board.stats().refused.breakpointsExhausted, 1);
        // A GDB that goes away leaves no comparator taken.
        assert.equal(b.board.stats().comparators.breakpoints, 0);
      });
    });

    it(`takes ${limits.watchpoints} watchpoints and refuses one more`, async () => {
      await withBoard(target, { programmed: elf }, async (b) => {
        const watch = (n: number): string[] => GLOBALS.slice(0, n).map((g) => `watch ${g}`);
        const ok = await gdbBatch(elf, [`target remote ${b.address}`, ...watch(limits.watchpoints), 'continue']);
        assert.match(ok.output, /Hardware watchpoint \d+: \w+\s+Old value/, ok.output);
        assert.equal(b.board.stats().comparators.peakWatchpoints, limits.watchpoints);

        const over = await gdbBatch(elf, [`target remote ${b.address}`, ...watch(limits.watchpoints + 1), 'continue']);
        assert.match(over.output, /Could not insert hardware watchpoint \d+\./, over.output);
        assert.equal(b.board.stats().refused.watchpointsExhausted, 1);
      });
    });

    it('checks vFlash packets as OpenOCD does: sector-aligned erases, writes that only clear bits', async () => {
      await withBoard(target, { programmed: elf }, async (b) => {
        // The last sector: the firmware lies in the first ones.
        const spare = layout.sectors.at(-1)!;
        const at = (a: number): string => a.toString(16);
        const r = await gdbBatch(undefined, [
          `target remote ${b.address}`,
          `maint packet vFlashErase:${at(spare.start + 0x100)},100`,
          `maint packet vFlashWrite:${at(layout.flashStart)}:AAAA`,
          'maint packet vFlashDone',
          `maint packet vFlashErase:${at(spare.start)},${at(spare.size)}`,
          `maint packet vFlashWrite:${at(spare.start)}:ABCD`,
          'maint packet vFlashDone',
          `maint packet vFlashWrite:${at(spare.start)}:@@@@`,
          'maint packet vFlashDone',
          `maint packet vFlashWrite:${at(spare.start)}:CDEF`,
          'maint packet vFlashDone',
          `maint packet vFlashWrite:${at(layout.flashStart + layout.flashSize)}:ABCD`,
          'maint packet vFlashDone',
        ]);
        const replies = [...r.output.matchAll(/received: "([^"]*)"/g)].map((m) => m[1]);
        // Not sector-aligned; a 1 over a 0 in programmed flash; a sector erased then written;
        // 0x40 over 0x41… only clears bits; 'C' over '@' would set them; past the end of the flash.
        assert.deepEqual(
          replies,
          ['E05', 'OK', 'E05', 'OK', 'OK', 'OK', 'OK', 'OK', 'OK', 'E05', 'OK', 'E.memtype'],
          r.output,
        );
        assert.deepEqual(b.board.flash.read(spare.start, 4), Buffer.from('@@@@'));
        assert.deepEqual(b.board.flash.read(spare.start + 4, 4), Buffer.alloc(4, 0xff));
        const inFlash = loadSegments(elf).filter((s) => b.board.flash.contains(s.address, s.data.length));
        for (const s of inFlash)
          assert.deepEqual(b.board.flash.read(s.address, s.data.length), Buffer.from(s.data), 'the firmware is intact');
        assert.equal(b.board.stats().flash.erases[spare.index], 1);
        assert.match(b.board.stats().lastFlashError ?? '', /outside the flash/);
      });
    });

    it('resets as OpenOCD does on monitor reset halt, and passes other monitor commands to QEMU', async () => {
      await withBoard(target, { programmed: elf }, async (b) => {
        const r = await gdbBatch(elf, [
          `target remote ${b.address}`,
          'break program_end',
          'continue',
          'monitor reset halt',
          'maint flush register-cache',
          'p/x $pc',
          'monitor info status',
          'monitor reset run',
        ]);
        if (profile.haltReport) {
          // The Cortex-M reset vector: initial SP and PC are the first two words of the vector table.
          const vectors = image.file.readMemory(profile.codeAddress, 8)!;
          const sp = Buffer.from(vectors).readUInt32LE(0);
          const entry = Buffer.from(vectors).readUInt32LE(4) & ~1;
          const hex = (v: number): string => `0x${v.toString(16).padStart(8, '0')}`;
          const line = new RegExp(
            `\\[${profile.haltReport.target.replace('.', '\\.')}\\] halted due to debug-request, ` +
              `current mode: Thread \\nxPSR: 0x[0-9a-f]{8} pc: ${hex(entry)} msp: ${hex(sp)}`,
          );
          assert.match(r.output, line, r.output);
          assert.equal(Number(/\$1 = (0x[0-9a-f]+)/.exec(r.output)![1]), entry);
        } else {
          // QEMU virt's reset vector is its boot ROM at 0x1000.
          assert.equal(Number(/\$1 = (0x[0-9a-f]+)/.exec(r.output)![1]), 0x1000);
        }
        assert.match(r.output, /VM status: paused/, 'HMP answered `info status`');
        assert.match(r.output, /does not let the core run from reset behind GDB's back/);
        assert.equal(b.board.stats().resets, 1);
      });
    });

    it('passes GDB’s interrupt to the running core', async () => {
      const hotloop = fixtureElf(target, 'hotloop');
      await withBoard(target, { programmed: hotloop }, async (b) => {
        const gdb = await startGdb(tmpdir(), FAMILY[target]);
        try {
          await gdb.loadProgram(hotloop);
          await gdb.connectRemote(b.address);
          await gdb.continue();
          // hotloop never ends: only the interrupt stops it.
          await new Promise((r) => setTimeout(r, 300));
          const stop = await gdb.interrupt(10_000);
          assert.ok(stop, 'the core stopped');
          const pc = Number(stop.frame?.address ?? NaN);
          assert.ok(ElfImage.loadSync(hotloop).isCode(pc), `stopped in the program's code, at 0x${pc.toString(16)}`);
          assert.equal(b.board.stats().interrupts, 1);
        } finally {
          await gdb.exit();
        }
      });
    });

    it('puts the flash at the part’s own address for code run from RAM: RAM breakpoints go to QEMU', async () => {
      await withBoard(target, { placement: 'own' }, async (b) => {
        assert.equal(b.board.layout.flashStart, profile.flash.base);
        const r = await gdbBatch(
          elf,
          [`target remote ${b.address}`, 'load', 'monitor reset halt', 'break main', 'continue', 'info mem'],
          { logRemote: true },
        );
        assert.match(r.output, /Breakpoint 1, main \(\)/, r.output);
        const sent = kinds(r.sent);
        assert.equal(sent['vFlashErase'], undefined, 'nothing went to flash');
        assert.ok((sent['Z0'] ?? 0) >= 1 && sent['Z1'] === undefined, JSON.stringify(sent));
        assert.deepEqual(b.board.stats().refused, {});
      });
    });
  });
}

describe('board double command line', () => {
  it('serves GDB until SIGINT, then prints its counts and leaves no QEMU behind', async () => {
    const elf = fixtureElf('rv32', 'singlepass');
    const main = join(repoRoot, 'out', 'test', 'doubles', 'boardDoubleMain.js');
    const child = spawn(process.execPath, [main, '--target', 'rv32', '--delay', '0', '--flash-time-scale', '0'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (t: string) => (out += t));
    child.stderr.resume();
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const port = await new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no readiness line: ${out}`)), 20_000);
        child.stdout.on('data', () => {
          const m = /Listening on port (\d+) for gdb connections/.exec(out);
          if (m) {
            clearTimeout(timer);
            resolve(Number(m[1]));
          }
        });
      });
      const qemuPort = /QEMU rv32 at 127\.0\.0\.1:(\d+)/.exec(out)![1]!;
      const r = await gdbBatch(elf, [
        `target remote 127.0.0.1:${port}`,
        'load',
        'break program_end',
        'continue',
        'p/x $a0',
      ]);
      assert.match(r.output, new RegExp(`= 0x${CHECKSUM}\\b`), r.output);
      child.kill('SIGINT');
      assert.equal(await exited, 0);
      const counts = JSON.parse(out.trim().split('\n').at(-1)!) as { byKind: Record<string, number> };
      assert.equal(counts.byKind['vFlashDone'], 1);
      const qemuLeft = readdirSync('/proc')
        .filter((p) => /^\d+$/.test(p))
        .filter((p) => {
          try {
            return readFileSync(`/proc/${p}/cmdline`, 'latin1').includes(`tcp:127.0.0.1:${qemuPort}`);
          } catch {
            return false;
          }
        });
      assert.deepEqual(qemuLeft, [], 'the command line ended its QEMU');
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
