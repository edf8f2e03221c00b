import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { writeExportsOfFailedRun } from '../../cli/exports';
import { main, type CliIo } from '../../cli/main';
import type { ResultSet } from '../../core/analysis/resultSet';
import { exportFormat } from '../../core/export/formats';
import { checkExportTargets } from '../../cli/exports';
import { removeAbandonedPartials, unwritableReason, writeExport } from '../../core/export/writeExport';
import { saveProfile } from '../../core/profile/json';
import { sampleProfile } from '../support/sampleProfiles';
import { repoRoot } from '../support/paths';
import { smallResultSet } from '../support/smallResultSet';

/**
 * Writing exports when things go wrong: a writer killed mid-write, a disk that is full (a 64 KiB
 * tmpfs, when root may mount one), and an analysis that fails before its exports are written.
 */
function capture(): CliIo & { stdout: string; stderr: string } {
  const io = {
    stdout: '',
    stderr: '',
    out: (t: string) => void (io.stdout += t),
    err: (t: string) => void (io.stderr += t),
    onInterrupt: () => () => undefined,
  };
  return io;
}

const json = exportFormat('json')!;
const csv = exportFormat('csv')!;
const rs: ResultSet = smallResultSet();

describe('export writes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cyclelens-export-writes-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it(
    'a writer SIGKILLed mid-write leaves a visible partial file, which the next export to that ' + 'folder removes',
    async () => {
      const out = join(dir, 'killed');
      mkdirSync(out);
      const target = join(out, 'profile.profile.json');
      // A real writer, killed between writing its temporary file and renaming it.
      const script = `
      const { partialFileName } = require(${JSON.stringify(join(repoRoot, 'out', 'core', 'export', 'writeExport.js'))});
      require('node:fs').writeFileSync(partialFileName(${JSON.stringify(target)}), '');
      process.kill(process.pid, 'SIGKILL');`;
      const r = spawnSync(process.execPath, ['-e', script]);
      assert.equal(r.signal, 'SIGKILL');
      const left = readdirSync(out);
      assert.equal(left.length, 1);
      assert.match(
        left[0]!,
        /^profile\.profile\.json\.cyclelens-partial-\d+\.[0-9a-f]+\.tmp$/,
        'named after the export, not hidden',
      );
      // A partial file of a writer that still runs (this process) is not touched.
      const mine = join(out, `other.csv.cyclelens-partial-${process.pid}.abcd0123.tmp`);
      writeFileSync(mine, 'x');
      const bytes = await writeExport(sampleProfile(), { format: json, path: target });
      assert.ok(bytes > 0);
      assert.deepEqual(
        readdirSync(out).sort(),
        ['other.csv.cyclelens-partial-' + process.pid + '.abcd0123.tmp', 'profile.profile.json'].sort(),
      );
      rmSync(mine);
      assert.deepEqual(await removeAbandonedPartials(out), []);
    },
  );

  it('an analysis that fails says what became of each --export, and writes what the finished runs hold', async () => {
    const io = capture();
    const a = join(dir, 'failed-a.csv');
    const b = join(dir, 'failed-b.profile.json');
    assert.equal(
      await writeExportsOfFailedRun(
        [
          { format: csv, path: a },
          { format: json, path: b },
        ],
        [],
        io,
      ),
      2,
    );
    assert.match(io.stderr, /--export csv:.*failed-a\.csv not written: the analysis ended before any run finished/);
    assert.match(io.stderr, /--export json:.*failed-b\.profile\.json not written/);
    assert.ok(!existsSync(a) && !existsSync(b));
    const io2 = capture();
    assert.equal(await writeExportsOfFailedRun([{ format: csv, path: a }], [rs], io2), 0);
    assert.match(
      io2.stderr,
      /--export csv:.*failed-a\.csv: the analysis did not finish; writing the 1 run\(s\) that did/,
    );
    assert.match(io2.stderr, /written to .*failed-a\.csv/);
    assert.ok(existsSync(a));
  });

  it('cyclelens profile that fails before any run says its --export was not written', async () => {
    const io = capture();
    const target = join(dir, 'never.csv');
    const code = await main(
      ['profile', '--config', join(dir, 'no-launch.json'), '--name', 'x', '--export', `csv:${target}`],
      io,
    );
    assert.equal(code, 1);
    assert.match(io.stderr, /--export csv:.*never\.csv not written: the analysis ended before any run finished/);
    assert.ok(!existsSync(target));
  });

  describe(
    'on a full disk (a 64 KiB tmpfs)',
    { skip: process.getuid?.() !== 0 ? 'mounting a tmpfs needs root' : false },
    () => {
      const disk = join(dir, 'full');
      before(() => {
        mkdirSync(disk);
        execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', disk]);
      });
      after(() => execFileSync('umount', [disk]));

      /** Fills the disk, leaving `free` bytes (rounded to pages). */
      const fill = (free: number): void => {
        rmSync(join(disk, 'filler'), { force: true });
        const r = spawnSync('dd', [
          'if=/dev/zero',
          `of=${join(disk, 'filler')}`,
          'bs=4096',
          `count=${(64 * 1024 - free) / 4096}`,
        ]);
        assert.equal(r.status, 0, r.stderr.toString());
      };

      it('the pre-run check on --export refuses a full disk, naming the file and the fix', async () => {
        fill(0);
        const target = join(disk, 'p.csv');
        assert.match(
          (await unwritableReason(target)) ?? 'passed',
          /p\.csv cannot be written: nothing can be written in .*full \(no space left on the device\)/,
        );
        await assert.rejects(
          checkExportTargets([{ format: csv, path: target }]),
          /--export csv:.*p\.csv: .*no space left on the device/,
        );
        assert.deepEqual(readdirSync(disk), ['filler'], 'the probe left nothing behind');
      });

      it('export -o onto a disk that fills up names the file, says the disk is full, and leaves nothing', async () => {
        // Room for the probe, not for the profile.
        fill(8 * 1024);
        const input = join(dir, 'big.profile.json');
        const p = sampleProfile();
        for (let i = 0; i < 2000; i++)
          p.functions.push({ id: p.functions.length, name: `padding_${i}`, status: 'measured' });
        await saveProfile(input, p);
        const target = join(disk, 'out.profile.json');
        const io = capture();
        assert.equal(await main(['export', input, '--format', 'json', '-o', target], io), 1);
        assert.match(
          io.stderr,
          new RegExp(
            /out\.profile\.json could not be written \(no space left on the device\): /.source +
              /free space on that disk or choose another path/.source,
          ),
        );
        assert.doesNotMatch(io.stderr, /^cyclelens: ENOSPC/m);
        assert.deepEqual(readdirSync(disk), ['filler'], 'no partial file, no empty export');
      });
    },
  );
});
