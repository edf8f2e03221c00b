import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NOT_MEASURED, profileStacks, treeFigures, waterFill, withEdgeValues } from '../../core/profile/callTree';
import { emptyProfile, type Profile, type ProfileFunction } from '../../core/profile/model';

/**
 * The call tree's split of measured values over callers (core/profile/callTree.ts): caps from the
 * callers' own measured values, estimated marks with their bounds, no own value that no measurement
 * supports, and stacks that add up to the run's total. Every expected figure is worked out by hand.
 */

function profile(
  fns: Array<Omit<ProfileFunction, 'id' | 'status'> & { status?: ProfileFunction['status'] }>,
  edges: Array<[string, string, number?]>,
  total: number,
): Profile {
  const p = emptyProfile({
    generator: 't',
    program: { executable: 'x.elf' },
    unit: { kind: 'instructions' },
    provenance: { kind: 'injected', payload: 'accumulated', counter: 'minstret' },
  });
  p.functions = fns.map((f, id) => ({ status: 'measured', ...f, id }));
  const id = (name: string): number => p.functions.findIndex((f) => f.name === name);
  p.edges = edges.map(([a, b, calls]) => ({
    caller: id(a),
    callee: id(b),
    kind: 'call' as const,
    ...(calls !== undefined ? { calls } : {}),
  }));
  p.total = { value: total };
  return p;
}

function figures(p: Profile): { self: Map<string, number>; on: Map<string, number>; sum: number } {
  const tree = profileStacks(p);
  const fig = treeFigures(tree);
  const self = new Map<string, number>();
  const on = new Map<string, number>();
  tree.functions.forEach((f) => {
    self.set(f.name, fig.self[f.id]!);
    on.set(f.name, fig.inclusive[f.id]!);
  });
  for (const s of tree.stacks) assert.ok(s.value > 0, 'no empty or negative stack');
  return { self, on, sum: tree.stacks.reduce((s, x) => s + x.value, 0) };
}

const close = (a: number | undefined, b: number, what: string): void =>
  assert.ok(a !== undefined && Math.abs(a - b) < 1e-6, `${what}: ${a} vs ${b}`);

/** main → warm_up → body (once), main → measure → body (once): the shape of every benchmark's harness. */
function warmUp(): Profile {
  return profile(
    [
      { name: 'main', inclusive: { value: 10_000 }, self: { value: 900 } },
      { name: 'warm_up', inclusive: { value: 100 } },
      { name: 'measure', inclusive: { value: 9_000 } },
      { name: 'body', inclusive: { value: 9_050 }, self: { value: 9_050 } },
    ],
    [
      ['main', 'warm_up', 1],
      ['main', 'measure', 1],
      ['warm_up', 'body', 1],
      ['measure', 'body', 1],
    ],
    10_000,
  );
}

