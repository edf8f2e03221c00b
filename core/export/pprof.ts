import { gzipSync } from 'node:zlib';
import {
  Function as PprofFunction,
  Line,
  Location,
  Mapping,
  Profile as PprofProfile,
  Sample,
  StringTable,
  ValueType,
} from 'pprof-format';
import { notesWith, profileStacks } from '../profile/callTree';
import type { Profile } from '../profile/model';
import { unitLabel } from '../profile/units';
import { unitId } from '../profile/units';
import { roundKeepingSum } from './common';

/**
 * pprof's profile.proto, gzipped, as `go tool pprof` and pprof-compatible viewers read it. Two
 * sample types: `calls/count` (the top frame's calls in that context, where the profile counts
 * calls) and the value in the profile's unit, last so that it is pprof's default. One location per
 * function, at its address, with a line at its definition; sample stacks are leaf first (the
 * format's order). The profile's notes go into `comment`.
 */
export function pprofBytes(p: Profile): Uint8Array {
  const strings = new StringTable();
  const tree = profileStacks(p);
  const used = tree.stacks.filter((s) => s.frames.length > 0);
  const values = roundKeepingSum(used.map((s) => s.value));
  // A function's calls spread over its stacks in proportion to their values.
  const byTop = new Map<number, number[]>();
  used.forEach((s, i) => {
    const top = s.frames[s.frames.length - 1]!;
    const list = byTop.get(top) ?? [];
    list.push(i);
    byTop.set(top, list);
  });
  const calls = new Array<number>(used.length).fill(0);
  for (const [top, indexes] of byTop) {
    const n = tree.functions[top]!.calls;
    if (n === undefined) continue;
    const sum = indexes.reduce((s, i) => s + used[i]!.value, 0);
    const split = roundKeepingSum(indexes.map((i) => (sum > 0 ? (n * used[i]!.value) / sum : n / indexes.length)));
    indexes.forEach((i, k) => (calls[i] = split[k]!));
  }
  const mapping = new Mapping({
    id: 1,
    filename: strings.dedup(p.program.executable),
    hasFunctions: true,
    hasLineNumbers: p.functions.some((f) => f.location !== undefined),
  });
  const functions = tree.functions.map(
    (f) =>
      new PprofFunction({
        id: f.id + 1,
        name: strings.dedup(f.name),
        systemName: strings.dedup(f.name),
        filename: strings.dedup(f.location?.path ?? ''),
        startLine: f.location?.line ?? 0,
      }),
  );
  const locations = tree.functions.map(
    (f) =>
      new Location({
        id: f.id + 1,
        mappingId: 1,
        address: f.address ?? 0,
        line: [new Line({ functionId: f.id + 1, line: f.location?.line ?? 0 })],
      }),
  );
  const samples: Sample[] = [];
  used.forEach((s, i) => {
    if (values[i] === 0 && calls[i] === 0) return;
    samples.push(
      new Sample({ locationId: [...s.frames].reverse().map((id) => id + 1), value: [calls[i]!, values[i]!] }),
    );
  });
  const valueType = new ValueType({ type: strings.dedup(unitId(p.unit)), unit: strings.dedup('count') });
  const comments = [`unit: ${unitLabel(p.unit)}`, ...notesWith(p, tree)].map((c) => strings.dedup(c));
  const profile = new PprofProfile({
    sampleType: [new ValueType({ type: strings.dedup('calls'), unit: strings.dedup('count') }), valueType],
    sample: samples,
    mapping: [mapping],
    location: locations,
    function: functions,
    stringTable: strings,
    periodType: new ValueType({ type: strings.dedup(unitId(p.unit)), unit: strings.dedup('count') }),
    period: 1,
    comment: comments,
  });
  return gzipSync(profile.encode());
}
