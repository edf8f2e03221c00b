import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { hierarchy, partition } from 'd3-hierarchy';
import { describe, it } from 'node:test';
import { emptyProfile, type Profile } from '../../core/profile/model';
import {
  boxInRegion,
  callGraphModel,
  layoutDot,
  neighbourhood,
  parsePlainLayout,
  searchMatches,
  splinePath,
  visibleGraph,
  visibleRegion,
} from '../../webview/layout/callGraph';
import { callTreeOf, flameRects, rectAt, zoomedRects } from '../../webview/layout/flame';
import { annotateSource, heatLevel } from '../../webview/layout/source';
import { filterRows, functionRows, lineRows, sortRows } from '../../webview/layout/table';
import { syntheticProfile } from '../support/syntheticProfile';

// main -> work -> leaf (x50), main -> log (x2), work -> log (x6); total 10,000 instructions.
function descentProfile(): Profile {
  const p = emptyProfile({
    generator: 't',
    program: { executable: 'fw.elf' },
    unit: { kind: 'instructions' },
    provenance: { kind: 'oracle', source: 'test' },
  });
  p.total = { value: 10_000 };
  p.analysis = { scenario: 'descent', threshold: 0.05 };
  p.functions = [
    {
      id: 0,
      name: 'main',
      status: 'measured',
      inclusive: { value: 10_000 },
      self: { value: 1_000 },
      location: { path: '/fw/main.c', line: 3 },
    },
    { id: 1, name: 'work', status: 'measured', inclusive: { value: 8_000 }, self: { value: 2_600 }, calls: 1 },
    { id: 2, name: 'leaf', status: 'measured', inclusive: { value: 5_000 }, self: { value: 5_000 }, calls: 50 },
    { id: 3, name: 'log', status: 'pruned', boundShare: 0.02 },
    { id: 4, name: 'irq <b>', status: 'unmeasurable', reason: 'too short to patch' },
  ];
  p.edges = [
    { caller: 0, callee: 1, kind: 'call', calls: 1 },
    { caller: 1, callee: 2, kind: 'call', calls: 50 },
    { caller: 0, callee: 3, kind: 'call', calls: 2 },
    { caller: 1, callee: 3, kind: 'call', calls: 6 },
  ];
  return p;
}

