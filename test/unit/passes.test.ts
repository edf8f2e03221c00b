import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { InjectedResult } from '../../common/dapCustom';
import { MetricsEngine, formatMetric } from '../../core/analysis/metrics';
import {
  formatPassShare,
  passCountsOf,
  passFigures,
  passShare,
  passStats,
  passSummary,
  passUnit,
  programTotal,
  type PassCounts,
} from '../../core/analysis/passes';
import { describingSet, rawValues, resultSetDocument, type ResultSet } from '../../core/analysis/resultSet';
import { formatCount } from '../../core/analysis/statistics';
import { profileFromResultSets } from '../../core/profile/fromResultSet';
import { formatNumber, formatShare } from '../../core/profile/units';

// The pass arithmetic against passes generated here one by one: the reference sums and extremes
// are formed from the individual passes, the figures from the record a payload keeps of them.

/** A small deterministic generator (mulberry32): the same passes on every run. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Pass {
  /** The counter delta of the pass, as counted. */
  raw: number;
  /** Other measurements' payloads inside it. */
  nested: number;
}

/** What the payload keeps of the passes (recordLayout.ts): sums, extremes and the last eight, nested out. */
function record(passes: readonly Pass[], own: number): PassCounts {
  const perPass = passes.map((p) => p.raw - p.nested);
  return {
    passes: passes.length,
    total: passes.reduce((s, p) => s + p.raw, 0),
    nested: passes.reduce((s, p) => s + p.nested, 0),
    ownPerPass: own,
    min: passes.length ? Math.min(...perPass) : null,
    max: passes.length ? Math.max(...perPass) : null,
    last: perPass.slice(-8),
  };
}

function randomPasses(next: () => number, own: number): Pass[] {
  const n = 1 + Math.floor(next() * 40);
  const base = Math.floor(next() * 5000);
  return Array.from({ length: n }, () => {
    const nested = next() < 0.3 ? Math.floor(next() * 200) : 0;
    return { raw: own + base + Math.floor(next() * 300) + nested, nested };
  });
}

describe('one definition of a pass', () => {
  it(
    'forms total, mean, min, max and the last passes from the same compensated passes (600 ' + 'random measurements)',
    () => {
      const next = rng(28);
      for (let k = 0; k < 600; k++) {
        const own = Math.floor(next() * 60);
        const passes = randomPasses(next, own);
        const f = passFigures(record(passes, own))!;
        const costs = passes.map((p) => p.raw - p.nested - own);
        const sum = costs.reduce((s, v) => s + v, 0);
        assert.equal(f.passes, passes.length);
        assert.equal(f.total, sum, 'total = the sum of the compensated passes');
        assert.equal(f.min, Math.min(...costs));
        assert.equal(f.max, Math.max(...costs));
        assert.ok(f.min <= f.mean && f.mean <= f.max, `mean ${f.mean} within [${f.min}, ${f.max}]`);
        assert.ok(Math.abs(f.mean * f.passes - f.total) < 1e-6, 'mean x passes = total');
        assert.deepEqual(f.last, costs.slice(-8));
        // Raw: the same passes with the own payload in, labelled as raw, and consistent among themselves.
        assert.equal(f.raw.total, sum + own * passes.length);
        assert.ok(f.raw.min <= f.raw.mean && f.raw.mean <= f.raw.max);
        assert.equal(f.raw.min - f.min, own);
        assert.equal(f.clamped, undefined);
        assert.equal(f.widened, undefined);
      }
    },
  );

  it('gives the same share in the editor and in a profile row formed from the same run', () => {
    const next = rng(29);
    const engine = new MetricsEngine();
    for (let k = 0; k < 200; k++) {
      const own = 5 + Math.floor(next() * 30);
      const results: InjectedResult[] = [0, 1, 2].map((id) => {
        const c = record(randomPasses(next, own), own);
        const compensated = c.total - c.nested - own * c.passes;
        return {
          id,
          name: `f${id}`,
          counter: 'minstret',
          calls: c.passes,
          passes: c.passes,
          untracked: 0,
          total: c.total,
          compensatedTotal: compensated,
          overheadPerPass: own,
          nested: c.nested,
          min: c.min,
          max: c.max,
          mean: c.total / c.passes,
          meanCompensated: compensated / c.passes,
          lastPasses: c.last!.map((x) => x - own),
        };
      });
      const payloads = results.reduce((s, r) => s + (r.total - r.compensatedTotal), 0);
      // The functions run inside the program: its own total holds theirs, and some more.
      const own_ = results.reduce((s, r) => s + r.compensatedTotal, 0);
      const program = own_ + Math.floor(next() * 100_000);
      const elapsed = program + payloads;
      const whole = programTotal(elapsed, results);
      assert.equal(whole, program, "the run's own total is the elapsed count less every payload");
      const rs: ResultSet = {
        id: 'r',
        createdAt: '2026-01-01T00:00:00Z',
        program: { executable: 'a.elf' },
        run: { kind: 'single-pass', event: 'instructions', totals: { instructions: whole! }, method: 'test' },
        measurements: results.map((r) => ({
          name: r.name,
          inclusive: { instructions: passFigures(passCountsOf(r))!.total },
          calls: r.calls,
        })),
        refused: [],
      };
      for (const r of results) {
        const lens: number = passShare(passFigures(passCountsOf(r))!.total, whole)!;
        const row: number = engine.evaluate(rawValues(rs, r.name)!).get('share')!;
        assert.ok(Math.abs(lens - row) < 1e-12, `${r.name}: lens ${lens} = row ${row}`);
        assert.equal(formatPassShare(lens), formatShare(row));
      }
    }
  });

  it('clamps a pass the compensation pushes below zero, and says by how much', () => {
    // A near-empty pass on a coarse counter: 2 units counted, 3 units of payload removed.
    const passes: Pass[] = [
      { raw: 2, nested: 0 },
      { raw: 9, nested: 0 },
      { raw: 3, nested: 0 },
    ];
    const f = passFigures(record(passes, 3))!;
    assert.equal(f.min, 0);
    assert.equal(f.max, 6);
    assert.equal(f.total, 5, 'total = -1 + 6 + 0, the negative pass counts as itself in the exact sum');
    assert.ok(f.min <= f.mean && f.mean <= f.max);
    assert.deepEqual(f.clamped, { by: 1 });
    const text = passStats(f, passUnit('minstret'), undefined)
      .map((s) => `${s.label}: ${s.value}`)
      .join('\n');
    assert.match(text, /compensation \(3 instructions per pass\) exceeded a pass by up to 1/);
    assert.doesNotMatch(text, /-0|−0/);
  });

  it('never prints a negative cost when every pass is below zero', () => {
    const f = passFigures({ passes: 4, total: 0.7, nested: 0, ownPerPass: 0.175, min: 0, max: 0, last: [0, 0] })!;
    assert.equal(f.total, 0);
    assert.equal(f.mean, 0);
    assert.equal(f.min, 0);
    assert.equal(f.max, 0);
    assert.deepEqual(f.last, [0, 0]);
    assert.ok(f.clamped && Math.abs(f.clamped.by - 0.175) < 1e-12);
    const line = passSummary(4, f, passUnit('SysTick CVR'), passShare(f.total, 1000));
    assert.doesNotMatch(line, /-0/);
    assert.match(line, /0\.0 % of the run/);
  });

  it('widens min … max by the rounding of the per-pass values to hold the exact mean', () => {
    // Every pass recorded as 27 units; the exact total says 26.9 on average (fixed-point scaling on the target).
    const f = passFigures({ passes: 10, total: 269, nested: 0, ownPerPass: 0, min: 27, max: 27 })!;
    assert.ok(f.min <= f.mean && f.mean <= f.max);
    assert.ok(f.widened && Math.abs(f.widened.by - 0.1) < 1e-9);
  });

  it('has no figures before the first pass', () => {
    assert.equal(passFigures({ passes: 0, total: 0, nested: 0, ownPerPass: 4, min: null, max: null }), undefined);
    assert.equal(passSummary(3, undefined, passUnit('minstret'), undefined), '3 calls, no complete pass yet');
  });
});

