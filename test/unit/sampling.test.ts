import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { SampleLocation } from '../../common/dapCustom';
import { monitorSampleReader, pcFromMonitorRegisters } from '../../adapter/arch/monitorRegisters';
import { stripEcho } from '../../adapter/sampling/hmpMonitor';
import { parseInstructionCounts } from '../../adapter/sampling/pluginSampler';
import { RandomOffsetSchedule } from '../../adapter/sampling/sampler';
import { profileFromSamples, UNKNOWN_FUNCTION } from '../../core/profile/fromSamples';
import { SampleWindow } from '../../core/profile/sampleWindow';
import { formatMeasure, provenanceLabel } from '../../core/profile/units';
import { wilsonInterval } from '../../core/profile/wilson';

describe('Wilson interval', () => {
  it('matches the textbook value for 10 of 100 at 95 %', () => {
    const { low, high } = wilsonInterval(10, 100);
    // Wilson (1927) for p̂ = 0.1, n = 100, z = 1.96: [0.0552, 0.1744].
    assert.ok(Math.abs(low - 0.0552) < 5e-4, String(low));
    assert.ok(Math.abs(high - 0.1744) < 5e-4, String(high));
  });

  it('always contains the observed share and stays in [0, 1]', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1_000_000 }), fc.double({ min: 0, max: 1, noNaN: true }), (n, f) => {
        const k = Math.round(f * n);
        const { low, high } = wilsonInterval(k, n);
        return low >= 0 && high <= 1 && low <= k / n + 1e-12 && high >= k / n - 1e-12;
      }),
    );
  });

  it('narrows as samples grow', () => {
    const a = wilsonInterval(100, 1_000);
    const b = wilsonInterval(10_000, 100_000);
    assert.ok(b.high - b.low < (a.high - a.low) / 3);
  });
});

