import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { loadResultSetDocument, type ResultSetDocument } from '../../core/analysis/resultSet';
import { runOracle, type OracleSummary } from '../oracle/oracle';
import { windowOf } from '../oracle/programWindow';
import { cliWorkspace, type RunningCli } from '../support/cliWorkspace';
import { processesWithTag, waitForNoTaggedProcesses } from '../support/ownedProcesses';
import { fixturesDir } from '../support/paths';

/**
 * `--jobs`: runs of one analysis on several QEMU sessions at once. On RV32 under -icount a run is
 * exact and repeats, so the full profile and the descent with two jobs must give exactly the
 * values one job gives, and those must agree with the instruction trace. The program is an
 * ordinary one (json: picolibc, main returns) with the README's launch configuration.
 */
describe('parallel runs (--jobs) on QEMU RV32 against one job and the oracle', () => {
  const elf = join(fixturesDir, 'build', 'rv32', 'programs', 'json.elf');
  const ws = cliWorkspace(
    'cyclelens-jobs-',
    [{ name: 'json', executable: elf, server: { type: 'qemu', machine: 'virt' }, stopAtEntry: 'main' }],
    {
      leftBehind: 'no QEMU or GDB of any session is left behind',
    },
  );
  const { dir, tag } = ws;
  let oracle: OracleSummary;

  before(async () => {
    oracle = await runOracle({ elf });
  });

  after(ws.close);

  function cli(...args: string[]): { doc: Promise<ResultSetDocument>; stderr: string } {
    const out = join(dir, `${args.join('-').replace(/[^\w-]+/g, '')}.json`);
    const r = ws.cli(...args, '--config', '.vscode/launch.json', '--name', 'json', '--out', out);
    assert.equal(r.status, 0, r.stderr);
    return { doc: loadResultSetDocument(out), stderr: r.stderr };
  }

  /** Per function: its inclusive count and calls, from the run that measured it. */
  function measured(doc: ResultSetDocument): Map<string, { value: number; calls: number }> {
    const out = new Map<string, { value: number; calls: number }>();
    for (const rs of doc.resultSets)
      for (const m of rs.measurements) out.set(m.name, { value: m.inclusive[rs.run.event]!, calls: m.calls });
    return out;
  }

  /** Measured functions inside the run's window agree with the trace: calls exactly, shares within 0.2 points. */
  function checkAgainstOracle(doc: ResultSetDocument): number {
    const run = doc.resultSets[0]!.run;
    const total = run.totals[run.event]!;
    const window = windowOf(oracle, undefined);
    assert.equal(total, window.total, "the run's total is the trace's window");
    let compared = 0;
    for (const [name, m] of measured(doc)) {
      if (!window.inside.has(name)) continue;
      const o = oracle.functions.find((f) => f.name === name || f.aliases.includes(name))!;
      assert.equal(m.calls, o.calls, `${name}: calls`);
      assert.ok(
        Math.abs(m.value / total - o.inclusive / window.total) <= 0.002,
        `${name}: ${m.value} of ${total} vs the trace's ${o.inclusive}`,
      );
      compared++;
    }
    return compared;
  }

  it('full profile: two jobs measure every function exactly as one job does, and as the trace has it', async () => {
    const one = cli('profile', '--slots', '1', '--jobs', '1');
    const two = cli('profile', '--slots', '1', '--jobs', '2');
    assert.doesNotMatch(one.stderr, /\[worker/, 'one job: one session');
    assert.match(two.stderr, /^run \d+ \[worker 2\]: /m, 'the second session ran batches');
    const [a, b] = [await one.doc, await two.doc];
    assert.deepEqual(
      b.resultSets.map((rs) => rs.measurements.map((m) => m.name)),
      a.resultSets.map((rs) => rs.measurements.map((m) => m.name)),
      'the same batches, in the same order',
    );
    assert.deepEqual(
      b.resultSets.map((rs) => rs.run.totals),
      a.resultSets.map((rs) => rs.run.totals),
    );
    assert.deepEqual(measured(b), measured(a), 'every value and call count equal');
    assert.equal(b.analysis!.runs, a.analysis!.runs, 'every run counted');
    assert.ok(a.analysis!.runs >= a.resultSets.length);
    const compared = checkAgainstOracle(b);
    assert.ok(compared >= 10, `${compared} functions compared with the trace`);
  });

  it(
    'descent at 1 %: two jobs give the sequential value of every function both measure, and ' + 'find every hot one',
    async () => {
      const one = cli('descent', '--threshold', '1%', '--slots', '2', '--jobs', '1');
      const two = cli('descent', '--threshold', '1%', '--slots', '2', '--jobs', '2');
      assert.match(two.stderr, /^run \d+ \[worker 2\]: /m, 'the second session ran batches');
      const [a, b] = [await one.doc, await two.doc];
      const ma = measured(a);
      const mb = measured(b);
      let common = 0;
      for (const [name, v] of ma) {
        if (!mb.has(name)) continue;
        assert.deepEqual(mb.get(name), v, `${name}: two jobs measured another value`);
        common++;
      }
      assert.ok(common >= 10, `${common} functions measured by both`);
      // Two jobs may measure more (batches planned side by side know less) or prune a function a
      // sequential step measured, but never leave a hot one out.
      const total = a.resultSets[0]!.run.totals[a.resultSets[0]!.run.event]!;
      const hot = [...ma].filter(([, v]) => v.value >= 0.01 * total).map(([name]) => name);
      assert.ok(hot.length >= 3);
      for (const name of hot) assert.ok(mb.has(name), `${name} is hot, measured with one job only`);
      assert.ok(b.analysis!.counted, 'on QEMU a counting run bounded the descent');
      assert.equal(
        b.analysis!.runs,
        b.resultSets.length + 1,
        'analysis.runs counts every run: the total came with the first batch, and the counting run has no result set',
      );
      checkAgainstOracle(b);
    },
  );

  /**
   * A two-job profile run in the background until the second session has run a batch; then
   * `interrupt` is called with the QEMU of each session (the first one's, then the second's).
   */
  async function interrupted(
    out: string,
    interrupt: (child: RunningCli['child'], qemu: { first: number; second: number }) => void,
  ): Promise<{ status: number | null; stderr: string }> {
    const args = [
      'profile',
      '--slots',
      '1',
      '--jobs',
      '2',
      '--config',
      '.vscode/launch.json',
      '--name',
      'json',
      '--out',
      out,
    ];
    const run = ws.start(args);
    const qemus = (): number[] =>
      processesWithTag(tag)
        .filter((p) => /qemu-system-riscv32/.test(p.cmdline))
        .map((p) => p.pid);
    let first: number | undefined;
    let done = false;
    for (let i = 0; i < 1200 && !done && run.child.exitCode === null; i++) {
      await new Promise((r) => setTimeout(r, 50));
      first ??= qemus()[0];
      if (first === undefined || !/^run \d+ \[worker 2\]/m.test(run.stderr)) continue;
      const second = qemus().find((p) => p !== first);
      assert.ok(second, 'the second session has its own QEMU');
      interrupt(run.child, { first, second });
      done = true;
    }
    assert.ok(done, `the second session ran nothing before the profile ended: ${run.stderr}`);
    return { status: await run.exited, stderr: run.stderr };
  }

  it(
    'Ctrl-C with two jobs: both sessions stop after their run in hand, finished runs are ' + 'written, no QEMU is left',
    async () => {
      const out = join(dir, 'cancelled.json');
      const r = await interrupted(out, (child) => child.kill('SIGINT'));
      assert.equal(r.status, 130, r.stderr);
      assert.deepEqual(await waitForNoTaggedProcesses(tag), [], 'no QEMU or GDB of either session outlives the CLI');
      const doc = await loadResultSetDocument(out);
      assert.ok(doc.analysis?.cancelled, 'the analysis says it was cancelled');
      assert.ok(doc.resultSets.length >= 2, `${doc.resultSets.length} runs written`);
    },
  );

  it(
    "the second session's QEMU killed: the profile fails naming that worker and what died, " +
      'finished runs are kept, the other session is closed',
    async () => {
      const out = join(dir, 'worker-killed.json');
      const r = await interrupted(out, (_, qemu) => process.kill(qemu.second, 'SIGKILL'));
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stderr, /worker 2: /);
      assert.match(r.stderr, /QEMU was killed by SIGKILL/);
      const m = /(\d+) finished run\(s\) \(\d+ result set\(s\) in all\) are saved in worker-killed\.json/.exec(
        r.stderr,
      );
      assert.ok(m, r.stderr);
      assert.equal(
        (await loadResultSetDocument(out)).resultSets.length,
        Number(m[1]),
        'every finished run is in the file',
      );
      assert.deepEqual(await waitForNoTaggedProcesses(tag), [], 'the first session is closed too');
    },
  );
});
