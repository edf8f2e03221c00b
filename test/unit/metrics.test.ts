import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  CALLS,
  MetricDefinitionError,
  MetricsEngine,
  STANDARD_METRICS,
  calleesKey,
  formatMetric,
  inclusiveKey,
  rawFromEvents,
  totalKey,
  type MetricDefinition,
} from '../../core/analysis/metrics';

// The metrics engine: exactly the metrics whose inputs are present are computed, and only metrics
// declared (and structurally) monotone may drive pruning.

const engine = new MetricsEngine();

describe('metrics engine', () => {
  it('computes exactly the metrics whose inputs a result set has', () => {
    const onlyInstructions = engine.evaluate({
      [inclusiveKey('instructions')]: 300,
      [totalKey('instructions')]: 1200,
      [CALLS]: 3,
    });
    assert.deepEqual([...onlyInstructions.keys()].sort(), [
      'inclusive.instructions',
      'perCall.instructions',
      'share.instructions',
    ]);
    assert.equal(onlyInstructions.get('share.instructions'), 0.25);
    assert.equal(onlyInstructions.get('perCall.instructions'), 100);

    const full = engine.evaluate({
      [inclusiveKey('instructions')]: 300,
      [inclusiveKey('cycles')]: 450,
      [totalKey('cycles')]: 900,
      [calleesKey('cycles')]: 150,
      [inclusiveKey('lsu')]: 45,
      [inclusiveKey('icacheMisses')]: 6,
      [inclusiveKey('icacheAccesses')]: 300,
      [CALLS]: 2,
    });
    assert.equal(full.get('cpi'), 1.5);
    assert.ok(Math.abs(full.get('ipc')! - 2 / 3) < 1e-12);
    assert.equal(full.get('exclusive.cycles'), 300);
    assert.equal(full.get('exclusiveShare.cycles'), 300 / 900);
    assert.equal(full.get('lsuStallShare'), 0.1);
    assert.equal(full.get('icacheMissRate'), 0.02);
    assert.equal(full.get('icacheMpki'), 20);
    assert.equal(full.has('share.instructions'), false, 'no instruction total: no instruction share');
    assert.equal(full.has('exclusive.instructions'), false, 'no measured callees in instructions');
    assert.equal(full.has('dcacheMissRate'), false);
  });

  it('leaves out a ratio over zero and everything that reads it', () => {
    const v = engine.evaluate({
      [inclusiveKey('cycles')]: 10,
      [inclusiveKey('instructions')]: 0,
      [CALLS]: 0,
      [totalKey('cycles')]: 0,
    });
    assert.equal(v.has('cpi'), false);
    assert.equal(v.has('perCall.cycles'), false);
    assert.equal(v.has('share.cycles'), false);
    assert.equal(v.get('ipc'), 0);
  });

  it('ignores keys it does not know and values that are not finite', () => {
    const v = engine.evaluate({ [inclusiveKey('cycles')]: Number.NaN, bogus: 3, [totalKey('cycles')]: 5 });
    assert.equal(v.size, 0);
  });

  it('plans once per set of available values', () => {
    const a = engine.computable([inclusiveKey('cycles'), CALLS]);
    const b = engine.computable([CALLS, inclusiveKey('cycles')]);
    assert.equal(a, b, 'the same plan object');
    assert.deepEqual(
      a.map((m) => m.id),
      ['inclusive.cycles', 'perCall.cycles'],
    );
  });

  it('reports what a metric needs in the end', () => {
    assert.deepEqual(
      [...engine.requirements('exclusiveShare.cycles')].sort(),
      [calleesKey('cycles'), inclusiveKey('cycles'), totalKey('cycles')].sort(),
    );
  });

  it('maps counter events to the values metrics read', () => {
    assert.deepEqual(
      rawFromEvents({ cycles: 5, 'dwt.lsu': 2, 'pmu.0x0001': 1, 'arc.icm': 9, 'pmu.0x0014': 40 }, 'inclusive'),
      {
        'inclusive:cycles': 5,
        'inclusive:lsu': 2,
        'inclusive:icacheMisses': 1,
        'inclusive:icacheAccesses': 40,
      },
    );
  });

  it('formats values by kind', () => {
    assert.equal(formatMetric('percent', 0.1234), '12.3%');
    assert.equal(formatMetric('percent', 0.0042), '0.42%');
    assert.equal(formatMetric('ratio', 1.5), '1.500');
    assert.equal(formatMetric('count', 12), '12');
  });
});

describe('monotone metrics', () => {
  it('hands out only monotone metrics for pruning', () => {
    for (const id of ['share', 'inclusive', 'share.cycles', 'inclusive.instructions'])
      assert.equal(engine.monotone(id).monotone, true);
    for (const id of ['perCall.cycles', 'cpi', 'exclusive.instructions', 'icacheMissRate']) {
      assert.throws(
        () => engine.monotone(id),
        (err: Error) =>
          err instanceof MetricDefinitionError && /not monotone/.test(err.message) && /share/.test(err.message),
      );
    }
    assert.throws(() => engine.monotone('nope'), /unknown metric/);
  });

  const base: Omit<MetricDefinition, 'id' | 'inputs' | 'monotone'> = {
    label: 'x',
    short: 'x',
    format: 'count',
    compute: ([x]) => x,
  };

  it('refuses a metric declared monotone that reads calls or callee sums', () => {
    assert.throws(
      () => new MetricsEngine([...STANDARD_METRICS, { ...base, id: 'callsShare', inputs: [CALLS], monotone: true }]),
      /declared monotone but reads 'calls'/,
    );
    assert.throws(
      () => new MetricsEngine([...STANDARD_METRICS, { ...base, id: 'x', inputs: ['cpi'], monotone: true }]),
      /reads metric 'cpi', which is not/,
    );
    assert.throws(
      () =>
        new MetricsEngine([
          ...STANDARD_METRICS,
          { ...base, id: 'x', inputs: ['inclusive.cycles', 'inclusive.instructions'], monotone: true },
        ]),
      /scales exactly one/,
    );
    // Scaling a monotone value by run constants keeps it monotone.
    const ok = new MetricsEngine([
      ...STANDARD_METRICS,
      {
        ...base,
        id: 'perMille',
        inputs: ['inclusive.cycles', totalKey('cycles')],
        monotone: true,
        compute: ([x, t]) => (1000 * x!) / t!,
      },
    ]);
    assert.equal(ok.monotone('perMille').id, 'perMille');
  });

  it('refuses unknown inputs, cycles and duplicates', () => {
    assert.throws(
      () => new MetricsEngine([{ ...base, id: 'a', inputs: ['b'], monotone: false }]),
      /neither a raw value nor a metric/,
    );
    assert.throws(
      () =>
        new MetricsEngine([
          { ...base, id: 'a', inputs: ['b'], monotone: false },
          { ...base, id: 'b', inputs: ['a'], monotone: false },
        ]),
      /cycle: a -> b -> a/,
    );
    assert.throws(
      () =>
        new MetricsEngine([
          { ...base, id: 'a', inputs: [CALLS], monotone: false },
          { ...base, id: 'a', inputs: [CALLS], monotone: false },
        ]),
      /defined twice/,
    );
  });

  it('orders metrics after their inputs', () => {
    const order = engine.metrics.map((m) => m.id);
    for (const m of engine.metrics)
      for (const input of m.inputs)
        if (order.includes(input)) assert.ok(order.indexOf(input) < order.indexOf(m.id), `${input} before ${m.id}`);
  });
});
