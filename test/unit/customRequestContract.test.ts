import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import ts from 'typescript';
import { CustomEvents, CustomRequests } from '../../common/dapCustom';
import { CycleLensDebugSession } from '../../adapter/session/debugSession';
import { DapClient } from '../../core/dap/dapClient';
import { repoRoot } from '../support/paths';

// The custom-request contract (common/dapCustom.ts) and the adapter agree, read from the sources
// with the TypeScript compiler: every request the adapter's handler tables answer is in
// CustomRequestMap and every one in the map is answered; the same for the events it sends. The
// extension and the profiling job reach the adapter only through the one generic client. Then the
// running adapter (in process) is asked every name of the map.

function parse(path: string): ts.SourceFile {
  return ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.ES2022, true);
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => join(e.parentPath, e.name));
}

function walk(node: ts.Node, visit: (n: ts.Node) => void): void {
  visit(node);
  node.forEachChild((c) => walk(c, visit));
}

/** The string-literal property names of an interface declared in `file`. */
function interfaceKeys(file: ts.SourceFile, name: string): string[] {
  const keys: string[] = [];
  walk(file, (n) => {
    if (ts.isInterfaceDeclaration(n) && n.name.text === name) {
      for (const m of n.members) if (m.name && ts.isStringLiteral(m.name)) keys.push(m.name.text);
    }
  });
  assert.ok(keys.length > 0, `interface ${name} not found in ${file.fileName}`);
  return keys.sort();
}

/** `Short.name` as the wire name it stands for, or a string literal; else undefined. */
function wireName(e: ts.Expression): string | undefined {
  if (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e)) return e.text;
  if (ts.isPropertyAccessExpression(e) && ts.isIdentifier(e.expression)) {
    const table: Record<string, Record<string, string>> = { CustomRequests, CustomEvents };
    return table[e.expression.text]?.[e.name.text];
  }
  return undefined;
}

const common = parse(join(repoRoot, 'common', 'dapCustom.ts'));
const adapterFiles = sources(join(repoRoot, 'adapter')).map(parse);

/** Keys of the object literals returned by the `handlers()` tables of adapter/session. */
function dispatchedRequests(): { names: string[]; where: Map<string, string> } {
  const where = new Map<string, string>();
  for (const f of adapterFiles.filter((f) => f.fileName.includes(`${join('adapter', 'session')}`))) {
    walk(f, (n) => {
      if (!ts.isObjectLiteralExpression(n)) return;
      for (const p of n.properties) {
        const key =
          p.name && ts.isComputedPropertyName(p.name)
            ? wireName(p.name.expression)
            : p.name && ts.isStringLiteral(p.name)
              ? p.name.text
              : undefined;
        if (key?.startsWith('cyclelens/')) where.set(key, relative(repoRoot, f.fileName));
      }
    });
  }
  return { names: [...where.keys()].sort(), where };
}

/** First arguments of `customEvent(…)` and of any `new Event(…)` in the adapter. */
function sentEvents(): { viaContract: string[]; untyped: string[] } {
  const viaContract: string[] = [];
  const untyped: string[] = [];
  for (const f of adapterFiles) {
    walk(f, (n) => {
      if (
        ts.isCallExpression(n) &&
        ts.isIdentifier(n.expression) &&
        n.expression.text === 'customEvent' &&
        n.arguments[0]
      ) {
        viaContract.push(
          wireName(n.arguments[0]) ?? `unresolved ${n.arguments[0].getText()} in ${relative(repoRoot, f.fileName)}`,
        );
      }
      const typedConstructor = f.fileName.endsWith(join('session', 'customRequests.ts'));
      if (
        ts.isNewExpression(n) &&
        ts.isIdentifier(n.expression) &&
        n.expression.text === 'Event' &&
        !typedConstructor
      ) {
        untyped.push(`${relative(repoRoot, f.fileName)}: new Event(${n.arguments?.[0]?.getText() ?? ''})`);
      }
    });
  }
  return { viaContract: [...new Set(viaContract)].sort(), untyped };
}

