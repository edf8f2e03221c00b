import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadResultSetDocument } from '../../core/analysis/resultSet';
import { cliWorkspace } from '../support/cliWorkspace';
import { processesWithTag, waitForNoTaggedProcesses } from '../support/ownedProcesses';
import { fixtureElf } from '../support/paths';

/**
 * The command line's output files under real faults: a read-only file system, a parent directory that
 * cannot be created, a file system that fills up. Bad places are found before the first run; a full
 * disk for the JSON does not cost the DOT. Also the analysis under real faults: QEMU or GDB killed in
 * the middle (finished runs kept), two CLIs at once on one workspace, a result set with impossible values.
 */
describe('cyclelens CLI: output places that fail', () => {
  const { dir, tag, cli, start, close } = cliWorkspace('cyclelens-cli-faults-', [
    {
      name: 'RV32',
      executable: fixtureElf('rv32', 'singlepass'),
      server: { type: 'qemu', machine: 'virt' },
      stopAtEntry: 'main',
      programEnd: 'program_end',
    },
  ]);
  const mounts: string[] = [];

  /** A real tmpfs of `size` mounted at a new directory; read-only when asked. */
  function tmpfs(name: string, options: string): string {
    const at = join(dir, name);
    mkdirSync(at);
    execFileSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', at]);
    mounts.push(at);
    return at;
  }

  after(async () => {
    for (const m of mounts) spawnSync('umount', [m]);
    await close();
  });

  it('--out on a read-only file system is refused before anything starts', () => {
    const ro = tmpfs('ro', 'ro,size=64k');
    const r = cli('profile', '--config', '.vscode/launch.json', '--name', 'RV32', '--out', join(ro, 'p.json'));
    assert.equal(r.status, 1, r.stderr);
    assert.match(
      r.stderr,
      new RegExp(
        `--out ${join(ro, 'p.json')}: nothing can be written in ${ro} \\(read-only file ` +
          `system\\)\\. Choose a place you can write to; no run has started\\.`,
      ),
    );
    assert.doesNotMatch(r.stderr, /starting RV32/, 'no adapter, QEMU or GDB was started');
  });

  it('--dot under a parent that cannot be created (a file is in the way) is refused before anything starts', () => {
    writeFileSync(join(dir, 'not-a-dir'), 'x');
    const dot = join(dir, 'not-a-dir', 'graphs', 'g.dot');
    const r = cli('descent', '--config', '.vscode/launch.json', '--name', 'RV32', '--threshold', '5%', '--dot', dot);
    assert.equal(r.status, 1);
    assert.match(
      r.stderr,
      new RegExp(
        `--dot ${dot}: its directory ${join(dir, 'not-a-dir', 'graphs')} does not exist and cannot ` +
          `be created \\(a part of the path is a file, not a directory\\)`,
      ),
    );
    assert.doesNotMatch(r.stderr, /starting RV32/);
  });

  it('a missing parent that can be created is created, and the run goes on', () => {
    const out = join(dir, 'new', 'deeper', 'p.json');
    const r = cli('descent', '--config', '.vscode/launch.json', '--name', 'RV32', '--threshold', '20%', '--out', out);
    assert.equal(r.status, 0, r.stderr);
    assert.ok(existsSync(out));
    assert.deepEqual(readdirSync(join(dir, 'new', 'deeper')), ['p.json'], 'no probe file left behind');
  });

  it('the JSON fails on a full file system: the DOT is still written, and the message names the file and why', () => {
    const full = tmpfs('full', 'size=16k');
    // Fill it: the probe (an empty file) still fits, the result sets do not.
    spawnSync('dd', ['if=/dev/zero', `of=${join(full, 'filler')}`, 'bs=4k'], { encoding: 'utf8' });
    const out = join(full, 'p.json');
    const dot = join(dir, 'kept.dot');
    const r = cli(
      'descent',
      '--config',
      '.vscode/launch.json',
      '--name',
      'RV32',
      '--threshold',
      '20%',
      '--out',
      out,
      '--dot',
      dot,
    );
    assert.equal(r.status, 1, r.stderr);
    assert.match(
      r.stderr,
      new RegExp(
        `The result sets could not be written to ${out} \\(no space left on the device\\); the ` +
          `report above holds the findings`,
      ),
    );
    assert.match(readFileSync(dot, 'utf8'), /^digraph /);
    assert.match(r.stdout, /descent/i, 'the report was printed');
    assert.equal(processesWithTag(tag).filter((p) => /qemu|gdb/.test(p.cmdline)).length, 0);
  });

  it(
    'QEMU killed in the middle of a descent: finished runs are kept, the message names what ' +
      'died, --resume continues',
    async () => {
      const out = join(dir, 'interrupted.json');
      const args = [
        'descent',
        '--config',
        '.vscode/launch.json',
        '--name',
        'RV32',
        '--threshold',
        '1%',
        '--slots',
        '2',
        '--no-groups',
        '--out',
        out,
      ];
      const run = start(args);
      // Wait for the first run's result set on disk, then kill the emulator for real.
      let qemuPid: number | undefined;
      for (let i = 0; i < 600 && qemuPid === undefined; i++) {
        await new Promise((r) => setTimeout(r, 100));
        if (!existsSync(out) || run.child.exitCode !== null) continue;
        const saved = await loadResultSetDocument(out).catch(() => undefined);
        if ((saved?.resultSets.length ?? 0) >= 1)
          qemuPid = processesWithTag(tag).find((p) => /qemu-system-riscv32/.test(p.cmdline))?.pid;
      }
      assert.ok(qemuPid, `no saved run to interrupt: ${run.stderr}`);
      process.kill(qemuPid, 'SIGKILL');
      assert.equal(await run.exited, 1, run.stderr);
      assert.match(
        run.stderr,
        new RegExp(
          /the debug session ended in the middle of the analysis: /.source +
            /QEMU was killed by SIGKILL while the session was running/.source,
        ),
      );
      assert.match(
        run.stderr,
        new RegExp(
          /(\d+) finished run\(s\) \(\d+ result set\(s\) in all\) are saved in interrupted\.json; /.source +
            /continue with the same command and --resume interrupted\.json/.source,
        ),
      );
      const partial = await loadResultSetDocument(out);
      assert.ok(partial.resultSets.length >= 1);
      const savedRuns = Number(/(\d+) finished run\(s\)/.exec(run.stderr)![1]);
      assert.equal(partial.resultSets.length, savedRuns, 'every finished run is in the file');

      const resumed = cli(...args.slice(0, -2), '--resume', out, '--out', join(dir, 'resumed.json'));
      assert.equal(resumed.status, 0, resumed.stderr);
      const final = await loadResultSetDocument(join(dir, 'resumed.json'));
      const ids = new Set(final.resultSets.map((r) => r.id));
      for (const rs of partial.resultSets)
        assert.ok(ids.has(rs.id), `result set ${rs.id} of the interrupted run is kept`);
      assert.ok(final.analysis && !final.analysis.cancelled, 'the resumed descent finished');
    },
  );
  it(
    'GDB killed in the middle of a profile: the finished runs are kept and the message names ' + 'GDB and how it died',
    async () => {
      const out = join(dir, 'gdb-killed.json');
      const run = start(['profile', '--config', '.vscode/launch.json', '--name', 'RV32', '--slots', '1', '--out', out]);
      let gdbPid: number | undefined;
      for (let i = 0; i < 1200 && gdbPid === undefined && run.child.exitCode === null; i++) {
        await new Promise((r) => setTimeout(r, 100));
        const saved = existsSync(out) ? await loadResultSetDocument(out).catch(() => undefined) : undefined;
        if ((saved?.resultSets.length ?? 0) >= 1)
          gdbPid = processesWithTag(tag).find((p) => /gdb-multiarch/.test(p.cmdline))?.pid;
      }
      assert.ok(gdbPid, `no saved run to interrupt: ${run.stderr}`);
      process.kill(gdbPid, 'SIGKILL');
      assert.equal(await run.exited, 1, run.stderr);
      assert.match(run.stderr, /the debug session ended in the middle of the analysis: GDB was killed by SIGKILL/);
      const m = new RegExp(
        /(\d+) finished run\(s\) \(\d+ result set\(s\) in all\) are saved in gdb-killed\.json; /.source +
          /a descent continues from them with --resume/.source,
      ).exec(run.stderr);
      assert.ok(m, run.stderr);
      assert.equal(
        (await loadResultSetDocument(out)).resultSets.length,
        Number(m[1]),
        'every finished run is in the file',
      );
      assert.deepEqual(await waitForNoTaggedProcesses(tag), [], 'QEMU went with GDB');
    },
  );

  it('two CLIs at once on one workspace and one ELF: both finish and both result sets are kept', async () => {
    const run = (out: string): Promise<{ code: number | null; stderr: string }> => {
      const twin = start([
        'descent',
        '--config',
        '.vscode/launch.json',
        '--name',
        'RV32',
        '--threshold',
        '20%',
        '--out',
        out,
      ]);
      return twin.exited.then((code) => ({ code, stderr: twin.stderr }));
    };
    const [a, b] = await Promise.all([run(join(dir, 'twin-a.json')), run(join(dir, 'twin-b.json'))]);
    assert.equal(a.code, 0, a.stderr);
    assert.equal(b.code, 0, b.stderr);
    for (const f of ['twin-a.json', 'twin-b.json']) {
      const doc = await loadResultSetDocument(join(dir, f));
      assert.ok(doc.resultSets.length >= 1 && doc.analysis && !doc.analysis.cancelled, `${f} holds a finished descent`);
    }
    const journal = join(dir, '.cyclelens', 'journal');
    assert.deepEqual(existsSync(journal) ? readdirSync(journal) : [], [], 'both sessions ended clean: no journal left');
  });

  it('a result set with finite but impossible values (1e300) is refused with the JSON path of the field', () => {
    const bad = join(dir, 'impossible.json');
    writeFileSync(
      bad,
      JSON.stringify({
        schema: 'cyclelens-resultset/1',
        resultSets: [
          {
            id: 'rs-1',
            createdAt: '2026-01-01T00:00:00.000Z',
            program: { executable: '/fw/fw.elf' },
            run: {
              kind: 'single-pass',
              event: 'instructions',
              totals: { instructions: 1e300 },
              method: 'software injection, minstret',
            },
            measurements: [{ name: 'main', inclusive: { instructions: 600 }, calls: 1 }],
            refused: [],
          },
        ],
      }),
    );
    const r = cli('export', bad, '--format', 'folded', '-o', join(dir, 'impossible.folded'));
    assert.equal(r.status, 1, r.stderr);
    assert.match(
      r.stderr,
      /impossible\.json: resultSets\[0\]\.run\.totals\.instructions is impossibly large \(1e\+300/,
    );
    assert.ok(!existsSync(join(dir, 'impossible.folded')), 'nothing was exported from it');
    const resumed = cli('descent', '--config', '.vscode/launch.json', '--name', 'RV32', '--resume', bad);
    assert.equal(resumed.status, 1, resumed.stderr);
    assert.match(resumed.stderr, /resultSets\[0\]\.run\.totals\.instructions is impossibly large/);
    assert.doesNotMatch(resumed.stderr, /starting RV32/, 'refused before anything started');
  });
});
