import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { adapterStartEnv, START_HINT_VAR, startHintKey } from '../../common/startHint';
import { DIR_SLOT, instantiate, PORT_SLOT, takePrestartedQemu } from '../../adapter/servers/qemuPrestart';
import { rememberStart, savedStartPlan } from '../../adapter/startPlan';

/**
 * The start hint and the plans remembered under it (common/startHint.ts, adapter/startPlan.ts,
 * adapter/servers/qemuPrestart.ts). The processes themselves are tested in
 * test/integration/qemuPrestart.test.ts.
 */
const dirs: string[] = [];
const newDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'cyclelens-hint-'));
  dirs.push(d);
  return d;
};

const command = {
  binary: '/usr/bin/qemu-system-arm',
  argv: [
    '-M',
    'mps2-an386',
    '-kernel',
    '/x/a.elf',
    '-serial',
    `file:${DIR_SLOT}/uart.log`,
    '-gdb',
    `tcp:127.0.0.1:${PORT_SLOT}`,
    '-S',
  ],
  cwd: '/x',
};

describe('the start hint', () => {
  after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('is the same for the same configuration in any key order, without VS Code’s own keys', () => {
    const a = startHintKey({
      executable: '/x/a.elf',
      server: { type: 'qemu', machine: 'mps2-an386' },
      __sessionId: 'one',
    });
    const b = startHintKey({
      server: { machine: 'mps2-an386', type: 'qemu' },
      __sessionId: 'two',
      executable: '/x/a.elf',
      cwd: undefined,
    });
    assert.equal(a, b);
    assert.match(a, /^[0-9a-f]{32}$/);
    assert.notEqual(a, startHintKey({ executable: '/x/b.elf', server: { type: 'qemu', machine: 'mps2-an386' } }));
    assert.notEqual(
      a,
      startHintKey({ executable: '/x/a.elf', server: { type: 'qemu', machine: 'mps2-an386', icount: 2 } }),
    );
    assert.deepEqual(Object.keys(adapterStartEnv({ executable: '/x/a.elf' })), [START_HINT_VAR]);
  });

  it('fills the port and run directory into a command', () => {
    assert.deepEqual(instantiate(command.argv, 4321, '/tmp/run'), [
      '-M',
      'mps2-an386',
      '-kernel',
      '/x/a.elf',
      '-serial',
      'file:/tmp/run/uart.log',
      '-gdb',
      'tcp:127.0.0.1:4321',
      '-S',
    ]);
  });

  it(
    'remembers what a launch started under the hint and reads it back; another hint, none, or ' +
      'no cache finds nothing',
    () => {
      const cache = newDir();
      const env = adapterStartEnv({ executable: '/x/a.elf' });
      assert.equal(savedStartPlan(env, cache), undefined);
      rememberStart({ qemu: command }, env, cache);
      assert.deepEqual(savedStartPlan(env, cache), { qemu: command });
      rememberStart({ gdb: '/usr/bin/gdb-multiarch' }, env, cache);
      assert.deepEqual(
        savedStartPlan(env, cache),
        { qemu: command, gdb: '/usr/bin/gdb-multiarch' },
        'the parts are added to each other',
      );
      assert.equal(savedStartPlan(adapterStartEnv({ executable: '/x/b.elf' }), cache), undefined);
      assert.equal(savedStartPlan({}, cache), undefined);
      assert.equal(savedStartPlan(env, undefined), undefined);
      assert.equal(
        savedStartPlan({ [START_HINT_VAR]: '../../etc/passwd' }, cache),
        undefined,
        'a hint is a key, never a path',
      );
      assert.deepEqual(
        readdirSync(cache).filter((f) => f.includes('partial')),
        [],
      );
    },
  );

  it(
    'reads no plan from a directory others may write (it names programs to run)',
    { skip: process.getuid?.() === undefined },
    () => {
      const cache = newDir();
      const env = adapterStartEnv({ executable: '/x/a.elf' });
      rememberStart({ qemu: command }, env, cache);
      chmodSync(cache, 0o777);
      assert.equal(savedStartPlan(env, cache), undefined);
    },
  );

  it('with nothing started ahead, a launch takes nothing', () => {
    assert.equal(takePrestartedQemu(command), undefined);
  });
});
