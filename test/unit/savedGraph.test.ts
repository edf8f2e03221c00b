import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CallGraphResponse } from '../../common/dapCustom';
import {
  CALL_GRAPH_SCHEMA,
  ResultSetError,
  parseCallGraphDocument,
  parseResultSetText,
  resultSetDocument,
  type CallGraphDocument,
  type ResultSet,
} from '../../core/analysis/resultSet';
import { SavedGraphError, withCallCounts } from '../../core/analysis/savedGraph';

const program: CallGraphResponse = {
  functions: [
    { name: 'main', address: 0x100, size: 64 },
    { name: 'work', address: 0x140, size: 32 },
    { name: 'unused', address: 0x160, size: 16 },
    { name: 'handler', address: 0x170, size: 16 },
  ],
  edges: [
    { caller: 'main', callee: 'work', kind: 'call', sites: [0x104] },
    { caller: 'main', callee: 'unused', kind: 'call', sites: [0x108] },
  ],
  indirectCallers: ['main'],
};

function dynamic(graph: CallGraphResponse = program): CallGraphDocument {
  return {
    schema: CALL_GRAPH_SCHEMA,
    program: 'fw.elf',
    kind: 'dynamic',
    graph: {
      ...graph,
      edges: [
        { caller: 'main', callee: 'work', kind: 'call', sites: [0x104], count: 12 },
        // Seen only at run time: a call through a pointer.
        { caller: 'main', callee: 'handler', kind: 'call', sites: [], count: 3 },
      ],
    },
    interrupts: [{ caller: 'work', callee: 'handler', kind: 'call', sites: [], count: 2 }],
    ended: 'programEnd',
  };
}

describe('saved call graphs', () => {
  it(
    'puts the recorded counts on the static graph, keeps every static edge and adds the edges ' + 'only the run showed',
    () => {
      const g = withCallCounts(program, dynamic(), 'calls.json');
      assert.deepEqual(
        g.edges.map((e) => [e.caller, e.callee, e.count]),
        [
          ['main', 'work', 12],
          ['main', 'unused', 0],
          ['main', 'handler', 3],
        ],
      );
      assert.deepEqual(g.indirectCallers, ['main'], 'the static graph decides the bounds: indirect callers stay');
      assert.deepEqual(g.interrupts, dynamic().interrupts);
    },
  );

  it('refuses a graph of another build, and a static one, saying how to record it again', () => {
    const moved = {
      ...program,
      functions: program.functions.map((f) => (f.name === 'work' ? { ...f, address: 0x144 } : f)),
    };
    assert.throws(
      () => withCallCounts(moved, dynamic(), 'calls.json'),
      (err: Error) =>
        err instanceof SavedGraphError &&
        /another build of fw\.elf \(work at 0x140 is elsewhere or of another size/.test(err.message) &&
        /cyclelens call-graph --dynamic --out calls\.json/.test(err.message),
    );
    const fewer = { ...program, functions: program.functions.slice(0, 3) };
    assert.throws(() => withCallCounts(fewer, dynamic(), 'calls.json'), /another build/);
    assert.throws(
      () => withCallCounts(program, { ...dynamic(), kind: 'static' }, 'calls.json'),
      /static call graph: it has no call counts/,
    );
  });

  it('reads only a valid document, as data', () => {
    const doc = dynamic();
    assert.deepEqual(parseCallGraphDocument(JSON.parse(JSON.stringify(doc)), 'calls.json'), doc);
    assert.throws(
      () => parseCallGraphDocument({ ...doc, schema: 'cyclelens-resultset/1' }, 'calls.json'),
      (err: Error) =>
        err instanceof ResultSetError &&
        /not a CycleLens call graph: its schema is "cyclelens-resultset\/1"/.test(err.message),
    );
    assert.throws(
      () => parseCallGraphDocument({ ...doc, kind: 'guessed' }, 'calls.json'),
      /kind must be one of "static", "dynamic"/,
    );
    assert.throws(
      () =>
        parseCallGraphDocument(
          {
            ...doc,
            graph: { ...doc.graph, edges: [{ caller: 'main', callee: 'work', kind: 'call', sites: [], count: -1 }] },
          },
          'calls.json',
        ),
      /count must be a non-negative integer/,
    );
  });
});

describe('result sets with group measurements', () => {
  it('round-trips groups and refused groups, and rejects a group without members', () => {
    const rs: ResultSet = {
      id: 'rs-1',
      createdAt: '2024-01-01T00:00:00Z',
      program: { executable: 'fw.elf' },
      run: {
        kind: 'single-pass',
        event: 'instructions',
        totals: { instructions: 1000 },
        method: 'software injection, minstret',
      },
      measurements: [],
      groups: [{ name: 'a + b', members: ['a', 'b'], inclusive: { instructions: 40 }, calls: 7 }],
      refused: [
        { name: 'c + d', reason: 'Group member d cannot be entry-patched', members: ['c', 'd'], blockedBy: 'd' },
      ],
    };
    const text = JSON.stringify(resultSetDocument([rs]));
    assert.deepEqual(parseResultSetText(text).resultSets[0], rs);
    const empty = JSON.stringify(resultSetDocument([{ ...rs, groups: [{ ...rs.groups![0]!, members: [] }] }]));
    assert.throws(
      () => parseResultSetText(empty, 'r.json'),
      /resultSets\[0\]\.groups\[0\]\.members must name at least one function/,
    );
  });
});

describe('the workspace call graph', () => {
  it('is found at .cyclelens/callgraph.json, read as data, and its problems reported rather than thrown', async () => {
    const { mkdtempSync, mkdirSync, writeFileSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { workspaceCallGraph, workspaceCallGraphPath } = await import('../../core/analysis/savedGraph');
    const folder = mkdtempSync(join(tmpdir(), 'cyclelens-ws-'));
    try {
      assert.equal(await workspaceCallGraph(folder), undefined);
      mkdirSync(join(folder, '.cyclelens'));
      writeFileSync(workspaceCallGraphPath(folder), JSON.stringify(dynamic()));
      const found = await workspaceCallGraph(folder);
      assert.ok(found && 'document' in found);
      assert.deepEqual(found.document, dynamic());
      writeFileSync(workspaceCallGraphPath(folder), '{"schema": "cyclelens-callgraph/1", "program": ');
      const broken = await workspaceCallGraph(folder);
      assert.ok(broken && 'problem' in broken && /not valid JSON/.test(broken.problem), JSON.stringify(broken));
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