describe('call graph layout', () => {
  it('annotates nodes with values, shares, calls and the descent verdict', () => {
    const m = callGraphModel(descentProfile());
    assert.deepEqual(m.nodes[2]!.lines, [
      'incl 50.0 % · 5,000 insn',
      'self 50.0 % · 5,000 insn',
      '50 calls',
      'measured · hot',
    ]);
    assert.equal(m.nodes[3]!.lines.at(-1), 'pruned: callers bound it ≤ 2.0 %');
    assert.equal(m.nodes[3]!.weight, 0.02);
    assert.equal(m.nodes[4]!.lines.at(-1), 'not measurable: too short to patch');
    assert.equal(m.nodes[4]!.hot, false);
  });

  it('shows bounds in the unit, ticks as ticks', () => {
    const p = descentProfile();
    p.unit = { kind: 'ticks', perTick: { count: 40, kind: 'instructions' } };
    p.functions[2]!.inclusive = { value: 5_000, bound: { low: 4_950, high: 5_050, kind: 'quantisation' } };
    const lines = callGraphModel(p).nodes[2]!.lines;
    assert.equal(lines[0], 'incl 50.0 % · 5,000 ticks ±50 ticks');
    assert.ok(!lines.join(' ').includes('cyc'));
  });

  it('prints a bound in the ± column once, and names both when inclusive and self differ', () => {
    const p = descentProfile();
    p.unit = { kind: 'ticks' };
    const q = { low: 4_950, high: 5_050, kind: 'quantisation' as const };
    p.functions[2]!.inclusive = { value: 5_000, bound: q };
    p.functions[2]!.self = { value: 5_000, bound: q };
    assert.equal(functionRows(p)[2]!.bound, '±50 ticks');
    p.functions[2]!.self = { value: 1_000, bound: { low: 990, high: 1_010, kind: 'quantisation' } };
    assert.equal(functionRows(p)[2]!.bound, 'incl ±50 ticks · self ±10 ticks');
  });

  it('finds a neighbourhood to a depth along calls both ways', () => {
    const m = callGraphModel(descentProfile());
    assert.deepEqual([...neighbourhood(m, 2, 0)], [2]);
    assert.deepEqual([...neighbourhood(m, 2, 1)].sort(), [1, 2]);
    assert.deepEqual([...neighbourhood(m, 2, 2)].sort(), [0, 1, 2, 3]);
  });

  it('collapses functions below a share into one group per caller', () => {
    const m = callGraphModel(descentProfile());
    const v = visibleGraph(m, { depth: 0, collapseBelow: 0.05 });
    assert.deepEqual(
      v.nodes.map((n) => n.name),
      ['main', 'work', 'leaf'],
    );
    assert.deepEqual(
      v.groups.map((g) => [g.key, g.members]),
      [
        ['c0', [3]],
        ['c1', [3]],
      ],
    );
    assert.deepEqual(v.edges, [
      { from: 'n0', to: 'n1', calls: 1 },
      { from: 'n1', to: 'n2', calls: 50 },
      { from: 'n0', to: 'c0' },
      { from: 'n1', to: 'c1' },
    ]);
    // The selected function is never collapsed.
    assert.ok(visibleGraph(m, { depth: 0, collapseBelow: 0.05, keep: 3 }).nodes.some((n) => n.id === 3));
    // Focus with depth: only the neighbourhood.
    assert.deepEqual(
      visibleGraph(m, { focus: 2, depth: 1, collapseBelow: 0 }).nodes.map((n) => n.id),
      [1, 2],
    );
  });

  it('writes DOT that Graphviz lays out, with no function name in it, and reads the layout back', () => {
    const m = callGraphModel(descentProfile());
    const dot = layoutDot(visibleGraph(m, { depth: 0, collapseBelow: 0 }), 0);
    assert.ok(!dot.includes('irq') && !dot.includes('main'), 'names never enter the DOT text');
    const plain = execFileSync('dot', ['-Tplain'], { input: dot, encoding: 'utf8' });
    const layout = parsePlainLayout(plain);
    assert.deepEqual([...layout.nodes.keys()].sort(), ['n0', 'n1', 'n2', 'n3', 'n4']);
    assert.equal(layout.edges.length, 4);
    // y grows downwards: a callee is below its caller; sizes are the ones asked for.
    assert.ok(
      layout.nodes.get('n2')!.y > layout.nodes.get('n1')!.y && layout.nodes.get('n1')!.y > layout.nodes.get('n0')!.y,
    );
    const width = Number(/n0 \[width=([\d.]+)/.exec(dot)![1]) * 72;
    assert.ok(Math.abs(layout.nodes.get('n0')!.width - width) < 1);
    const path = splinePath(layout.edges[0]!.points);
    assert.match(path, /^M[\d.]+,[\d.]+(C[\d.]+,[\d.]+ [\d.]+,[\d.]+ [\d.]+,[\d.]+)+$/);
  });

  it('finds the part of the layout a zoom shows, for drawing text only there', () => {
    // Zoomed ×2 and panned by (-100, -50): a 400 × 300 view shows layout x 50..250, y 25..175.
    const r = visibleRegion({ x: -100, y: -50, k: 2 }, 400, 300);
    assert.deepEqual(r, { x0: 50, y0: 25, x1: 250, y1: 175 });
    assert.equal(boxInRegion({ x: 40, y: 100, width: 30, height: 10 }, r), true, 'a box across the left edge');
    assert.equal(boxInRegion({ x: 30, y: 100, width: 30, height: 10 }, r), false, 'a box left of the view');
    assert.equal(boxInRegion({ x: 150, y: 190, width: 30, height: 20 }, r), false, 'a box below the view');
    assert.deepEqual(visibleRegion({ x: 0, y: 0, k: 1 }, 400, 300, 10), { x0: -10, y0: -10, x1: 410, y1: 310 });
  });

  it('searches names case-insensitively', () => {
    const m = callGraphModel(descentProfile());
    assert.deepEqual([...searchMatches(m, 'L')].sort(), [2, 3]);
    assert.equal(searchMatches(m, '  ').size, 0);
  });
});

describe('flame graph layout', () => {
  it("builds the tree from edges, splitting a shared callee by call counts under its callers' caps", () => {
    const p = descentProfile();
    p.functions[3]!.inclusive = { value: 800 };
    const root = callTreeOf(p);
    const main = root.children[0]!;
    assert.equal(main.name, 'main');
    const work = main.children.find((c) => c.name === 'work')!;
    // log: 800 by calls 2:6 would put 600 under work, but work's measured self (2,600) and leaf
    // (5,000) leave it room for 400 of its 8,000: work holds 400, main the other 400.
    assert.equal(main.children.find((c) => c.name === 'log')!.self, 400);
    assert.equal(work.children.find((c) => c.name === 'log')!.self, 400);
    assert.equal(work.self, 2_600);
    assert.equal(main.self, 1_000);
    // main's measured self and callees leave 600 of its 10,000 that nothing measured accounts for.
    assert.equal(main.children.find((c) => c.name === '[not measured]')!.self, 600);
  });

  it('starts a tree at a function whose only callers have no value (main under _start)', () => {
    const p = descentProfile();
    p.functions.push({ id: 5, name: '_start', status: 'unmeasurable', reason: 'never returns' });
    p.edges.push({ caller: 5, callee: 0, kind: 'call', calls: 1 });
    const rects = flameRects(callTreeOf(p));
    assert.equal(rects[0]!.value, 10_000, 'the root holds main');
    assert.deepEqual(
      rects.filter((r) => r.depth === 1).map((r) => r.name),
      ['main'],
    );
  });

  it('builds the tree from stacks when the profile has them', () => {
    const p = descentProfile();
    p.stacks = [
      { frames: [0, 1, 2], value: 30 },
      { frames: [0, 1], value: 10 },
      { frames: [0, 1, 2], value: 5 },
    ];
    const rects = flameRects(callTreeOf(p));
    assert.deepEqual(
      rects.map((r) => [r.name, r.value, r.depth]),
      [
        ['all', 45, 0],
        ['main', 45, 1],
        ['work', 45, 2],
        ['leaf', 35, 3],
      ],
    );
  });

  it('partitions: children nest inside their parent, widths proportional to values', () => {
    const rects = flameRects(callTreeOf(syntheticProfile({ count: 200 })));
    assert.equal(rects.length, 201);
    for (const [i, r] of rects.entries()) {
      if (r.parent < 0) continue;
      const parent = rects[r.parent]!;
      assert.ok(r.x0 >= parent.x0 - 1e-9 && r.x1 <= parent.x1 + 1e-9, `rect ${i} inside its parent`);
      assert.equal(r.depth, parent.depth + 1);
      assert.ok(Math.abs(r.x1 - r.x0 - r.value / rects[0]!.value) < 1e-9);
    }
  });

  it("lays out the same rectangles as d3-hierarchy's partition", () => {
    const p = syntheticProfile({ count: 2_000, fanout: 4 });
    p.stacks = [];
    for (const tree of [callTreeOf(p), callTreeOf(descentProfile())]) {
      const root = partition<ReturnType<typeof callTreeOf>>().size([1, 1])(
        hierarchy(tree, (d) => d.children).sum((d) => d.self),
      );
      const expected = new Map<
        ReturnType<typeof callTreeOf>,
        { x0: number; x1: number; value: number; depth: number; parent?: ReturnType<typeof callTreeOf> }
      >();
      root.each((n) =>
        expected.set(n.data, {
          x0: n.x0,
          x1: n.x1,
          value: n.value ?? 0,
          depth: n.depth,
          ...(n.parent ? { parent: n.parent.data } : {}),
        }),
      );
      // Ours comes in pre-order; pair each rect with its tree node by walking the tree the same way.
      const order: Array<ReturnType<typeof callTreeOf>> = [];
      const walk = (n: ReturnType<typeof callTreeOf>): void => {
        order.push(n);
        n.children.forEach(walk);
      };
      walk(tree);
      const rects = flameRects(tree);
      assert.equal(rects.length, expected.size);
      rects.forEach((r, i) => {
        const e = expected.get(order[i]!)!;
        assert.ok(
          Math.abs(r.x0 - e.x0) < 1e-12 && Math.abs(r.x1 - e.x1) < 1e-12,
          `rect ${i}: [${r.x0}, ${r.x1}] vs d3 [${e.x0}, ${e.x1}]`,
        );
        assert.ok(Math.abs(r.value - e.value) <= 1e-9 * Math.max(1, e.value), `rect ${i} value`);
        assert.equal(r.depth, e.depth);
        assert.equal(r.parent < 0 ? undefined : order[r.parent], e.parent);
      });
    }
  });

  it('zooms: the focus spans the width, its ancestors stay, other branches go', () => {
    const rects = flameRects(callTreeOf(descentProfile()));
    const work = rects.findIndex((r) => r.name === 'work');
    const drawn = zoomedRects(rects, work, 1000);
    const byName = new Map(drawn.map((d) => [rects[d.index]!.name, d]));
    assert.deepEqual(byName.get('work'), { index: work, x: 0, width: 1000, row: 2 });
    assert.equal(byName.get('main')!.width, 1000);
    assert.equal(byName.get('leaf')!.width, (1000 * 5_000) / 8_000);
    assert.equal(
      rectAt(drawn, 10, 3)?.index,
      rects.findIndex((r) => r.name === 'leaf'),
    );
    assert.equal(rectAt(drawn, 900, 3), undefined);
  });
});

describe('annotated source', () => {
  it('shows the function span with per-line values, the hottest line and instructions', () => {
    const p = syntheticProfile({ count: 3, sourceLines: 12, instructionsPerLine: 2 });
    const text = Array.from({ length: 15 }, (_, i) => `line ${i + 1}`).join('\n');
    const a = annotateSource(p, 0, '/fw/src/synthetic.c', text);
    assert.equal(a.lines[0]!.line, 1);
    assert.equal(a.lines.at(-1)!.line, 15);
    const hottest = p.lines.reduce((x, y) => (y.self.value > x.self.value ? y : x));
    assert.equal(a.hottest, hottest.line);
    assert.equal(a.lines[hottest.line - 1]!.heat, 1);
    assert.equal(a.lines[0]!.instructions.length, 2);
    assert.equal(a.lines[13]!.value, undefined);
    assert.equal(heatLevel(0), 0);
    assert.equal(heatLevel(0.01), 1);
    assert.equal(heatLevel(1), 10);
  });
});

describe('profile table', () => {
  it('sorts by any column with missing values last, and filters by words or column:word', () => {
    const rows = functionRows(descentProfile());
    assert.deepEqual(
      sortRows(rows, 'inclusive', true).map((r) => r.name),
      ['main', 'work', 'leaf', 'log', 'irq <b>'],
    );
    assert.deepEqual(
      sortRows(rows, 'inclusive', false).map((r) => r.name),
      ['leaf', 'work', 'main', 'log', 'irq <b>'],
    );
    assert.deepEqual(
      sortRows(rows, 'name', false).map((r) => r.name),
      ['irq <b>', 'leaf', 'log', 'main', 'work'],
    );
    assert.deepEqual(
      filterRows(rows, 'status:pruned').map((r) => r.name),
      ['log'],
    );
    // Plain words match any text column: names, the status in words.
    assert.deepEqual(
      filterRows(rows, 'LEAF').map((r) => r.name),
      ['leaf'],
    );
    assert.deepEqual(
      filterRows(rows, 'not measurable').map((r) => r.name),
      ['irq <b>'],
    );
    assert.equal(rows[0]!.provenance, 'exact instruction trace (test)');
  });

  it('sorts 20,000 rows as a plain comparison sort does, strings by the locale', () => {
    const rows = functionRows(syntheticProfile({ count: 20_000 }));
    rows[5]!.calls = undefined as unknown as number;
    delete rows[5]!.calls;
    for (const [key, descending] of [
      ['calls', true],
      ['self', false],
      ['name', false],
      ['status', true],
    ] as const) {
      const plain = [...rows].sort((a, b) => {
        const va = a[key];
        const vb = b[key];
        if (va === undefined) return vb === undefined ? 0 : 1;
        if (vb === undefined) return -1;
        const c = typeof va === 'number' && typeof vb === 'number' ? va - vb : String(va).localeCompare(String(vb));
        return descending ? -c : c;
      });
      assert.deepEqual(
        sortRows(rows, key, descending).map((r) => r.id),
        plain.map((r) => r.id),
        `${key} ${descending ? 'descending' : 'ascending'}`,
      );
    }
  });

  it('lists lines with their function and share', () => {
    const p = syntheticProfile({ count: 2, sourceLines: 3 });
    const rows = lineRows(p);
    assert.equal(rows.length, 3);
    assert.equal(rows[0]!.function, 'fn_0');
    assert.equal(rows[0]!.share, rows[0]!.self / p.total!.value);
  });
});
