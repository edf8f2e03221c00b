import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OpenOcdServer } from '../../adapter/servers/openocd';
import { QemuServer } from '../../adapter/servers/qemu';
import { RemoteServer } from '../../adapter/servers/remote';

/**
 * Which `monitor` commands typed in the Debug Console reset the target, and whether the core stays
 * halted (OpenOCD's `reset` command: `reset [run|halt|init]`, run when no mode is given; QEMU's HMP
 * `system_reset`). A halting reset goes the adapter's way (measurements out first); one that lets
 * the core run is refused.
 */
describe('resets typed in the Debug Console', () => {
  it('OpenOCD: halt and init stay halted, a bare reset and reset run let the core run', () => {
    const openocd = new OpenOcdServer({ type: 'openocd', configFiles: [] });
    const kinds = [
      'reset halt',
      'reset init',
      'soft_reset_halt',
      'reset',
      'reset run',
      'reset  run ',
      'resume',
      'reg pc',
      'reset_config srst_only',
      'reset bogus',
    ].map((c) => [c, openocd.resetKind(c)]);
    assert.deepEqual(kinds, [
      ['reset halt', 'halts'],
      ['reset init', 'halts'],
      ['soft_reset_halt', 'halts'],
      ['reset', 'runs'],
      ['reset run', 'runs'],
      ['reset  run ', 'runs'],
      ['resume', undefined],
      ['reg pc', undefined],
      ['reset_config srst_only', undefined],
      ['reset bogus', undefined],
    ]);
  });

  it('QEMU: system_reset halts (the gdbstub keeps the VM stopped); other monitor commands are not resets', () => {
    const qemu = new QemuServer({ type: 'qemu' });
    assert.equal(qemu.resetKind('system_reset'), 'halts');
    assert.equal(qemu.resetKind('info registers'), undefined);
    assert.equal(qemu.resetKind('system_powerdown'), undefined);
  });

  it('any other gdbserver: no command is known to reset', () => {
    assert.equal(new RemoteServer({ type: 'remote', address: 'localhost:3333' }).resetKind(), undefined);
  });
});
