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
import { buildGroupStubs } from '../../adapter/probe/injection/groupStubs';
import { InjectionRefusedError } from '../../adapter/probe/injection/errors';
import { InjectionService } from '../../adapter/probe/injection/injectionService';
import { journalPath, restoreFromJournal } from '../../adapter/probe/injection/journal';
import { memoryKindAt } from '../../adapter/probe/injection/memoryMap';
import { qemuMemoryMap } from '../../adapter/target/targetFacts';
import { parseGdbMemoryMap } from '../../adapter/debugger/gdb/memoryMap';
import { Ctrl, RECORD_SIZE, Rec, decodeRecord, initialRecord } from '../../adapter/probe/injection/recordLayout';
import { resolveReservedMemory } from '../../adapter/probe/injection/reservedMemory';
import type { PatchSite, ReservedMemory } from '../../adapter/probe/injection/types';
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
  it(
    'takes the launch configuration first, then the linker symbols, and refuses memory the program uses',
    { skip: !haveRv },
    () => {
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
    },
  );

  it(
    'without the linker symbols, finds a gap only where a memory map says RAM, with a warning, ' +
      'or refuses with what to do',
    { skip: !haveRv || spawnSync('riscv64-unknown-elf-objcopy', ['--version']).status !== 0 },
    () => {
      const stripped = join(scratch, 'nosyms.elf');
      const r = spawnSync('riscv64-unknown-elf-objcopy', [
        '--strip-symbol=__cyclelens_scratch_start',
        '--strip-symbol=__cyclelens_scratch_end',
        rvPath,
        stripped,
      ]);
      assert.equal(r.status, 0, String(r.stderr));
      const elf = ElfImage.loadSync(stripped);
      const none = resolveReservedMemory(elf);
      assert.ok('ok' in none && !none.ok);
      assert.match(
        none.reason,
        new RegExp(
          /define __cyclelens_scratch_start and __cyclelens_scratch_end .* or give/.source +
            / the reserved memory in the launch configuration/.source,
        ),
      );
      const gap = resolveReservedMemory(elf, { memoryMap: qemuMemoryMap('virt') }) as ReservedMemory;
      assert.equal(gap.source, 'unused');
      assert.match(gap.warning!, /No RAM is reserved for CycleLens/);
      for (const s of elf.sections.filter(
        (x) => (x.flags & 0x2) !== 0 && x.size > 0 && x.name !== '.cyclelens_scratch',
      )) {
        assert.ok(gap.start + gap.size <= s.addr || gap.start >= s.addr + s.size, `gap clear of ${s.name}`);
      }
    },
  );

  it('reads GDB memory maps and treats the Cortex-M code region as flash when nothing says otherwise', () => {
    const map = parseGdbMemoryMap(
      'Num Enb Low Addr   High Addr  Attrs\n0   y   0x08000000 0x08100000 flash blocksize 0x800 ' +
        'nocache\n1   y   0x20000000 0x20020000 rw nocache\n',
    );
    assert.deepEqual(
      map.map((m) => m.kind),
      ['flash', 'ram'],
    );
    assert.equal(memoryKindAt(map, 0x08000100, 4), 'flash');
    assert.equal(memoryKindAt(map, 0x20000100, 4), 'ram');
    assert.equal(memoryKindAt(undefined, 0x100, 4, 'cortex-m'), 'flash');
    assert.equal(memoryKindAt(qemuMemoryMap('mps2-an386'), 0x100, 4, 'cortex-m'), 'ram');
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

describe(
  'InjectionService safety rules (in-memory RV32 target)',
  { skip: haveRv ? false : 'rv32 fixture missing' },
  () => {
    const elf = haveRv ? ElfImage.loadSync(rvPath) : undefined!;
    const make = (
      halted = true,
      extra: Partial<ConstructorParameters<typeof InjectionService>[0]> = {},
    ): { svc: InjectionService; target: MemoryTarget; dir: string } => {
      const target = new MemoryTarget(elf);
      target.regs.set('pc', BigInt(elf.functionNamed('main')!.address));
      target.regs.set('mstatus', 0x1808n);
      const dir = mkdtempSync(join(scratch, 'journal-'));
      const svc = new InjectionService({
        access: target,
        elf,
        support: rv32InjectionSupport(),
        isHalted: () => halted,
        journalDir: dir,
        reserved: resolveReservedMemory(elf) as ReservedMemory,
        ...extra,
      });
      return { svc, target, dir };
    };

    it('refuses to patch a running target', async () => {
      const { svc } = make(false);
      await assert.rejects(svc.measureFunction('crc16_step'), /Pause the target to inject a measurement/);
    });

    it(
      'journals the original bytes before the first code write, and removal restores the ELF ' +
        'bytes and deletes the journal',
      async () => {
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
        assert.deepEqual(
          await target.readMemory(BigInt(fn.address), 4),
          Buffer.from(elf.file.readMemory(fn.address, 4)!),
        );
        assert.equal(existsSync(path), false, 'journal gone once nothing is patched');
        assert.equal(target.regs.get('tp'), 0n, 'tp given back');
      },
    );

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
      assert.deepEqual(
        report.conflicts.map((c) => c.address),
        [other.address],
      );
      assert.ok(existsSync(journalPath(first.dir, elf)), 'kept while a conflict remains');
      assert.deepEqual(
        await first.target.readMemory(BigInt(fn.address), 4),
        Buffer.from(elf.file.readMemory(fn.address, 4)!),
      );
      const again = await restoreFromJournal(first.target, elf, first.dir);
      assert.deepEqual(again.alreadyOriginal, [fn.address]);
    });

    it('refuses a patch when the halted program is inside its bytes, and names the PC', async () => {
      const { svc, target } = make();
      const fn = elf.functionNamed('crc16_step')!;
      target.regs.set('pc', BigInt(fn.address + 2));
      await assert.rejects(
        svc.measureFunction('crc16_step'),
        (e: unknown) =>
          e instanceof InjectionRefusedError && /program counter is at 0x[0-9a-f]+, inside the bytes/.test(e.message),
      );
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

    it(
      'moves a stop at a patched entry to where the trampoline comes back, and refuses one inside ' + 'the patch',
      async () => {
        const { svc } = make();
        const fn = elf.functionNamed('vm_run')!;
        const plan = svc.plan('vm_run');
        assert.ok('ok' in plan && plan.ok && plan.kind === 'function');
        const info = await svc.measureFunction('vm_run');
        const length = info.patches[0]!.length;
        assert.deepEqual(svc.stopPointFor(fn.address), {
          ok: true,
          address: plan.entry.resume,
          moved: { from: fn.address, measurement: `measurement #${info.id} (vm_run)` },
        });
        assert.equal(plan.entry.resume, fn.address + length, 'the displaced instruction falls through to the next one');
        const inside = svc.stopPointFor(fn.address + 2);
        assert.ok(
          !inside.ok &&
            /inside the bytes patched by measurement #1 \(vm_run\)/.test(inside.reason) &&
            /Remove that measurement/.test(inside.reason),
        );
        assert.deepEqual(svc.stopPointFor(fn.address + length), { ok: true, address: fn.address + length });
        await svc.remove(info.id);
        assert.deepEqual(
          svc.stopPointFor(fn.address),
          { ok: true, address: fn.address },
          'nothing moves once the patch is gone',
        );
      },
    );

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
      assert.notDeepEqual(
        await target.readMemory(BigInt(svc.layout.runtime), 16),
        Buffer.alloc(16),
        'runtime written again',
      );
      assert.deepEqual(again.stub, first.stub, 'the first block is handed out again');
    });

    it('refuses a second patch over the same bytes', async () => {
      const { svc } = make();
      await svc.measureFunction('crc16_step');
      await assert.rejects(svc.measureFunction('crc16_step'), /already patched by measurement #1/);
    });
  },
);

describe(
  'InjectionService on Cortex-M without a memory map',
  { skip: haveCm ? false : 'cortex-m4 fixture missing' },
  () => {
    it('refuses code in the Code region (flash on real parts) unless flash writes are allowed', async () => {
      const elf = ElfImage.loadSync(cmPath);
      const target = new MemoryTarget(elf);
      target.regs.set('pc', BigInt(elf.functionNamed('main')!.address));
      const svc = new InjectionService({
        access: target,
        elf,
        support: thumbInjectionSupport(),
        isHalted: () => true,
        journalDir: mkdtempSync(join(scratch, 'cm-')),
        reserved: resolveReservedMemory(elf) as ReservedMemory,
      });
      await assert.rejects(
        svc.measureFunction('vm_run'),
        /The code at 0x[0-9a-f]+ is in flash; a debugger write would not stick .* allow flash writes/,
      );
    });
  },
);

describe(
  'group measurements: one record on several entries (in-memory RV32 target)',
  { skip: haveRv ? false : 'rv32 fixture missing' },
  () => {
    const elf = haveRv ? ElfImage.loadSync(rvPath) : undefined!;
    const make = (): { svc: InjectionService; target: MemoryTarget; dir: string } => {
      const target = new MemoryTarget(elf);
      target.regs.set('pc', BigInt(elf.functionNamed('main')!.address));
      target.regs.set('mstatus', 0x1808n);
      const dir = mkdtempSync(join(scratch, 'group-'));
      const svc = new InjectionService({
        access: target,
        elf,
        support: rv32InjectionSupport(),
        isHalted: () => true,
        journalDir: dir,
        reserved: resolveReservedMemory(elf) as ReservedMemory,
      });
      return { svc, target, dir };
    };
    const original = (name: string, length = 8): Buffer =>
      Buffer.from(elf.file.readMemory(elf.functionNamed(name)!.address, length)!);
    /** The first function of the program whose entry the planner refuses. */
    const unpatchable = (svc: InjectionService): string => {
      const names = [...new Set(elf.symbols.functions.map((f) => f.name))];
      const name = names.find((n) => !svc.plan(n).ok);
      assert.ok(name, 'the fixture has a function whose entry cannot be patched');
      return name;
    };

    it(
      'patches every member onto one record, journals every patch, moves stops at every entry, ' +
        'and removal restores all bytes',
      async () => {
        const { svc, target, dir } = make();
        const members = ['crc16_step', 'vm_run'];
        const info = await svc.measureGroup(members);
        assert.equal(info.kind, 'group');
        assert.equal(info.name, 'crc16_step + vm_run');
        assert.deepEqual(info.members, members);
        assert.deepEqual(
          info.patches.map((p) => p.address),
          members.map((n) => elf.functionNamed(n)!.address),
        );
        const journal = JSON.parse(readFileSync(journalPath(dir, elf), 'utf8'));
        assert.deepEqual(
          journal.patches.map((p: { measurement: number; address: number }) => [p.measurement, p.address]),
          info.patches.map((p) => [info.id, p.address]),
        );
        for (const [i, name] of members.entries()) {
          assert.notDeepEqual(
            await target.readMemory(BigInt(info.patches[i]!.address), 4),
            original(name, 4),
            `${name} patched`,
          );
          const stop = svc.stopPointFor(elf.functionNamed(name)!.address);
          assert.ok(
            stop.ok && stop.moved?.measurement === `measurement #${info.id} (crc16_step + vm_run)`,
            `${name}: ${JSON.stringify(stop)}`,
          );
        }
        // The record points at an exit stub that every member's entry hands out.
        const record = decodeRecord(await target.readMemory(BigInt(info.record), RECORD_SIZE));
        assert.equal(record.calls, 0);
        const named = await svc.measureGroup(['partition', 'quicksort'], { name: 'sorting' });
        assert.equal(named.name, 'sorting');
        assert.equal((await svc.read()).length, 2, 'one result per group');
        await svc.remove(info.id);
        await svc.remove(named.id);
        for (const name of [...members, 'partition', 'quicksort'])
          assert.deepEqual(
            await target.readMemory(BigInt(elf.functionNamed(name)!.address), 8),
            original(name),
            `${name} restored`,
          );
        assert.equal(existsSync(journalPath(dir, elf)), false, 'journal gone once nothing is patched');
      },
    );

    it('refuses the whole group when one member cannot be patched, and writes and allocates nothing', async () => {
      const control = make();
      await control.svc.measureFunction('crc16_step');
      const expected = await control.svc.measureFunction('vm_run');

      const { svc, target } = make();
      await svc.measureFunction('crc16_step');
      const writes = target.log.length;
      const memory = new Map(target.mem);
      await assert.rejects(
        svc.measureGroup(['vm_run', 'crc16_step']),
        new RegExp(
          /^.*Group member crc16_step cannot be entry-patched, so nothing of the group was injected:/.source +
            / 0x[0-9a-f]+ is already patched by measurement #1 \(crc16_step\)/.source,
        ),
      );
      const refused = unpatchable(svc);
      await assert.rejects(
        svc.measureGroup(['vm_run', refused]),
        (e: unknown) =>
          e instanceof InjectionRefusedError &&
          e.message.startsWith(
            `Group member ${refused} cannot be entry-patched, so nothing of the group was injected: `,
          ) &&
          /out of the group/.test(e.message),
      );
      await assert.rejects(
        svc.measureGroup(['vm_run', 'fir_filter'], { payload: 'hardware' }),
        /Groups are measured with software accumulation only/,
      );
      assert.equal(target.log.length, writes, 'no memory or register written');
      assert.deepEqual(target.mem, memory);
      assert.equal(svc.list().length, 1);
      const after = await svc.measureFunction('vm_run');
      assert.deepEqual(after.stub, expected.stub, 'the allocator hands out what it would have without the refusals');
      assert.equal(after.record, expected.record);
    });

    it('refuses duplicate, unknown and empty members with what to do', async () => {
      const { svc, target } = make();
      await assert.rejects(
        svc.measureGroup(['vm_run', 'crc16_step', 'vm_run']),
        /vm_run is listed twice in the group; a function's entry can carry one patch\. List each function once\./,
      );
      await assert.rejects(
        svc.measureGroup(['vm_run', 'no_such_function']),
        new RegExp(
          /Group member no_such_function cannot be entry-patched, so nothing of the group was injected:/.source +
            / There is no function named 'no_such_function'/.source,
        ),
      );
      await assert.rejects(svc.measureGroup([]), /The group has no members: name the functions it measures together\./);
      assert.equal(target.log.length, 0, 'nothing written');
    });
  },
);

describe('group stubs share one record: every member costs the same per path and per pass', () => {
  const cases = [
    { family: 'rv32', path: rvPath, have: haveRv, support: () => rv32InjectionSupport() },
    { family: 'cortex-m', path: cmPath, have: haveCm, support: () => thumbInjectionSupport() },
  ];
  for (const c of cases) {
    it(
      `${c.family}: members whose own stubs differ are padded to one set of costs`,
      { skip: c.have ? false : `${c.family} fixture missing` },
      () => {
        const elf = ElfImage.loadSync(c.path);
        const support = c.support();
        const svc = new InjectionService({
          access: new MemoryTarget(elf),
          elf,
          support,
          isHalted: () => true,
          journalDir: mkdtempSync(join(scratch, 'pad-')),
          reserved: resolveReservedMemory(elf) as ReservedMemory,
        });
        const runtime = support.generator.buildRuntime(svc.layout);
        const at = svc.cave.start + 512;
        const single = new Map<string, ReturnType<typeof support.generator.buildStubs>>();
        const sites = new Map<string, PatchSite>();
        for (const f of elf.symbols.functions) {
          const plan = svc.plan(f.name);
          if (!plan.ok || plan.kind !== 'function' || single.has(f.name)) continue;
          try {
            single.set(
              f.name,
              support.generator.buildStubs(
                { kind: 'function', payload: 'software', record: svc.cave.start, at, entry: plan.entry },
                runtime,
                svc.layout,
              ),
            );
            sites.set(f.name, plan.entry);
          } catch {
            // a refusal of the relocator: not a candidate
          }
        }
        const names = [...single.keys()];
        const a = names[0]!;
        const b = names.find(
          (n) =>
            single.get(n)!.counted.outer !== single.get(a)!.counted.outer ||
            single.get(n)!.costs.entryNested !== single.get(a)!.costs.entryNested,
        );
        assert.ok(b, `two functions whose stubs differ (${names.length} candidates)`);
        const stubs = buildGroupStubs(
          support.generator,
          [a, b].map((name, i) => ({ name, entry: sites.get(name)!, at: at + 1024 * i })),
          svc.cave.start,
          runtime,
          svc.layout,
        );
        assert.deepEqual(stubs[1]!.costs, stubs[0]!.costs, `${a} and ${b}: path costs`);
        assert.equal(stubs[1]!.counted.outer, stubs[0]!.counted.outer, `${a} and ${b}: own overhead per pass`);
        assert.equal(
          Math.max(stubs[0]!.counted.outer, stubs[1]!.counted.outer),
          Math.max(single.get(a)!.counted.outer, single.get(b)!.counted.outer),
          'padded up to the costlier member, no further',
        );
        // The exit stubs are the same code on the same record, so the record may name either.
        const exitCode = (s: (typeof stubs)[number]): string[] => {
          const out: string[] = [];
          for (let at = s.exit! - s.address; out.length < 12;) {
            const insn = support.arch.codec.decode(s.bytes.subarray(at), s.address + at);
            out.push(insn.mnemonic);
            if (insn.kind === 'branch' || insn.kind === 'indirectBranch') break;
            at += insn.length;
          }
          return out;
        };
        assert.deepEqual(exitCode(stubs[1]!), exitCode(stubs[0]!));
      },
    );
  }
});
