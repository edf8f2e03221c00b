import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parserProperties } from '../fuzz/parserProperties';

/** The fuzz properties with a fixed seed and a bounded count: the same inputs on every run. */
describe('parsers of outside input under fuzzing (fixed seed)', () => {
  for (const p of parserProperties) {
    it(p.name, () => {
      const details = p.check({ seed: 0x17c1c1e, numRuns: 300 });
      assert.equal(
        details.failed,
        false,
        details.failed
          ? `input ${fc.stringify(details.counterexample)}: ` +
              `${details.errorInstance instanceof Error ? details.errorInstance.stack : String(details.errorInstance)}`
          : '',
      );
      assert.equal(details.numRuns, 300);
    });
  }
});
