import { readFile } from 'node:fs/promises';
import { RESULT_SET_SCHEMA, ResultSetError, parseResultSetDocument, writeFileAtomic } from '../analysis/resultSet';
import { profileFromResultSets, type ResultSetProfileOptions } from './fromResultSet';
import {
  PROFILE_SCHEMA,
  type ErrorBound,
  type FunctionStatus,
  type Measure,
  type Profile,
  type ProfileAnalysis,
  type ProfileEdge,
  type ProfileFunction,
  type ProfileRun,
  type Provenance,
  type SampleAttribution,
  type Unit,
} from './model';
import { JsonReader, MAX_ADDRESS, MAX_LINE, MAX_NAME_LENGTH, ProfileError } from './profileError';

/**
 * The native profile file (`cyclelens-profile/1`): the model as JSON. The loader treats the file as
 * data from anywhere: every field is checked for type and plausibility, references between tables
 * must point at existing entries, and errors name the JSON path and the fix.
 */

export function profileText(p: Profile): string {
  return `${JSON.stringify(p, null, 1)}\n`;
}

/** Serialises, checks the text reads back (a value JSON cannot hold fails here), then writes atomically. */
export async function saveProfile(path: string, p: Profile): Promise<void> {
  const text = profileText(p);
  parseProfileText(text, path);
  await writeFileAtomic(path, text);
}

export function parseProfileText(text: string, file = 'the profile'): Profile {
  return parseProfileDocument(parseJson(text, file), file);
}

export async function loadProfile(path: string): Promise<Profile> {
  return parseProfileText(await readText(path), path);
}

/**
 * A result-set document (`cyclelens-resultset/1`) or a profile file, whichever `path` holds, as a
 * profile: every command that takes "a result set or a profile" starts here.
 */
export async function loadAnyProfile(path: string, options: ResultSetProfileOptions = {}): Promise<Profile> {
  const json = parseJson(await readText(path), path);
  const schema =
    typeof json === 'object' && json !== null && !Array.isArray(json)
      ? (json as Record<string, unknown>)['schema']
      : undefined;
  if (typeof schema === 'string' && schema.startsWith('cyclelens-resultset/')) {
    try {
      return profileFromResultSets(parseResultSetDocument(json, path), options);
    } catch (err) {
      if (err instanceof ResultSetError)
        throw new ProfileError(
          err.kind === 'notJson' ? 'notJson' : err.kind === 'version' ? 'version' : 'malformed',
          err.message,
        );
      throw err;
    }
  }
  if (typeof schema === 'string' && schema.startsWith('cyclelens-profile/')) return parseProfileDocument(json, path);
  throw new ProfileError(
    'notProfile',
    `${path} is neither a CycleLens profile ("schema": "${PROFILE_SCHEMA}") nor a result set ` +
      `("schema": "${RESULT_SET_SCHEMA}"): give the file an analysis or an export wrote.`,
  );
}

async function readText(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ProfileError(
      'io',
      code === 'ENOENT'
        ? `${path} does not exist: check the path, or run an analysis to create it.`
        : `${path} cannot be read (${(err as Error).message}).`,
    );
  }
}

function parseJson(text: string, file: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ProfileError(
      'notJson',
      `${file} is not valid JSON (${err instanceof Error ? err.message : String(err)}): it may be ` +
        `truncated; export or measure again.`,
    );
  }
}

const UNIT_KINDS = ['cycles', 'instructions', 'ticks', 'samples', 'events'] as const;
const STATUSES: readonly FunctionStatus[] = ['measured', 'pruned', 'unmeasurable', 'pending', 'unreached', 'sampled'];
const ATTRIBUTIONS: readonly SampleAttribution[] = [
  'time-proportional',
  'next-committing',
  'translation-block-start',
  'recently-executed',
  'halting',
  'exact-count',
];

