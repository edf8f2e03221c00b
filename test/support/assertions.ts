import assert from 'node:assert/strict';
import { CycleLensError, type ErrorCode } from '../../adapter/errors';
import type { CounterUnit } from '../../adapter/probe/counters';

/** Asserts that `promise` rejects with a CycleLensError of `code` whose message matches `pattern`. */
export async function rejectsWith(promise: Promise<unknown>, code: ErrorCode, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof CycleLensError, `not a CycleLensError: ${String(err)}`);
    assert.equal(err.code, code);
    assert.match(err.message, pattern);
    return true;
  });
}

/** A counter unit's reading of `slot`, asserting that read() returns one. */
export async function readSlot(
  unit: Pick<CounterUnit, 'read'>,
  slot: number,
): Promise<{ value: bigint; reliable: boolean; note?: string }> {
  const r = (await unit.read()).find((x) => x.slot === slot);
  assert.ok(r, `no reading for slot ${slot}`);
  return { value: r.value, reliable: r.reliable, note: r.note };
}
