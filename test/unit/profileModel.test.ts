import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CallGraphResponse } from '../../common/dapCustom';
import { resultSetDocument, type ResultSet } from '../../core/analysis/resultSet';
import { profileFromResultSets } from '../../core/profile/fromResultSet';
import { functionsByName, inclusiveShare } from '../../core/profile/model';
import { formatMeasure, unitLabel, unitOfEvent } from '../../core/profile/units';

// main -> work -> leaf, main -> log. Values chosen so that every derived figure can be checked by hand.
const graph: CallGraphResponse = {
  functions: [
    { name: 'main', address: 0x100, size: 40, path: '/fw/main.c', line: 10 },
    { name: 'work', address: 0x200, size: 30, path: '/fw/work.c', line: 3 },
    { name: 'leaf', address: 0x300, size: 8, path: '/fw/work.c', line: 20 },
    { name: 'log', address: 0x400, size: 8 },
  ],
  edges: [
    { caller: 'main', callee: 'work', kind: 'call', sites: [0x104], count: 1 },
    { caller: 'work', callee: 'leaf', kind: 'call', sites: [0x204], count: 50 },
    { caller: 'main', callee: 'log', kind: 'call', sites: [0x108], count: 2 },
  ],
  indirectCallers: [],
};

function run(event: string, method: string, total: number, measurements: ResultSet['measurements']): ResultSet {
  return {
    id: `rs-${total}`,
    createdAt: '2026-01-01T00:00:00.000Z',
    program: { executable: '/fw/fw.elf', family: 'riscv' },
    run: { kind: 'single-pass', event, totals: { [event]: total }, method },
    measurements,
    refused: [],
  };
}

function descentDocument(event: string, method: string, secondTotal = 10_000) {
  const first = run(event, method, 10_000, [
    { name: 'work', inclusive: { [event]: 6_000 }, calls: 1, min: 6_000, max: 6_000, mean: 6_000 },
    { name: 'log', inclusive: { [event]: 100 }, calls: 2 },
  ]);
  const second = run(event, method, secondTotal, [
    { name: 'leaf', inclusive: { [event]: secondTotal * 0.5 }, calls: 50 },
  ]);
  return resultSetDocument([first, second], {
    scenario: 'descent',
    metric: 'share',
    threshold: 0.05,
    roots: ['main'],
    runs: 3,
    cancelled: false,
    outcomes: [
      { name: 'main', status: 'measured', spansWindow: true, bound: 1 },
      { name: 'work', status: 'measured', value: 0.6, bound: 1, resultSet: 0 },
      { name: 'log', status: 'measured', value: 0.01, bound: 1, resultSet: 0 },
      { name: 'leaf', status: 'measured', value: 0.5, bound: 0.6, resultSet: 1 },
    ],
    callGraph: graph,
  });
}

describe('profile model from result sets', () => {
  it('keeps the run total, scales other runs by their share, and derives self only where exact', () => {
    const p = profileFromResultSets(descentDocument('instructions', 'software injection, minstret', 20_000));
    assert.equal(p.unit.kind, 'instructions');
    assert.equal(p.total?.value, 10_000);
    const f = functionsByName(p);
    // leaf measured 10,000 of a 20,000 run: half of the reference run's 10,000.
    assert.equal(f.get('leaf')?.inclusive?.value, 5_000);
    assert.equal(inclusiveShare(p, f.get('leaf')!), 0.5);
    // work's only callee is leaf (called by work alone): self = 6,000 - 5,000.
    assert.equal(f.get('work')?.self?.value, 1_000);
    assert.equal(f.get('leaf')?.self?.value, 5_000);
    assert.equal(f.get('work')?.location?.path, '/fw/work.c');
    assert.equal(f.get('leaf')?.boundShare, 0.6);
    assert.equal(f.get('work')?.calls, 1);
    assert.equal(f.get('log')?.calls, 2);
  });

  it('forms no exclusive for a function that calls through a pointer, and names run-on entries', () => {
    const doc = descentDocument('instructions', 'software injection, minstret');
    // leaf has no direct callee but calls through a pointer; log's entry is run on into from leaf.
    doc.analysis!.callGraph = { ...graph, indirectCallers: ['leaf'], fallThrough: [{ caller: 'leaf', callee: 'log' }] };
    const p = profileFromResultSets(doc);
    const f = functionsByName(p);
    assert.equal(f.get('leaf')?.self, undefined, 'exclusive is not the inclusive');
    assert.equal(f.get('leaf')?.indirectCalls, true);
    assert.match(f.get('leaf')?.selfNote ?? '', /^not formed/);
    assert.deepEqual(f.get('log')?.runOnFrom, ['leaf']);
    assert.match(f.get('log')?.reason ?? '', /^Leaves out the passes that run on into it from leaf/);
    // Without the pointer, leaf's exclusive is its inclusive (it calls nothing).
    const plain = functionsByName(
      profileFromResultSets(descentDocument('instructions', 'software injection, minstret')),
    );
    assert.equal(plain.get('leaf')?.self?.value, 5_000);
    // The edges carry their value per caller and its provenance.
    const edge = p.edges.find((e) => e.caller === f.get('work')!.id && e.callee === f.get('leaf')!.id);
    assert.equal(edge?.inclusive?.value, 5_000);
    assert.equal(edge?.provenance, 'injected');
  });

  it('lists every run, the baseline included, and the edges with their call counts', () => {
    const p = profileFromResultSets(descentDocument('instructions', 'software injection, minstret'));
    assert.deepEqual(
      p.runs.map((r) => r.role),
      ['baseline', 'batch', 'batch'],
    );
    assert.deepEqual(p.runs[2]?.measured, ['leaf']);
    const f = functionsByName(p);
    assert.equal(f.get('leaf')?.run, 2);
    const edge = p.edges.find((e) => e.caller === f.get('work')!.id && e.callee === f.get('leaf')!.id);
    assert.equal(edge?.calls, 50);
    assert.equal(p.analysis?.threshold, 0.05);
  });

  it('labels SysTick counts as ticks with a quantisation bound of one tick per call, never as cycles', () => {
    // Older result sets filed SysTick counts under the event id `cycles`.
    const p = profileFromResultSets(descentDocument('cycles', 'software injection, SysTick'), {
      perTick: { count: 40, kind: 'instructions' },
    });
    assert.equal(p.unit.kind, 'ticks');
    assert.equal(unitLabel(p.unit), 'SysTick ticks (×40 instructions)');
    const leaf = functionsByName(p).get('leaf')!;
    assert.deepEqual(leaf.inclusive?.bound, { low: 4_950, high: 5_050, kind: 'quantisation' });
    const text = formatMeasure(leaf.inclusive!, p.unit);
    assert.match(text, /^5,000 SysTick ticks \(×40 instructions\) ±50 ticks$/);
    assert.doesNotMatch(text, /cycles/);
  });

  it('maps counter events to units', () => {
    assert.equal(unitOfEvent('instructions').kind, 'instructions');
    assert.equal(unitOfEvent('cycles').kind, 'cycles');
    assert.equal(unitOfEvent('cycles', 'software injection, SysTick').kind, 'ticks');
    assert.deepEqual(unitOfEvent('dwt.lsu'), { kind: 'events', event: 'dwt.lsu' });
  });
});