describe('the custom-request contract and the adapter', () => {
  const requestMap = interfaceKeys(common, 'CustomRequestMap');
  const eventMap = interfaceKeys(common, 'CustomEventMap');

  it('finds the handler tables (the reading of the sources works)', () => {
    const { where } = dispatchedRequests();
    assert.equal(where.get('cyclelens/inject'), join('adapter', 'session', 'injectionRequests.ts'));
    assert.equal(where.get('cyclelens/counters'), join('adapter', 'session', 'probeRequests.ts'));
    assert.equal(where.get('cyclelens/samplers'), join('adapter', 'session', 'samplingRequests.ts'));
  });

  it('every request the adapter dispatches is in the map, and every one in the map is dispatched', () => {
    const { names } = dispatchedRequests();
    assert.deepEqual(
      names.filter((n) => !requestMap.includes(n)),
      [],
      'dispatched but not declared in CustomRequestMap',
    );
    assert.deepEqual(
      requestMap.filter((n) => !names.includes(n)),
      [],
      'declared in CustomRequestMap but no handler answers it',
    );
  });

  it("the short names stand for exactly the map's names", () => {
    assert.deepEqual(Object.values(CustomRequests).sort(), requestMap);
    assert.deepEqual(Object.values(CustomEvents).sort(), eventMap);
  });

  it('every event the adapter sends is declared, sent through the typed constructor', () => {
    const { viaContract, untyped } = sentEvents();
    assert.deepEqual(untyped, [], 'custom events are made with customEvent(name, body) so their bodies are checked');
    assert.deepEqual(viaContract, eventMap);
  });

  it('the extension, the profiling job and the CLI call the adapter only through the generic client', () => {
    const callers: string[] = [];
    for (const file of ['extension', 'core', 'cli'].flatMap((room) => sources(join(repoRoot, room))).map(parse)) {
      walk(file, (n) => {
        if (!ts.isCallExpression(n) || !ts.isPropertyAccessExpression(n.expression)) return;
        const method = n.expression.name.text;
        // `x.customRequest(…)` is the untyped door; `client.request(CustomRequests.x, …)` another.
        const untyped =
          method === 'customRequest' ||
          (method === 'request' && n.arguments[0] && wireName(n.arguments[0])?.startsWith('cyclelens/'));
        if (untyped) callers.push(`${relative(repoRoot, file.fileName)}: ${n.getText().slice(0, 80)}`);
      });
    }
    assert.deepEqual(callers, [], 'use customRequest(session, CustomRequests.x, args) from common/dapCustomClient.ts');
  });
});

describe('the running adapter answers every request of the map', () => {
  const toAdapter = new PassThrough();
  const fromAdapter = new PassThrough();
  const adapter = new CycleLensDebugSession();
  const client = new DapClient(fromAdapter, toAdapter, 10_000);
  const unrecognised = 'unrecognized request';

  before(() => {
    adapter.setRunAsServer(true);
    adapter.start(toAdapter, fromAdapter);
  });

  after(() => {
    client.close(new Error('test over'));
    adapter.dispose();
    toAdapter.end();
    fromAdapter.end();
  });

  const outcome = (name: string): Promise<string> =>
    client.request(name, {}).then(
      () => 'answered',
      (err: unknown) => (err instanceof Error ? err.message : String(err)),
    );

  it('tells an unknown request apart (the check below can fail)', async () => {
    assert.match(await outcome('cyclelens/noSuchRequest'), new RegExp(unrecognised));
  });

  it("dispatches each name to its handler, never to the library's unrecognised-request answer", async () => {
    // Without a target most handlers refuse (no target yet, or arguments missing): their own answer.
    for (const name of interfaceKeys(common, 'CustomRequestMap')) {
      const result = await outcome(name);
      assert.doesNotMatch(result, new RegExp(unrecognised), name);
    }
  });
});