export function parseProfileDocument(json: unknown, file = 'the profile'): Profile {
  const top = new JsonReader(file, '', json);
  if (
    typeof json !== 'object' ||
    json === null ||
    Array.isArray(json) ||
    typeof (json as Record<string, unknown>)['schema'] !== 'string'
  ) {
    throw new ProfileError(
      'notProfile',
      `${file} is not a CycleLens profile: expected an object with "schema": "${PROFILE_SCHEMA}".`,
    );
  }
  const schema = top.field('schema').string();
  const m = /^cyclelens-profile\/(\d+)$/.exec(schema);
  if (!m)
    throw new ProfileError(
      'notProfile',
      `${file} is not a CycleLens profile: its schema is "${schema}", expected "${PROFILE_SCHEMA}".`,
    );
  if (Number(m[1]) !== 1)
    throw new ProfileError(
      'version',
      `${file} has profile format version ${m[1]}, this CycleLens reads version 1: update CycleLens to read it.`,
    );

  const functions = top.field('functions').array(readFunction);
  const count = functions.length;
  const fnRef = (r: JsonReader): number => {
    if (count === 0) r.fail('refers to a function, but the profile has none');
    return r.integer(0, count - 1);
  };
  const runs = top.field('runs').array(readRun);
  functions.forEach((f, i) => {
    if (f.run !== undefined && f.run >= runs.length)
      top.field('functions').fail(`[${i}].run is ${f.run}, but the profile lists ${runs.length} runs`);
  });
  const edges = top.field('edges').array((r): ProfileEdge => {
    const calls = r.optional('calls', (x) => x.amount());
    const inclusive = r.optional('inclusive', readMeasure);
    const provenance = r.optional('provenance', (x) => x.oneOf(['exact', 'injected', 'estimated'] as const));
    return {
      caller: fnRef(r.field('caller')),
      callee: fnRef(r.field('callee')),
      kind: r.field('kind').oneOf(['call', 'tail', 'interrupt'] as const),
      ...(calls !== undefined ? { calls } : {}),
      ...(inclusive ? { inclusive } : {}),
      ...(provenance ? { provenance } : {}),
    };
  });
  const lines = top.field('lines').array((r) => {
    const fn = r.optional('function', fnRef);
    return {
      path: r.field('path').string(MAX_NAME_LENGTH),
      line: r.field('line').integer(0, MAX_LINE),
      ...(fn !== undefined ? { function: fn } : {}),
      self: readMeasure(r.field('self')),
    };
  });
  const addresses = top.field('addresses').array((r) => {
    const fn = r.optional('function', fnRef);
    return {
      address: r.field('address').integer(0, MAX_ADDRESS),
      ...(fn !== undefined ? { function: fn } : {}),
      self: readMeasure(r.field('self')),
    };
  });
  const stacks = top.field('stacks').array((r) => {
    const bound = r.optional('bound', (b) => ({ low: b.field('low').number(), high: b.field('high').number() }));
    return {
      frames: r.field('frames').array(fnRef, 10_000),
      value: r.field('value').amount(),
      ...(bound ? { bound } : {}),
    };
  });
  const total = top.optional('total', readMeasure);
  const analysis = top.optional('analysis', readAnalysis);
  const notes = top.optional('notes', (r) => r.array((x) => x.string(), 1000));
  return {
    schema: PROFILE_SCHEMA,
    generator: top.field('generator').string(),
    createdAt: top.field('createdAt').string(64),
    program: readProgram(top.field('program')),
    unit: readUnit(top.field('unit')),
    provenance: readProvenance(top.field('provenance')),
    ...(total ? { total } : {}),
    functions,
    edges,
    lines,
    addresses,
    stacks,
    runs,
    ...(analysis ? { analysis } : {}),
    ...(notes ? { notes } : {}),
  };
}

function readProgram(r: JsonReader): Profile['program'] {
  const family = r.optional('family', (x) => x.string(64));
  return { executable: r.field('executable').string(MAX_NAME_LENGTH), ...(family !== undefined ? { family } : {}) };
}

export function readUnit(r: JsonReader): Unit {
  const kind = r.field('kind').oneOf(UNIT_KINDS);
  const event = r.optional('event', (x) => x.string(128));
  const perTick = r.optional('perTick', (x) => ({
    count: positive(x.field('count')),
    kind: x.field('kind').oneOf(['cycles', 'instructions'] as const),
  }));
  if (perTick && kind !== 'ticks') r.field('perTick').fail(`applies to ticks only (the unit is ${kind})`);
  return { kind, ...(event !== undefined ? { event } : {}), ...(perTick ? { perTick } : {}) };
}

function positive(r: JsonReader): number {
  const n = r.amount();
  if (n === 0) r.fail('must be greater than 0');
  return n;
}

function readProvenance(r: JsonReader): Provenance {
  const kind = r.field('kind').oneOf(['exact', 'injected', 'sampled', 'oracle'] as const);
  switch (kind) {
    case 'exact':
      return { kind, counter: r.field('counter').string() };
    case 'injected': {
      const compensation = r.optional('compensation', (x) => x.amount());
      return {
        kind,
        payload: r.field('payload').oneOf(['gated', 'accumulated'] as const),
        counter: r.field('counter').string(),
        ...(compensation !== undefined ? { compensation } : {}),
      };
    }
    case 'sampled':
      return {
        kind,
        sampler: r.field('sampler').string(),
        halting: r.field('halting').boolean(),
        attribution: r.field('attribution').oneOf(ATTRIBUTIONS),
      };
    case 'oracle':
      return { kind, source: r.field('source').string() };
  }
}

