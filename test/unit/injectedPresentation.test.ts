import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { InjectionWarning } from '../../common/dapCustom';
import { measurementLabel, warningNeedsAttention } from '../../extension/editor/injectedPresentation';

// How injected measurements are named for the user and which of the adapter's warnings pop up.
// The names, region fields and warning codes are the ones the adapter sends for the demo firmware
// (see adapter/session/injectionRequests.ts and adapter/probe/injection/planner.ts).

describe('measurementLabel', () => {
  const region = {
    name: 'fir_filter 0x80000548..0x80000578',
    kind: 'region' as const,
    region: { function: 'fir_filter', start: '0x80000548', end: '0x80000578' },
  };

  it('names a region by its function and source lines, not its patch addresses', () => {
    const label = measurementLabel({ ...region, source: { path: '/work/demo/src/dsp.c', line: 46, endLine: 51 } });
    assert.equal(label, 'fir_filter (dsp.c:46–51)');
    assert.doesNotMatch(label, /0x/);
  });

  it("takes the function from the region's fields, never from its name", () => {
    // A name in any other shape (or none the label could parse) changes nothing.
    const renamed = { ...region, name: 'the inner loop' };
    assert.equal(
      measurementLabel({ ...renamed, source: { path: '/src/dsp.c', line: 46, endLine: 51 } }),
      'fir_filter (dsp.c:46–51)',
    );
    const noField = { name: 'fir_filter 0x80000548..0x80000578', kind: 'region' as const };
    assert.equal(
      measurementLabel({ ...noField, source: { path: '/src/dsp.c', line: 46, endLine: 51 } }),
      'dsp.c:46–51',
    );
  });

  it('takes the file name from a Windows path too', () => {
    assert.equal(
      measurementLabel({ ...region, source: { path: 'C:\\fw\\src\\dsp.c', line: 46, endLine: 51 } }),
      'fir_filter (dsp.c:46–51)',
    );
  });

  it('shows one line when the region starts and ends on it, or its end is unknown', () => {
    assert.equal(measurementLabel({ ...region, source: { path: '/src/dsp.c', line: 46 } }), 'fir_filter (dsp.c:46)');
    assert.equal(
      measurementLabel({ ...region, source: { path: '/src/dsp.c', line: 46, endLine: 46 } }),
      'fir_filter (dsp.c:46)',
    );
  });

  it('leaves the function out when the adapter knew none', () => {
    const bare = {
      name: '0x80000548..0x80000578',
      kind: 'region' as const,
      region: { start: '0x80000548', end: '0x80000578' },
    };
    assert.equal(measurementLabel({ ...bare, source: { path: '/src/start.S', line: 3, endLine: 9 } }), 'start.S:3–9');
  });

  it("keeps the adapter's name where there is no line information, and for functions", () => {
    assert.equal(measurementLabel(region), region.name);
    assert.equal(
      measurementLabel({ name: 'fir_filter', kind: 'function', source: { path: '/src/dsp.c', line: 43 } }),
      'fir_filter',
    );
    assert.equal(measurementLabel({ name: 'clamp_s16', kind: 'call-sites' }), 'clamp_s16');
  });
});

describe('warningNeedsAttention', () => {
  it('keeps the notes that do not change the figures out of notifications', () => {
    assert.equal(warningNeedsAttention({ code: 'memoryPinned' }), false);
    assert.equal(warningNeedsAttention({ code: 'jumpTableUnresolved' }), false);
  });

  it('notifies what changes the meaning of the figures', () => {
    assert.equal(warningNeedsAttention({ code: 'callSitesMissed' }), true);
    assert.equal(warningNeedsAttention({ code: 'indirectCallsMissed' }), true);
    assert.equal(warningNeedsAttention({ code: 'pathsUnknown' }), true);
  });

  it('decides by the code, whatever the message says', () => {
    const pinned: InjectionWarning = {
      code: 'memoryPinned',
      message: 'calls through it are not counted; the paths are unknown',
    };
    assert.equal(warningNeedsAttention(pinned), false);
    const missed: InjectionWarning = { code: 'callSitesMissed', message: 'an ordinary note' };
    assert.equal(warningNeedsAttention(missed), true);
  });
});
