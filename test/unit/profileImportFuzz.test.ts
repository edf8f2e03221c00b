import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { exportFormat } from '../../core/export/formats';
import { importCallgrind } from '../../core/import/callgrind';
import { importCsv } from '../../core/import/csv';
import { importFolded } from '../../core/import/folded';
import { importGmon } from '../../core/import/gmon';
import { parseProfileText } from '../../core/profile/json';
import { ProfileError } from '../../core/profile/profileError';
import { sampleProfile } from '../support/sampleProfiles';

/**
 * Imported files are data from anywhere: whatever the bytes, an importer returns a profile or
 * throws its declared error (ProfileError), never anything else. Fixed seed, bounded runs.
 */
const settings = { seed: 1313, numRuns: 400 };

function onlyProfileErrors(read: () => unknown): boolean {
  try {
    read();
  } catch (err) {
    if (!(err instanceof ProfileError)) throw err;
    assert.ok(err.message.length > 10);
  }
  return true;
}

/** Mutations of a valid file: cut it, splice in bytes, flip characters. */
function mutated(valid: string): fc.Arbitrary<string> {
  return fc.oneof(
    fc.nat({ max: valid.length }).map((n) => valid.slice(0, n)),
    fc
      .tuple(fc.nat({ max: valid.length }), fc.string({ maxLength: 12 }))
      .map(([at, s]) => valid.slice(0, at) + s + valid.slice(at)),
    fc
      .tuple(
        fc.nat({ max: Math.max(0, valid.length - 1) }),
        fc.constantFrom('0', '-', '9', '"', ';', ' ', '\n', '=', '(', 'e', ',', '{', ']'),
      )
      .map(([at, c]) => valid.slice(0, at) + c + valid.slice(at + 1)),
  );
}

const sample = sampleProfile(
  Object.fromEntries(
    ['main', 'histogram_fill', 'fir_filter', 'crc16_block'].map((n, i) => [
      n,
      { address: 0x80000000 + 0x100 * i, size: 0x40 },
    ]),
  ),
);
const text = (id: string): string => exportFormat(id)!.write(sample) as string;

describe('importers never crash on damaged input', () => {
  it('folded stacks', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 200 }), mutated(text('folded'))), (t) =>
        onlyProfileErrors(() => importFolded(t)),
      ),
      settings,
    );
  });

  it('callgrind', () => {
    const vocabulary = fc.constantFrom(
      'events: Ir',
      'fn=(1) a',
      'fn=(1)',
      'fn=(2)',
      'cfn=(3) b',
      'calls=2 0',
      'calls=x',
      '+3 5',
      '-9 1',
      '* 2',
      '0x10 4',
      'fl=(1) f.c',
      'positions: instr line',
      '12 99999999999999999999',
      'junk',
    );
    fc.assert(
      fc.property(
        fc.oneof(
          fc.array(vocabulary, { maxLength: 30 }).map((l) => l.join('\n')),
          mutated(text('callgrind')),
        ),
        (t) => onlyProfileErrors(() => importCallgrind(t)),
      ),
      settings,
    );
  });

  it('gmon.out', () => {
    const valid = exportFormat('gmon')!.write(sample) as Uint8Array;
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 200 }),
      fc.uint8Array({ maxLength: 120 }).map((tail) => new Uint8Array([...valid.subarray(0, 20), ...tail])),
      fc.tuple(fc.nat({ max: valid.length - 1 }), fc.integer({ min: 0, max: 255 })).map(([at, b]) => {
        const copy = new Uint8Array(valid);
        copy[at] = b;
        return copy;
      }),
      fc.nat({ max: valid.length }).map((n) => valid.subarray(0, n)),
    );
    fc.assert(
      fc.property(bytes, fc.boolean(), (b, wide) =>
        onlyProfileErrors(() =>
          importGmon(b, { addressBytes: wide ? 8 : 4, symbols: [{ name: 'main', address: 0x80000000, size: 0x40 }] }),
        ),
      ),
      settings,
    );
  });

  it('CSV', () => {
    fc.assert(
      fc.property(mutated(text('csv')), mutated(text('csv-lines')), (f, l) =>
        onlyProfileErrors(() => importCsv(f, { linesText: l })),
      ),
      settings,
    );
  });

  it('native profile JSON', () => {
    fc.assert(
      fc.property(fc.oneof(mutated(text('json')), fc.json({ maxDepth: 4 })), (t) =>
        onlyProfileErrors(() => parseProfileText(t)),
      ),
      settings,
    );
  });
});