describe('profile from samples', () => {
  const locations = new Map<number, SampleLocation>([
    [0x100, { address: 0x100, function: 'hot', functionAddress: 0x100, path: '/fw/a.c', line: 10 }],
    [0x104, { address: 0x104, function: 'hot', functionAddress: 0x100, path: '/fw/a.c', line: 11 }],
    [0x106, { address: 0x106, function: 'hot', functionAddress: 0x100, path: '/fw/a.c', line: 11 }],
    [0x200, { address: 0x200, function: 'cold', functionAddress: 0x200, path: '/fw/b.c', line: 5 }],
    [0x900, { address: 0x900 }],
  ]);
  const counts: Array<[number, number]> = [
    [0x100, 30],
    [0x104, 20],
    [0x106, 25],
    [0x200, 20],
    [0x900, 5],
  ];

  it('sums addresses into lines and functions, with a 95 % Wilson bound on every sampled figure', () => {
    const p = profileFromSamples({
      executable: 'fw.elf',
      sampler: 'qemu-monitor',
      attribution: 'translation-block-start',
      halting: false,
      unit: 'samples',
      counts,
      locations,
    });
    assert.equal(p.total?.value, 100);
    assert.deepEqual(p.unit, { kind: 'samples' });
    assert.deepEqual(p.provenance, {
      kind: 'sampled',
      sampler: 'qemu-monitor',
      halting: false,
      attribution: 'translation-block-start',
    });
    const hot = p.functions.find((f) => f.name === 'hot')!;
    assert.equal(hot.self?.value, 75);
    assert.equal(hot.status, 'sampled');
    assert.deepEqual(hot.location, { path: '/fw/a.c', line: 10 });
    const ci = wilsonInterval(75, 100);
    assert.equal(hot.self?.bound?.kind, 'confidence95');
    assert.ok(
      Math.abs(hot.self!.bound!.low - ci.low * 100) < 1e-9 && Math.abs(hot.self!.bound!.high - ci.high * 100) < 1e-9,
    );
    assert.equal(p.functions.find((f) => f.name === UNKNOWN_FUNCTION)?.self?.value, 5);
    // Lines by count, heaviest first; 0x104 and 0x106 are one line.
    assert.deepEqual(
      p.lines.map((l) => [l.path, l.line, l.self.value]),
      [
        ['/fw/a.c', 11, 45],
        ['/fw/a.c', 10, 30],
        ['/fw/b.c', 5, 20],
      ],
    );
    assert.equal(p.addresses.length, 5);
    assert.equal(p.lines[0]!.function, hot.id);
    assert.match(
      provenanceLabel(p.provenance),
      /non-halting PC sampling \(qemu-monitor; a sample's PC is the start of the running translation block\)/,
    );
    assert.match(formatMeasure(hot.self!, p.unit), /^75 samples −\d+(\.\d+)?\/\+\d+(\.\d+)? samples$/);
  });

  it('exact counts are instructions and carry no bound', () => {
    const p = profileFromSamples({
      executable: 'fw.elf',
      sampler: 'qemu-plugin',
      attribution: 'exact-count',
      halting: false,
      unit: 'instructions',
      counts,
      locations,
    });
    assert.deepEqual(p.unit, { kind: 'instructions' });
    assert.ok(p.functions.every((f) => f.self?.bound === undefined));
    assert.ok(p.lines.every((l) => l.self.bound === undefined));
  });
});

describe('sample window', () => {
  it('cumulative keeps everything', () => {
    const w = new SampleWindow(undefined);
    w.add(0, [[1, 2]]);
    w.add(10_000, [
      [1, 3],
      [2, 1],
    ]);
    assert.deepEqual(
      [...w.counts()],
      [
        [1, 5],
        [2, 1],
      ],
    );
    assert.equal(w.total, 6);
  });

  it('a sliding window drops batches older than it and matches a recount', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.tuple(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 1, max: 9 })), { maxLength: 4 }), {
          maxLength: 30,
        }),
        (batches) => {
          const w = new SampleWindow(1_000);
          batches.forEach((b, i) => w.add(i * 250, b));
          const now = (batches.length - 1) * 250;
          const expected = new Map<number, number>();
          batches.forEach((b, i) => {
            if (i * 250 > now - 1_000) for (const [a, n] of b) expected.set(a, (expected.get(a) ?? 0) + n);
          });
          const got = new Map(w.counts());
          return (
            [...expected].every(([a, n]) => got.get(a) === n) &&
            got.size === expected.size &&
            w.total === [...expected.values()].reduce((s, n) => s + n, 0)
          );
        },
      ),
    );
  });
});

describe('QEMU monitor replies', () => {
  it('finds the PC in RISC-V and Arm `info registers` text, after the line editor echo', () => {
    const rv = stripEcho('i\x1b[K\x1b[Dinfo registers\x1b[K\r\npc       80000e40\r\nmhartid  00000000\r\n');
    assert.equal(pcFromMonitorRegisters('riscv', rv), 0x80000e40);
    const arm = stripEcho(
      'info registers\r\nR00=00000001 R01=00000002 R02=00000003 R03=00000004\r\nR12=00000000 ' +
        'R13=200047d8 R14=fffffff9 R15=000004b2\r\nXPSR=61000000 -ZC- T handler\r\n',
    );
    assert.equal(pcFromMonitorRegisters('cortex-m', arm), 0x4b2);
    assert.equal(pcFromMonitorRegisters('riscv', 'unknown command\n'), undefined);
    assert.equal(pcFromMonitorRegisters('arc', rv), undefined);
  });

  it('tells an Arm core completing an exception return (an EXC_RETURN token in R15) from code', () => {
    const armSample = monitorSampleReader('cortex-m');
    const rvSample = monitorSampleReader('riscv');
    const arm = (pc: string) => `R12=00000000 R13=200047b8 R14=fffffff9 R15=${pc}\r\nXPSR=2100000f -C- T handler\r\n`;
    assert.deepEqual(armSample(arm('000004b2')), { pc: 0x4b2 });
    assert.equal(armSample(arm('fffffff8')), 'return-token');
    assert.equal(armSample(arm('ffffffbc')), 'return-token');
    assert.equal(armSample(arm('fefffffe')), 'return-token', 'FNC_RETURN (ARMv8-M)');
    assert.deepEqual(armSample(arm('fefffffc')), { pc: 0xfefffffc });
    // RISC-V has no return tokens: any address is code.
    assert.deepEqual(rvSample('pc       fffffff8\r\n'), { pc: 0xfffffff8 });
    assert.equal(rvSample('unknown command\n'), undefined);
  });
});

