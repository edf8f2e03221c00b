import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { MetricsEngine } from '../../core/analysis/metrics';
import {
  RESULT_SET_SCHEMA,
  ResultSetError,
  loadResultSetDocument,
  parseResultSetText,
  rawValues,
  resultSetDocument,
  saveResultSetDocument,
  wholeRunValues,
  writeFileAtomic,
  type ResultSet,
  type ResultSetDocument,
} from '../../core/analysis/resultSet';

const dir = mkdtempSync(join(tmpdir(), 'cyclelens-resultset-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function sample(id = 'rs-1'): ResultSet {
  return {
    id,
    createdAt: '2024-05-01T10:00:00.000Z',
    program: { executable: '/fw/singlepass.elf', family: 'riscv' },
    run: {
      kind: 'single-pass',
      event: 'instructions',
      totals: { instructions: 1_331_488, cycles: 1_331_490 },
      method: 'software injection, minstret',
      from: 'main',
      to: 'end',
    },
    measurements: [
      {
        name: 'vm_run',
        inclusive: { instructions: 294_620 },
        calls: 20,
        passes: 20,
        untracked: 0,
        min: 14_700,
        max: 14_800,
        mean: 14_731,
        rawTotal: 294_700,
      },
      { name: 'crc16_step', inclusive: { instructions: 262_183 }, calls: 11_320 },
    ],
    refused: [{ name: 'idle_point', reason: 'too short: a 2-byte return' }],
  };
}

function doc(): ResultSetDocument {
  return resultSetDocument([sample('a'), sample('b')], {
    scenario: 'descent',
    metric: 'share',
    threshold: 0.01,
    roots: ['main', 'trap_entry'],
    runs: 2,
    cancelled: false,
    outcomes: [
      { name: 'vm_run', status: 'measured', value: 0.22, bound: 1, resultSet: 0, depth: 2 },
      { name: 'rotl32', status: 'pruned', bound: 0.004, depth: 5 },
      { name: 'main', status: 'measured', value: 1, bound: 1, spansWindow: true, depth: 0 },
    ],
    callGraph: {
      functions: [{ name: 'main', address: 0x80000eec, size: 136, path: '/fw/src/singlepass.c', line: 12 }],
      edges: [{ caller: 'main', callee: 'main', kind: 'call', sites: [0x80000ef0], count: 1 }],
      indirectCallers: [],
    },
  });
}

describe('result sets', () => {
  it('forms values within one result set only', () => {
    const rs = sample();
    const raw = rawValues(rs, 'vm_run')!;
    assert.equal(raw['inclusive:instructions'], 294_620);
    assert.equal(raw['total:instructions'], 1_331_488, 'the total of the same run');
    assert.equal(raw['inclusive:event'], 294_620);
    const v = new MetricsEngine().evaluate(raw);
    assert.equal(v.get('share'), 294_620 / 1_331_488);
    assert.equal(v.get('perCall.instructions'), 294_620 / 20);
    assert.equal(rawValues(rs, 'idle_point'), undefined, 'refused: no values');
    assert.equal(new MetricsEngine().value('share', wholeRunValues(rs)), 1);
  });

  it('round-trips through a file', async () => {
    const path = join(dir, 'roundtrip.json');
    const d = doc();
    await saveResultSetDocument(path, d);
    const back = await loadResultSetDocument(path);
    assert.deepEqual(back, d);
    assert.equal(JSON.parse(readFileSync(path, 'utf8')).schema, RESULT_SET_SCHEMA);
  });

  it('says clearly when a file is of another version', () => {
    const newer = JSON.stringify({ ...doc(), schema: 'cyclelens-resultset/2' });
    assert.throws(
      () => parseResultSetText(newer, 'r.json'),
      (e: Error) =>
        e instanceof ResultSetError &&
        e.kind === 'version' &&
        /version 2, this CycleLens reads version 1: it was written by a newer CycleLens/.test(e.message),
    );
    const older = JSON.stringify({ ...doc(), schema: 'cyclelens-resultset/0' });
    assert.throws(() => parseResultSetText(older, 'r.json'), /older CycleLens/);
  });

  it('says clearly when a file is not a result set or not JSON', () => {
    assert.throws(
      () => parseResultSetText('{"schema": "cyclelens-oracle/1"}', 'o.json'),
      (e: Error) =>
        e instanceof ResultSetError &&
        e.kind === 'notResultSet' &&
        /its schema is "cyclelens-oracle\/1"/.test(e.message),
    );
    assert.throws(() => parseResultSetText('[1, 2]', 'a.json'), /holds an array/);
    assert.throws(() => parseResultSetText('{}', 'e.json'), /no "schema" field/);
    assert.throws(
      () => parseResultSetText('{"schema": "cyclelens-resultset/1", "resultSets": [', 'cut.json'),
      (e: Error) => e instanceof ResultSetError && e.kind === 'notJson' && /cut.json is not valid JSON/.test(e.message),
    );
  });

  it('names the malformed field', () => {
    const bad = (mutate: (d: Record<string, any>) => void): string => {
      const d = JSON.parse(JSON.stringify(doc())) as Record<string, any>;
      mutate(d);
      return JSON.stringify(d);
    };
    const cases: Array<[(d: Record<string, any>) => void, RegExp]> = [
      [
        (d) => (d.resultSets[1].measurements[0].calls = -1),
        /resultSets\[1\]\.measurements\[0\]\.calls must be a non-negative integer/,
      ],
      [
        (d) => (d.resultSets[0].run.totals.instructions = 'many'),
        /resultSets\[0\]\.run\.totals\.instructions must be a finite number \(found "many"\)/,
      ],
      [(d) => delete d.resultSets[0].run.event, /resultSets\[0\]\.run\.event must be a string/],
      [(d) => (d.resultSets[0].run.kind = 'weekly'), /run\.kind must be one of/],
      [(d) => (d.resultSets = {}), /resultSets must be an array/],
      [(d) => (d.analysis.outcomes[0].status = 'hot'), /analysis\.outcomes\[0\]\.status must be one of/],
      [(d) => (d.analysis.outcomes[0].resultSet = 7), /resultSet points at result set 7, but the file holds 2/],
      [(d) => (d.analysis.callGraph.edges[0].kind = 'jump'), /callGraph\.edges\[0\]\.kind/],
    ];
    for (const [mutate, message] of cases) {
      assert.throws(
        () => parseResultSetText(bad(mutate), 'm.json'),
        (e: Error) =>
          e instanceof ResultSetError &&
          e.kind === 'malformed' &&
          message.test(e.message) &&
          e.message.startsWith('m.json: '),
        String(message),
      );
    }
  });

  it('rejects finite but impossible values, naming the field', () => {
    const bad = (mutate: (d: Record<string, any>) => void): string => {
      const d = JSON.parse(JSON.stringify(doc())) as Record<string, any>;
      mutate(d);
      return JSON.stringify(d);
    };
    const cases: Array<[(d: Record<string, any>) => void, RegExp]> = [
      [
        (d) => (d.resultSets[0].run.totals.instructions = 1e300),
        /resultSets\[0\]\.run\.totals\.instructions is impossibly large \(1e\+300; a 64-bit counter reads at most/,
      ],
      [
        (d) => (d.resultSets[1].measurements[0].inclusive.instructions = 1e300),
        /resultSets\[1\]\.measurements\[0\]\.inclusive\.instructions is impossibly large/,
      ],
      // Compensation may undershoot zero by under one unit per call boundary (11,320 calls here), not more.
      [
        (d) => (d.resultSets[0].measurements[1].inclusive.instructions = -11_322),
        /resultSets\[0\]\.measurements\[1\]\.inclusive\.instructions is a negative count \(-11322\)/,
      ],
      [
        (d) => (d.resultSets[0].measurements[0].inclusive.instructions = -22),
        /resultSets\[0\]\.measurements\[0\]\.inclusive\.instructions is a negative count \(-22\)/,
      ],
      [(d) => (d.resultSets[0].run.totals.cycles = -1), /resultSets\[0\]\.run\.totals\.cycles is a negative count/],
      [
        (d) => (d.resultSets[0].measurements[1].calls = 2.5),
        /resultSets\[0\]\.measurements\[1\]\.calls must be a non-negative integer \(found 2\.5\)/,
      ],
      [
        (d) => (d.resultSets[0].measurements[1].calls = 1e300),
        /resultSets\[0\]\.measurements\[1\]\.calls is impossibly large/,
      ],
      [
        (d) => (d.resultSets[0].measurements[0].inclusive.instructions = 1e15),
        new RegExp(
          /resultSets\[0\]\.measurements\[0\]\.inclusive\.instructions is 1000000000000000,/.source +
            / far more than the whole run's total of 1331488 \(run\.totals\.instructions\)/.source,
        ),
      ],
      [
        (d) => (d.resultSets[0].measurements[0].min = 20_000),
        /resultSets\[0\]\.measurements\[0\]\.min \(20000\) is above max \(14800\)/,
      ],
      [(d) => (d.resultSets[0].measurements[0].rawTotal = -1), /measurements\[0\]\.rawTotal is a negative count/],
      [(d) => (d.analysis.runs = 2 ** 60), /analysis\.runs is impossibly large/],
    ];
    for (const [mutate, message] of cases) {
      assert.throws(
        () => parseResultSetText(bad(mutate), 'm.json'),
        (e: Error) =>
          e instanceof ResultSetError &&
          e.kind === 'malformed' &&
          message.test(e.message) &&
          e.message.startsWith('m.json: '),
        `${String(message)}`,
      );
    }
    // A near-empty function measured with a coarse counter: the compensated value dips below zero.
    const undershoot = JSON.parse(JSON.stringify(doc())) as Record<string, any>;
    undershoot.resultSets[0].measurements[0].inclusive.instructions = -0.175;
    undershoot.resultSets[0].measurements[0].min = -0.2;
    assert.equal(
      parseResultSetText(JSON.stringify(undershoot), 'm.json').resultSets[0]!.measurements[0]!.inclusive[
        'instructions'
      ],
      -0.175,
    );
    undershoot.resultSets[0].measurements[0].min = -2;
    assert.throws(
      () => parseResultSetText(JSON.stringify(undershoot), 'm.json'),
      /measurements\[0\]\.min is a negative count \(-2\)/,
    );
    // The limits are not tighter than real runs: a function may hold nearly all of its run.
    const near = JSON.parse(JSON.stringify(doc())) as Record<string, any>;
    near.resultSets[0].measurements[0].inclusive.instructions = 1_331_488;
    assert.equal(
      parseResultSetText(JSON.stringify(near)).resultSets[0]!.measurements[0]!.inclusive.instructions,
      1_331_488,
    );
  });

  it('treats files as data: no prototype keys, nothing evaluated', () => {
    const text = JSON.stringify(doc()).replace(
      '"instructions":1331488',
      '"__proto__":{"polluted":1},"instructions":1331488',
    );
    assert.throws(() => parseResultSetText(text, 'p.json'), /forbidden key "__proto__"/);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  it('reports a missing file', async () => {
    await assert.rejects(
      loadResultSetDocument(join(dir, 'absent.json')),
      (e: Error) => e instanceof ResultSetError && e.kind === 'io' && /does not exist/.test(e.message),
    );
  });
});

describe('atomic writes', () => {
  it('leaves the old file whole when writing fails before the rename', async () => {
    const path = join(dir, 'keep.json');
    await saveResultSetDocument(path, doc());
    const before = readFileSync(path, 'utf8');
    let seen = '';
    await assert.rejects(
      saveResultSetDocument(path, resultSetDocument([sample('new')]), {
        beforeRename: (temporary) => {
          seen = readFileSync(temporary, 'utf8');
          assert.equal(readFileSync(path, 'utf8'), before, 'the target is untouched while the new text is written');
          throw new Error('disk full');
        },
      }),
      /disk full/,
    );
    assert.match(seen, /"new"/, 'the temporary file held the complete new text');
    assert.equal(readFileSync(path, 'utf8'), before);
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.endsWith('.tmp')),
      [],
      'no temporary file is left behind',
    );
  });

  it('never writes a value JSON cannot hold', async () => {
    const path = join(dir, 'nan.json');
    writeFileSync(path, 'old');
    const d = resultSetDocument([{ ...sample(), run: { ...sample().run, totals: { instructions: Number.NaN } } }]);
    await assert.rejects(saveResultSetDocument(path, d), /totals\.instructions must be a finite number/);
    assert.equal(readFileSync(path, 'utf8'), 'old');
  });

  it('replaces the file in one step', async () => {
    const path = join(dir, 'plain.txt');
    await writeFileAtomic(path, 'one');
    await writeFileAtomic(path, 'two');
    assert.equal(readFileSync(path, 'utf8'), 'two');
    // A missing folder is created (a workspace's .cyclelens/results/ on first use)…
    await writeFileAtomic(join(dir, 'new-dir', 'x.json'), 'x');
    assert.equal(readFileSync(join(dir, 'new-dir', 'x.json'), 'utf8'), 'x');
    // …but a path through a file is an error, and nothing is left behind.
    await assert.rejects(writeFileAtomic(join(path, 'x.json'), 'x'), /ENOTDIR|EEXIST/);
  });
});
