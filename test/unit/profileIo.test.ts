import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { resultSetDocument, saveResultSetDocument, type ResultSet } from '../../core/analysis/resultSet';
import { callgrindText } from '../../core/export/callgrind';
import { profileStacks, treeInclusive } from '../../core/profile/callTree';
import { loadAnyProfile, loadProfile, parseProfileText, profileText, saveProfile } from '../../core/profile/json';
import { emptyProfile } from '../../core/profile/model';
import { ProfileError } from '../../core/profile/profileError';
import { expected, sampleProfile, type SampleName } from '../support/sampleProfiles';
import { smallResultSet } from '../support/smallResultSet';

const dir = mkdtempSync(join(tmpdir(), 'cyclelens-profile-io-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** The sample profile's JSON with one change, for the loader's refusals. */
function damaged(change: (json: Record<string, any>) => void): string {
  const json = JSON.parse(profileText(sampleProfile())) as Record<string, any>;
  change(json);
  return JSON.stringify(json);
}

function refusal(text: string): ProfileError {
  try {
    parseProfileText(text, 'bad.profile.json');
  } catch (err) {
    assert.ok(err instanceof ProfileError, `a ProfileError, not ${String(err)}`);
    return err;
  }
  assert.fail('the loader accepted a damaged profile');
}

describe('native profile JSON', () => {
  it('saves atomically and loads back the same profile', async () => {
    const path = join(dir, 'sample.profile.json');
    await saveProfile(path, sampleProfile());
    assert.deepEqual(await loadProfile(path), sampleProfile());
    assert.deepEqual(readdirSync(dir), ['sample.profile.json'], 'no temporary file left behind');
  });

  it('refuses implausible numbers, wrong types and dangling references, naming the JSON path', () => {
    assert.match(
      refusal(damaged((j) => (j.functions[1].inclusive.value = 1e300))).message,
      /bad\.profile\.json: \$\.functions\[1\]\.inclusive\.value is 1e\+300, beyond the plausible range/,
    );
    assert.match(
      refusal(damaged((j) => (j.functions[0].calls = -3))).message,
      /\$\.functions\[0\]\.calls must not be negative/,
    );
    assert.match(
      refusal(damaged((j) => (j.functions[2].name = 42))).message,
      /\$\.functions\[2\]\.name must be a string/,
    );
    assert.match(
      refusal(damaged((j) => (j.edges[0].callee = 99))).message,
      /\$\.edges\[0\]\.callee must be a whole number from 0 to 3/,
    );
    assert.match(
      refusal(damaged((j) => (j.functions[1].id = 0))).message,
      /\$\.functions\[1\]\.id is 0, but a function's id is its index/,
    );
    assert.match(
      refusal(damaged((j) => (j.unit = { kind: 'cycles', perTick: { count: 40, kind: 'cycles' } }))).message,
      /\$\.unit\.perTick applies to ticks only/,
    );
    assert.match(refusal(damaged((j) => (j.functions[0].run = 5))).message, /run is 5, but the profile lists 1 runs/);
    assert.match(
      refusal(damaged((j) => (j.lines[0].self.bound = { low: 9, high: 1, kind: 'quantisation' }))).message,
      /\$\.lines\[0\]\.self\.bound has low 9 above high 1/,
    );
    assert.equal(refusal(damaged((j) => (j.schema = 'cyclelens-profile/2'))).kind, 'version');
    assert.equal(refusal(damaged((j) => (j.schema = 'something-else/1'))).kind, 'notProfile');
    assert.equal(refusal('{"schema": "cyclelens-profile/1", "functions": [').kind, 'notJson');
    // Keys that could reach a prototype are data like any other: they do not change the result.
    const polluted = parseProfileText(damaged((j) => (j.functions[0]['__proto__'] = { status: 'pruned' })));
    assert.equal(polluted.functions[0]?.status, 'measured');
  });

  it('loadAnyProfile reads a result-set document or a profile file', async () => {
    const rs: ResultSet = smallResultSet();
    const rsPath = join(dir, 'results.json');
    await saveResultSetDocument(rsPath, resultSetDocument([rs]));
    const fromSets = await loadAnyProfile(rsPath);
    assert.equal(fromSets.unit.kind, 'instructions');
    assert.equal(fromSets.functions.find((f) => f.name === 'work')?.inclusive?.value, 600);
    const profilePath = join(dir, 'any.profile.json');
    await saveProfile(profilePath, sampleProfile());
    assert.equal((await loadAnyProfile(profilePath)).functions.length, 4);
    const other = join(dir, 'other.json');
    writeFileSync(other, '{"schema": "vega/5"}');
    await assert.rejects(
      loadAnyProfile(other),
      (e: unknown) => e instanceof ProfileError && /neither a CycleLens profile .* nor a result set/.test(e.message),
    );
    await assert.rejects(
      loadAnyProfile(join(dir, 'missing.json')),
      (e: unknown) => e instanceof ProfileError && /does not exist/.test(e.message),
    );
  });
});

describe('call tree derived from totals', () => {
  it('tops each function with its self and puts it on stacks worth its inclusive', () => {
    const p = sampleProfile();
    const tree = profileStacks(p);
    assert.equal(tree.derived, true);
    assert.match(tree.note ?? '', /derived from the measured values/);
    assert.match(tree.note ?? '', /by call counts/);
    for (const n of Object.keys(expected.inclusive) as SampleName[]) {
      const id = p.functions.find((f) => f.name === n)!.id;
      const top = tree.stacks.filter((s) => s.frames[s.frames.length - 1] === id).reduce((s, x) => s + x.value, 0);
      const on = tree.stacks.filter((s) => s.frames.includes(id)).reduce((s, x) => s + x.value, 0);
      assert.equal(top, expected.self[n], `${n} self`);
      assert.equal(on, expected.inclusive[n], `${n} inclusive`);
    }
  });

  it('splits a shared callee in equal shares when call counts are unknown, never into a caller with no room', () => {
    const p = sampleProfile();
    for (const e of p.edges) delete e.calls;
    p.edges.push({ caller: 2, callee: 3, kind: 'call' });
    const tree = profileStacks(p);
    assert.match(tree.note ?? '', /equal shares/);
    const crc = tree.stacks.filter((s) => s.frames[s.frames.length - 1] === 3).map((s) => s.value);
    // Three callers, but fir_filter's measured self is its whole inclusive value: it holds none of
    // crc16_block, so main and histogram_fill take half each.
    assert.deepEqual(
      crc.map((v) => Math.round(v * 1e6) / 1e6),
      [50, 50],
    );
    assert.ok(tree.stacks.filter((s) => s.frames[s.frames.length - 1] === 3).every((s) => s.bound));
  });

  it('cuts recursion at the first repeat and keeps recorded stacks as they are', () => {
    const p = emptyProfile({
      generator: 't',
      program: { executable: 'x' },
      unit: { kind: 'cycles' },
      provenance: { kind: 'exact', counter: 'mcycle' },
    });
    p.functions = [
      { id: 0, name: 'a', status: 'measured', inclusive: { value: 10 } },
      { id: 1, name: 'b', status: 'measured', inclusive: { value: 6 } },
    ];
    p.edges = [
      { caller: 0, callee: 1, kind: 'call' },
      { caller: 1, callee: 0, kind: 'call' },
    ];
    const tree = profileStacks(p);
    assert.ok(tree.stacks.length > 0 && tree.stacks.every((s) => new Set(s.frames).size === s.frames.length));
    assert.match(tree.note ?? '', /Recursive calls are cut/);
    p.stacks = [{ frames: [0, 1], value: 7 }];
    const recorded = profileStacks(p);
    assert.deepEqual(recorded.stacks, [{ frames: [0, 1], value: 7 }]);
    assert.equal(recorded.derived, false);
  });

  it("gives callgrind the stack formats' note and per-function totals, from the same tree", () => {
    for (const p of [sampleProfile(), overfullProfile()]) {
      const tree = profileStacks(p);
      const notes = callgrindText(p)
        .split('\n')
        .filter((l) => l.startsWith('# ') && l !== '# callgrind format')
        .map((l) => l.slice(2));
      assert.deepEqual(notes, [...(p.notes ?? []), tree.note]);
      // What each function adds up to in the stacks is what treeInclusive gives callgrind.
      const on = new Map<number, number>();
      for (const s of tree.stacks) for (const id of new Set(s.frames)) on.set(id, (on.get(id) ?? 0) + s.value);
      for (const [id, v] of treeInclusive(p))
        assert.ok(Math.abs((on.get(id) ?? 0) - v) < 1e-6, `${p.functions[id]!.name}: ${on.get(id)} vs ${v}`);
    }
  });
});

/** A caller whose callees' shares exceed its measured inclusive value (runs differ slightly). */
function overfullProfile(): ReturnType<typeof emptyProfile> {
  const p = emptyProfile({
    generator: 't',
    program: { executable: 'x' },
    unit: { kind: 'cycles' },
    provenance: { kind: 'exact', counter: 'mcycle' },
  });
  p.functions = [
    { id: 0, name: 'main', status: 'measured', inclusive: { value: 100 } },
    { id: 1, name: 'outer', status: 'measured', inclusive: { value: 40 } },
    { id: 2, name: 'inner', status: 'measured', inclusive: { value: 45 } },
  ];
  p.edges = [
    { caller: 0, callee: 1, kind: 'call', calls: 1 },
    { caller: 1, callee: 2, kind: 'call', calls: 2 },
  ];
  return p;
}
