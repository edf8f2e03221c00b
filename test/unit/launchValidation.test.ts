import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateLaunchArgs } from '../../adapter/session/launchValidation';
import { CycleLensError, ErrorCode } from '../../adapter/errors';
import { fixtureElf } from '../support/paths';

const dir = mkdtempSync(join(tmpdir(), 'cyclelens-launch-'));
const rv32 = fixtureElf('rv32', 'singlepass');
const arm = fixtureElf('cortex-m4', 'singlepass');

function rejects(args: Record<string, unknown>, code: ErrorCode, pattern: RegExp): void {
  assert.throws(
    () => validateLaunchArgs(args, dir),
    (err: unknown) => err instanceof CycleLensError && err.code === code && pattern.test(err.message),
  );
}

describe('launch argument validation', () => {
  it('applies defaults and reads the family from the ELF', () => {
    const v = validateLaunchArgs({ executable: rv32, server: { type: 'qemu' } }, dir);
    assert.equal(v.family, 'riscv');
    assert.equal(v.gdbPath, 'gdb-multiarch');
    assert.equal(v.stopAtEntry, 'main');
    assert.equal(v.cwd, dir);
    assert.equal(validateLaunchArgs({ executable: arm, server: { type: 'qemu' } }, dir).family, 'cortex-m');
  });

  it('resolves a relative executable against cwd and maps stopAtEntry', () => {
    const v = validateLaunchArgs(
      { executable: 'singlepass.elf', cwd: join(rv32, '..'), server: { type: 'qemu' }, stopAtEntry: false },
      dir,
    );
    assert.equal(v.executable, rv32);
    assert.equal(v.stopAtEntry, undefined);
    assert.equal(
      validateLaunchArgs({ executable: rv32, server: { type: 'qemu' }, stopAtEntry: 'board_init' }, dir).stopAtEntry,
      'board_init',
    );
    assert.equal(
      validateLaunchArgs({ executable: rv32, server: { type: 'qemu' }, stopAtEntry: true }, dir).stopAtEntry,
      'main',
    );
  });

  it('rejects a missing or absent executable, naming the fix', () => {
    rejects({ server: { type: 'qemu' } }, ErrorCode.InvalidLaunchArgs, /`executable` is missing/);
    rejects(
      { executable: join(dir, 'nope.elf'), server: { type: 'qemu' } },
      ErrorCode.ExecutableNotFound,
      /does not exist\. Build the firmware first/,
    );
    mkdirSync(join(dir, 'adir'), { recursive: true });
    rejects({ executable: join(dir, 'adir'), server: { type: 'qemu' } }, ErrorCode.NotAnElf, /is not a file/);
  });

  it('rejects files that are not ELF, or ELF for an unsupported machine', () => {
    const bin = join(dir, 'firmware.bin');
    writeFileSync(bin, Buffer.alloc(64, 0xff));
    rejects(
      { executable: bin, server: { type: 'qemu' } },
      ErrorCode.NotAnElf,
      /not an ELF file \(bad magic\): point `executable` at the linked \.elf/,
    );
    const short = join(dir, 'short.elf');
    writeFileSync(short, Buffer.from([0x7f, 0x45, 0x4c]));
    rejects({ executable: short, server: { type: 'qemu' } }, ErrorCode.NotAnElf, /not an ELF file/);
    const x86 = Buffer.alloc(64);
    x86.writeUInt32BE(0x7f454c46, 0);
    x86[4] = 1;
    x86[5] = 1;
    x86.writeUInt16LE(3, 18); // EM_386
    const x86Path = join(dir, 'x86.elf');
    writeFileSync(x86Path, x86);
    rejects(
      { executable: x86Path, server: { type: 'qemu' } },
      ErrorCode.UnsupportedArchitecture,
      /e_machine 3 \(x86.*Arm Cortex-M, RISC-V and ARC/,
    );
  });

  it('checks the server block per type', () => {
    rejects({ executable: rv32 }, ErrorCode.InvalidLaunchArgs, /`server` is missing/);
    rejects(
      { executable: rv32, server: { type: 'jlink' } },
      ErrorCode.InvalidLaunchArgs,
      /"qemu", "openocd" or "remote" \(got "jlink"\)/,
    );
    rejects({ executable: rv32, server: { type: 'qemu', icount: 42 } }, ErrorCode.InvalidLaunchArgs, /icount/);
    rejects({ executable: rv32, server: { type: 'qemu', machine: 7 } }, ErrorCode.InvalidLaunchArgs, /server\.machine/);
    rejects(
      { executable: rv32, server: { type: 'qemu', args: ['-s', 3] } },
      ErrorCode.InvalidLaunchArgs,
      /server\.args/,
    );
    rejects(
      { executable: rv32, server: { type: 'openocd', configFiles: [] } },
      ErrorCode.InvalidLaunchArgs,
      /configFiles` is empty/,
    );
    rejects(
      { executable: rv32, server: { type: 'remote', address: 'localhost' } },
      ErrorCode.InvalidLaunchArgs,
      /host:port/,
    );
    const ok = validateLaunchArgs(
      { executable: rv32, server: { type: 'openocd', configFiles: ['board.cfg'], searchDirs: ['scripts'] } },
      dir,
    );
    assert.deepEqual(ok.server.type === 'openocd' && ok.server.searchDirs, [join(dir, 'scripts')]);
    assert.equal(
      validateLaunchArgs({ executable: rv32, server: { type: 'qemu', icount: null } }, dir).server.type,
      'qemu',
    );
  });

  it('refuses a family that contradicts the ELF', () => {
    rejects(
      { executable: rv32, server: { type: 'qemu' }, family: 'cortex-m' },
      ErrorCode.InvalidLaunchArgs,
      /built for riscv/,
    );
    rejects(
      { executable: rv32, server: { type: 'qemu' }, family: 'mips' },
      ErrorCode.InvalidLaunchArgs,
      /`family` must be/,
    );
  });

  it('checks the types of optional fields', () => {
    rejects({ executable: rv32, server: { type: 'qemu' }, stopAtEntry: 3 }, ErrorCode.InvalidLaunchArgs, /stopAtEntry/);
    rejects(
      { executable: rv32, server: { type: 'qemu' }, stopAtEntry: 'no_such_function' },
      ErrorCode.InvalidLaunchArgs,
      /`stopAtEntry` \(the command line's --start\) names no function of .*singlepass\.elf: "no_such_function"/,
    );
    rejects({ executable: rv32, server: { type: 'qemu' }, gdbPath: ['gdb'] }, ErrorCode.InvalidLaunchArgs, /gdbPath/);
    rejects(
      { executable: rv32, server: { type: 'qemu' }, initCommands: 'set x' },
      ErrorCode.InvalidLaunchArgs,
      /initCommands/,
    );
  });
});