describe('instruction-count snapshots', () => {
  it('parses the plugin format and rejects anything else', () => {
    const s = parseInstructionCounts('cyclelens-insn-counts 1 1626 3\n8000036e 20\n800005d0 160\n');
    assert.deepEqual(
      [...s.counts],
      [
        [0x8000036e, 20],
        [0x800005d0, 160],
      ],
    );
    assert.equal(s.dropped, 3);
    assert.throws(() => parseInstructionCounts('garbage\n'), /header/);
    assert.throws(() => parseInstructionCounts('cyclelens-insn-counts 1 1 0\nzz x\n'), /line 2/);
  });
});

describe('random-offset schedule', () => {
  it('puts one sample inside every interval, at the drawn offset', () => {
    const draws = [0.1, 0.9, 0.5];
    const s = new RandomOffsetSchedule(10, 0, () => draws.shift()!);
    assert.equal(s.next(0), 1);
    assert.equal(s.next(1), 19);
    assert.equal(s.next(19), 25);
  });

  it('starts afresh instead of bursting after falling behind', () => {
    const s = new RandomOffsetSchedule(10, 0, () => 0.5);
    s.next(0);
    assert.equal(s.next(100), 105);
  });
});

describe('line heat and source maps', () => {
  it('levels rise with the count on a square-root scale, the hottest line at the top level', async () => {
    const { heatByFile, linesByLevel, HEAT_LEVELS } = await import('../../core/profile/lineHeat');
    const locations = new Map<number, SampleLocation>([
      [0x10, { address: 0x10, function: 'f', path: '/fw/a.c', line: 1 }],
      [0x20, { address: 0x20, function: 'f', path: '/fw/a.c', line: 2 }],
      [0x30, { address: 0x30, function: 'g', path: '/fw/b.c', line: 7 }],
    ]);
    const p = profileFromSamples({
      executable: 'x',
      sampler: 's',
      attribution: 'halting',
      halting: true,
      unit: 'samples',
      counts: [
        [0x10, 400],
        [0x20, 100],
        [0x30, 1],
      ],
      locations,
    });
    const heat = heatByFile(p);
    const a = heat.get('/fw/a.c')!;
    assert.equal(a.find((l) => l.line === 1)!.level, HEAT_LEVELS - 1);
    assert.equal(a.find((l) => l.line === 2)!.level, Math.floor(Math.sqrt(0.25) * HEAT_LEVELS));
    assert.equal(heat.get('/fw/b.c')![0]!.level, 0);
    assert.ok(a[0]!.low! < a[0]!.share && a[0]!.high! > a[0]!.share);
    const levels = linesByLevel(a);
    assert.equal(levels.length, HEAT_LEVELS);
    assert.deepEqual(levels[HEAT_LEVELS - 1], [1]);
  });

  it('remaps the longest matching prefix at a separator boundary only', async () => {
    const { remapSourcePath } = await import('../../core/profile/lineHeat');
    const map = { '/build': '/home/me/fw', '/build/lib/': '/opt/lib' };
    assert.equal(remapSourcePath('/build/src/main.c', map), '/home/me/fw/src/main.c');
    assert.equal(remapSourcePath('/build/lib/x.c', map), '/opt/lib/x.c');
    assert.equal(remapSourcePath('/buildroot/x.c', map), '/buildroot/x.c');
    assert.equal(remapSourcePath('/other/x.c', undefined), '/other/x.c');
  });
});