export function readMeasure(r: JsonReader): Measure {
  const value = r.field('value').amount();
  const bound = r.optional('bound', (b): ErrorBound => {
    const low = b.field('low').number();
    const high = b.field('high').number();
    if (low > high) b.fail(`has low ${low} above high ${high}`);
    return {
      low,
      high,
      kind: b.field('kind').oneOf(['quantisation', 'confidence95', 'compensation', 'estimate'] as const),
    };
  });
  return { value, ...(bound ? { bound } : {}) };
}

function readFunction(r: JsonReader, index: number): ProfileFunction {
  const id = r.field('id').integer(0, Number.MAX_SAFE_INTEGER);
  if (id !== index) r.field('id').fail(`is ${id}, but a function's id is its index in the list (${index})`);
  const f: ProfileFunction = {
    id,
    name: r.field('name').string(MAX_NAME_LENGTH),
    status: r.field('status').oneOf(STATUSES),
  };
  const address = r.optional('address', (x) => x.integer(0, MAX_ADDRESS));
  if (address !== undefined) f.address = address;
  const size = r.optional('size', (x) => x.integer(0, 2 ** 32));
  if (size !== undefined) f.size = size;
  const location = r.optional('location', (x) => {
    // A location is a real source line (DWARF's line 0, code with no line, has no location).
    const endLine = x.optional('endLine', (y) => y.integer(1, MAX_LINE));
    return {
      path: x.field('path').string(MAX_NAME_LENGTH),
      line: x.field('line').integer(1, MAX_LINE),
      ...(endLine !== undefined ? { endLine } : {}),
    };
  });
  if (location) f.location = location;
  const inclusive = r.optional('inclusive', readMeasure);
  if (inclusive) f.inclusive = inclusive;
  const self = r.optional('self', readMeasure);
  if (self) f.self = self;
  const selfNote = r.optional('selfNote', (x) => x.string(MAX_NAME_LENGTH + 1024));
  if (selfNote !== undefined) f.selfNote = selfNote;
  const calls = r.optional('calls', (x) => x.amount());
  if (calls !== undefined) f.calls = calls;
  for (const key of ['min', 'max', 'mean'] as const) {
    const v = r.optional(key, (x) => x.amount());
    if (v !== undefined) f[key] = v;
  }
  const distribution = r.optional('distribution', (x) => x.array((y) => y.amount()));
  if (distribution) f.distribution = distribution;
  const boundShare = r.optional('boundShare', (x) => x.number());
  if (boundShare !== undefined) f.boundShare = boundShare;
  const reason = r.optional('reason', (x) => x.string(MAX_NAME_LENGTH + 1024));
  if (reason !== undefined) f.reason = reason;
  const run = r.optional('run', (x) => x.integer(0, 1_000_000));
  if (run !== undefined) f.run = run;
  const indirect = r.optional('indirectCalls', (x) => x.boolean());
  if (indirect !== undefined) f.indirectCalls = indirect;
  const runOnFrom = r.optional('runOnFrom', (x) => x.array((y) => y.string()));
  if (runOnFrom) f.runOnFrom = runOnFrom;
  return f;
}

function readRun(r: JsonReader): ProfileRun {
  const total = r.optional('total', (x) => x.amount());
  const from = r.optional('from', (x) => x.string(MAX_NAME_LENGTH));
  const to = r.optional('to', (x) => x.string(MAX_NAME_LENGTH));
  return {
    role: r.field('role').oneOf(['baseline', 'batch', 'oracle', 'sampling', 'synthetic'] as const),
    method: r.field('method').string(MAX_NAME_LENGTH + 1024),
    ...(total !== undefined ? { total } : {}),
    ...(from !== undefined ? { from } : {}),
    ...(to !== undefined ? { to } : {}),
    measured: r.field('measured').array((x) => x.string(MAX_NAME_LENGTH)),
  };
}

function readAnalysis(r: JsonReader): ProfileAnalysis {
  const metric = r.optional('metric', (x) => x.string(128));
  const threshold = r.optional('threshold', (x) => x.number());
  const roots = r.optional('roots', (x) => x.array((y) => y.string(MAX_NAME_LENGTH)));
  const cancelled = r.optional('cancelled', (x) => x.boolean());
  return {
    scenario: r
      .field('scenario')
      .oneOf(['descent', 'full-profile', 'round-robin', 'sampling', 'oracle', 'import'] as const),
    ...(metric !== undefined ? { metric } : {}),
    ...(threshold !== undefined ? { threshold } : {}),
    ...(roots ? { roots } : {}),
    ...(cancelled !== undefined ? { cancelled } : {}),
  };
}
