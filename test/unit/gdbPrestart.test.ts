import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { discardPrestartedGdb, prestartGdb, takePrestartedGdb } from '../../adapter/debugger/gdb/gdbPrestart';
import { findExecutable } from '../../adapter/util/processes';

/**
 * The GDB started with the adapter, before the launch request: a launch that asks for that GDB takes
 * the running process, any other launch ends it, and one nobody takes is ended on release. Real GDB
 * processes; none may outlive its test.
 */
const gdb = findExecutable('gdb-multiarch');

const alive = (pid: number | undefined): boolean => {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('the prestarted GDB', { skip: gdb === undefined ? 'gdb-multiarch is not installed' : false }, () => {
  it('is taken by a launch of the same GDB, once', async () => {
    prestartGdb('gdb-multiarch');
    const proc = takePrestartedGdb(gdb!);
    assert.ok(proc && alive(proc.pid), 'the launch gets the running GDB');
    assert.equal(takePrestartedGdb(gdb!), undefined, 'only once');
    await proc.kill();
  });

  it('is ended when the launch wants another debugger, or none', async () => {
    prestartGdb('gdb-multiarch');
    const other = takePrestartedGdb('/opt/arc/bin/arc-elf32-gdb');
    assert.equal(other, undefined);
    prestartGdb('gdb-multiarch');
    const taken = takePrestartedGdb(gdb!)!;
    const pid = taken.pid;
    prestartGdb('gdb-multiarch');
    await discardPrestartedGdb();
    assert.equal(takePrestartedGdb(gdb!), undefined, 'a released GDB is not offered again');
    assert.ok(alive(pid), 'releasing touches no GDB a launch took');
    await taken.kill();
  });

  it('a missing executable starts nothing', () => {
    prestartGdb('no-such-gdb-anywhere');
    assert.equal(takePrestartedGdb('no-such-gdb-anywhere'), undefined);
  });
});
