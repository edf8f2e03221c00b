import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { hitConditionToIgnoreCount } from '../../adapter/session/breakpoints';

describe('hit conditions', () => {
  it('map onto GDB ignore counts', () => {
    assert.equal(hitConditionToIgnoreCount(undefined), undefined);
    assert.equal(hitConditionToIgnoreCount(''), undefined);
    assert.equal(hitConditionToIgnoreCount('5'), 4);
    assert.equal(hitConditionToIgnoreCount('==5'), 4);
    assert.equal(hitConditionToIgnoreCount('>= 3'), 2);
    assert.equal(hitConditionToIgnoreCount('>3'), 3);
    assert.equal(hitConditionToIgnoreCount('1'), 0);
  });

  it('reject forms GDB cannot express, saying which forms work', () => {
    assert.throws(() => hitConditionToIgnoreCount('%2'), /not supported: use a number N/);
    assert.throws(() => hitConditionToIgnoreCount('<4'), /">=N" or ">N"/);
  });
});
