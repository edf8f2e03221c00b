import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { restrictedModeRefusal } from '../../extension/debug/workspaceTrust';
import { repoRoot } from '../support/paths';

describe('Workspace Trust', () => {
  it('a trusted workspace launches', () => {
    assert.equal(
      restrictedModeRefusal(true, { executable: 'fw.elf', server: { type: 'qemu' }, gdbPath: '/tmp/evil' }),
      undefined,
    );
  });

  it('Restricted Mode refuses, naming every program the configuration would run and the way out', () => {
    const qemu = restrictedModeRefusal(false, {
      executable: 'fw.elf',
      server: { type: 'qemu', path: './tools/qemu' },
      gdbPath: './tools/gdb',
      initCommands: ['shell rm -rf ~'],
    });
    assert.match(
      qemu!,
      new RegExp(
        /^CycleLens does not start debug sessions in Restricted Mode:/.source +
          / .* would run the debugger '\.\/tools\/gdb' \(gdbPath\), '\.\/tools\/qemu' \(server\.path\),/.source +
          / 1 GDB command\(s\) from initCommands\/postConnectCommands\./.source +
          / If you trust this folder, choose "Manage Workspace Trust"/.source,
      ),
    );
    const ocd = restrictedModeRefusal(false, {
      executable: 'fw.elf',
      server: { type: 'openocd', configFiles: ['board/evil.cfg'] },
    });
    assert.match(ocd!, /the debugger \(gdb-multiarch\), OpenOCD with the scripts board\/evil\.cfg\./);
    // A remote gdbserver starts no server here, but GDB still runs: still refused.
    assert.match(
      restrictedModeRefusal(false, { executable: 'fw.elf', server: { type: 'remote', address: 'h:1' } })!,
      /would run the debugger \(gdb-multiarch\)\./,
    );
  });

  it('package.json declares limited support and restricts every setting it names', () => {
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
      capabilities?: {
        untrustedWorkspaces?: { supported: unknown; restrictedConfigurations?: string[]; description?: string };
      };
      contributes: { configuration: { properties: Record<string, unknown> } };
    };
    const trust = pkg.capabilities?.untrustedWorkspaces;
    assert.equal(trust?.supported, 'limited');
    assert.match(trust?.description ?? '', /Restricted Mode/);
    assert.ok((trust?.restrictedConfigurations ?? []).includes('cyclelens.debugAdapterPort'));
    for (const key of trust?.restrictedConfigurations ?? [])
      assert.ok(key in pkg.contributes.configuration.properties, `${key} is a declared setting`);
  });
});
