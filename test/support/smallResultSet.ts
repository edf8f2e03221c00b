import type { ResultSet } from '../../core/analysis/resultSet';

/**
 * The smallest result set worth exporting: one single-pass run of 1,000 instructions in which
 * `work` took 600 over 3 calls. Tests of the file paths (exports, loaders, writes) share it.
 */
export function smallResultSet(): ResultSet {
  return {
    id: 'rs-1',
    createdAt: '2026-01-01T00:00:00.000Z',
    program: { executable: '/fw/fw.elf' },
    run: {
      kind: 'single-pass',
      event: 'instructions',
      totals: { instructions: 1_000 },
      method: 'software injection, minstret',
    },
    measurements: [{ name: 'work', inclusive: { instructions: 600 }, calls: 3 }],
    refused: [],
  };
}
