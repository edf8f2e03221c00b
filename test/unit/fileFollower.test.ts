import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { FileFollower } from '../../adapter/servers/fileFollower';

/** Waits until `check` holds, polling; fails with `what` after `ms`. */
async function until(check: () => boolean, what: string, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('FileFollower (the guest UART written to a file)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cyclelens-follow-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('delivers text appended after it started, including a file created after it started', async () => {
    const path = join(dir, 'late.log');
    let seen = '';
    const follower = new FileFollower(path, (t) => (seen += t), 5);
    follower.start();
    await new Promise((r) => setTimeout(r, 30)); // polls while the file does not exist yet
    appendFileSync(path, 'checksum ');
    await until(() => seen === 'checksum ', 'the first write');
    appendFileSync(path, '0x1234\n');
    await until(() => seen === 'checksum 0x1234\n', 'the second write');
    await follower.stop();
    assert.equal(seen, 'checksum 0x1234\n');
  });

  it('never splits a UTF-8 character written one byte at a time, as a UART does', async () => {
    const path = join(dir, 'bytes.log');
    let seen = '';
    const follower = new FileFollower(path, (t) => (seen += t), 1);
    follower.start();
    for (const byte of Buffer.from('µs → 40 ticks\n', 'utf8')) {
      appendFileSync(path, Buffer.from([byte]));
      await new Promise((r) => setTimeout(r, 2));
    }
    await follower.stop();
    assert.equal(seen, 'µs → 40 ticks\n');
    assert.ok(!seen.includes('\ufffd'), 'no replacement character');
  });

  it('stop() reads what was written since the last poll, so the last words are not lost', async () => {
    const path = join(dir, 'end.log');
    appendFileSync(path, '');
    let seen = '';
    const follower = new FileFollower(path, (t) => (seen += t), 60_000);
    follower.start();
    appendFileSync(path, 'exit 0\n');
    await follower.stop();
    assert.equal(seen, 'exit 0\n');
    appendFileSync(path, 'after the end\n');
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(seen, 'exit 0\n', 'nothing is delivered after stop');
  });
});
