import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { parseArgs } from '../../cli/args';
import { main, type CliIo } from '../../cli/main';
import { resultSetDocument, saveResultSetDocument, type ResultSet } from '../../core/analysis/resultSet';
import { EXPORT_FORMATS } from '../../core/export/formats';
import { importFolded } from '../../core/import/folded';
import { loadProfile, saveProfile } from '../../core/profile/json';
import { sampleProfile } from '../support/sampleProfiles';
import { smallResultSet } from '../support/smallResultSet';

const dir = mkdtempSync(join(tmpdir(), 'cyclelens-cli-export-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function capture(): CliIo & { stdout: string; stderr: string } {
  const io = {
    stdout: '',
    stderr: '',
    out: (t: string) => (io.stdout += t),
    err: (t: string) => (io.stderr += t),
    onInterrupt: () => () => undefined,
  };
  return io;
}

describe('cyclelens export and --export', () => {
  it('parses --export FORMAT:PATH (repeatable) and the export command', () => {
    const r = parseArgs([
      'descent',
      '--config',
      'l.json',
      '--name',
      'x',
      '--export',
      'pprof:a.pb.gz',
      '--export=folded:b.folded',
    ]);
    assert.ok(r.kind === 'run');
    if (r.kind === 'run')
      assert.deepEqual(
        r.command.exports?.map((e) => [e.format.id, e.path]),
        [
          ['pprof', 'a.pb.gz'],
          ['folded', 'b.folded'],
        ],
      );
    const e = parseArgs(['export', 'results.json', '--format', 'callgrind', '-o', 'out.callgrind']);
    assert.ok(
      e.kind === 'export' &&
        e.command.input === 'results.json' &&
        e.command.target.format.id === 'callgrind' &&
        e.command.target.path === 'out.callgrind',
    );
  });

  it('refuses an unknown format or a missing part, naming the fix', () => {
    const bad = (argv: string[]): string => {
      const r = parseArgs(argv);
      assert.equal(r.kind, 'error');
      return r.kind === 'error' ? r.message : '';
    };
    assert.match(
      bad(['profile', '--config', 'l', '--name', 'x', '--export', 'flame:x.svg']),
      /unknown format 'flame': use one of callgrind, pprof/,
    );
    assert.match(bad(['profile', '--config', 'l', '--name', 'x', '--export', 'pprof']), /write FORMAT:PATH/);
    assert.match(
      bad(['call-graph', '--config', 'l', '--name', 'x', '--out', 'g.json', '--export', 'pprof:a']),
      /--export applies to descent and profile/,
    );
    assert.match(bad(['export', 'r.json', '-o', 'x']), /export needs --format/);
    assert.match(bad(['export', 'r.json', '--format', 'pprof']), /export needs -o FILE .*profile\.pb\.gz/);
    assert.match(bad(['export', '--format', 'pprof', '-o', 'x']), /needs the result-set or profile file/);
  });

  it('checks every --export destination before anything runs', async () => {
    const io = capture();
    // The launch configuration does not exist either: the destination is reported first, so nothing started.
    const code = await main(
      [
        'descent',
        '--config',
        join(dir, 'missing-launch.json'),
        '--name',
        'x',
        '--export',
        `pprof:${join(dir, 'no-such-folder', 'p.pb.gz')}`,
      ],
      io,
    );
    assert.equal(code, 1);
    assert.match(
      io.stderr,
      new RegExp(
        /--export pprof:.*no-such-folder.*p\.pb\.gz: .*the folder .*no-such-folder does not exist;/.source +
          / create it or choose another path/.source,
      ),
    );
    assert.doesNotMatch(io.stderr, /starting/);
    const folder = join(dir, 'a-folder');
    mkdirSync(folder);
    const io2 = capture();
    assert.equal(await main(['profile', '--config', 'l.json', '--name', 'x', '--export', `csv:${folder}`], io2), 1);
    assert.match(io2.stderr, /is a folder: give a file name/);
    // A place nothing can be written to. Root passes through permission bits, so for root it is a
    // real read-only mount (a tmpfs mounted ro); anyone else gets a folder without write permission.
    const locked = join(dir, 'locked');
    mkdirSync(locked);
    const asRoot = process.getuid?.() === 0;
    if (asRoot) execFileSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=64k', 'tmpfs', locked]);
    else chmodSync(locked, 0o500);
    try {
      const io3 = capture();
      assert.equal(
        await main(['profile', '--config', 'l.json', '--name', 'x', '--export', `csv:${join(locked, 'x.csv')}`], io3),
        1,
      );
      const why = asRoot ? 'read-only file system' : 'permission denied';
      assert.match(
        io3.stderr,
        new RegExp(
          `x\\.csv cannot be written: nothing can be written in .*locked \\(${why}\\); choose a ` +
            `folder you can write to`,
        ),
      );
      assert.doesNotMatch(io3.stderr, /starting/);
      assert.deepEqual(readdirSync(locked), [], 'the writability probe leaves nothing behind');
    } finally {
      if (asRoot) execFileSync('umount', [locked]);
    }
  });

  it('exports a saved result set and a profile file to every format', async () => {
    const rs: ResultSet = smallResultSet();
    const rsPath = join(dir, 'results.json');
    await saveResultSetDocument(rsPath, resultSetDocument([rs]));
    const out = join(dir, 'exports');
    mkdirSync(out);
    for (const f of EXPORT_FORMATS) {
      const io = capture();
      if (f.id === 'gmon') {
        // A result set without its call graph has no addresses, and gmon.out is nothing but addresses.
        assert.equal(await main(['export', rsPath, '--format', f.id, '-o', join(out, 'rs.gmon.out')], io), 1);
        assert.match(io.stderr, /gmon\.out needs function addresses, and this profile has none/);
        assert.ok(!existsSync(join(out, 'rs.gmon.out')));
        continue;
      }
      const target = join(out, `rs${f.extension}`);
      assert.equal(await main(['export', rsPath, '--format', f.id, '-o', target], io), 0, io.stderr);
      assert.ok(existsSync(target), f.id);
      assert.match(io.stderr, new RegExp(`written to .*rs${f.extension.replace(/\./g, '\\.')}`));
    }
    // The stacks add up to the run's total: what no measured function holds is `[not measured]`.
    assert.equal(readFileSync(join(out, 'rs.folded'), 'utf8'), 'work 600\n[not measured] 400\n');
    const profilePath = join(dir, 'in.profile.json');
    await saveProfile(profilePath, sampleProfile());
    const io = capture();
    assert.equal(
      await main(['export', profilePath, '--format', 'folded', '-o', join(out, 'p.folded')], io),
      0,
      io.stderr,
    );
    assert.equal(importFolded(readFileSync(join(out, 'p.folded'), 'utf8')).total?.value, 10_000);
    const json = capture();
    assert.equal(await main(['export', profilePath, '--format', 'json', '-o', join(out, 'p.profile.json')], json), 0);
    assert.deepEqual(await loadProfile(join(out, 'p.profile.json')), sampleProfile());
    assert.ok(
      readdirSync(out).every((n) => !n.endsWith('.tmp')),
      'no temporary files left',
    );
  });

  it('names the input file and the fix when it cannot be read', async () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{"schema": "cyclelens-resultset/1", "resultSets": 3}');
    const io = capture();
    assert.equal(await main(['export', bad, '--format', 'pprof', '-o', join(dir, 'x.pb.gz')], io), 1);
    assert.match(io.stderr, /bad\.json: resultSets must be an array/);
    const io2 = capture();
    assert.equal(
      await main(['export', join(dir, 'none.json'), '--format', 'pprof', '-o', join(dir, 'x.pb.gz')], io2),
      1,
    );
    assert.match(io2.stderr, /none\.json does not exist: check the path/);
  });
});