describe('units and signs', () => {
  it('calls SysTick counts ticks, whatever the event id, with the ratio when known', () => {
    assert.equal(passUnit('SysTick', 'cycles').label, 'SysTick ticks');
    assert.equal(passUnit('SysTick CVR').label, 'SysTick ticks');
    assert.equal(passUnit('RISC-V counters', 'instructions').label, 'instructions');
    assert.equal(passUnit('mcycle').label, 'cycles');
    const u = passUnit('SysTick CVR', undefined, { count: 40, kind: 'instructions' });
    const f = passFigures({ passes: 1, total: 2499 + 3, nested: 0, ownPerPass: 3, min: 2502, max: 2502 })!;
    const stats = passStats(f, u, undefined);
    assert.ok(stats.some((s) => s.value === '2499 SysTick ticks'));
    assert.ok(stats.some((s) => s.label === 'unit' && s.value === 'SysTick ticks (×40 instructions each)'));
    assert.ok(!stats.some((s) => /cycle/.test(s.value)));
  });

  it('prints a value that rounds to zero without a minus sign', () => {
    assert.equal(formatCount(-0.04), '0.0');
    assert.equal(formatCount(-0), '0');
    assert.equal(formatNumber(-0.001), '0');
    assert.equal(formatShare(-0.00001, 2), '0.00 %');
    assert.equal(formatPassShare(-0.00001, 2), '0.00 %');
    assert.equal(formatMetric('percent', -0.0000175), '0.00%');
    assert.equal(formatMetric('count', -0.04), '0.0');
    assert.equal(formatCount(-1.5), '-1.5', 'a real negative value keeps its sign');
  });
});

describe('the run that describes a profile', () => {
  const set = (id: string, measured: boolean, counter?: string): ResultSet => ({
    id,
    createdAt: '2026-01-01T00:00:00Z',
    program: { executable: 'a.elf' },
    run: {
      kind: 'single-pass',
      event: 'instructions',
      totals: { instructions: 1000 },
      method: measured ? `software injection, ${counter}; window main` : 'software injection, no counter; window main',
      ...(counter !== undefined ? { counter } : {}),
    },
    measurements: measured ? [{ name: 'f', inclusive: { instructions: 100 }, calls: 1 }] : [],
    refused: measured ? [] : [{ name: 'g', reason: 'too short' }],
  });

  it('is the first run that measured something, with its counter as a field', () => {
    const sets = [set('a', false), set('b', true, 'minstret')];
    assert.equal(describingSet(sets)?.id, 'b');
    const p = profileFromResultSets(resultSetDocument(sets));
    assert.deepEqual(p.provenance, { kind: 'injected', payload: 'accumulated', counter: 'minstret' });
    assert.equal(describingSet([set('a', false)])?.id, 'a', 'with no run that measured, the first');
  });
});
