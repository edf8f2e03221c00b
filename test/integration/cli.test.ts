import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadResultSetDocument } from '../../core/analysis/resultSet';
import { runOracle, type OracleSummary } from '../oracle/oracle';
import { cliWorkspace } from '../support/cliWorkspace';
import { fixtureElf } from '../support/paths';

/**
 * The `cyclelens` command line runs a call-graph descent end to end — launch configuration,
 * built adapter, GDB, QEMU, injected measurements — and its findings are checked against the
 * oracle's exact profile of the same program.
 */
describe('cyclelens CLI: descent on QEMU RV32 against the oracle', () => {
  const elf = fixtureElf('rv32', 'singlepass');
  const { dir, cli, close } = cliWorkspace(
    'cyclelens-cli-',
    [
      {
        name: 'QEMU RISC-V 32',
        executable: elf,
        server: { type: 'qemu', machine: 'virt' },
        stopAtEntry: 'main',
        programEnd: 'program_end',
      },
      {
        name: 'RV32 cyclic',
        executable: fixtureElf('rv32', 'cyclic'),
        server: { type: 'qemu', machine: 'virt' },
        stopAtEntry: 'main',
      },
    ],
    { comment: 'Comments are allowed, as in VS Code.' },
  );
  let oracle: OracleSummary;

  before(async () => {
    oracle = await runOracle({ elf });
  });

  after(close);

  it('finds every function the oracle puts at ≥ 5%, pruning only functions below it', async () => {
    const out = join(dir, 'descent.json');
    const dot = join(dir, 'graph.dot');
    const r = cli(
      'descent',
      '--config',
      '.vscode/launch.json',
      '--name',
      'QEMU RISC-V 32',
      '--threshold',
      '5%',
      '--no-lookahead',
      '--out',
      out,
      '--dot',
      dot,
    );
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /Call-graph descent of singlepass\.elf/);
    const doc = await loadResultSetDocument(out);
    const outcomes = doc.analysis!.outcomes;
    const measured = new Set(outcomes.filter((o) => o.status === 'measured' || o.spansWindow).map((o) => o.name));
    // Each run is main's window (the reset code before it is not profiled): shares are of main's
    // inclusive count, and functions that run only outside it (the reset handler) are out of scope.
    const window = oracle.functions.find((f) => f.name === 'main')!.inclusive;
    const reachable = new Set<string>(['main', ...oracle.functions.filter((f) => f.interrupts > 0).map((f) => f.name)]);
    for (let grew = true; grew;) {
      grew = false;
      for (const e of oracle.edges)
        if (reachable.has(e.caller) && !reachable.has(e.callee)) grew = reachable.add(e.callee).size > 0;
    }
    const inWindow = (name: string): boolean => reachable.has(name);
    const hot = oracle.functions
      .filter((f) => f.inclusive >= 0.05 * window && f.name !== 'main' && inWindow(f.name))
      .map((f) => f.name);
    assert.ok(hot.length >= 5);
    for (const name of hot) assert.ok(measured.has(name), `${name} is ≥ 5% in the oracle but was not measured`);
    const pruned = outcomes.filter((o) => o.status === 'pruned');
    assert.ok(pruned.length > 0 && measured.size < outcomes.length, `measured ${measured.size} of ${outcomes.length}`);
    for (const p of pruned) {
      const o = oracle.functions.find((f) => f.name === p.name);
      if (o)
        assert.ok(
          o.inclusive < 0.05 * window,
          `${p.name} was pruned but the oracle puts it at ${o.inclusive} of ${window}`,
        );
    }
    // The annotated call graph is valid Graphviz.
    const svg = spawnSync('dot', ['-Tsvg', dot], { encoding: 'utf8' });
    assert.equal(svg.status, 0, svg.stderr);
    assert.match(svg.stdout, /process_packet/);
    assert.match(readFileSync(dot, 'utf8'), /digraph/);
  });

  it('exact full profile: every call counted, inclusive counts off only by interrupts landing elsewhere', async () => {
    const out = join(dir, 'profile.json');
    const r = cli(
      'profile',
      '--config',
      '.vscode/launch.json',
      '--name',
      'QEMU RISC-V 32',
      '--slots',
      '8',
      '--out',
      out,
    );
    assert.equal(r.status, 0, r.stderr);
    const doc = await loadResultSetDocument(out);
    const measured = doc.resultSets.flatMap((s) => s.measurements);
    // A patched program runs more instructions, so the timer interrupt (fixed period in
    // instructions under -icount) lands in other functions than in the trace. That is the only
    // difference allowed, and it is bounded by all the interrupt work of the run.
    const interruptWork = oracle.functions.filter((f) => f.interrupts > 0).reduce((s, f) => s + f.inclusive, 0);
    assert.ok(interruptWork > 0 && interruptWork < 0.01 * oracle.totals.instructions);
    let compared = 0;
    for (const m of measured) {
      const o = oracle.functions.find((f) => f.name === m.name);
      // The window is main up to program_end's entry: the reset code before it and program_end
      // with what follows it (board_exit) lie outside.
      if (!o || ['_start', 'rv_reset', 'program_end', 'board_exit'].includes(m.name)) continue;
      assert.equal(m.calls, o.calls, `${m.name}: calls`);
      const value = m.inclusive['instructions'] ?? NaN;
      assert.ok(
        Math.abs(value - o.inclusive) <= interruptWork,
        `${m.name}: measured ${value}, oracle ${o.inclusive}, interrupt work ${interruptWork}`,
      );
      compared++;
    }
    assert.ok(compared >= 30, `only ${compared} functions compared`);
  });

  it('cyclic program: rotates batches at the safe stop point, one window per batch', async () => {
    const out = join(dir, 'cyclic.json');
    const r = cli(
      'profile',
      '--config',
      '.vscode/launch.json',
      '--name',
      'RV32 cyclic',
      '--cyclic',
      'idle_point',
      '--dwell',
      '3',
      '--slots',
      '8',
      '--out',
      out,
    );
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /Cyclic round robin of cyclic\.elf/);
    const doc = await loadResultSetDocument(out);
    assert.ok(doc.resultSets.length >= 3, `${doc.resultSets.length} windows`);
    const batches = doc.resultSets.map((s) => s.measurements.map((m) => m.name));
    const seen = new Set<string>();
    for (const b of batches)
      for (const name of b) {
        assert.ok(!seen.has(name), `${name} measured in two windows of one round`);
        seen.add(name);
      }
    // Each window dwells three passes through idle_point: three packets processed.
    const packet = doc.resultSets.flatMap((s) => s.measurements).find((m) => m.name === 'process_packet');
    assert.equal(packet?.calls, 3);
  });

  it('fails with a clear message and exit status on a configuration it cannot find', () => {
    const r = cli('descent', '--config', '.vscode/launch.json', '--name', 'No Such Target');
    assert.equal(r.status, 1);
    assert.match(r.stderr, /No Such Target/);
  });
});
