import { emptyProfile, type Profile, type ProfileFunction } from '../../core/profile/model';

/**
 * A small profile whose every derived figure is worked out by hand, on real function names of the
 * fixture firmware so gprof can place them in the ELF:
 *
 *   main (10,000 incl) ─1×→ histogram_fill (6,000) ─50×→ fir_filter (5,000, all self)
 *        └──────2×──→ crc16_block (100, 4 calls) ←──2×──┘
 *
 * crc16_block is shared: split by call counts, 50 through each caller. Self of main and
 * histogram_fill is not recorded, so it is derived: 10,000 − 6,000 − 50 = 3,950 and
 * 6,000 − 5,000 − 50 = 950. fir_filter's self is spread over two source lines (3,000 + 2,000).
 */
export const expected = {
  inclusive: { main: 10_000, histogram_fill: 6_000, fir_filter: 5_000, crc16_block: 100 },
  self: { main: 3_950, histogram_fill: 950, fir_filter: 5_000, crc16_block: 100 },
  calls: { histogram_fill: 1, fir_filter: 50, crc16_block: 4 },
} as const;

export type SampleName = keyof typeof expected.inclusive;

export function sampleProfile(
  addresses: Partial<Record<SampleName, { address: number; size: number }>> = {},
  executable = '/fw/singlepass.elf',
): Profile {
  const p = emptyProfile({
    generator: 'test',
    program: { executable, family: 'riscv' },
    unit: { kind: 'instructions' },
    provenance: { kind: 'exact', counter: 'minstret' },
    createdAt: '2026-01-01T00:00:00.000Z',
  });
  const fn = (id: number, name: SampleName, calls: number | undefined, self?: number): ProfileFunction => ({
    id,
    name,
    status: 'measured',
    ...(addresses[name] ? { address: addresses[name]!.address, size: addresses[name]!.size } : {}),
    location: { path: `/fw/${name === 'main' ? 'singlepass' : name}.c`, line: 10 + id },
    inclusive: { value: expected.inclusive[name] },
    ...(self !== undefined ? { self: { value: self } } : {}),
    ...(calls !== undefined ? { calls } : {}),
  });
  p.functions = [
    fn(0, 'main', 1),
    fn(1, 'histogram_fill', 1),
    fn(2, 'fir_filter', 50, 5_000),
    fn(3, 'crc16_block', 4, 100),
  ];
  p.total = { value: 10_000 };
  p.edges = [
    { caller: 0, callee: 1, kind: 'call', calls: 1 },
    { caller: 1, callee: 2, kind: 'call', calls: 50 },
    { caller: 0, callee: 3, kind: 'call', calls: 2 },
    { caller: 1, callee: 3, kind: 'call', calls: 2 },
  ];
  p.lines = [
    { path: '/fw/fir_filter.c', line: 20, function: 2, self: { value: 3_000 } },
    { path: '/fw/fir_filter.c', line: 21, function: 2, self: { value: 2_000 } },
  ];
  p.runs = [
    {
      role: 'batch',
      method: 'software injection, minstret',
      total: 10_000,
      measured: ['main', 'histogram_fill', 'fir_filter', 'crc16_block'],
    },
  ];
  return p;
}

/** The sample functions' addresses and sizes, from an ELF's symbols (fails on a missing one). */
export function sampleAddresses(
  symbols: readonly { name: string; address: number; size: number }[],
): Record<SampleName, { address: number; size: number }> {
  const out: Partial<Record<SampleName, { address: number; size: number }>> = {};
  for (const n of Object.keys(expected.inclusive) as SampleName[]) {
    const s = symbols.find((x) => x.name === n);
    if (!s) throw new Error(`${n} is not among the ELF's function symbols`);
    out[n] = { address: s.address, size: s.size };
  }
  return out as Record<SampleName, { address: number; size: number }>;
}
