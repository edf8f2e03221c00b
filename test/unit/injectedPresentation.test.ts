import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { measurementLabel, warningNeedsAttention } from '../../extension/editor/injectedPresentation';

// How injected measurements are named for the user and which of the adapter's warnings pop up.
// The names and warnings are the ones the adapter sends for the demo firmware (see
// adapter/probe/injection/injectionService.ts and planner.ts).

describe('measurementLabel', () => {
  const region = { name: 'fir_filter 0x80000548..0x80000578', kind: 'region' as const };

  it('names a region by its function and source lines, not its patch addresses', () => {
    const label = measurementLabel({ ...region, source: { path: '/work/demo/src/dsp.c', line: 46, endLine: 51 } });
    assert.equal(label, 'fir_filter (dsp.c:46–51)');
    assert.doesNotMatch(label, /0x/);
  });

  it('takes the file name from a Windows path too', () => {
    assert.equal(measurementLabel({ ...region, source: { path: 'C:\\fw\\src\\dsp.c', line: 46, endLine: 51 } }), 'fir_filter (dsp.c:46–51)');
  });

  it('shows one line when the region starts and ends on it, or its end is unknown', () => {
    assert.equal(measurementLabel({ ...region, source: { path: '/src/dsp.c', line: 46 } }), 'fir_filter (dsp.c:46)');
    assert.equal(measurementLabel({ ...region, source: { path: '/src/dsp.c', line: 46, endLine: 46 } }), 'fir_filter (dsp.c:46)');
  });

  it('leaves the function out when the adapter knew none', () => {
    assert.equal(measurementLabel({ name: '0x80000548..0x80000578', kind: 'region', source: { path: '/src/start.S', line: 3, endLine: 9 } }), 'start.S:3–9');
  });

  it('keeps the adapter\'s name where there is no line information, and for functions', () => {
    assert.equal(measurementLabel(region), region.name);
    assert.equal(measurementLabel({ name: 'fir_filter', kind: 'function', source: { path: '/src/dsp.c', line: 43 } }), 'fir_filter');
    assert.equal(measurementLabel({ name: 'clamp_s16', kind: 'call-sites' }), 'clamp_s16');
  });
});

describe('warningNeedsAttention', () => {
  it('keeps the trampoline note (memory kept reserved) out of notifications', () => {
    assert.equal(warningNeedsAttention('A call is among the instructions moved into the trampoline of fir_filter 0x80000548..0x80000578; its return lands there, so that memory stays reserved until the session ends.'), false);
  });

  it('notifies what changes the meaning of the figures', () => {
    assert.equal(warningNeedsAttention('2 direct call site(s) of clamp_s16 cannot be rewritten and are not counted: 0x80000100 in fir_filter (tooShort).'), true);
    assert.equal(warningNeedsAttention('1 indirect call(s) in the program may also reach hash_mix; they are not counted (at 0x80000200).'), true);
    assert.equal(warningNeedsAttention('Whether every path from 0x80000548 reaches 0x80000578 is unknown: jalr at 0x80000560 jump(s) to addresses the disassembly could not resolve.'), true);
  });
});
