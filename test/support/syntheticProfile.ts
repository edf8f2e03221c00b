import { emptyProfile, type Profile, type ProfileFunction } from '../../core/profile/model';

/**
 * Profiles of a known shape for the panel's tests and bench: a call tree of `count` functions where
 * each node has `fanout` callees, values that add up exactly (inclusive = self + callees), call
 * counts on the edges, and for function 0 a source file with per-line and per-instruction values.
 */
export interface SyntheticOptions {
  count: number;
  fanout?: number;
  /** Names by index (default `fn_<i>`); tests put markup here. */
  name?: (i: number) => string;
  /** Lines of the source file of function 0, all of them with a value and `instructionsPerLine` instructions. */
  sourceLines?: number;
  instructionsPerLine?: number;
  sourcePath?: string;
}

export function syntheticProfile(o: SyntheticOptions): Profile {
  const fanout = o.fanout ?? 3;
  const name = o.name ?? ((i: number) => `fn_${i}`);
  const p = emptyProfile({
    generator: 'synthetic',
    program: { executable: '/fw/synthetic.elf', family: 'riscv' },
    unit: { kind: 'instructions' },
    provenance: { kind: 'oracle', source: 'synthetic' },
    analysis: { scenario: 'oracle', threshold: 0.05 },
  });
  const path = o.sourcePath ?? '/fw/src/synthetic.c';
  const children: number[][] = Array.from({ length: o.count }, () => []);
  for (let i = 1; i < o.count; i++) children[Math.floor((i - 1) / fanout)]!.push(i);
  // Self values that vary (so heat varies) and are reproducible.
  const self = Array.from({ length: o.count }, (_, i) => 100 + ((i * 7919) % 900));
  const inclusive = new Array<number>(o.count).fill(0);
  for (let i = o.count - 1; i >= 0; i--) inclusive[i] = self[i]! + children[i]!.reduce((a, c) => a + inclusive[c]!, 0);
  p.total = { value: inclusive[0]! };
  p.functions = self.map((s, i): ProfileFunction => ({
    id: i,
    name: name(i),
    status: i % 11 === 10 ? 'pruned' : 'measured',
    inclusive: { value: inclusive[i]! },
    self: { value: s },
    calls: 1 + (i % 5),
    min: s,
    max: s * 2,
    mean: s * 1.5,
    ...(i % 11 === 10 ? { boundShare: inclusive[i]! / inclusive[0]! } : {}),
    location: { path, line: i === 0 ? 1 : 10 + i, ...(i === 0 ? { endLine: o.sourceLines ?? 20 } : {}) },
  }));
  for (let i = 0; i < o.count; i++)
    for (const c of children[i]!) p.edges.push({ caller: i, callee: c, kind: 'call', calls: 1 + (c % 5) });
  const lines = o.sourceLines ?? 20;
  const perLine = o.instructionsPerLine ?? 3;
  let address = 0x8000_0000;
  for (let line = 1; line <= lines; line++) {
    const value = 1 + ((line * 31) % 97);
    p.lines.push({ path, line, function: 0, self: { value: value * perLine } });
    for (let k = 0; k < perLine; k++) {
      p.addresses.push({
        address,
        function: 0,
        self: { value },
        path,
        line,
        instruction: `addi a${k}, a${k}, ${line}`,
      });
      address += 4;
    }
  }
  return p;
}

/** Source text for `syntheticProfile`'s file: `lines` lines of C-like code. */
export function syntheticSource(lines: number): string {
  return Array.from({ length: lines }, (_, i) => `  acc += table[${i}] * weight; /* line ${i + 1} */`).join('\n');
}
