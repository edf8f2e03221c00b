import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SampleLocation } from '../../common/dapCustom';
import { profileFromSamples } from '../../core/profile/fromSamples';
import type { Profile } from '../../core/profile/model';
import { callTreeOf, flameRects, rectByPath, rectPath } from '../../webview/layout/flame';
import { isUpdateOf, liveBanner } from '../../webview/layout/live';
import { functionRows, shareBasis } from '../../webview/layout/table';
import { syntheticProfile } from '../support/syntheticProfile';

// The live profile in the panel: which profile messages are redrawn in place, what the live banner
// says, and how a flame graph zoom finds its frame again in the next picture.

const locations = new Map<number, SampleLocation>([
  [0x100, { address: 0x100, function: 'vm_run', functionAddress: 0x100, path: '/fw/vm.c', line: 10 }],
  [0x200, { address: 0x200, function: 'crc16_step', functionAddress: 0x200, path: '/fw/crc.c', line: 4 }],
]);

function sampled(counts: Array<[number, number]>, o: { executable?: string; exact?: boolean } = {}): Profile {
  return profileFromSamples({
    executable: o.executable ?? '/fw/hotloop.elf',
    sampler: o.exact ? 'qemu-plugin' : 'qemu-monitor',
    attribution: o.exact ? 'exact-count' : 'translation-block-start',
    halting: false,
    unit: o.exact ? 'instructions' : 'samples',
    counts,
    locations,
  });
}

describe('live profile in the panel', () => {
  it('redraws the next picture of the same program in place, and draws another program or file anew', () => {
    const first = { profile: sampled([[0x100, 5]]), live: { running: true } };
    const next = { profile: sampled([[0x100, 9]]), live: { running: true } };
    assert.equal(isUpdateOf(undefined, first), false, 'the first profile is no update');
    assert.equal(isUpdateOf(first, next), true, "the next second's picture");
    assert.equal(isUpdateOf(next, { ...next, live: { running: false } }), true, 'the last picture of a stopped run');
    assert.equal(
      isUpdateOf(first, { profile: sampled([[0x100, 1]], { executable: '/fw/other.elf' }), live: { running: true } }),
      false,
      'another program',
    );
    const saved = { profile: syntheticProfile({ count: 3 }), file: '/ws/.cyclelens/results/a.json' };
    assert.equal(isUpdateOf(first, saved), false, 'a saved file after a live profile');
    assert.equal(isUpdateOf(saved, first), false, 'a live profile after a saved file');
    assert.equal(isUpdateOf(saved, { ...saved }), true, 'the same file again');
    assert.equal(isUpdateOf(saved, { ...saved, file: '/ws/.cyclelens/results/b.json' }), false, 'another file');
    assert.equal(
      isUpdateOf({ profile: saved.profile }, { profile: saved.profile }),
      false,
      'profiles without a file are each new',
    );
  });

  it('says it is live, the count in the sampler’s unit, the sampler and what its PC means', () => {
    const p = sampled([
      [0x100, 1200],
      [0x200, 34],
    ]);
    const b = liveBanner(p, { running: true, samplerLabel: 'QEMU monitor' });
    assert.equal(b.badge, 'live');
    assert.equal(b.running, true);
    assert.match(b.text, /^1,234 samples so far/);
    assert.match(
      b.text,
      new RegExp(
        /QEMU monitor: non-halting PC sampling \(qemu-monitor;/.source +
          / a sample's PC is the start of the running translation block\)/.source,
      ),
    );
    assert.doesNotMatch(b.text, /cycle/i, 'samples are never called cycles');
    const exact = liveBanner(sampled([[0x100, 7]], { exact: true }), { running: true });
    assert.match(exact.text, /^7 instructions so far/, 'the counting plugin counts instructions');
    assert.match(exact.text, /every one counted/);
  });

  it('says when it is no longer live, keeping the last count, and what to run to sample again', () => {
    const b = liveBanner(sampled([[0x100, 40]]), { running: false });
    assert.equal(b.badge, 'no longer live');
    assert.equal(b.running, false);
    assert.match(b.text, /Sampling stopped .*: the last 40 samples/);
    assert.match(b.text, /CycleLens: Toggle Live Hotspots/);
  });

  it('finds a zoomed flame frame again by its call path when the counts change', () => {
    const before = syntheticProfile({ count: 6 });
    const rects = flameRects(callTreeOf(before));
    const deepest = rects.reduce((best, r, i) => (r.depth > rects[best]!.depth ? i : best), 0);
    const path = rectPath(rects, deepest);
    assert.equal(path.length, rects[deepest]!.depth, 'one function per level below the root');
    assert.deepEqual(
      path.map((fn) => before.functions[fn]!.name),
      (() => {
        const names: string[] = [];
        for (let i = deepest; i > 0; i = rects[i]!.parent) names.unshift(rects[i]!.name);
        return names;
      })(),
    );
    assert.equal(rectByPath(rects, path), deepest, 'the same layout finds the same frame');
    assert.equal(rectByPath(rects, []), 0, 'no path is the root');
    // A newer picture with the frames in another order: the same frame, at another index.
    const after = structuredClone(before);
    after.edges.reverse();
    const again = flameRects(callTreeOf(after));
    const found = rectByPath(again, path);
    assert.notEqual(found, deepest, 'the frame moved to another index');
    assert.deepEqual(rectPath(again, found), path, 'the frame with that call path');
    // A path the newer picture lacks ends at its deepest ancestor that is still there.
    assert.equal(rectByPath(again, [...path.slice(0, 1), 9999]), rectByPath(again, path.slice(0, 1)));
  });

  it("a sampled profile's table shares are of self counts, the only ones it has", () => {
    const profile = sampled([
      [0x100, 30],
      [0x200, 10],
    ]);
    assert.equal(shareBasis(profile), 'self');
    const rows = functionRows(profile);
    const share = (name: string): number | undefined => rows.find((r) => r.name === name)?.share;
    assert.equal(share('vm_run'), 0.75);
    assert.equal(share('crc16_step'), 0.25);
    assert.equal(shareBasis(syntheticProfile({ count: 3 })), 'inclusive');
  });
});
