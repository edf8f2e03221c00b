import fc from 'fast-check';
import { parseMiLine } from '../../adapter/debugger/gdb/mi/parser';
import { journalProblem } from '../../adapter/probe/injection/journal';
import {
  ResultSetError,
  parseCallGraphDocument,
  parseResultSetText,
  resultSetDocument,
  type ResultSet,
} from '../../core/analysis/resultSet';

/**
 * Properties of the parsers that take outside input: GDB's MI stream (GDB's stdout also carries the
 * target's output and cut lines), result-set and call-graph files, and patch journals. Whatever the
 * input, a parser returns a value or throws its own declared error: never a TypeError, a RangeError
 * or a stack overflow, and never a prototype change. Shared by the unit tier (fixed seed, bounded
 * count) and `npm run fuzz` (longer, random seed).
 */

const miAlphabet = fc.constantFrom(
  '^',
  '*',
  '+',
  '=',
  '~',
  '@',
  '&',
  '"',
  '\\',
  '{',
  '}',
  '[',
  ']',
  ',',
  '=',
  'done',
  'running',
  'error',
  'stopped',
  'msg',
  'x',
  '0',
  '12',
  ' ',
  '\r',
  '\\"',
  '\\n',
  '\\x',
  '(gdb)',
);
const miLike = fc.array(miAlphabet, { maxLength: 40 }).map((parts) => parts.join(''));

/** A C string as GDB writes it: quotes, backslashes and control characters escaped. */
function cQuote(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n').replace(/\t/g, '\\t')}"`;
}

const knownTypes = new Set(['prompt', 'result', 'exec', 'status', 'notify', 'console', 'target', 'log', 'unparsed']);

/** Deep-nested values built from MI pieces: catches recursion without a depth guard. */
const nestedMi = fc
  .integer({ min: 1, max: 3000 })
  .map((depth) => `^done,a=${'{b='.repeat(depth)}"x"${'}'.repeat(depth)}`);

export interface FuzzProperty {
  name: string;
  /** Runs the property: fast-check's report, failing input included. */
  check(params: { seed: number; numRuns: number }): fc.RunDetails<unknown>;
}

function prop<Ts extends [unknown, ...unknown[]]>(name: string, property: fc.IProperty<Ts>): FuzzProperty {
  return { name, check: (params) => fc.check(property, params) as fc.RunDetails<unknown> };
}

const resultSet = (): ResultSet => ({
  id: 'rs',
  createdAt: '2024-01-01T00:00:00.000Z',
  program: { executable: '/fw.elf', family: 'riscv' },
  run: { kind: 'single-pass', event: 'instructions', totals: { instructions: 1000 }, method: 'fuzz' },
  measurements: [{ name: 'f', inclusive: { instructions: 10 }, calls: 2, min: 4, max: 6, mean: 5 }],
  refused: [],
});
const validText = JSON.stringify(resultSetDocument([resultSet()]));

/** JSON paths of a document, so a mutation can land on any field. */
function paths(value: unknown, at: Array<string | number> = []): Array<Array<string | number>> {
  if (typeof value !== 'object' || value === null) return [at];
  const keys = Array.isArray(value) ? value.map((_, i) => i) : Object.keys(value);
  return [at, ...keys.flatMap((k) => paths((value as Record<string | number, unknown>)[k], [...at, k]))];
}
const validPaths = paths(JSON.parse(validText));

function mutate(path: Array<string | number>, replacement: unknown): string {
  const doc = JSON.parse(validText) as Record<string | number, unknown>;
  if (path.length === 0) return JSON.stringify(replacement);
  let node = doc as Record<string | number, unknown>;
  for (const k of path.slice(0, -1)) node = node[k] as Record<string | number, unknown>;
  node[path[path.length - 1]!] = replacement;
  return JSON.stringify(doc);
}

const strangeNumbers = fc.oneof(
  fc.double(),
  fc.constantFrom(1e300, -1, -0, 2 ** 64, 2 ** 53 + 1, 0.5, Number.MAX_VALUE),
  fc.integer(),
);
const anyJson = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  strangeNumbers,
  fc.constantFrom({ __proto__: { polluted: true } }, '__proto__', null),
);

/** Only ResultSetError may come out of the loader. */
function loaderAccepts(text: string): boolean {
  try {
    parseResultSetText(text, 'fuzz.json');
  } catch (err) {
    if (!(err instanceof ResultSetError)) throw err;
  }
  return ({} as Record<string, unknown>).polluted === undefined;
}

export const parserProperties: FuzzProperty[] = [
  prop(
    'MI: any text parses to a known record, never throws',
    fc.property(
      fc.oneof(fc.string({ maxLength: 200 }), fc.string({ unit: 'binary', maxLength: 200 }), miLike, nestedMi),
      (line) => knownTypes.has(parseMiLine(line).type),
    ),
  ),
  prop(
    'MI: a console stream record gives back exactly the text GDB quoted',
    fc.property(fc.string({ maxLength: 120 }), (text) => {
      const r = parseMiLine(`~${cQuote(text)}`);
      return r.type === 'console' && r.text === text;
    }),
  ),
  prop(
    'MI: a result record keeps its token and class whatever its results hold',
    fc.property(
      fc.nat({ max: 1_000_000 }),
      fc.constantFrom('done', 'error', 'running'),
      fc.string({ maxLength: 60 }),
      (token, cls, text) => {
        const r = parseMiLine(`${token}^${cls},msg=${cQuote(text)}`);
        return r.type === 'result' && r.token === token && r.resultClass === cls;
      },
    ),
  ),
  prop(
    'result sets: arbitrary text only ever fails with ResultSetError',
    fc.property(fc.oneof(fc.string({ maxLength: 300 }), fc.json({ maxDepth: 5 })), loaderAccepts),
  ),
  prop(
    'result sets: any field of a valid file replaced by any value only ever fails with ResultSetError',
    fc.property(fc.constantFrom(...validPaths), anyJson, (path, value) => loaderAccepts(mutate(path, value))),
  ),
  prop(
    'result sets: a valid file cut anywhere only ever fails with ResultSetError',
    fc.property(fc.nat({ max: validText.length }), (cut) => loaderAccepts(validText.slice(0, cut))),
  ),
  prop(
    'call graphs: any JSON only ever fails with ResultSetError',
    fc.property(anyJson, (value) => {
      try {
        parseCallGraphDocument(value, 'fuzz.json');
      } catch (err) {
        if (!(err instanceof ResultSetError)) throw err;
      }
      return true;
    }),
  ),
  prop(
    'patch journals: any JSON is judged, never throws',
    fc.property(
      fc.oneof(
        anyJson,
        fc.record({
          schema: fc.constant('cyclelens-patch-journal/1'),
          patches: fc.array(
            fc.record({ address: strangeNumbers, original: fc.string(), patched: fc.string() }, { requiredKeys: [] }),
          ),
        }),
      ),
      (value) => {
        const problem = journalProblem(value);
        return problem === undefined || typeof problem === 'string';
      },
    ),
  ),
];