describe('line heat index (the repaint path)', () => {
  it('gives the same heat as the profile built from the same counts', async () => {
    const { heatByFile, LineHeatIndex } = await import('../../core/profile/lineHeat');
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 1, max: 500 })), {
          minLength: 1,
          maxLength: 60,
        }),
        (pairs) => {
          const counts = new Map<number, number>();
          for (const [a, n] of pairs) counts.set(a * 2, (counts.get(a * 2) ?? 0) + n);
          const locations = new Map<number, SampleLocation>();
          const index = new LineHeatIndex();
          for (const a of counts.keys()) {
            const loc: SampleLocation =
              a % 10 === 0
                ? { address: a }
                : { address: a, function: `f${a % 3}`, path: `/fw/${a % 2}.c`, line: 1 + (a % 7) };
            locations.set(a, loc);
            index.locate(a, loc);
          }
          const p = profileFromSamples({
            executable: 'x',
            sampler: 's',
            attribution: 'halting',
            halting: true,
            unit: 'samples',
            counts,
            locations,
          });
          const expected = heatByFile(p);
          const got = index.heat(counts, true);
          const norm = (
            m: Map<
              string,
              Array<{ line: number; level: number; count: number; share: number; low?: number; high?: number }>
            >,
          ) =>
            [...m]
              .map(([f, ls]) => [
                f,
                ls
                  .map((l) => [l.line, l.level, l.count, l.share.toFixed(9), l.low?.toFixed(9), l.high?.toFixed(9)])
                  .sort(),
              ])
              .sort();
          assert.deepEqual(norm(got), norm(expected));
        },
      ),
    );
  });

  it('the repaint path (tally, levels per file, one line on hover) agrees with the full heat', async () => {
    const { linesByLevel, LineHeatIndex } = await import('../../core/profile/lineHeat');
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 60 }), fc.integer({ min: 1, max: 500 })), {
          minLength: 1,
          maxLength: 80,
        }),
        (pairs) => {
          const counts = new Map<number, number>();
          for (const [a, n] of pairs) counts.set(a * 2, (counts.get(a * 2) ?? 0) + n);
          const index = new LineHeatIndex();
          for (const a of counts.keys())
            index.locate(a, a % 10 === 0 ? {} : { function: `f${a % 3}`, path: `/fw/${a % 3}.c`, line: 1 + (a % 11) });
          const full = index.heat(counts, true);
          index.tally(counts);
          assert.deepEqual([...index.paths].sort(), [...full.keys()].sort());
          for (const [path, lines] of full) {
            assert.deepEqual(
              index.levels(path),
              linesByLevel(lines).map((l) => [...l].sort((x, y) => x - y)),
            );
            for (const l of lines) assert.deepEqual(index.lineHeat(path, l.line, true), l);
          }
          assert.equal(index.lineHeat('/fw/0.c', 999, true), undefined);
        },
      ),
    );
  });

  it('a repaint hands over exactly the levels whose lines changed', async () => {
    const { changedLevels } = await import('../../core/profile/lineHeat');
    const levels = fc.array(fc.uniqueArray(fc.integer({ min: 1, max: 30 }), { maxLength: 6 }), {
      minLength: 8,
      maxLength: 8,
    });
    fc.assert(
      fc.property(levels, levels, (before, after) => {
        const changed = new Set(changedLevels(before, after));
        for (let level = 0; level < 8; level++)
          assert.equal(
            changed.has(level),
            JSON.stringify(before[level]) !== JSON.stringify(after[level]),
            `level ${level}`,
          );
        assert.deepEqual(changedLevels(after, after), []);
        assert.deepEqual(changedLevels(undefined, after), [0, 1, 2, 3, 4, 5, 6, 7]);
      }),
    );
  });
});