describe('call tree split under measured caps', () => {
  it("caps a shared callee's share by the small caller's own value; the large caller gets no invented self", () => {
    const p = warmUp();
    const f = figures(p);
    // By calls, body would be 4,525 under each caller: warm_up holds only 100, so it takes 100 and
    // measure the other 8,950; measure's own value is then 9,000 − 8,950 = 50, not 4,475.
    close(f.self.get('measure'), 50, 'measure self');
    close(f.self.get('warm_up'), 0, 'warm_up self');
    close(f.on.get('body'), 9_050, 'body on its stacks');
    close(f.on.get('measure'), 9_000, 'measure inclusive');
    close(f.on.get('warm_up'), 100, 'warm_up inclusive');
    close(f.self.get('main'), 900, 'main keeps its measured self');
    close(f.sum, 10_000, 'stacks add up to the total');
  });

  it('marks the split estimated with the bound the measured values allow', () => {
    const p = warmUp();
    const tree = profileStacks(p);
    assert.equal(tree.estimated, true);
    assert.match(tree.note ?? '', /never beyond what a caller's measured value holds; such splits are estimates/);
    const body = p.functions.findIndex((f) => f.name === 'body');
    const underWarm = tree.stacks.find((s) => s.frames.at(-1) === body && s.frames.includes(1))!;
    // warm_up's share lies in [9,050 − 9,000, 100]: measure cannot hold more than its 9,000.
    assert.deepEqual(underWarm.bound, { low: 50, high: 100 });
    // The edges written into the profile say the same, with their provenance.
    withEdgeValues(p);
    const edge = p.edges.find((e) => e.caller === 1 && e.callee === body)!;
    assert.equal(edge.provenance, 'estimated');
    assert.deepEqual(edge.inclusive, { value: 100, bound: { low: 50, high: 100, kind: 'estimate' } });
    const single = p.edges.find((e) => e.caller === 0 && e.callee === 2)!;
    assert.equal(single.provenance, 'injected', 'a callee with one caller goes under it whole, as measured');
    assert.equal(single.inclusive?.value, 9_000);
  });

  it('keeps edges measured per caller exactly, with no estimate', () => {
    const p = warmUp();
    p.provenance = { kind: 'oracle', source: 'trace' };
    for (const e of p.edges)
      if (p.functions[e.callee]!.name === 'body') {
        e.inclusive = { value: e.caller === 1 ? 95 : 8_955 };
        e.provenance = 'exact';
      }
    const tree = profileStacks(p);
    assert.equal(tree.estimated, false);
    assert.ok(tree.stacks.every((s) => !s.bound));
    const f = figures(p);
    close(f.self.get('measure'), 45, 'measure self from the exact edge');
    close(f.self.get('warm_up'), 5, 'warm_up self from the exact edge');
    close(f.sum, 10_000, 'stacks add up to the total');
  });

  it('never gives a caller of an unmeasured callee or of a pointer own time: the rest is [not measured]', () => {
    const p = profile(
      [
        { name: 'main', inclusive: { value: 1_000 } },
        { name: 'sort', inclusive: { value: 600 }, indirectCalls: true },
        { name: 'helper', inclusive: { value: 100 } },
        { name: 'pruned', status: 'pruned' },
        { name: 'cmp', inclusive: { value: 350 } },
      ],
      [
        ['main', 'sort', 1],
        ['main', 'pruned', 4],
        ['sort', 'helper', 1],
      ],
      1_000,
    );
    const tree = profileStacks(p);
    const f = figures(p);
    // sort calls cmp through a pointer: its own value is not formed (never its inclusive 600 or
    // 600 − 100). cmp, which nothing calls directly, is placed under sort, the pointer's caller.
    close(f.self.get('sort'), 0, 'sort self');
    close(f.self.get('main'), 0, 'main self (it calls the unmeasured pruned)');
    close(f.on.get('cmp'), 350, 'cmp under sort');
    const cmp = tree.stacks.find((s) => s.frames.at(-1) === 4)!;
    assert.deepEqual(
      cmp.frames.map((id) => tree.functions[id]!.name),
      ['main', 'sort', 'cmp'],
    );
    assert.ok(cmp.bound, 'placed by estimate');
    const nm = tree.functions.findIndex((x) => x.name === NOT_MEASURED);
    const held = (path: string[]): number =>
      tree.stacks
        .filter((s) => s.frames.map((id) => tree.functions[id]!.name).join(';') === [...path, NOT_MEASURED].join(';'))
        .reduce((s, x) => s + x.value, 0);
    assert.ok(nm >= 0);
    close(held(['main']), 400, 'main: 1,000 − sort 600');
    close(held(['main', 'sort']), 150, 'sort: 600 − helper 100 − cmp 350');
    close(f.sum, 1_000, 'stacks add up to the total');
    assert.match(tree.note ?? '', /never in a caller's own value/);
  });

  it('puts a root that cannot fit beside the largest inside it, and the uncovered time at [not measured]', () => {
    // rv_reset → (unmeasured _start) → main: main reaches rv_reset only through a function without a
    // value, and is placed under it; a handler nothing calls, overflowing the total, goes inside too.
    const p = profile(
      [
        { name: 'rv_reset', inclusive: { value: 990 } },
        { name: '_start', status: 'unmeasurable' },
        { name: 'main', inclusive: { value: 980 } },
        { name: 'isr', inclusive: { value: 30 } },
      ],
      [
        ['rv_reset', '_start', 1],
        ['_start', 'main', 1],
      ],
      1_000,
    );
    const tree = profileStacks(p);
    const f = figures(p);
    close(f.on.get('main'), 980, 'main');
    assert.deepEqual(
      [...new Set(tree.stacks.map((s) => tree.functions[s.frames[0]!]!.name))],
      ['rv_reset', NOT_MEASURED],
      'the roots',
    );
    close(f.on.get('rv_reset'), 990, 'rv_reset');
    close(f.sum, 1_000, 'one copy of the run, not two roots of 1,000 each');
    assert.ok(f.on.get('isr')! <= 30 + 1e-9);
    assert.match(tree.note ?? '', /do not fit in the run's total .*: isr/);
  });

  it('splits by water-filling: proportional to the weights, none above its cap', () => {
    assert.deepEqual(waterFill(100, [1, 1], [10, 1_000]), [10, 90]);
    assert.deepEqual(waterFill(100, [1, 3], [1_000, 1_000]), [25, 75]);
    assert.deepEqual(waterFill(100, [1, 1, 2], [5, 5, 1_000]), [5, 5, 90]);
    assert.deepEqual(waterFill(100, [1, 1], [20, 30]), [20, 30], 'what no caller can hold stays out');
    assert.deepEqual(waterFill(100, [0, 0], [60, 60]), [50, 50], 'equal shares without weights');
  });
});
