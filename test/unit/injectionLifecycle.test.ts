import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { thumbInjectionSupport } from '../../adapter/arch/cortex-m/trampolineThumb';
import { rv32InjectionSupport } from '../../adapter/arch/riscv/trampolineRv32';
import { ElfImage } from '../../adapter/elf';
import { CaveAllocator } from '../../adapter/probe/injection/caveAllocator';
import { InjectionRefusedError } from '../../adapter/probe/injection/errors';
import { InjectionService } from '../../adapter/probe/injection/injectionService';
import { journalPath, restoreFromJournal } from '../../adapter/probe/injection/journal';
import { QEMU_MEMORY_MAPS, memoryKindAt, parseGdbMemoryMap } from '../../adapter/probe/injection/memoryMap';
import { Ctrl, RECORD_SIZE, Rec, decodeRecord, initialRecord } from '../../adapter/probe/injection/recordLayout';
import { resolveReservedMemory } from '../../adapter/probe/injection/reservedMemory';
import type { ReservedMemory } from '../../adapter/probe/injection/types';
import type { TargetAccess } from '../../adapter/probe/targetAccess';
import { fixtureElf } from '../support/paths';

/**
 * Lifecycle without a simulator: reserved-memory resolution, memory kinds, the record layout, the
 * allocator, and the service's safety rules (halted only, flash refused, journal before patch,
 * removal verified against the ELF) over an in-memory target built from the ELF's own bytes.
 */

