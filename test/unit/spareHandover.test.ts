import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseHandover } from '../../adapter/spareHold';
import { startHintKey } from '../../common/startHint';

/** The one line that hands a spare adapter its session (adapter/spareHold.ts): anything else is refused. */
describe('the spare handover line', () => {
  it('takes a start hint as startHintKey makes it, or none', () => {
    const hint = startHintKey({ executable: '/w/fw.elf', server: { type: 'qemu' } });
    assert.deepEqual(parseHandover(JSON.stringify({ hint })), { hint });
    assert.deepEqual(parseHandover('{}'), {});
  });

  it('refuses anything that is not a hint: paths, other types, other JSON, no JSON', () => {
    for (const line of [
      '{"hint":"../../etc/passwd"}',
      '{"hint":42}',
      `{"hint":"${'A'.repeat(32)}"}`,
      `{"hint":"${'a'.repeat(33)}"}`,
      'null',
      '[]',
      '"x"',
      'ready',
      '',
    ]) {
      assert.equal(parseHandover(line), undefined, line);
    }
  });
});
