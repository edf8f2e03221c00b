import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';

// The launch configuration is declared once, in common/launchArgs.ts; package.json's
// configurationAttributes mirror it for VS Code's IntelliSense. This reads both and fails on any
// drift: a field on one side only, a required field that is optional on the other, a JSON type that
// does not fit the TypeScript type, or a server kind missing from the `type` enum.

const root = join(__dirname, '..', '..', '..');
const source = ts.createSourceFile(
  'launchArgs.ts',
  readFileSync(join(root, 'common', 'launchArgs.ts'), 'utf8'),
  ts.ScriptTarget.ES2022,
  true,
);
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  contributes: { debuggers: { type: string; configurationAttributes: Record<string, JsonSchema> }[] };
};
const debuggerContribution = pkg.contributes.debuggers.find((d) => d.type === 'cyclelens')!;

interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  required?: string[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  description?: string;
}

interface Field {
  name: string;
  optional: boolean;
  /** The JSON types a value of the TypeScript type may have. */
  jsonTypes: Set<string>;
  literals: string[];
  documented: boolean;
}

function interfaceFields(name: string): Field[] {
  const decl = source.statements.find(
    (s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === name,
  );
  assert.ok(decl, `common/launchArgs.ts declares interface ${name}`);
  return decl.members.filter(ts.isPropertySignature).map((m) => ({
    name: (m.name as ts.Identifier).text,
    optional: m.questionToken !== undefined,
    jsonTypes: jsonTypesOf(m.type!),
    literals: literalsOf(m.type!),
    documented: ts.getJSDocCommentsAndTags(m).length > 0,
  }));
}

function typeAlias(name: string): ts.TypeNode {
  const decl = source.statements.find(
    (s): s is ts.TypeAliasDeclaration => ts.isTypeAliasDeclaration(s) && s.name.text === name,
  );
  assert.ok(decl, `common/launchArgs.ts declares type ${name}`);
  return decl.type;
}

function jsonTypesOf(node: ts.TypeNode): Set<string> {
  if (ts.isUnionTypeNode(node)) return new Set(node.types.flatMap((t) => [...jsonTypesOf(t)]));
  if (ts.isParenthesizedTypeNode(node)) return jsonTypesOf(node.type);
  if (ts.isArrayTypeNode(node)) return new Set(['array']);
  if (ts.isTypeLiteralNode(node)) return new Set(['object']);
  if (ts.isLiteralTypeNode(node)) {
    if (node.literal.kind === ts.SyntaxKind.NullKeyword) return new Set(['null']);
    if (ts.isStringLiteral(node.literal)) return new Set(['string']);
    if (node.literal.kind === ts.SyntaxKind.TrueKeyword || node.literal.kind === ts.SyntaxKind.FalseKeyword)
      return new Set(['boolean']);
    return new Set(['number', 'integer']);
  }
  if (ts.isTypeReferenceNode(node)) {
    const name = node.typeName.getText(source);
    if (name === 'ServerArgs' || name === 'Record') return new Set(['object']);
    return jsonTypesOf(typeAlias(name));
  }
  switch (node.kind) {
    case ts.SyntaxKind.StringKeyword:
      return new Set(['string']);
    case ts.SyntaxKind.NumberKeyword:
      return new Set(['number', 'integer']);
    case ts.SyntaxKind.BooleanKeyword:
      return new Set(['boolean']);
    default:
      throw new Error(`launchSchema.test: no JSON type for ${node.getText(source)}`);
  }
}

function literalsOf(node: ts.TypeNode): string[] {
  if (ts.isUnionTypeNode(node)) return node.types.flatMap(literalsOf);
  if (ts.isLiteralTypeNode(node) && ts.isStringLiteral(node.literal)) return [node.literal.text];
  if (ts.isTypeReferenceNode(node) && !['ServerArgs', 'Record'].includes(node.typeName.getText(source)))
    return literalsOf(typeAlias(node.typeName.getText(source)));
  return [];
}

function schemaTypes(s: JsonSchema): string[] {
  return s.type === undefined ? [] : Array.isArray(s.type) ? s.type : [s.type];
}

/** Checks one interface against one JSON schema object; `where` names it in messages. */
function checkObject(fields: readonly Field[], schema: JsonSchema, where: string, requiredHere = true): void {
  const props = schema.properties ?? {};
  const declared = new Set(fields.map((f) => f.name));
  for (const f of fields) {
    const p = props[f.name];
    assert.ok(
      p,
      `${where}: package.json has no "${f.name}", which common/launchArgs.ts declares; add it to ` +
        `configurationAttributes`,
    );
    for (const t of schemaTypes(p)) {
      assert.ok(
        f.jsonTypes.has(t),
        `${where}.${f.name}: package.json allows JSON type "${t}", ` +
          `the TypeScript type allows ${[...f.jsonTypes].join('/')}`,
      );
    }
    assert.ok(p.description, `${where}.${f.name}: package.json has no description (IntelliSense shows it)`);
    assert.ok(f.documented, `${where}.${f.name}: common/launchArgs.ts has no doc comment`);
    if (f.literals.length > 0 && p.enum)
      assert.deepEqual([...p.enum].sort(), [...f.literals].sort(), `${where}.${f.name}: enum values differ`);
    if (requiredHere) {
      const required = (schema.required ?? []).includes(f.name);
      assert.equal(
        required,
        !f.optional,
        `${where}.${f.name}: ${f.optional ? 'optional' : 'required'} in common/launchArgs.ts but ` +
          `${required ? 'required' : 'optional'} in package.json`,
      );
    }
  }
  for (const name of Object.keys(props)) {
    assert.ok(
      declared.has(name),
      `${where}: package.json declares "${name}", which common/launchArgs.ts does not: the adapter would ignore it`,
    );
  }
}

describe('launch configuration contract', () => {
  for (const request of ['launch', 'attach']) {
    it(`package.json ${request} attributes mirror CycleLensLaunchArgs`, () => {
      const schema = debuggerContribution.configurationAttributes[request];
      assert.ok(schema, `package.json declares configurationAttributes.${request}`);
      checkObject(interfaceFields('CycleLensLaunchArgs'), schema, request);
    });

    it(`package.json ${request}.server covers every server strategy`, () => {
      const server = debuggerContribution.configurationAttributes[request]!.properties!['server']!;
      const kinds = ['QemuServerArgs', 'OpenOcdServerArgs', 'RemoteServerArgs'].map((n) => ({
        n,
        fields: interfaceFields(n),
      }));
      const typeEnum = [...(server.properties?.['type']?.enum ?? [])].sort();
      assert.deepEqual(typeEnum, kinds.flatMap((k) => k.fields.find((f) => f.name === 'type')!.literals).sort());
      // The server object is one JSON schema for all strategies: every strategy's fields appear in it,
      // and nothing else does. Which fields a strategy requires is checked by the adapter.
      const union = new Map<string, Field>();
      for (const k of kinds) {
        for (const f of k.fields) {
          const seen = union.get(f.name);
          union.set(
            f.name,
            seen ? { ...seen, literals: [...seen.literals, ...f.literals] } : { ...f, optional: f.name !== 'type' },
          );
        }
      }
      checkObject([...union.values()], server, `${request}.server`, false);
      assert.deepEqual(server.required, ['type']);
    });
  }
});