const rvPath = fixtureElf('rv32', 'singlepass');
const cmPath = fixtureElf('cortex-m4', 'singlepass');
const haveRv = existsSync(rvPath);
const haveCm = existsSync(cmPath);
const scratch = mkdtempSync(join(tmpdir(), 'cyclelens-injection-unit-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** A target made of the ELF's loaded image plus zeroed RAM; registers by name. */
class MemoryTarget implements TargetAccess {
  readonly mem = new Map<number, number>();
  readonly regs = new Map<string, bigint>();
  readonly log: string[] = [];
  /** Addresses that ignore writes (flash). */
  readOnly: Array<[number, number]> = [];

  constructor(elf: ElfImage) {
    for (const s of elf.sections) {
      if ((s.flags & 0x2) === 0 || s.type === 8) continue;
      const data = elf.file.sectionData(s);
      data.forEach((b, i) => this.mem.set(s.addr + i, b));
    }
  }
  async readMemory(address: bigint, length: number): Promise<Buffer> {
    const b = Buffer.alloc(length);
    for (let i = 0; i < length; i++) b[i] = this.mem.get(Number(address) + i) ?? 0;
    return b;
  }
  async writeMemory(address: bigint, data: Uint8Array): Promise<void> {
    const a = Number(address);
    this.log.push(`write ${a.toString(16)} ${data.length}`);
    if (this.readOnly.some(([s, e]) => a >= s && a < e)) return;
    data.forEach((v, i) => this.mem.set(a + i, v));
  }
  async readU32(address: bigint): Promise<number> {
    return (await this.readMemory(address, 4)).readUInt32LE(0);
  }
  async writeU32(address: bigint, value: number): Promise<void> {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(value >>> 0);
    await this.writeMemory(address, b);
  }
  async hasRegister(name: string): Promise<boolean> {
    return this.regs.has(name);
  }
  async readRegister(name: string): Promise<bigint> {
    return this.regs.get(name) ?? 0n;
  }
  async writeRegister(name: string, value: bigint): Promise<void> {
    this.log.push(`reg ${name}`);
    this.regs.set(name, value);
  }
  async monitor(): Promise<string> {
    return '';
  }
}

describe('reserved memory, memory kinds, records, allocation', () => {
  it('takes the launch configuration first, then the linker symbols, and refuses memory the program uses', { skip: !haveRv }, () => {
    const elf = ElfImage.loadSync(rvPath);
    const linker = resolveReservedMemory(elf) as ReservedMemory;
    assert.equal(linker.source, 'linker');
    assert.equal(linker.start, elf.symbols.named('__cyclelens_scratch_start')[0]!.address);
    assert.equal(linker.size, 4096);
    const launch = resolveReservedMemory(elf, { launch: { start: 0x80180000, size: 8192 } }) as ReservedMemory;
    assert.deepEqual(launch, { start: 0x80180000, size: 8192, source: 'launch' });
    const bss = elf.section('.bss')!;
    const bad = resolveReservedMemory(elf, { launch: { start: bss.addr, size: 4096 } });
    assert.ok('ok' in bad && !bad.ok);
    assert.match(bad.reason, /overlaps the program's \.bss section/);
  });

  it('without the linker symbols, finds a gap only where a memory map says RAM, with a warning, or refuses with what to do', { skip: !haveRv || spawnSync('riscv64-unknown-elf-objcopy', ['--version']).status !== 0 }, () => {
    const stripped = join(scratch, 'nosyms.elf');
    const r = spawnSync('riscv64-unknown-elf-objcopy', ['--strip-symbol=__cyclelens_scratch_start', '--strip-symbol=__cyclelens_scratch_end', rvPath, stripped]);
    assert.equal(r.status, 0, String(r.stderr));
    const elf = ElfImage.loadSync(stripped);
    const none = resolveReservedMemory(elf);
    assert.ok('ok' in none && !none.ok);
    assert.match(none.reason, /define __cyclelens_scratch_start and __cyclelens_scratch_end .* or give the reserved memory in the launch configuration/);
    const gap = resolveReservedMemory(elf, { memoryMap: QEMU_MEMORY_MAPS.virt }) as ReservedMemory;
    assert.equal(gap.source, 'unused');
    assert.match(gap.warning!, /No RAM is reserved for CycleLens/);
    for (const s of elf.sections.filter((x) => (x.flags & 0x2) !== 0 && x.size > 0 && x.name !== '.cyclelens_scratch')) {
      assert.ok(gap.start + gap.size <= s.addr || gap.start >= s.addr + s.size, `gap clear of ${s.name}`);
    }
  });

  it('reads GDB memory maps and treats the Cortex-M code region as flash when nothing says otherwise', () => {
    const map = parseGdbMemoryMap('Num Enb Low Addr   High Addr  Attrs\n0   y   0x08000000 0x08100000 flash blocksize 0x800 nocache\n1   y   0x20000000 0x20020000 rw nocache\n');
    assert.deepEqual(map.map((m) => m.kind), ['flash', 'ram']);
    assert.equal(memoryKindAt(map, 0x08000100, 4), 'flash');
    assert.equal(memoryKindAt(map, 0x20000100, 4), 'ram');
    assert.equal(memoryKindAt(undefined, 0x100, 4, 'cortex-m'), 'flash');
    assert.equal(memoryKindAt(QEMU_MEMORY_MAPS['mps2-an386'], 0x100, 4, 'cortex-m'), 'ram');
    assert.equal(memoryKindAt(undefined, 0x80000000, 4, 'riscv'), 'unknown');
  });

  it('a record round-trips through its documented layout, ring oldest first', () => {
    const b = Buffer.from(initialRecord(0x1235, { entryOuter: 1, entryNested: 2, exitOuter: 3, exitNested: 4 }));
    assert.equal(b.length, RECORD_SIZE);
    b.writeUInt32LE(0x1, Rec.totalHi);
    b.writeUInt32LE(0x10, Rec.totalLo);
    b.writeUInt32LE(10, Rec.passes);
    b.writeUInt32LE(10, Rec.ringIndex);
    for (let k = 0; k < 10; k++) b.writeUInt32LE(100 + k, Rec.ring + 4 * (k % 8));
    const v = decodeRecord(b);
    assert.equal(v.total, (1n << 32n) + 16n);
    assert.equal(v.min, 0xffffffff);
    assert.deepEqual(v.lastPasses, [102, 103, 104, 105, 106, 107, 108, 109]);
    assert.equal(b.readUInt32LE(Rec.exit), 0x1235);
  });

  it('the allocator never hands out a freed block before reclaim (a call may still return into it)', () => {
    const a = new CaveAllocator([{ start: 0x1000, size: 256 }]);
    const x = a.allocate(200)!;
    assert.equal(a.allocate(100), undefined);
    a.release(x);
    assert.equal(a.allocate(100), undefined, 'still draining');
    a.reclaim();
    assert.deepEqual(a.allocate(100), { start: 0x1000, size: 100 });
  });
});

describe('InjectionService safety rules (in-memory RV32 target)', { skip: haveRv ? false : 'rv32 fixture missing' }, () => {
  const elf = haveRv ? ElfImage.loadSync(rvPath) : undefined!;
  const make = (halted = true, extra: Partial<ConstructorParameters<typeof InjectionService>[0]> = {}): { svc: InjectionService; target: MemoryTarget; dir: string } => {
    const target = new MemoryTarget(elf);
    target.regs.set('pc', BigInt(elf.functionNamed('main')!.address));
    target.regs.set('mstatus', 0x1808n);
    const dir = mkdtempSync(join(scratch, 'journal-'));
    const svc = new InjectionService({ access: target, elf, support: rv32InjectionSupport(), isHalted: () => halted, journalDir: dir, reserved: resolveReservedMemory(elf) as ReservedMemory, ...extra });
    return { svc, target, dir };
  };

  it('refuses to patch a running target', async () => {
    const { svc } = make(false);
    await assert.rejects(svc.measureFunction('crc16_step'), /Pause the target to inject a measurement/);
  });

  it('journals the original bytes before the first code write, and removal restores the ELF bytes and deletes the journal', async () => {
    const { svc, target, dir } = make();
    const fn = elf.functionNamed('crc16_step')!;
    const info = await svc.measureFunction('crc16_step');
    const path = journalPath(dir, elf);
    const journal = JSON.parse(readFileSync(path, 'utf8'));
    assert.equal(journal.patches.length, 1);
    assert.equal(journal.patches[0].address, fn.address);
    assert.equal(journal.patches[0].original, Buffer.from(elf.file.readMemory(fn.address, 4)!).toString('hex'));
    assert.equal(journal.threadPointer, '0', 'tp before the injector took it');
    const patched = await target.readMemory(BigInt(fn.address), 4);
    assert.equal(patched.toString('hex'), journal.patches[0].patched);
    assert.equal(target.regs.get('tp'), BigInt(svc.layout.threadPointer!));
    await svc.remove(info.id);
    assert.deepEqual(await target.readMemory(BigInt(fn.address), 4), Buffer.from(elf.file.readMemory(fn.address, 4)!));
    assert.equal(existsSync(path), false, 'journal gone once nothing is patched');
    assert.equal(target.regs.get('tp'), 0n, 'tp given back');
  });

  it('restoreFromJournal puts back what a dead session left, and leaves a conflicting byte alone', async () => {
    const first = make();
    const fn = elf.functionNamed('vm_run')!;
    await first.svc.measureFunction('vm_run');
    await first.svc.measureFunction('crc16_step');
    // The session dies here. The next launch finds the same target, still patched.
    const other = elf.functionNamed('crc16_step')!;
    await first.target.writeMemory(BigInt(other.address), Buffer.from('deadbeef', 'hex'));
    const report = await restoreFromJournal(first.target, elf, first.dir);
    assert.deepEqual(report.restored, [fn.address]);
    assert.deepEqual(report.conflicts.map((c) => c.address), [other.address]);
    assert.ok(existsSync(journalPath(first.dir, elf)), 'kept while a conflict remains');
    assert.deepEqual(await first.target.readMemory(BigInt(fn.address), 4), Buffer.from(elf.file.readMemory(fn.address, 4)!));
    const again = await restoreFromJournal(first.target, elf, first.dir);
    assert.deepEqual(again.alreadyOriginal, [fn.address]);
  });

  it('refuses a patch when the halted program is inside its bytes, and names the PC', async () => {
    const { svc, target } = make();
    const fn = elf.functionNamed('crc16_step')!;
    target.regs.set('pc', BigInt(fn.address + 2));
    await assert.rejects(svc.measureFunction('crc16_step'), (e: unknown) => e instanceof InjectionRefusedError && /program counter is at 0x[0-9a-f]+, inside the bytes/.test(e.message));
  });

  it('a write that does not stick is undone, reported as flash, and leaves no journal entry', async () => {
    const { svc, target, dir } = make();
    const fn = elf.functionNamed('crc16_step')!;
    target.readOnly = [[fn.address, fn.address + 4]];
    await assert.rejects(svc.measureFunction('crc16_step'), /did not stick .* probably in flash/);
    const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
    const patches = files.flatMap((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')).patches);
    assert.equal(patches.length, 0);
  });

  it('moves a stop at a patched entry to where the trampoline comes back, and refuses one inside the patch', async () => {
    const { svc } = make();
    const fn = elf.functionNamed('vm_run')!;
    const plan = svc.plan('vm_run');
    assert.ok('ok' in plan && plan.ok && plan.kind === 'function');
    const info = await svc.measureFunction('vm_run');
    const length = info.patches[0]!.length;
    assert.deepEqual(svc.stopPointFor(fn.address), { ok: true, address: plan.entry.resume, moved: { from: fn.address, measurement: `measurement #${info.id} (vm_run)` } });
    assert.equal(plan.entry.resume, fn.address + length, 'the displaced instruction falls through to the next one');
    const inside = svc.stopPointFor(fn.address + 2);
    assert.ok(!inside.ok && /inside the bytes patched by measurement #1 \(vm_run\)/.test(inside.reason) && /Remove that measurement/.test(inside.reason));
    assert.deepEqual(svc.stopPointFor(fn.address + length), { ok: true, address: fn.address + length });
    await svc.remove(info.id);
    assert.deepEqual(svc.stopPointFor(fn.address), { ok: true, address: fn.address }, 'nothing moves once the patch is gone');
  });

  it('after a target reset the runtime is installed anew and all reserved memory is free again', async () => {
    const { svc, target } = make();
    const first = await svc.measureFunction('crc16_step');
    assert.throws(() => svc.targetReset(), /Remove the injected measurements before the target is reset/);
    // A measured call is in flight (one shadow-stack entry): removal cannot give its memory back yet.
    const ssp = BigInt(svc.layout.ctrl + Ctrl.ssp);
    const bytes = await target.readMemory(ssp, 4);
    bytes.writeUInt32LE(bytes.readUInt32LE(0) + 4, 0);
    await target.writeMemory(ssp, bytes);
    await svc.remove(first.id);
    const held = await svc.measureFunction('crc16_step');
    assert.notDeepEqual(held.stub, first.stub, 'still draining: a call may return into the old stub');
    await svc.remove(held.id);
    svc.targetReset();
    // A reset leaves RAM as it was but undoes the counter set-up: the service must not trust what it wrote before.
    await target.writeMemory(BigInt(svc.layout.runtime), Buffer.alloc(16));
    const again = await svc.measureFunction('crc16_step');
    assert.notDeepEqual(await target.readMemory(BigInt(svc.layout.runtime), 16), Buffer.alloc(16), 'runtime written again');
    assert.deepEqual(again.stub, first.stub, 'the first block is handed out again');
  });

  it('refuses a second patch over the same bytes', async () => {
    const { svc } = make();
    await svc.measureFunction('crc16_step');
    await assert.rejects(svc.measureFunction('crc16_step'), /already patched by measurement #1/);
  });
});

describe('InjectionService on Cortex-M without a memory map', { skip: haveCm ? false : 'cortex-m4 fixture missing' }, () => {
  it('refuses code in the Code region (flash on real parts) unless flash writes are allowed', async () => {
    const elf = ElfImage.loadSync(cmPath);
    const target = new MemoryTarget(elf);
    target.regs.set('pc', BigInt(elf.functionNamed('main')!.address));
    const svc = new InjectionService({ access: target, elf, support: thumbInjectionSupport(), isHalted: () => true, journalDir: mkdtempSync(join(scratch, 'cm-')), reserved: resolveReservedMemory(elf) as ReservedMemory });
    await assert.rejects(svc.measureFunction('vm_run'), /The code at 0x[0-9a-f]+ is in flash; a debugger write would not stick .* allow flash writes/);
  });
});
